"""Fuzzing the parsers the tool-specific property tests do not cover: host facts and auto-detection.

The six tool parsers have their own 2000-case property tests under tests/probes (reused by the long
mode). Here: the host-fact parsers the sweep runs on every node (os-release, uname, ROCm release,
modinfo, dkms, rdma link, ibv_devinfo), each answering with its typed value or ParseError; and
``parse_output`` without a tool, which runs every detector on whatever it is given.
The host samples under fixtures/host were rendered by the simulator (no real capture exists yet).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from console.model.host import DkmsModule, NicPort, OsRelease
from console.probes import parse_output
from console.probes.base import ParseError, to_text
from console.probes.host import (
    parse_dkms_status,
    parse_ibv_devinfo,
    parse_modinfo_version,
    parse_os_release,
    parse_rdma_link,
    parse_single_line,
)
from tests.probes.fuzz import FUZZ_SETTINGS, assert_total, mangled_outputs

HOST = Path(__file__).parent / "fixtures" / "host"
REAL = Path(__file__).parents[1] / "fixtures" / "real"
ALL_TOOL_SAMPLES = sorted(p for p in REAL.rglob("*") if p.is_file() and p.name != "INDEX.md")
# Detection runs six detectors per input: CI runs fewer cases; the long mode sets FUZZ_EXAMPLES.
DETECT_SETTINGS = settings(
    FUZZ_SETTINGS,
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "300")),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

HostParser = Callable[[str], Any]
HOST_PARSERS: dict[str, tuple[HostParser, Callable[[Any], bool], list[Path]]] = {
    "os-release": (parse_os_release, lambda r: isinstance(r, OsRelease), [HOST / "os-release.txt"]),
    "single line": (
        lambda text: parse_single_line(text, "kernel release"),
        lambda r: isinstance(r, str) and r == r.strip() and bool(r),
        [HOST / "uname-r.txt", HOST / "rocm-version.txt"],
    ),
    "modinfo": (parse_modinfo_version, lambda r: isinstance(r, str) and bool(r), [HOST / "modinfo-amdgpu.txt"]),
    "dkms": (
        parse_dkms_status,
        lambda r: isinstance(r, list) and all(isinstance(m, DkmsModule) for m in r),
        [HOST / "dkms-status.txt"],
    ),
    "rdma link": (
        parse_rdma_link,
        lambda r: isinstance(r, list) and all(isinstance(p, NicPort) for p in r),
        [HOST / "rdma-link.txt"],
    ),
    "ibv_devinfo": (
        parse_ibv_devinfo,
        lambda r: isinstance(r, list) and all(isinstance(p, NicPort) for p in r),
        [HOST / "ibv_devinfo.txt"],
    ),
}


def _host_total(name: str, data: bytes) -> None:
    parse, typed, _ = HOST_PARSERS[name]
    try:
        result = parse(to_text(data))
    except ParseError as exc:
        assert exc.reason
        return
    assert typed(result), f"{name} returned {result!r}"


def _host_property(name: str) -> Callable[..., None]:
    @FUZZ_SETTINGS
    @given(data=mangled_outputs(HOST_PARSERS[name][2]))
    def prop(data: bytes) -> None:
        _host_total(name, data)

    return prop


test_os_release_is_total = _host_property("os-release")
test_single_line_is_total = _host_property("single line")
test_modinfo_is_total = _host_property("modinfo")
test_dkms_is_total = _host_property("dkms")
test_rdma_link_is_total = _host_property("rdma link")
test_ibv_devinfo_is_total = _host_property("ibv_devinfo")


@DETECT_SETTINGS
@given(data=mangled_outputs(ALL_TOOL_SAMPLES))
def test_detection_over_every_tools_output_is_total(data: bytes) -> None:
    assert_total(lambda text, kind: parse_output(text, kind=kind), to_text(data))


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("ibv_devinfo", "hca_id: mlx5_0\n\tport: 1\n\t\tstate:\n"),
        ("rdma link", "link mlx5_0/" + "9" * 5000 + " state ACTIVE\n"),
    ],
    ids=["ibv_devinfo empty state", "rdma link 5000-digit port"],
)
def test_former_host_parser_escapes_stay_fixed(name: str, text: str) -> None:
    _host_total(name, text.encode())


def test_dkms_status_refuses_a_long_line_quickly() -> None:
    started = time.process_time()
    with pytest.raises(ParseError, match="not a dkms status line"):  # no ": state": not dkms output
        parse_dkms_status("amdgpu/6.12.12, " + "x" * 10_000 + "\n")
    assert time.process_time() - started < 1.0
