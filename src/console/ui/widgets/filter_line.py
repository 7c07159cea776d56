"""The main screen's filter line: an ``Input`` whose typing does not lay out the whole screen.

Textual's ``Input`` sets its ``virtual_size`` to the width of its text at every change, and
``Widget.virtual_size`` is a reactive that asks for a layout of the screen. With 1,024 rows on the
main screen that layout was about half of every filter key's time (``bench/ui.py``, cProfile of the
filter phase: 109 screen layouts for 104 keys). The line's own height and width are fixed by the
stylesheet, so its text's width changes nothing around it: a repaint is enough. Horizontal
scrolling reads ``virtual_size`` directly (``max_scroll_x``), so a long filter still scrolls.
"""

from __future__ import annotations

from textual.geometry import Size
from textual.reactive import Reactive
from textual.widgets import Input


class FilterLine(Input):
    """An ``Input`` of fixed size whose text changes repaint it without a screen layout."""

    virtual_size: Reactive[Size] = Reactive(Size(0, 0), layout=False, repaint=True)
