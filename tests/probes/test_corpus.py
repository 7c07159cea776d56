"""Every real output in tests/fixtures/real/ and corpus/ reads as an expert reads it (tests/fixtures/expected.toml).

For each file, ``parse`` (detection, then the tool's parser) and the judgement of ``instinct-console parse
--model M`` (M the model the expert names when a pack exists for it, else the one the output names) must give
the expert's tool, ``ok`` and verdict, as ``bench/corpus_score.py`` measures them. A file the console still
reads wrong is listed in ``UNREAD`` with the class of misread it shows, as a strict xfail: a fix that makes it
read right fails the test until its line is removed, so the list says only what is true.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings

from console.checks import CheckPack, load_packs
from console.commands.parse import judge
from console.probes import ParseError, parse_output
from tests.probes.fuzz import FUZZ_EXAMPLES, FUZZ_SETTINGS, assert_total, mangled_outputs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXPECTED: dict[str, dict[str, object]] = tomllib.loads((FIXTURES / "expected.toml").read_text(encoding="utf-8"))
# The model the expert names when the entry starts with one ("MI300X (196300 MB)"); "not stated (MI300-class)"
# names none, and the output must then name its model itself.
_MODEL = re.compile(r"(MI\d{3}[A-Z]?)\b")

# File -> the class of misread it still shows (why the console's reading differs from the expert's).
NO_MODEL = "not judged: neither the expert nor the output names a GPU model with a pack (nothing to judge against)"
NO_PROBE = "not judged: no check reads this tool and kind (rocm-smi, rocminfo, all_gather/alltoall, a2asweep, ...)"
INVENTORY = "an inventory (list, static, firmware, energy) reads PASS on identity or the tool's success; expert: n/a"
CUT_RUN = "a paste cut before the run's last lines reads as an unfinished run (FAIL), where the expert sees a cut copy"
UNREAD: dict[str, str] = {
    "real/amd-smi/firmware-mi300x-gpu0.txt": INVENTORY,
    "real/amd-smi/metric-energy-csv-watch-mi210.txt": INVENTORY,
    "real/amd-smi/static-asic-mi210-truncated-market-name.txt": INVENTORY,
    "real/amd-smi/static-json-mi210-rocm7-gpu_data-trimmed.json": INVENTORY,
    "real/amd-smi/static-subset-mi350x-gpu0-rocm7x-text.txt": INVENTORY,
    "corpus/amd-smi/list-e-cpx-mi300x-rocm641-excerpt.txt": INVENTORY,
    "real/amd-smi/topology-mi300x-8gpu-rocm610-5tables.txt": NO_MODEL,
    "real/amd-smi/xgmi-mi300x-8gpu-rocm610-kb.txt": NO_MODEL,
    "corpus/amd-smi/metric-throttle-2gpu-mi300-rocm630-excerpt.txt": NO_MODEL,
    "corpus/amd-smi/monitor-violation-16logical-rocm630-excerpt.txt": NO_MODEL,
    "corpus/amd-smi/monitor-q-process-table-103C-rocm620.txt": NO_MODEL,
    "corpus/amd-smi/metric-ecc-block-7blocks-rocm612.txt": NO_MODEL,
    "corpus/amd-smi/metric-ecc-and-ecc-blocks-rocm611-excerpt.txt": NO_MODEL,
    "corpus/amd-smi/monitor-viol-pviol-100-tviol-active-rocm640.txt": NO_MODEL,
    "corpus/amd-smi/xgmi-link-status-links-down-rocm640-excerpt.txt": NO_MODEL,
    "corpus/amd-smi/xgmi-metric-readable-units-8gpu-rocm640-excerpt.txt": NO_MODEL,
    "corpus/amd-smi/ras-cper-header-corrected-rocm641.txt": NO_MODEL,
    "corpus/amd-smi/monitor-guest-xcp-column-rocm710.txt": NO_MODEL,
    "corpus/amd-smi/metric-default-all-sections-rocm710-elided.txt": NO_MODEL,
    "corpus/amd-smi/xgmi-link-status-mvf-all-NA-mi3x-rocm712.txt": NO_MODEL,
    "corpus/amd-smi/monitor-w1-wide-violation-columns-rocm63x-excerpt.txt": NO_MODEL,
    "corpus/amd-smi/xgmi-metric-38gbps-8gpu-tb-faq.txt": NO_MODEL,
    "corpus/amd-smi/bad-pages-hex-one-retired-page-rocm711.txt": NO_MODEL,
    "corpus/transferbench/configfile-show-iterations-old-pipe-layout-2023.txt": NO_MODEL,
    "corpus/transferbench/a2a-dma-8gpu-hwqueues4-serialization-warn-v167-docs.txt": NO_MODEL,
    "corpus/transferbench/a2a-dma-8gpu-hwqueues8-v167-docs.txt": NO_MODEL,
    "corpus/rccl-tests/all_reduce_perf-2node-np16-ainic-table-tail.txt": NO_MODEL,
    "corpus/rocm-smi/concise-rocm24-2gpu-NA-power.txt": NO_MODEL,
    "corpus/rocm-smi/concise-rocm21-pclk-empty-sysfs-warning.txt": NO_MODEL,
    "corpus/rocm-smi/concise-2017-did-ecc-columns-powerplay-errors.txt": NO_MODEL,
    "corpus/amd-smi/partition-accelerator-no-sudo-all-NA-rocm640.txt": (
        "a refusal to a user without root reads as the tool failing (FAIL), where nothing was read (UNKNOWN)"
    ),
    "real/rocm-smi/concise-mi300a-tpx-NA.txt": NO_PROBE,
    "real/rocm-smi/concise-mi300x-8gpu-rocm642.txt": NO_PROBE,
    "real/rocm-smi/concise-mi350x-8gpu-rocm70.txt": NO_PROBE,
    "real/rocm-smi/concise-mi355x-8gpu-under-load-k8s-tab-artifacts.txt": NO_PROBE,
    "real/rocminfo/rocminfo-mi300x-4gpu-2cpu.txt": NO_PROBE,
    "real/rccl-tests/all_gather_perf-mi250x-4node-srun-label-lowperf.txt": NO_PROBE,
    "real/rccl-tests/alltoall_perf-mi355x-4node-pollara-table-tail.txt": NO_PROBE,
    "real/transferbench/a2asweep-mi300x-v167.txt": NO_PROBE,
    "real/transferbench/nicrings-4node-mi350x-v167.txt": NO_PROBE,
    "corpus/transferbench/a2asweep-mi350x-v167-docs.txt": NO_PROBE,
    "corpus/amd-smi/static-partition-cpx-nps4-63of64-mi300x-amdsmi2542-excerpt.txt": NO_PROBE,
    "corpus/rocm-smi/showallinfo-json-mi250-1card-driver624.json": NO_PROBE,
    "real/transferbench/p2p-mi350x.txt": (
        "TransferBench p2p: pairs far below the node's other pairs are not compared with them (no relative rule)"
    ),
    "corpus/amd-smi/monitor-cpx-mi300x-secondary-partitions-NA-rocm641-excerpt.txt": (
        "partition modes: a CPX partition's VRAM (24 GB) is judged against the physical GPU's floor"
    ),
    "corpus/amd-smi/metric-ecc-block-grep-umc-correctable-mi300x.txt": (
        "fragment: a grepped ECC block count under the limit is a lower bound of the total, so proves no PASS"
    ),
    "corpus/rocminfo/rocminfo-grep-name-mi300x-2cpu-excerpt.txt": "rocminfo grep fragments are not recognised",
    "corpus/rocminfo/rocminfo-support-mi325x-condensed-by-author.txt": (
        "a rocminfo its author condensed (agents relabelled, pools on one line) reads as a failed run"
    ),
    "corpus/rccl-tests/all_reduce_perf-mi300x-g8-develop83d38d9-first-row-only.txt": CUT_RUN,
    "corpus/rccl-tests/all_reduce_perf-mi250x-np16-old-error-column-small-sizes-excerpt.txt": CUT_RUN,
    "corpus/rccl-tests/all_reduce_perf-mi250x-2node-g8-header-ranks-only-cut.txt": CUT_RUN,
    "corpus/rvs/rvs-summary-mi210-rvs130-cut-before-results.txt": CUT_RUN,
}


@dataclass(frozen=True)
class Reading:
    """What the console made of one file: the tool detected, ``ok``, the verdict and why."""

    tool: str
    ok: bool | None
    verdict: str
    reason: str


def read(path: Path, expert_model: str, packs: dict[str, CheckPack]) -> Reading:
    """``instinct-console parse [--model M] path``: the verdict is the pack's roll-up when judged; else FAIL
    when the tool reported a failure (exit 1), ``n/a`` when it did not, UNKNOWN when nothing was recognised."""
    named = _MODEL.match(expert_model)
    model = named.group(1) if named and named.group(1) in packs else None
    try:
        result = parse_output(path.read_bytes())
    except ParseError as exc:
        return Reading(exc.tool or "none", None, "UNKNOWN", f"parse error: {exc.reason}")
    judgement = judge(result, model, packs)
    if judgement.judged is not None:
        verdict = judgement.judged.verdict
        return Reading(result.tool.value, result.ok, verdict.status.value, verdict.reason)
    return Reading(result.tool.value, result.ok, "n/a" if result.ok else "FAIL", f"not judged: {judgement.reason}")


@pytest.fixture(scope="module")
def packs() -> dict[str, CheckPack]:
    return load_packs([])


def _cases() -> list[object]:
    return [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=UNREAD[name])) if name in UNREAD else name
        for name in EXPECTED
    ]


@pytest.mark.parametrize("name", _cases())
def test_reads_as_the_expert(name: str, packs: dict[str, CheckPack]) -> None:
    want = EXPECTED[name]
    got = read(FIXTURES / name, str(want.get("model", "")), packs)
    wanted = (want["tool"], want["ok"], want["verdict"])
    assert (got.tool, got.ok, got.verdict) == wanted, f"{got.reason}; expert: {want['why']}"


def test_every_sample_has_an_expected_reading() -> None:
    """A file added to real/ or corpus/ without its expert reading would never be scored."""
    files = {
        path.relative_to(FIXTURES).as_posix()
        for folder in ("real", "corpus")
        for path in (FIXTURES / folder).rglob("*")
        if path.is_file() and path.name != "INDEX.md"
    }
    assert sorted(files - set(EXPECTED)) == []
    assert sorted(set(EXPECTED) - files) == []


def test_unread_names_only_samples() -> None:
    assert sorted(set(UNREAD) - set(EXPECTED)) == []


# Detection runs every parser on each input: a quarter of the per-parser budget, over every sample of both folders.
_SAMPLES = sorted(
    p for folder in ("real", "corpus") for p in (FIXTURES / folder).rglob("*") if p.is_file() and p.name != "INDEX.md"
)


@settings(FUZZ_SETTINGS, max_examples=max(FUZZ_EXAMPLES // 4, 100))
@given(mangled_outputs(_SAMPLES))
def test_mangled_samples_are_read_or_refused_never_crash(data: bytes) -> None:
    assert_total(lambda text, _kind: parse_output(text), data.decode("utf-8", "replace"))
