"""A fixed-column grid of keyed rows drawn with Textual's line API: only visible rows are ever rendered.

It shows the nodes of the main screen and the findings of the detail screen.

Why not ``DataTable``: at 1,024 rows every ``update_cell`` there invalidates all of the table's
render caches and a filter means removing and re-adding rows; measured on this machine, a 10 %
update took 0.4 s and a filter rebuild 0.4-1.5 s. Here each row has a version; a cell update bumps
only that row's version and repaints only that line if it is on screen. Rows are addressed by key
(a node name, a finding), never by position: the cursor and the marks follow the key across sorts
and filters.

A row can also be given as a source (``set_row_source``): its cells are made when the row is next
drawn or read, so a live update of a thousand rows off screen costs a dict store each, not a render.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

from console.ui.text import safe

# Rows not on screen get their lines made ahead, this many seconds of work per turn, this often: a filter
# or a page down then shows ready lines instead of making each one inside the keystroke.
WARM_BUDGET_S = 0.003
WARM_EVERY_S = 0.05

Cell = tuple[str, str]
"""Text of a cell and its Textual style string (``""`` or e.g. ``"bold $health-crit"``)."""

Justify = Literal["left", "center", "right"]
CellSource = Callable[[], Sequence[Cell]]
"""Makes a row's cells when they are needed (reading the newest data then)."""


@dataclass(frozen=True)
class Column:
    """One fixed-width column; ``width=0`` takes whatever width is left (only the last column).

    ``drop`` > 0: the column may be left out when the grid is too narrow for the last column to show
    ``MIN_LAST_WIDTH`` cells; lower ranks go first, a whole rank at a time.
    """

    key: str
    title: str
    width: int
    justify: Justify = "left"
    drop: int = 0


# What the last column (the node's reason) keeps at least on a narrow screen: at 80 columns it was
# entirely off-screen behind the per-family columns.
MIN_LAST_WIDTH = 30


def fit(text: str, width: int, justify: Justify = "left") -> str:
    """``text`` padded or cut (with an ellipsis) to exactly ``width`` cells."""
    if width <= 0:
        return ""
    length = cell_len(text)
    if length > width:
        return set_cell_size(text, width - 1) + "…" if width > 1 else set_cell_size(text, width)
    gap = width - length
    if justify == "right":
        return " " * gap + text
    if justify == "center":
        return " " * (gap // 2) + text + " " * (gap - gap // 2)
    return text + " " * gap


def _shown_cells(cells: Sequence[Cell]) -> list[Cell]:
    """Cells as the grid keeps them: text made safe to print (no markup, no control characters)."""
    return [(safe(text), style) for text, style in cells]


class RowGrid(ScrollView, can_focus=True):
    """Rows of cells under a sticky header, with a key-addressed cursor and marks."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "row-grid--header",
        "row-grid--cursor",
        "row-grid--marked",
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home,g", "edge(0)", "First", show=False),
        Binding("end,G", "edge(1)", "Last", show=False),
    ]

    class CursorMoved(Message):
        """The cursor is on another node (or on none: ``key`` is None)."""

        def __init__(self, grid: RowGrid, key: str | None) -> None:
            super().__init__()
            self.grid = grid
            self.key = key

        @property
        def control(self) -> RowGrid:
            """The grid that sent it (lets handlers select it with ``@on(..., "#id")``)."""
            return self.grid

    class RowActivated(Message):
        """A row was clicked while the cursor was already on it."""

        def __init__(self, grid: RowGrid, key: str) -> None:
            super().__init__()
            self.grid = grid
            self.key = key

        @property
        def control(self) -> RowGrid:
            """The grid that sent it."""
            return self.grid

    def __init__(
        self,
        columns: Sequence[Column],
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.columns = tuple(columns)
        self._column_index = {c.key: i for i, c in enumerate(self.columns)}
        self._hidden: frozenset[int] = frozenset()
        self._fixed_width = self._width_of_fixed()
        self._cells: dict[str, list[Cell]] = {}
        self._sources: dict[str, CellSource] = {}
        self._versions: dict[str, int] = {}
        self._order: list[str] = []
        self._position: dict[str, int] = {}
        self._marks: set[str] = set()
        self._cursor_key: str | None = None
        self._style_generation = 0
        self._strips: LRUCache[tuple[object, ...], Strip] = LRUCache(2048)
        self._styles: dict[tuple[str, str], Style] = {}
        self._warm_from: int | None = 0
        self.lines_rendered = 0

    # data ---------------------------------------------------------------------------------------

    def set_row(self, key: str, cells: Sequence[Cell]) -> bool:
        """Store ``cells`` for ``key``; repaint its line only if something changed. True when it did."""
        new = _shown_cells(cells)
        self._sources.pop(key, None)
        if self._cells.get(key) == new:
            return False
        self._cells[key] = new
        self._touch(key)
        return True

    def set_row_source(self, key: str, source: CellSource) -> None:
        """Row ``key`` shows what ``source`` makes: made now when the row is on screen (its line repaints
        only if something changed), else when the row is next drawn or read."""
        if key in self._cells and not self._on_screen(key):
            self._sources[key] = source
            self._versions[key] = self._versions.get(key, 0) + 1
            self._warm_from = 0
            return
        self.set_row(key, source())

    def _row(self, key: str) -> list[Cell]:
        source = self._sources.pop(key, None)
        if source is not None:
            self._cells[key] = _shown_cells(source())
        return self._cells[key]

    def replace_rows(self, rows: Sequence[tuple[str, Sequence[Cell]]]) -> None:
        """Show exactly ``rows`` in this order, forgetting every other row (for short lists)."""
        keep = {key for key, _cells in rows}
        for key in set(self._cells) - keep:
            del self._cells[key]
            self._sources.pop(key, None)
            self._marks.discard(key)
        for key, cells in rows:
            self.set_row(key, cells)
        self.set_order([key for key, _cells in rows])

    def update_cell(self, key: str, column: str, cell: Cell) -> bool:
        """Change one cell of row ``key``; a no-op (False) when the value is the same."""
        if key not in self._cells:
            raise KeyError(key)
        row = self._row(key)
        index = self._column_index[column]
        value = (safe(cell[0]), cell[1])
        if row[index] == value:
            return False
        row[index] = value
        self._touch(key)
        return True

    def cell(self, key: str, column: str) -> Cell:
        """The current cell of row ``key`` in ``column``."""
        return self._row(key)[self._column_index[column]]

    def _touch(self, key: str) -> None:
        self._versions[key] = self._versions.get(key, 0) + 1
        self._warm_from = 0
        self._refresh_key(key)

    def _refresh_key(self, key: str) -> None:
        if self._on_screen(key):
            self.refresh_line(self._position[key] + 1)

    def _on_screen(self, key: str) -> bool:
        # Asking Textual to repaint a line out of view still costs a region and a dirty mark.
        index = self._position.get(key)
        if index is None or not self.is_mounted:
            return False
        top, rows = self._viewport()
        return top <= index < top + rows

    def _viewport(self) -> tuple[int, int]:
        """Index of the first row in view, and how many rows fit under the header."""
        return int(self.scroll_y), max(1, self.size.height - 1)

    def _resize_rows(self, size: Size) -> None:
        # ``virtual_size`` is a layout reactive: setting it lays out and repaints the whole screen (most
        # of a filter keystroke's cost at a thousand rows). A new row count only changes this widget's
        # scrollbar; a layout pass still happens when a scrollbar comes or goes (``_scroll_update``).
        if size == self.virtual_size:
            return
        if not self.is_mounted or not self.container_size:
            self.virtual_size = size
            return
        self.set_reactive(Widget.virtual_size, size)
        self._scroll_update(size)

    @property
    def order(self) -> list[str]:
        """Keys of the rows shown, top to bottom."""
        return list(self._order)

    @property
    def row_count(self) -> int:
        """Rows shown."""
        return len(self._order)

    def set_order(self, keys: Iterable[str]) -> None:
        """Show exactly ``keys`` in this order; the cursor stays on its key when that key is still shown."""
        previous_index = self.cursor_index
        top, shown_before = int(self.scroll_y), self._visible_keys()
        self._order = [k for k in keys if k in self._cells]
        self._position = {k: i for i, k in enumerate(self._order)}
        self._warm_from = 0
        old_key = self._cursor_key
        if old_key not in self._position:
            if self._order:
                index = min(max(previous_index, 0), len(self._order) - 1)
                self._cursor_key = self._order[index]
            else:
                self._cursor_key = None
        self._resize_rows(Size(max(self._fixed_width, self.size.width), len(self._order) + 1))
        self._scroll_cursor_into_view()
        self._refresh_changed_lines(top, shown_before, old_key)
        if self._cursor_key != old_key:
            self.post_message(self.CursorMoved(self, self._cursor_key))

    def _visible_keys(self) -> list[str]:
        top, rows = self._viewport()
        return self._order[top : top + rows]

    def _refresh_changed_lines(self, top: int, shown_before: list[str], old_cursor: str | None) -> None:
        # Repaint only the lines that show another row than before: typing ``gpu0`` -> ``gpu00`` often
        # leaves the top of the list as it was, and a full repaint is most of a keystroke's cost.
        if int(self.scroll_y) != top or not self.is_mounted:
            self.refresh()
            return
        shown_after = self._visible_keys()
        for line in range(max(len(shown_before), len(shown_after))):
            before = shown_before[line] if line < len(shown_before) else None
            after = shown_after[line] if line < len(shown_after) else None
            if before != after:
                self.refresh_line(top + line + 1)
        if self._cursor_key != old_cursor:
            for key in (old_cursor, self._cursor_key):
                if key is not None:
                    self._refresh_key(key)

    # cursor and marks ---------------------------------------------------------------------------

    @property
    def cursor_key(self) -> str | None:
        """Key of the row under the cursor."""
        return self._cursor_key

    @property
    def cursor_index(self) -> int:
        """Position of the cursor row, -1 when the grid is empty."""
        if self._cursor_key is None:
            return -1
        return self._position.get(self._cursor_key, -1)

    def move_cursor_to(self, key: str) -> bool:
        """Put the cursor on ``key``; False when that row is not shown."""
        if key not in self._position:
            return False
        old = self._cursor_key
        if old == key:
            return True
        self._cursor_key = key
        if old is not None:
            self._refresh_key(old)
        self._refresh_key(key)
        self._scroll_cursor_into_view()
        self.post_message(self.CursorMoved(self, key))
        return True

    def _move_to_index(self, index: int) -> None:
        if self._order:
            self.move_cursor_to(self._order[min(max(index, 0), len(self._order) - 1)])

    def action_cursor(self, delta: int) -> None:
        """Move the cursor ``delta`` rows."""
        self._move_to_index(self.cursor_index + delta)

    def action_page(self, direction: int) -> None:
        """Move the cursor one screen up or down."""
        self._move_to_index(self.cursor_index + direction * max(1, self.size.height - 2))

    def action_edge(self, end: int) -> None:
        """Move the cursor to the first (0) or last (1) row."""
        self._move_to_index(len(self._order) - 1 if end else 0)

    def _scroll_cursor_into_view(self) -> None:
        index = self.cursor_index
        visible = max(1, self.size.height - 1)
        if index < 0 or not self.is_mounted:
            return
        top = int(self.scroll_y)
        if index < top:
            self.scroll_to(y=index, animate=False, immediate=True)
        elif index >= top + visible:
            self.scroll_to(y=index - visible + 1, animate=False, immediate=True)

    @property
    def marked(self) -> frozenset[str]:
        """Keys of the marked rows (shown or not)."""
        return frozenset(self._marks)

    def is_marked(self, key: str) -> bool:
        """Whether row ``key`` is marked."""
        return key in self._marks

    def toggle_mark(self, key: str) -> bool:
        """Mark or unmark ``key``; returns True when it is now marked."""
        if key in self._marks:
            self._marks.discard(key)
        else:
            self._marks.add(key)
        self._refresh_key(key)
        return key in self._marks

    def clear_marks(self) -> None:
        """Unmark every row."""
        marked, self._marks = self._marks, set()
        for key in marked:
            self._refresh_key(key)

    # painting -----------------------------------------------------------------------------------

    def restyle(self) -> None:
        """Forget painted lines and resolved styles (the theme changed) and repaint."""
        self._style_generation += 1
        self._strips.clear()
        self._styles.clear()
        self._warm_from = 0
        self.refresh()

    def _width_of_fixed(self, hidden: frozenset[int] | set[int] | None = None) -> int:
        hidden = self._hidden if hidden is None else hidden
        return sum(c.width + 1 for i, c in enumerate(self.columns) if c.width and i not in hidden) - 1

    def _fit_columns(self, width: int) -> None:
        """Leave out droppable columns, lowest rank first, until the last column gets its minimum."""
        before = self._hidden
        hidden: set[int] = set()
        for rank in sorted({c.drop for c in self.columns if c.drop}):
            if width - self._width_of_fixed(hidden) - 1 >= MIN_LAST_WIDTH:
                break
            hidden.update(i for i, c in enumerate(self.columns) if c.drop == rank)
        self._hidden = frozenset(hidden)
        if self._hidden != before:
            self._strips.clear()
        self._fixed_width = self._width_of_fixed()

    @property
    def shown_columns(self) -> tuple[str, ...]:
        """The keys of the columns on screen at this width."""
        return tuple(c.key for i, c in enumerate(self.columns) if i not in self._hidden)

    def on_resize(self, event: events.Resize) -> None:
        """Keep the last column filling the width (leaving out columns that would push it off-screen),
        and the cursor in view."""
        self._fit_columns(self.size.width)
        self._resize_rows(Size(max(self._fixed_width, self.size.width), len(self._order) + 1))
        self._scroll_cursor_into_view()
        self._warm_from = 0

    def on_mount(self) -> None:
        """Make lines of rows out of view while nothing else happens."""
        self.set_interval(WARM_EVERY_S, self._warm)

    def _warm(self) -> None:
        start = self._warm_from
        if start is None or not self.size.width:
            return
        width = max(self._fixed_width, self.size.width)
        order = self._order
        deadline = time.perf_counter() + WARM_BUDGET_S
        index = start
        while index < len(order) and time.perf_counter() < deadline:
            self._line(order[index], width)
            index += 1
        self._warm_from = index if index < len(order) else None

    def _style(self, cell_style: str, row_style: str) -> Style:
        # Resolved once per (cell style, row style) and theme: painting a row is then string work only.
        key = (cell_style, row_style)
        style = self._styles.get(key)
        if style is None:
            base = self.rich_style + self.get_component_rich_style(row_style) if row_style else self.rich_style
            style = base + self.app.stylesheet.parse_style(cell_style).rich_style if cell_style else base
            self._styles[key] = style
        return style

    def _strip(self, cells: Sequence[Cell], width: int, row_style: str) -> Strip:
        gap = self._style("", row_style)
        segments: list[Segment] = []
        used = 0
        hidden = self._hidden
        first = True
        for index, (column, (text, style)) in enumerate(zip(self.columns, cells, strict=False)):
            if index in hidden:
                continue
            if not first:
                segments.append(Segment(" ", gap))
                used += 1
            first = False
            column_width = column.width or max(0, width - used)
            segments.append(Segment(fit(text, column_width, column.justify), self._style(style, row_style)))
            used += column_width
        # Neighbours of one style become one segment: Textual's per-line work (cropping, colour filters)
        # is per segment, and a node row has ~40 of them before merging.
        return Strip(Segment.simplify(segments), used)

    def render_line(self, y: int) -> Strip:
        """Line ``y`` of the viewport: the header at 0, then rows from the scroll position."""
        width = max(self._fixed_width, self.size.width)
        scroll_x = int(self.scroll_x)
        if y == 0:
            key: tuple[object, ...] = ("header", width, self._style_generation)
            strip = self._strips.get(key)
            if strip is None:
                titles = [(c.title, "") for c in self.columns]
                strip = self._strip(titles, width, "row-grid--header")
                self._strips[key] = strip
            return strip.crop_extend(scroll_x, scroll_x + self.size.width, self._style("", ""))
        index = int(self.scroll_y) + y - 1
        if index >= len(self._order):
            return Strip.blank(self.size.width, self._style("", ""))
        # The widget's own style, resolved once per theme: ``rich_style`` walks every ancestor each call,
        # a tenth of a millisecond per painted line.
        strip = self._line(self._order[index], width)
        return strip.crop_extend(scroll_x, scroll_x + self.size.width, self._style("", ""))

    def _line(self, row_key: str, width: int) -> Strip:
        """Row ``row_key``'s whole line, made once per row version, cursor, mark, width and theme."""
        is_cursor = row_key == self._cursor_key
        is_marked = row_key in self._marks
        cache_key = (row_key, self._versions.get(row_key, 0), is_cursor, is_marked, width, self._style_generation)
        strip = self._strips.get(cache_key)
        if strip is None:
            row_style = "row-grid--cursor" if is_cursor else "row-grid--marked" if is_marked else ""
            strip = self._strip(self._row(row_key), width, row_style)
            self._strips[cache_key] = strip
            self.lines_rendered += 1
        return strip

    def on_click(self, event: events.Click) -> None:
        """Click moves the cursor; a click on the cursor row activates it."""
        index = int(self.scroll_y) + event.y - 1
        if event.y < 1 or not 0 <= index < len(self._order):
            return
        key = self._order[index]
        if key == self._cursor_key:
            self.post_message(self.RowActivated(self, key))
        else:
            self.move_cursor_to(key)
