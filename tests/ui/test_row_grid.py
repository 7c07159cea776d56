"""RowGrid on its own: lines of rows out of view are made while the console is idle."""

from __future__ import annotations

from textual.app import App, ComposeResult

from console.ui.widgets.row_grid import Column, RowGrid

ROWS = 300


class GridApp(App[None]):
    def compose(self) -> ComposeResult:
        yield RowGrid([Column("name", "Name", 8), Column("note", "Note", 0)])


async def test_lines_out_of_view_are_made_while_idle_and_a_page_down_makes_none() -> None:
    app = GridApp()
    async with app.run_test(size=(40, 12)) as pilot:
        grid = app.query_one(RowGrid)
        grid.focus()
        for i in range(ROWS):
            grid.set_row(f"n{i:03d}", [(f"n{i:03d}", ""), (f"note {i}", "")])
        grid.set_order(f"n{i:03d}" for i in range(ROWS))
        await pilot.pause(1.5)
        assert grid.lines_rendered >= ROWS  # the others, a few milliseconds at a time
        made = grid.lines_rendered
        await pilot.press("pagedown", "pagedown")
        # Two pages of new rows on screen; only the cursor's own lines (in the cursor style) were made.
        assert grid.lines_rendered - made <= 3
        made = grid.lines_rendered
        # A changed row out of view is made again ahead of being shown.
        grid.set_row("n250", [("n250", ""), ("changed", "")])
        await pilot.pause(0.3)
        assert grid.lines_rendered == made + 1
