"""A workload the site declares in its cluster file: what it runs, where, and what its figures must be.

``docs/workloads.md`` says how to write one. Every field is checked when the file is read: a bad
pattern, an unpinned image or a criterion that cannot be compared is an error naming the field, not a
workload that later passes for want of a figure.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
# A criterion compares a figure with a number: "< 11", ">= 0.95", "!= 0".
CRITERION = re.compile(r"^\s*(<=|>=|==|!=|<|>)\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ContainerSpec(_Strict):
    """The site's image the command runs in, pinned: a workload accepted on one image is not rerun on another."""

    runtime: Literal["docker", "podman", "apptainer"]
    image: str = Field(min_length=1)
    options: list[str] = Field(default_factory=list, description="more options for the runtime's run/exec")

    @model_validator(mode="after")
    def _pinned(self) -> ContainerSpec:
        image = self.image
        if self.runtime == "apptainer" and not image.startswith(("docker://", "oras://", "library://")):
            return self  # a .sif file: its path names the version
        reference = image.split("://", 1)[-1]
        if "@sha256:" in reference:
            return self
        name, _, tag = reference.rpartition(":")
        if not name or "/" in tag or tag in ("", "latest"):
            raise ValueError(f"image {image!r} is not pinned: give a digest (@sha256:...) or a tag other than latest")
        return self

    @property
    def reference(self) -> ImageReference:
        """How ``image`` names its content (``image_reference``)."""
        return image_reference(self.runtime, self.image)


ImageReference = Literal["digest", "tag", "file"]


def image_reference(runtime: str, image: str) -> ImageReference:
    """How an image names what runs: a digest names one content for good; a tag names whatever the
    registry or the node's cache holds under it today (it can move); an apptainer ``.sif`` path names a file."""
    if runtime == "apptainer" and not image.startswith(("docker://", "oras://", "library://")):
        return "file"
    return "digest" if "@sha256:" in image else "tag"


class StepsSpec(_Strict):
    """How to read the per-step lines of a run (loss, grad norm, tokens/s at each step), so a run that went bad
    names the first step that did, not only its result line: a pattern with a named group ``step`` and one
    named group per figure, and optional bands (``bands = {loss = "> 12"}``: a step whose figure meets the
    condition is out of band). A non-finite figure at a step is always bad."""

    pattern: str = Field(min_length=1, description="a pattern with the named groups step and one per figure")
    bands: dict[str, str] = Field(default_factory=dict, description="figure -> the condition that is out of band")
    source: str | None = Field(None, min_length=1, description="where the bands come from")

    @model_validator(mode="after")
    def _readable(self) -> StepsSpec:
        try:
            groups = set(re.compile(self.pattern).groupindex)
        except re.error as exc:
            raise ValueError(f"steps pattern: {exc}") from None
        if "step" not in groups or len(groups) < 2:
            raise ValueError("steps pattern needs a named group 'step' and one named group per figure")
        for figure, condition in self.bands.items():
            if figure not in groups:
                raise ValueError(f"steps band on {figure!r}: the pattern has no group of that name")
            if not CRITERION.match(condition):
                raise ValueError(f"steps band {condition!r} must be an operator and a number, e.g. '> 12'")
        if self.bands and self.source is None:
            raise ValueError("steps bands need their source")
        return self


class ResultsSpec(_Strict):
    """Where the figures are in what the workload prints: a JSON line, or one pattern per figure."""

    json_prefix: str | None = Field(None, min_length=1, description="a line starting with it, then one JSON object")
    regex: dict[str, str] = Field(default_factory=dict, description="figure -> pattern with one group")
    steps: StepsSpec | None = None

    @model_validator(mode="after")
    def _one_way(self) -> ResultsSpec:
        if (self.json_prefix is None) == (not self.regex):
            raise ValueError("give json_prefix or regex (one of them)")
        for figure, pattern in self.regex.items():
            try:
                groups = re.compile(pattern).groups
            except re.error as exc:
                raise ValueError(f"regex {figure}: {exc}") from None
            if groups != 1:
                raise ValueError(f"regex {figure}: needs exactly one group (the figure), has {groups}")
        return self


class Criterion(_Strict):
    """One line a figure must stay within, with where that line comes from."""

    figure: str = Field(min_length=1)
    fail_if: str | None = None
    warn_if: str | None = None
    source: str = Field(min_length=1, description="where the line comes from: an accepted run, a vendor figure")

    @field_validator("fail_if", "warn_if")
    @classmethod
    def _comparable(cls, value: str | None) -> str | None:
        if value is not None and not CRITERION.match(value):
            raise ValueError(f"{value!r} must be an operator (< <= > >= == !=) and a number, e.g. '< 11'")
        return value

    @model_validator(mode="after")
    def _some_line(self) -> Criterion:
        if self.fail_if is None and self.warn_if is None:
            raise ValueError(f"criterion on {self.figure!r} needs fail_if or warn_if")
        return self


Better = Literal["higher", "lower", "either"]


class AcceptanceSpec(_Strict):
    """How a rerun is held to the accepted figures (docs/workloads.md, "Tolerance and repeatability"):
    each figure's tolerance (a fraction of the accepted figure), which way is better when the criteria
    do not say, and how many passing runs on one stack acceptance needs."""

    runs: int = Field(2, ge=1, le=20, description="passing runs on one stack acceptance needs (their spread is read)")
    tolerance: dict[str, float] = Field(
        default_factory=dict, description="figure -> how far from the accepted figure a run may be (0.05: 5 %)"
    )
    better: dict[str, Better] = Field(default_factory=dict, description="figure -> which way is better")
    source: str | None = Field(None, min_length=1, description="where the tolerances come from")

    @field_validator("tolerance")
    @classmethod
    def _fractions(cls, value: dict[str, float]) -> dict[str, float]:
        for figure, fraction in value.items():
            if not 0 < fraction < 1:
                raise ValueError(f"tolerance of {figure!r} is {fraction}: a fraction above 0 and below 1 (0.05: 5 %)")
        return value

    @model_validator(mode="after")
    def _sourced(self) -> AcceptanceSpec:
        if self.tolerance and self.source is None:
            raise ValueError("a declared tolerance needs its source (e.g. the run-to-run spread of the accepted runs)")
        return self


class WorkloadSpec(_Strict):
    """One declared workload."""

    name: str
    pools: list[str] = Field(default_factory=list, description="pools it applies to; every pool when empty")
    nodes: int = Field(1, ge=1, description="1: on each node; N: once per N nodes through srun")
    timeout_s: float = Field(gt=0)
    command: list[str] = Field(min_length=1, description="argv, never a shell line")
    container: ContainerSpec | None = None
    results: ResultsSpec
    criteria: list[Criterion] = Field(default_factory=list)
    acceptance: AcceptanceSpec = Field(default_factory=AcceptanceSpec)

    @field_validator("name")
    @classmethod
    def _plain(cls, value: str) -> str:
        if not _NAME.fullmatch(value):
            raise ValueError(f"{value!r}: letters, digits, '.', '_' and '-' (findings and reports cite it)")
        return value

    @model_validator(mode="after")
    def _figures_known(self) -> WorkloadSpec:
        if self.results.regex:
            unknown = sorted({c.figure for c in self.criteria} - set(self.results.regex))
            if unknown:
                raise ValueError(f"criteria name figures no regex reads: {', '.join(unknown)}")
        return self
