"""Waiting for a screen's nested widgets: what a screen's Mount does not promise.

A screen's Mount comes once its own children are mounted. Widgets inside containers are mounted by
those containers' tasks, which on a busy machine may come later: a screen that queries them from its
``on_mount`` (or that the app updates as soon as it is pushed) can find nothing there yet.
"""

from __future__ import annotations

import asyncio
from typing import Any

from textual.screen import Screen

# How long a screen waits for its nested widgets: ~30 s, far past any busy machine's.
BUILD_WAIT_PASSES = 3000


async def wait_built(screen: Screen[Any], *selectors: str) -> bool:
    """Wait until a widget matching each of ``selectors`` is mounted on ``screen``.

    False when the screen is being closed instead: the app quit while it was being built, so Textual
    detaches or prunes it, widgets not mounted yet never will be, and it still sends Mount. Each pass
    yields to the containers' tasks, a few loop turns first, then gently.
    """
    waited = 0
    while screen.is_attached and not screen._pruning and waited < BUILD_WAIT_PASSES:
        found = [screen.query(selector) for selector in selectors]
        if all(nodes and nodes.first().is_mounted for nodes in found):
            return True
        waited += 1
        await asyncio.sleep(0 if waited < 100 else 0.01)
    return False
