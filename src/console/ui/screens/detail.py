"""One node in depth: findings with their evidence, GPUs with session sparklines, stack against the pool
pin, verdict history and every probe run, each a keystroke from its raw output.

Opening it preselects the worst finding, so the raw evidence of a failing GPU is ``enter`` then ``r``
from the main screen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import BindingsMap
from textual.containers import Container, Horizontal
from textual.content import Content
from textual.screen import Screen
from textual.widgets import ContentSwitcher, DataTable, Static

from console.actions.freshness import freshness
from console.model.findings import Finding, Status, Subject
from console.sweep.multinode import CHECK_ID as MULTINODE_CHECK
from console.ui.pairs import verdict_lines
from console.ui.registry import bindings
from console.ui.screens.built import wait_built
from console.ui.screens.dialogs import RawOutputScreen
from console.ui.state import MetricSample, NodeRow
from console.ui.text import STATUS_GLYPH, STATUS_STYLE, clock, gib, number, safe, severity_rank, sparkline, status_label
from console.ui.widgets.key_bar import KeyBar
from console.ui.widgets.row_grid import Cell, Column, RowGrid

if TYPE_CHECKING:
    from console.ui.app import ConsoleApp

TABS = ("findings", "gpus", "stack", "history", "probes")
TAB_TITLES = {"findings": "Findings", "gpus": "GPUs", "stack": "Stack", "history": "History", "probes": "Probes"}
FINDING_COLUMNS = (
    Column("status", "", 1),
    Column("family", "FAMILY", 12),
    Column("check", "CHECK", 24),
    Column("subject", "SUBJECT", 10),
    Column("action", "ACTION", 13),
    Column("message", "MESSAGE", 0),
)
PARTIAL_NOTE = "only findings that are not PASS are shown: no history database holds the rest\n"
# How long after the first frame the passing findings are read (~15 ms of database and validation).
REST_OF_FINDINGS_S = 0.05
# The tables of the other tabs, made when their tab is first shown: every widget on a screen costs
# style work each time the screen comes back, and most visits only read the findings.
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "gpus": (
        "GPU",
        "BDF",
        "EDGE°C",
        "HOT°C",
        "MEM°C",
        "POWER W",
        "GFX MHz",
        "MEM MHz",
        "GFX%",
        "VRAM GiB",
        "ECC c/u",
        "BAD PAGES r/p",
        "HOT°C trend",
        "POWER trend",
        "GFX% trend",
    ),
    "stack": ("FIELD", "NODE", "POOL PIN", ""),
    "history": ("SWEEP", "STARTED", "LEVEL", "VERDICT", "REASON"),
    "probes": ("PROBE", "RUN"),
}


def _tab_label(tab: str) -> str:
    """`` 2 GPUs ``: the key that shows the tab, and its title."""
    return f" {TABS.index(tab) + 1} {TAB_TITLES[tab]} "


def update_auto_height(static: Static, content: Content) -> None:
    """Show ``content`` in ``static`` (``height: auto``), laying the screen out only when that height changes.

    ``Static.update`` lays out the whole screen by default; on the detail screen that was ~11 ms of the
    ~25 ms each ``enter`` took (bench/ui.py), for a head whose height rarely changes between nodes.
    """
    shown = static.content_size
    static.update(content, layout=False)
    height = static.get_content_height(static.container_size, static.app.size, shown.width)
    limit = static.styles.max_height
    if limit is not None and limit.cells is not None:
        height = min(height, limit.cells)
    if not shown.width or height != shown.height:
        static.refresh(layout=True)


@dataclass(frozen=True)
class FindingRow:
    """One line of the findings tab: a finding that is not PASS, or every PASS finding of one check."""

    key: str
    findings: tuple[Finding, ...]
    where: str | None = None  # the subject column when the findings do not say it (passes kept as a count)

    @property
    def lead(self) -> Finding:
        """The finding the line stands for (the first of a group)."""
        return self.findings[0]


GROUPED = (Status.PASS, Status.SKIP)


def finding_rows(findings: list[Finding]) -> list[FindingRow]:
    """Problems one per line, worst first; then each check that passed (or did not apply) on one line,
    so 8 GPUs x 30 passing checks do not bury the one that failed. Every finding stays reachable."""
    ordered = sorted(findings, key=lambda f: (severity_rank(f.status), f.family, f.check_id, f.subject.label()))
    rows: list[FindingRow] = []
    grouped: dict[tuple[Status, str], list[Finding]] = {}
    keys: set[str] = set()
    for finding in ordered:
        if finding.status in GROUPED:
            grouped.setdefault((finding.status, finding.check_id), []).append(finding)
            continue
        key = f"{finding.check_id}|{finding.subject.label()}"
        key = key if key not in keys else f"{key}|{len(rows)}"
        keys.add(key)
        rows.append(FindingRow(key, (finding,)))
    rows += [FindingRow(f"{status.value}|{check}", tuple(group)) for (status, check), group in grouped.items()]
    return rows


def counted_rows(
    node: str, passed: dict[str, int], family_of: Mapping[str, str], whole: dict[str, str] | None = None
) -> list[FindingRow]:
    """A line per check the node passed whose PASS findings the sweep kept as a count (console.model.kept).

    ``whole`` maps a check to the scope of its PASS findings kept whole on other lines (a counter that is
    not 0 on 5 GPUs): this line then says it counts the others ("3 gpus", "passed on 3 more"), not "node".
    """
    whole = whole or {}
    rows = []
    for check, count in sorted(passed.items()):
        scope = whole.get(check)
        where = f"{count} {scope}{'' if count == 1 else 's'}" if scope else f"{count} counted"
        more = " more" if scope else ""
        finding = Finding.trusted(
            check_id=check,
            family=family_of.get(check, ""),
            status=Status.PASS,
            subject=Subject(node=node),
            message=f"passed on {count}{more} (counted: a PASS is kept whole only for a figure read later)",
        )
        rows.append(FindingRow(f"PASS|{check}|counted", (finding,), where))
    return rows


def gpu_series(history: list[MetricSample], index: int, field: str) -> list[float | None]:
    """One metric of one GPU over the session."""
    values: list[float | None] = []
    for sample in history:
        gpu = sample.gpus.get(index)
        value = getattr(gpu, field) if gpu is not None else None
        values.append(float(value) if value is not None else None)
    return values


class DetailScreen(Screen[None]):
    """The node ``node``: tabs for findings, GPUs, stack, history and probe runs."""

    def __init__(self, node: str, read_only: bool) -> None:
        super().__init__()
        self.node_name = node
        self.read_only = read_only
        self._bindings = BindingsMap(bindings(read_only, "detail"))
        self._findings: dict[str, FindingRow] = {}
        self._complete = True
        self._tables: dict[str, DataTable[Text]] = {}
        # Tabs are filled when first shown (and again after a change): opening the screen stays quick.
        self._stale: set[str] = set(TABS)

    @property
    def console_app(self) -> ConsoleApp:
        """The app, typed."""
        return self.app  # type: ignore[return-value]

    @property
    def row(self) -> NodeRow:
        """The node's current row."""
        return self.console_app.state.row(self.node_name)

    def compose(self) -> ComposeResult:
        """Header, tab line, the tabs' panes, footer.

        The tab line is one Static, not a TabbedContent: its ten widgets (tabs, underline, scroll
        containers) were half of the screen's style work each time it is shown. Tabs change by key (1-5)
        or a click on their title.
        """
        yield Static(id="detail-head")
        yield Static(self._tab_line("findings"), id="detail-tabbar")
        with ContentSwitcher(initial="findings", id="detail-tabs"):
            with Container(id="findings"), Horizontal():
                yield RowGrid(FINDING_COLUMNS, id="findings-table")
                yield Static(id="evidence")
            for tab in TABS[1:]:
                yield Container(id=tab)
        yield KeyBar(self.read_only, "detail", keymap=self.console_app.keymap)

    @staticmethod
    def _tab_line(active: str) -> Content:
        """The tab titles, the shown one bright and underlined by a rule under it."""
        titles: list[str | tuple[str, str]] = []
        rule: list[str | tuple[str, str]] = []
        for tab in TABS:
            label = _tab_label(tab)
            shown = tab == active
            titles += [(label, "bold $text" if shown else "$text-muted"), " "]
            rule += [("━" * len(label), "$accent" if shown else "$panel"), ("━", "$panel")]
        # The rule runs on to the right edge (the line is clipped there, not wrapped).
        return Content.assemble(*titles, "\n", *rule, ("━" * 400, "$panel"))

    @property
    def active_tab(self) -> str:
        """The tab on screen."""
        return self.query_one(ContentSwitcher).current or "findings"

    def _switch_to(self, tab: str) -> None:
        if self.active_tab != tab:
            self.query_one(ContentSwitcher).current = tab
            self.query_one("#detail-tabbar", Static).update(self._tab_line(tab), layout=False)  # 2 lines, clipped

    @on(events.Click, "#detail-tabbar")
    def _tab_clicked(self, event: events.Click) -> None:
        edge = self.query_one("#detail-tabbar").styles.padding.left
        for tab in TABS:
            edge += len(_tab_label(tab)) + 1  # and the gap after it
            if event.x < edge:
                self.action_show_tab(tab)
                return

    async def on_mount(self) -> None:
        """Fill the findings tab, preselect the worst finding, follow theme changes."""
        if not await wait_built(self, "#findings-table", "#evidence"):
            # The app quit while the screen was being built (pushed by the prebuild or a quick enter):
            # Textual detaches or prunes it, so widgets not mounted yet never will be, and still sends
            # Mount. It is never shown. (The same test as Textual's own Signal.publish.)
            return
        self._head(self.row)
        self._fill_findings(self.row, preselect=True, first_paint=True)
        self._stale.discard("findings")
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.refresh_node())
        self.query_one("#findings-table", RowGrid).focus()

    def cell(self, text: object, style: str = "") -> Text:
        """A table cell as plain (never markup) text, styled through the theme variables."""
        rich_style = self.app.stylesheet.parse_style(style).rich_style if style else ""
        return Text(safe(text), style=rich_style, no_wrap=True, end="")

    def _table(self, tab: str) -> DataTable[Text]:
        """The table of ``tab`` (not the findings), made and mounted the first time it is asked for."""
        table = self._tables.get(tab)
        if table is None:
            table = DataTable(id=f"{tab}-table", cursor_type="row")
            self.query_one(f"#{tab}", Container).mount(table)
            table.add_columns(*TABLE_COLUMNS[tab])
            self._tables[tab] = table
        return table

    # filling ------------------------------------------------------------------------------------

    def show_node(self, node: str) -> None:
        """Show another node, from the findings tab with its worst finding selected."""
        self.node_name = node
        self._head(self.row)
        self._stale = set(TABS) - {"findings"}
        self._switch_to("findings")
        self._fill_findings(self.row, preselect=True, first_paint=True)
        self.query_one("#findings-table", RowGrid).focus()

    def refresh_node(self) -> None:
        """The node changed: repaint the header and the tab on screen, the others when next shown."""
        if not self.is_mounted:
            # push_screen puts the screen on the stack at once and builds it later, on its own task (the
            # app prebuilds it from a timer's task): an update between the two finds no widgets yet.
            # on_mount paints the row as it is by then, so there is nothing to repaint.
            return
        self._head(self.row)
        self._stale = set(TABS)
        self._fill_tab(self.active_tab)

    def _fill_tab(self, tab: str) -> None:
        if tab not in self._stale:
            return
        self._stale.discard(tab)
        row = self.row
        if tab == "findings":
            self._fill_findings(row, preselect=False)
        elif tab == "gpus":
            self._fill_gpus(row)
        elif tab == "stack":
            self._fill_stack(row)
        elif tab == "history":
            self.refresh_history()
        else:
            self._fill_probes(row)

    def _head(self, row: NodeRow) -> None:
        parts: list[str | tuple[str, str]] = [
            (safe(row.name), "bold $accent"),
            (f"  pool {safe(row.node.pool)}  {row.node.gpu_model}", "$muted"),
        ]
        if row.scheduler:
            parts += [("  scheduler ", "$muted"), (safe(row.scheduler), "bold $drained")]
        checked = self._checked_line(row.name)
        if checked:
            parts += [("  " + checked, "$muted")]
        parts += ["\n", (status_label(row.status), STATUS_STYLE[row.status])]
        if row.verdict is not None and row.verdict.action is not None:
            parts += [("  next: ", "$muted"), (row.verdict.action.value, "bold")]
        if row.updated_at is not None:
            parts += [(f"   updated {clock(row.updated_at)}", "$muted")]
        followed = row.followed_from(self.console_app.clock())
        if followed is not None:  # stored by another process (watch, revalidate, a sweep): said where from
            parts += [("  from ", "$muted"), (safe(followed), "bold")]
        # The case's line comes before the reason: a long reason wraps and is cut, never the case.
        case = self._case_line(row.name)
        if case:
            parts += ["\n", (case, "bold $drained")]
        if row.verdict is not None and row.verdict.reason:
            parts += ["\n", safe(row.verdict.reason)]
        update_auto_height(self.query_one("#detail-head", Static), Content.assemble(*parts))

    def _checked_line(self, node: str) -> str | None:
        """The node's freshness as ``watch --freshness`` reads it (None without a store)."""
        store = self.console_app.store
        if store is None:
            return None
        fresh = freshness(store, [node])[node]
        age = fresh.age(self.console_app.clock())
        return f"last active check {age} ago (sweep {fresh.sweep_id})" if age is not None else "never checked"

    def _case_line(self, node: str) -> str | None:
        """The node's open remediation case, as the head shows it (None without one, or without a store)."""
        app = self.console_app
        store = app.store
        if store is None:
            return None
        case = store.case(node)
        if case is None:
            return None
        policy = app.inventory.policy_of(node)
        return (
            f"case #{case.id} {case.stage.value}  passes {case.passes}/{policy.passes_required}"
            f"  strikes {case.strikes}  next: {case.next_step(policy)}"
        )

    def _fill_findings(self, row: NodeRow, preselect: bool, *, first_paint: bool = False) -> None:
        grid = self.query_one("#findings-table", RowGrid)
        app = self.console_app
        if first_paint and app.queries.more_findings_stored(row):
            # The problems are in memory and on screen at once; the passing findings (~95 % of an 8-GPU
            # node's) are read from the history database once this frame is painted.
            everything, self._complete = app.queries.kept_findings(row), True
            # Once the first frame is out and the loop is idle: a key pressed meanwhile is served first.
            self.set_timer(REST_OF_FINDINGS_S, partial(self._complete_findings, row.name, row.version))
        else:
            everything, self._complete = app.queries.findings_of(row)
        lines = finding_rows(everything)
        if row.verdict is not None and row.verdict.passed:
            pack = app.packs.get(row.node.gpu_model)
            family_of = {c.id: c.family for c in pack.checks} if pack is not None else {}
            passing = (line.lead for line in lines if line.lead.status is Status.PASS)
            whole = {lead.check_id: lead.subject.scope.value for lead in passing}
            lines += counted_rows(row.name, row.verdict.passed, family_of, whole)
        self._findings = {line.key: line for line in lines}
        grid.replace_rows([(line.key, self._line_cells(line)) for line in lines])
        if preselect and lines:
            grid.move_cursor_to(lines[0].key)  # the worst finding
        self._show_evidence()

    def _complete_findings(self, node: str, version: int) -> None:
        row = self.row
        if self.node_name == node and row.version == version and self.is_current:
            self._fill_findings(row, preselect=False)

    def _line_cells(self, line: FindingRow) -> list[Cell]:
        finding = line.lead
        count = len(line.findings)
        where = line.where or (self.where(finding) if count == 1 else f"{count} {finding.subject.scope.value}s")
        verb = "passed on all" if finding.status is Status.PASS else "does not apply to"
        message = finding.message if count == 1 else f"{verb} {count} (select to see each figure)"
        style = STATUS_STYLE[finding.status]
        return [
            (STATUS_GLYPH[finding.status], style),
            (finding.family, ""),
            (finding.check_id, ""),
            (where, ""),
            (finding.evidence.action.value if finding.evidence.action else "", style),
            (message, style if finding.status not in GROUPED else ""),
        ]

    def where(self, finding: Finding) -> str:
        """The subject without the node name: ``gpu3``, ``gpu1-gpu6``, ``node``."""
        return finding.subject.label()[len(self.node_name) :].strip() or "node"

    def selected_line(self) -> FindingRow | None:
        """The line under the cursor of the findings tab."""
        key = self.query_one("#findings-table", RowGrid).cursor_key
        return self._findings.get(key) if key is not None else None

    def selected_finding(self) -> Finding | None:
        """The finding under the cursor (the first of a group of passing ones)."""
        line = self.selected_line()
        return line.lead if line is not None else None

    @on(RowGrid.CursorMoved, "#findings-table")
    def _show_evidence(self) -> None:
        line = self.selected_line()
        finding = line.lead if line is not None else None
        panel = self.query_one("#evidence", Static)
        if line is None or finding is None:
            panel.update(Content.styled("no findings: no checks ran on this node yet", "$muted"), layout=False)
            return
        shown = "" if self._complete else PARTIAL_NOTE
        evidence = finding.evidence
        unit = f" {evidence.unit}" if evidence.unit else ""
        observed = "n/a" if evidence.observed is None else f"{evidence.observed}{unit}"
        run_id = self.run_id_of(finding)
        fields: list[tuple[str, str]] = [
            ("observed", observed),
            ("expected", evidence.expected or "n/a"),
            ("source", evidence.source or "n/a"),
            ("source kind", evidence.source_kind.value if evidence.source_kind is not None else "n/a"),
            ("probe", evidence.probe or "n/a"),
            ("raw output", f"run #{run_id} (press r)" if run_id is not None else "not kept"),
        ]
        parts: list[str | tuple[str, str]] = [
            (shown, "$health-warn"),
            (f"{STATUS_GLYPH[finding.status]} {finding.status.value} ", STATUS_STYLE[finding.status]),
            (safe(finding.subject.label()), "bold"),
            "\n",
            safe(finding.message),
            "\n",
        ]
        for label, value in fields:
            parts += ["\n", (f"{label:>12}  ", "$muted"), safe(value)]
        if finding.check_id == MULTINODE_CHECK and (result := self.console_app.state.pairs.result) is not None:
            # Who convicted or cleared this node: the mode, each run with its partner and where it came from.
            story = verdict_lines(result, self.node_name)
            if story:
                parts += ["\n\n", ("multi-node runs", "bold")]
            for label, text in story:
                parts += ["\n", (f"{label:>12}  ", "$muted"), safe(text)]
        if len(line.findings) > 1:
            parts += ["\n\n", ("each subject", "bold")]
            for member in line.findings:
                value = "n/a" if member.evidence.observed is None else f"{member.evidence.observed}{unit}"
                parts += ["\n", (f"{self.where(member):>12}  ", "$muted"), safe(value)]
        panel.update(Content.assemble(*parts), layout=False)  # its size is the stylesheet's, not its text's

    def run_id_of(self, finding: Finding) -> int | None:
        """The stored output behind ``finding``: its evidence link, else the node's run of its probe."""
        if finding.evidence.probe_run_id is not None:
            return finding.evidence.probe_run_id
        view = self.row.view
        if view is not None and finding.evidence.probe:
            return view.probe_runs.get(finding.evidence.probe)
        return None

    def _fill_gpus(self, row: NodeRow) -> None:
        table = self._table("gpus")
        table.clear()
        history = self.console_app.state.history(row.name)
        for gpu in row.view.gpus if row.view is not None else ():
            ecc_text = f"{number(gpu.ecc_correctable)}/{number(gpu.ecc_uncorrectable)}"
            ecc_style = "bold $health-crit" if (gpu.ecc_uncorrectable or 0) > 0 else ""
            bad_text = f"{number(gpu.bad_pages_retired)}/{number(gpu.bad_pages_pending)}"
            bad_style = "bold $health-crit" if gpu.bad_pages_over_threshold else ""
            table.add_row(
                self.cell(gpu.index),
                self.cell(gpu.bdf or "n/a", "$muted"),
                self.cell(number(gpu.edge_temp_c)),
                self.cell(number(gpu.hotspot_temp_c)),
                self.cell(number(gpu.mem_temp_c)),
                self.cell(f"{number(gpu.power_w)}/{number(gpu.power_cap_w)}"),
                self.cell(number(gpu.gfx_clock_mhz)),
                self.cell(number(gpu.mem_clock_mhz)),
                self.cell(number(gpu.gfx_util_pct)),
                self.cell(f"{gib(gpu.vram_used_bytes)}/{gib(gpu.vram_total_bytes)}"),
                self.cell(ecc_text, ecc_style),
                self.cell(bad_text, bad_style),
                self.cell(sparkline(gpu_series(history, gpu.index, "hotspot_temp_c")), "$accent"),
                self.cell(sparkline(gpu_series(history, gpu.index, "power_w")), "$accent"),
                self.cell(sparkline(gpu_series(history, gpu.index, "gfx_util_pct")), "$accent"),
                key=str(gpu.index),
            )

    def _fill_stack(self, row: NodeRow) -> None:
        table = self._table("stack")
        table.clear()
        app = self.console_app
        pin = app.queries.pool_pin(row.node.pool)
        stack = row.view.stack if row.view is not None else {}
        for field in sorted(set(stack) | set(pin)):
            have, want = stack.get(field), pin.get(field)
            if want is None:
                mark, style = "unpinned", "$muted"
            elif have == want:
                mark, style = "✓ matches", "$health-ok"
            else:
                mark, style = "Δ differs", "bold $drift"
            table.add_row(
                self.cell(field),
                self.cell(have or "n/a"),
                self.cell(want or "—", "$muted"),
                self.cell(mark, style),
                key=field,
            )

    def refresh_history(self) -> None:
        """Verdicts of this node in earlier sweeps, from the history database."""
        table = self._table("history")
        table.clear()
        store = self.console_app.store
        if store is None:
            return
        for record in store.node_history(self.node_name, limit=50):
            status = Status(record["status"])
            table.add_row(
                self.cell(f"#{record['sweep_id']}"),
                self.cell(clock(record["started_at"]), "$muted"),
                self.cell(record["level"]),
                self.cell(status_label(status), STATUS_STYLE[status]),
                self.cell(record["reason"]),
                key=str(record["sweep_id"]),
            )

    def _fill_probes(self, row: NodeRow) -> None:
        table = self._table("probes")
        table.clear()
        runs = row.view.probe_runs if row.view is not None else {}
        for probe, run_id in sorted(runs.items()):
            table.add_row(self.cell(probe), self.cell(f"#{run_id}", "$muted"), key=probe)

    # actions ------------------------------------------------------------------------------------

    def action_show_tab(self, tab: str) -> None:
        """Switch to ``tab`` and focus its table."""
        self._switch_to(tab)
        self._fill_tab(tab)
        target = self.query_one("#findings-table", RowGrid) if tab == "findings" else self._table(tab)
        target.focus()

    def action_raw_output(self) -> None:
        """Open the stored output of the selected probe run, or of the selected finding's probe."""
        if self.active_tab == "probes":
            table = self._table("probes")
            if not table.row_count:
                self.notify("no probe runs recorded for this node")
                return
            probe = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value or ""
            runs = self.row.view.probe_runs if self.row.view is not None else {}
            self.open_raw(probe, runs.get(probe))
            return
        finding = self.selected_finding()
        if finding is None:
            self.notify("no finding selected")
            return
        self.open_raw(finding.evidence.probe or finding.check_id, self.run_id_of(finding))

    def open_raw(self, probe: str, run_id: int | None) -> None:
        """Show stored run ``run_id`` of ``probe``."""
        store = self.console_app.store
        if store is None:
            self.notify("no history database is open, so raw output is not kept", severity="warning")
            return
        output = store.probe_output(run_id) if run_id is not None else None
        if output is None:
            self.notify(f"no stored output for {safe(probe)}", severity="warning", markup=False)
            return
        stdout, stderr = output
        self.app.push_screen(RawOutputScreen(f"{self.node_name} · {probe} · run #{run_id}", stdout, stderr))

    def action_back(self) -> None:
        """Back to the node list."""
        self.app.pop_screen()
