"""The engine's commands: one handler per command type, plans that cross the wire as they are, and every
catalogued action (accepting a baseline too) carried out on the engine side."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import json
import typing
from pathlib import Path

import pytest

from console.actions.model import ActionKind, ActionPlan, ActionResult
from console.checks import load_packs
from console.inventory import load_inventory
from console.model.findings import NodeVerdict, Status
from console.service import commands
from console.service.assembly import EngineSpec
from console.service.commands import Command, ExecuteAction, PlanAction, handle, perform
from console.service.context import close_context, open_context
from console.service.wire import decode, encode
from console.store import Store

CLUSTER = """name = "lab"
[ssh]
port = 9
[[pools]]
name = "a"
gpu_model = "MI300X"
nodes = "127.0.0.[11-12]"
[[pools]]
name = "b"
gpu_model = "MI300X"
nodes = "127.0.0.[13-14]"
"""


def test_no_isinstance_chain_chooses_what_a_command_does() -> None:
    tree = ast.parse(Path(commands.__file__).read_text())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "isinstance"]
    assert calls == [], [ast.unparse(c) for c in calls]


@pytest.mark.parametrize("command_type", typing.get_args(Command), ids=lambda t: t.__name__)
def test_every_command_type_has_its_own_handler(command_type: type) -> None:
    assert handle.dispatch(command_type) is not handle.dispatch(object)


def test_something_that_is_no_command_is_refused() -> None:
    with pytest.raises(TypeError, match="not an engine command"):
        asyncio.run(handle("drain everything", None))  # type: ignore[arg-type]


def _swept(store: Store, status: str, verdicts: dict[str, Status]) -> int:
    """A sweep ended ``status`` with the node verdicts ``verdicts`` (node -> status) in pools a and b."""
    sweep_id = store.start_sweep("quick", "lab", "")
    for node, verdict in verdicts.items():
        pool = "a" if node in ("127.0.0.11", "127.0.0.12") else "b"
        store.record_node(sweep_id, pool, NodeVerdict(node=node, status=verdict), {"rocm": "7.0.2"})
    store.finish_sweep(sweep_id, status, {})
    return sweep_id


def test_accepting_a_baseline_is_planned_and_carried_out_on_the_engine_side(tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text(CLUSTER)
    spec = EngineSpec(load_inventory(tmp_path / "c.toml"), load_packs(), tmp_path / "h.sqlite")
    with contextlib.closing(Store(spec.store_path)) as store:
        healthy = _swept(store, "done", dict.fromkeys(["127.0.0.11", "127.0.0.12", "127.0.0.13"], Status.PASS))
        failing = _swept(store, "done", {"127.0.0.11": Status.PASS, "127.0.0.13": Status.FAIL})

    async def run() -> tuple[ActionPlan, ActionPlan, ActionResult, ActionPlan]:
        context = open_context(spec, lambda _event: None)
        try:
            refused = await perform(context, PlanAction(ActionKind.ACCEPT, ("b", "a"), sweep_id=failing))
            plan = await perform(context, PlanAction(ActionKind.ACCEPT, ("b", "a"), "new firmware", healthy))
            # The plan the console shows crosses the wire as it is, and comes back the same to be run.
            plan = decode(encode(plan)[4:])
            done = await perform(context, ExecuteAction(plan))
            unswept = await perform(context, PlanAction(ActionKind.ACCEPT, ("a",)))
            return refused, plan, done, unswept
        finally:
            await close_context(context)

    refused, plan, done, unswept = asyncio.run(run())
    assert refused.refused is not None and "127.0.0.13" in refused.refused and "--allow-failing" in refused.refused
    assert plan.refused is None and plan.targets == ("a", "b")
    assert plan.notes == (f"pool a: baseline sweep #none -> #{healthy}", f"pool b: baseline sweep #none -> #{healthy}")
    assert done.ok and done.outcome == f"sweep #{healthy} is the baseline of a, b"
    assert unswept.refused == "wait for a full sweep to finish"
    with contextlib.closing(Store(spec.store_path)) as store:
        assert store.baselines() == {"a": healthy, "b": healthy}
        entry = store.audit_log(1)[0]
        # Audited as the CLI's accept is: the same action and inputs, intent and outcome in one row.
        assert entry["action"] == "accept" and json.loads(entry["targets"]) == ["a", "b"]
        assert json.loads(entry["inputs"]) == {"sweep": healthy, "reason": "new firmware"}
