"""How far a rerun may be from the accepted figures, and how far apart repeat runs may be (pure).

A workload's figures are held to the figures it was accepted with (the reference), not only to its
floors: a run whose figure moved the worse way by more than the figure's tolerance regressed, though
it passed every criterion. The tolerance is declared per figure in the cluster file
(``[workloads.acceptance] tolerance``, with its source), else the pack default ``DEFAULT_TOLERANCE``.
Which way is worse: as declared (``better``), else as the figure's criteria read (a ``fail_if = "<
11"`` floor: higher is better), else either way (a loss far below the accepted run's means the data
changed as surely as one far above). docs/workloads.md, "Tolerance and repeatability".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from console.model.workload import CRITERION, WorkloadSpec

# A figure may move this far the worse way from the accepted one (an estimate:
# docs/sources/estimates.md#workload-tolerance). The simulator's workloads vary by up to 3 % between runs.
DEFAULT_TOLERANCE = 0.05
DEFAULT_SOURCE = "estimate: pack default, 5 % (docs/sources/estimates.md#workload-tolerance)"
# Passing runs on one stack acceptance needs when the workload declares none (issue 37: "default 2").
DEFAULT_RUNS = 2
# The framework workload has no cluster-file declaration: its figures' better side, as the floors of
# checks/framework.toml read them (a GEMM floor "<": higher is better; non-finite results "> 0": lower).
_FRAMEWORK_BETTER = {"bf16_tflops": "higher", "fp8_tflops": "higher", "gemm_finite": "lower"}


@dataclass(frozen=True)
class Tolerance:
    """How far one figure may move the worse way, which way that is, and where the figure comes from."""

    fraction: float
    better: str  # "higher", "lower" or "either"
    source: str


@dataclass(frozen=True)
class Comparison:
    """One figure of a run beside the reference: the ratio run / reference and whether it is beyond tolerance."""

    figure: str
    reference: float
    value: float
    tolerance: Tolerance

    @property
    def ratio(self) -> float | None:
        """run / reference; None when the reference is 0 (no ratio: any worse value is beyond)."""
        if self.reference == 0 or not (math.isfinite(self.reference) and math.isfinite(self.value)):
            return None if self.reference == 0 else math.nan
        return self.value / self.reference

    @property
    def beyond(self) -> bool:
        """Whether the run moved the worse way by more than the tolerance (a non-finite value always has)."""
        if not math.isfinite(self.value):
            return True
        if not math.isfinite(self.reference):
            return False  # a NaN reference cannot be accepted; nothing to hold a run to
        better = self.tolerance.better
        if self.reference == 0:
            return (self.value < 0 and better != "lower") or (self.value > 0 and better != "higher")
        move = (self.value - self.reference) / abs(self.reference)
        worse = -move if better == "higher" else move if better == "lower" else abs(move)
        return worse > self.tolerance.fraction + 1e-12

    def line(self) -> str:
        """``tokens_per_s 51234 -> 45087 (x0.88, tolerance 5 %)``."""
        ratio = self.ratio
        shown = "no ratio" if ratio is None else f"x{ratio:.3g}" if math.isfinite(ratio) else "x nan"
        allowed = percent(self.tolerance.fraction)
        return f"{self.figure} {self.reference:g} -> {self.value:g} ({shown}, tolerance {allowed})"

    def as_json(self) -> dict[str, object]:
        """JSON-ready (a non-finite figure as text, as the records write it)."""
        ratio = self.ratio
        return {
            "figure": self.figure,
            "reference": _json(self.reference),
            "value": _json(self.value),
            "ratio": None if ratio is None else _json(ratio),
            "tolerance": self.tolerance.fraction,
            "better": self.tolerance.better,
            "source": self.tolerance.source,
            "beyond": self.beyond,
        }


def _json(value: float) -> float | str:
    return value if math.isfinite(value) else str(value)


def percent(fraction: float) -> str:
    """``0.05`` as ``5 %``."""
    return f"{fraction * 100:.3g} %"


def _criteria_better(spec: WorkloadSpec, figure: str) -> str:
    """Which way the figure's criteria say is better: a floor only (``<``) higher, a ceiling only lower."""
    sides = set()
    for criterion in spec.criteria:
        if criterion.figure != figure:
            continue
        for line in (criterion.fail_if, criterion.warn_if):
            found = CRITERION.match(line or "")
            if found is not None and found.group(1) in ("<", "<="):
                sides.add("higher")
            elif found is not None and found.group(1) in (">", ">="):
                sides.add("lower")
    return sides.pop() if len(sides) == 1 else "either"


def tolerance_of(spec: WorkloadSpec | None, figure: str) -> Tolerance:
    """The tolerance of ``figure`` of a workload (``spec`` None: the built-in framework workload)."""
    if spec is None:
        return Tolerance(DEFAULT_TOLERANCE, _FRAMEWORK_BETTER.get(figure, "either"), DEFAULT_SOURCE)
    declared = spec.acceptance
    better = declared.better.get(figure) or _criteria_better(spec, figure)
    if figure in declared.tolerance:
        return Tolerance(declared.tolerance[figure], better, str(declared.source))
    return Tolerance(DEFAULT_TOLERANCE, better, DEFAULT_SOURCE)


def runs_needed(spec: WorkloadSpec | None) -> int:
    """Passing runs on one stack acceptance needs (the framework's: the default)."""
    return spec.acceptance.runs if spec is not None else DEFAULT_RUNS


def compare(
    spec: WorkloadSpec | None, reference: Mapping[str, float], figures: Mapping[str, float]
) -> list[Comparison]:
    """Each figure both the reference and the run hold, the run beside the reference, by name."""
    return [
        Comparison(name, reference[name], figures[name], tolerance_of(spec, name))
        for name in sorted(reference)
        if name in figures
    ]


@dataclass(frozen=True)
class Spread:
    """How far apart one figure's values are over repeat runs: (max - min) / |mean|, against the tolerance."""

    figure: str
    values: tuple[float, ...]
    tolerance: Tolerance

    @property
    def fraction(self) -> float:
        """(max - min) / |mean|; NaN when a value is not finite; 0 for values all 0."""
        if not all(math.isfinite(v) for v in self.values):
            return math.nan
        mean = sum(self.values) / len(self.values)
        width = max(self.values) - min(self.values)
        return width / abs(mean) if mean else (0.0 if width == 0 else math.inf)

    @property
    def wider(self) -> bool:
        """Wider than the tolerance (a non-finite spread is)."""
        fraction = self.fraction
        return not math.isfinite(fraction) or fraction > self.tolerance.fraction + 1e-12

    def line(self) -> str:
        """``tokens_per_s spread 7.9 % over 2 runs (tolerance 5 %)``."""
        shown = percent(self.fraction) if math.isfinite(self.fraction) else str(self.fraction)
        count = len(self.values)
        return f"{self.figure} spread {shown} over {count} runs (tolerance {percent(self.tolerance.fraction)})"

    def as_json(self) -> dict[str, object]:
        """JSON-ready."""
        return {
            "figure": self.figure,
            "values": [_json(v) for v in self.values],
            "spread": _json(self.fraction),
            "tolerance": self.tolerance.fraction,
            "wider": self.wider,
        }


def spreads(spec: WorkloadSpec | None, runs: Sequence[Mapping[str, float]]) -> list[Spread]:
    """Per figure every run holds, its spread over ``runs`` (none with fewer than two runs)."""
    if len(runs) < 2:
        return []
    names: Iterable[str] = sorted(set.intersection(*(set(r) for r in runs)))
    return [Spread(name, tuple(r[name] for r in runs), tolerance_of(spec, name)) for name in names]
