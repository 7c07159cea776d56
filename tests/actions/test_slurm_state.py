"""Slurm node-state readers against outputs captured from a real Slurm 22.05.8 lab (see data/slurm/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given

from console.actions.slurm_state import SlurmNode, parse_nodes_json, parse_show_node, parse_sinfo_nodes
from console.probes.base import ParseError
from tests.actions.conftest import DATA
from tests.probes.fuzz import FUZZ_SETTINGS, mangled_outputs

SLURM = DATA / "slurm"
OURS = "instinct-console: xgmi link down | gpu3 [sweep 12]"

# The lab's nodes as every 22.05 reader must see them: (state, reason, user).
LAB_22_05 = {
    "gpu001": ("IDLE", None, None),
    "gpu002": ("DRAINED", OURS, "root"),
    "gpu003": ("DRAINED", "ops: reseat riser", "root"),
    "gpu004": ("DRAINING", "instinct-console: ras: uncorrectable ecc", "root"),
    "gpu005": ("DOWN", "dead psu", "root"),
    "gpu006": ("DRAINED", "unreachable", "root"),
}


@pytest.mark.parametrize(
    ("sample", "parse"),
    [
        ("sinfo_json.json", parse_nodes_json),
        ("scontrol_show_node_oneliner.txt", parse_show_node),
        ("scontrol_show_node.txt", parse_show_node),
        ("sinfo_nodes.txt", parse_sinfo_nodes),
    ],
)
def test_every_reader_sees_the_lab_the_same(sample: str, parse: object) -> None:
    nodes = parse((SLURM / sample).read_text())  # type: ignore[operator]
    seen = {name: (n.state, n.reason, n.reason_user) for name, n in nodes.items()}
    assert seen == LAB_22_05


def test_show_node_keeps_the_stamp_apart_from_a_reason_with_brackets() -> None:
    node = parse_show_node((SLURM / "scontrol_show_node_oneliner.txt").read_text())["gpu002"]
    assert node.reason == OURS
    assert (node.reason_user, node.reason_time) == ("root", "2026-11-29T21:14:55")
    assert (node.base, node.flags) == ("IDLE", ("DRAIN",))


def test_draining_node_is_busy_with_drain_flag() -> None:
    node = parse_nodes_json((SLURM / "sinfo_json.json").read_text())["gpu004"]
    assert (node.base, node.flags, node.state) == ("ALLOCATED", ("DRAIN",), "DRAINING")
    assert node.reason_time is not None and node.resumable


def test_newer_json_with_state_lists_and_number_objects() -> None:
    nodes = parse_nodes_json((SLURM / "scontrol_show_node_json_24.11.json").read_text())
    assert (nodes["gpu101"].state, nodes["gpu101"].reason, nodes["gpu101"].reason_user) == ("IDLE", None, None)
    assert nodes["gpu101"].reason_time is None  # number 0: never set
    assert nodes["gpu102"].state == "DRAINING"
    assert nodes["gpu102"].reason_time is not None and nodes["gpu102"].reason_time.startswith("2026-01-01")
    assert nodes["gpu103"].state == "DOWN+DRAIN"
    assert "NOT_RESPONDING" in nodes["gpu103"].flags


@pytest.mark.parametrize(
    ("line", "state", "flags"),
    [
        ("gpu1|idle*|none|Unknown|Unknown", "IDLE", ("NOT_RESPONDING",)),
        ("gpu1|drained*|x|root|2026-01-01T00:00:00", "DRAINED", ("DRAIN", "NOT_RESPONDING")),
        ("gpu1|mixed|none|Unknown|Unknown", "MIXED", ()),
        ("gpu1|drain|x|root|2026-01-01T00:00:00", "UNKNOWN+DRAIN", ("DRAIN",)),
        ("gpu1|idle~|none|Unknown|Unknown", "IDLE", ("POWERED_DOWN",)),
    ],
)
def test_sinfo_compact_states(line: str, state: str, flags: tuple[str, ...]) -> None:
    node = parse_sinfo_nodes(line + "\n")["gpu1"]
    assert (node.state, node.flags) == (state, flags)


def test_sinfo_reason_with_pipes_and_crlf() -> None:
    text = "noise before\r\ngpu7|drained|a|b|c [sweep 2]|root|2026-01-02T03:04:05\r\n"
    node = parse_sinfo_nodes(text)["gpu7"]
    assert (node.reason, node.reason_user, node.reason_time) == ("a|b|c [sweep 2]", "root", "2026-01-02T03:04:05")


def test_resumable_only_when_drained_down_or_failed() -> None:
    assert not SlurmNode(name="a", base="IDLE").resumable
    assert not SlurmNode(name="a", base="ALLOCATED").resumable
    assert SlurmNode(name="a", base="DOWN").resumable
    assert SlurmNode(name="a", base="IDLE", flags=("FAIL",)).resumable


@pytest.mark.parametrize("parse", [parse_nodes_json, parse_show_node, parse_sinfo_nodes])
@pytest.mark.parametrize("text", ["", "slurm_load_node error: Unable to contact slurm controller\n", "{}", "[1,2]"])
def test_unusable_answers_raise_parse_error_with_a_reason(parse: object, text: str) -> None:
    with pytest.raises(ParseError) as info:
        parse(text)  # type: ignore[operator]
    assert info.value.reason


def _total(parse: object, data: bytes) -> None:
    try:
        nodes = parse(data)  # type: ignore[operator]
    except ParseError as exc:
        assert exc.reason
        return
    assert nodes and all(isinstance(n, SlurmNode) and n.name for n in nodes.values())


SAMPLES: list[Path] = sorted(SLURM.glob("*.json")) + sorted(SLURM.glob("*.txt"))


@FUZZ_SETTINGS
@given(mangled_outputs(SAMPLES))
def test_every_reader_is_total(data: bytes) -> None:
    """Any bytes give nodes or a ParseError with a reason, from each reader (one input serves all three)."""
    for parse in (parse_nodes_json, parse_show_node, parse_sinfo_nodes):
        _total(parse, data)
