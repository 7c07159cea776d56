"""The declarative check format of ``checks/*.toml``: one pack per GPU model, each threshold sourced.

A check reads one metric (see ``console.checks.metrics``), compares it with ``fail_if`` and then
``warn_if`` (``"< 32"``, ``"!= $gpu_count"``, ``"> 0"``, ``"== false"``), and otherwise passes.
``relative_to = "pool-median"`` compares the value divided by the pool median instead (fleet-relative
checks where vendors publish nothing); ``compare = "pin"`` compares a stack field with the pool pin.
"""

from __future__ import annotations

import functools
import math
import operator
import re
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from console.model.family import CHECK_FAMILIES, Family
from console.model.findings import Remedy, SourceKind, Status

_OPS: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
_CONDITION = re.compile(r"^\s*(<=|>=|==|!=|<|>)\s*(\S.*?)\s*$")
ORDERING = ("<", "<=", ">", ">=")  # the operators that need a number
# ``docs/sources/rccl.md#mi300x-all-reduce-busbw``: a Markdown file and the anchor of a heading in it.
_DOC = re.compile(r"[^\s#]+\.md#[\w-]+")
_DOC_DESCRIPTION = (
    "where the figure is explained: a Markdown file, relative to the repository, and the anchor of its heading,"
    " e.g. docs/sources/rccl.md#mi300x-all-reduce-busbw (tests/engine/test_sources.py holds the built-in packs to"
    " it: the file, the heading and the figure under it)"
)


def _check_family(value: object) -> object:
    """A check's family is one the node grid has a column for (``console.model.family``): a word no family
    has would be a check whose findings no column shows."""
    if isinstance(value, str) and value in CHECK_FAMILIES:
        return value
    raise ValueError(f"unknown family {value!r} (a check's family is one of: {', '.join(CHECK_FAMILIES)})")


def _doc_reference(value: str | None) -> str | None:
    """A ``doc`` as written, or ValueError saying the form it must take."""
    if value is not None and not _DOC.fullmatch(value):
        raise ValueError(
            f"doc {value!r} must be '<file>.md#<heading anchor>', e.g. docs/sources/rccl.md#mi300x-all-reduce-busbw"
        )
    return value


class Condition(BaseModel):
    """``op`` and a literal or ``$variable`` operand."""

    model_config = ConfigDict(frozen=True)
    op: str
    operand: str

    @classmethod
    def parse(cls, text: str) -> Condition:
        """Read ``"< 32"`` style text; ValueError names what is wrong.

        A literal operand must be usable: ``<``, ``<=``, ``>``, ``>=`` take a number (or a ``$variable``),
        and no operand may be NaN or infinite, which would never (or always) hold on any node.
        """
        match = _CONDITION.match(text)
        if match is None:
            raise ValueError(f"condition {text!r} must be '<op> <value>' with op one of {' '.join(_OPS)}")
        op, operand = match.group(1), match.group(2)
        if not operand.startswith("$"):
            value = _literal(operand)
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"condition {text!r}: {operand} is not a finite number")
            if op in ORDERING and not isinstance(value, float):
                raise ValueError(f"condition {text!r}: {op} needs a number or a $variable, not {operand!r}")
        return cls(op=op, operand=operand)

    def resolve(self, variables: dict[str, Any]) -> Any:
        """The operand as a number, bool or string; ``$name`` is looked up in ``variables``."""
        if self.operand.startswith("$"):
            return variables.get(self.operand[1:])
        return _literal(self.operand)

    def holds(self, value: Any, variables: dict[str, Any]) -> bool | None:
        """Whether ``value <op> operand``; None when they cannot be compared (e.g. unset variable)."""
        return self.holds_for(value, self.resolve(variables))

    def holds_for(self, value: Any, operand: Any) -> bool | None:
        """``holds`` with the operand already resolved (a node's checks resolve each operand once)."""
        if operand is None or value is None:
            return None
        if isinstance(operand, float) and isinstance(value, bool):
            value = float(value)
        if isinstance(operand, float) and not isinstance(value, int | float):
            return None
        try:
            return bool(_OPS[self.op](value, operand))
        except TypeError:
            return None

    def text(self, variables: dict[str, Any]) -> str:
        """Human form with variables filled in: ``< 32``."""
        operand = self.resolve(variables)
        shown = _fmt(operand) if operand is not None else self.operand
        return f"{self.op} {shown}"


def _literal(raw: str) -> float | bool | str:
    """A written operand: ``true``/``false``, a number, else a string (quotes around it dropped)."""
    lowered = raw.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return float(raw)
    except ValueError:
        return raw.strip("\"'")


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


class CheckSpec(BaseModel):
    """One check as written in a pack."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    title: str = Field(min_length=1)
    family: Family
    metric: str = Field(min_length=1)
    fail_if: str | None = None
    warn_if: str | None = None
    compare: Literal["threshold", "pin"] = "threshold"
    pin_field: str | None = Field(None, description="pin key for compare='pin', e.g. rocm or firmware.PSP_SOSDRV")
    on_mismatch: Status = Status.WARN
    relative_to: Literal["pool-median", "node-median"] | None = Field(
        None, description="compare value / median: of the pool (fleet pass) or of the node's own subjects"
    )
    min_fleet: int = Field(4, ge=2, description="fewest peers for a fleet-relative verdict")
    on_missing: Status = Status.UNKNOWN
    unit: str | None = None
    value_names: dict[str, str] = Field(
        default_factory=dict, description="how to show values, e.g. {true = 'up', false = 'down'}"
    )
    source: str = Field(min_length=1)
    source_kind: SourceKind
    doc: str | None = Field(None, description=_DOC_DESCRIPTION)
    requires: list[str] = Field(default_factory=list, description="probe ids whose output the metric reads")
    requires_any: bool = Field(
        False, description="the metric reads whichever of ``requires`` answered (alternative sources of one value)"
    )
    when_unsupported: str | None = Field(
        None,
        description="a probe whose own checks judge the same thing when the node's tool does not support this"
        " check's probe (an older amd-smi without `xgmi -l`: TransferBench measures every link); the check is"
        " then SKIP, and UNKNOWN with the tool's words when that probe did not run or answer either",
    )
    action: Remedy | None = Field(
        None, description="what a FAIL calls for: monitor, rerun, restore-stack, reset-gpu, reboot, inspect or rma"
    )
    warn_action: Remedy = Field(Remedy.MONITOR, description="what a WARN calls for")
    action_source: str | None = Field(
        None, description="where the action comes from (docs/sources/actions.md lists every check's)"
    )
    enabled: bool = True

    _valid_doc = field_validator("doc")(_doc_reference)
    _valid_family = field_validator("family", mode="before")(_check_family)

    @field_validator("fail_if", "warn_if")
    @classmethod
    def _valid_condition(cls, value: str | None) -> str | None:
        if value is not None:
            Condition.parse(value)
        return value

    def conditions(self) -> tuple[Condition | None, Condition | None]:
        """Parsed ``fail_if`` and ``warn_if``."""
        fail = _condition(self.fail_if) if self.fail_if else None
        warn = _condition(self.warn_if) if self.warn_if else None
        return fail, warn


@functools.lru_cache(maxsize=1024)
def _condition(text: str) -> Condition:
    # Every check of every node asks again; a pack has a few dozen distinct texts and Condition is frozen.
    return Condition.parse(text)


class SourcedValue(BaseModel):
    """A threshold value with where it comes from, so findings can cite the source of the number."""

    model_config = ConfigDict(extra="forbid")
    value: float | int | str | bool
    source: str = Field(min_length=1)
    source_kind: SourceKind
    doc: str | None = Field(None, description=_DOC_DESCRIPTION)

    _valid_doc = field_validator("doc")(_doc_reference)


Scalar = float | int | str | bool


class PackInfo(BaseModel):
    """The ``[pack]`` table: which GPU model the pack is for, and the variables its checks use.

    ``model = "ALL"`` marks the common pack whose checks apply to every model; a model's own pack
    supplies the variables and may override common checks by id.
    """

    model_config = ConfigDict(extra="forbid")
    model: str
    description: str = ""
    vars: dict[str, SourcedValue | Scalar] = Field(default_factory=dict)
    timeouts: dict[str, SourcedValue] = Field(
        default_factory=dict,
        description="probe id -> seconds: a long test's timeout on this model, below the catalogue's flat one",
    )
    disable: list[str] = Field(
        default_factory=list,
        description="ids of checks packs loaded before this one define, turned off (a site's override)",
    )

    @field_validator("timeouts")
    @classmethod
    def _positive(cls, timeouts: dict[str, SourcedValue]) -> dict[str, SourcedValue]:
        for probe, timeout in timeouts.items():
            value = timeout.value
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < math.inf:
                raise ValueError(f"timeouts.{probe} = {value!r} is not a number of seconds above 0")
        return timeouts

    def timeout_of(self, probe: str) -> float | None:
        """This model's timeout for ``probe``, when the pack gives one."""
        timeout = self.timeouts.get(probe)
        return float(timeout.value) if timeout is not None else None

    @field_validator("vars")
    @classmethod
    def _finite(cls, variables: dict[str, SourcedValue | Scalar]) -> dict[str, SourcedValue | Scalar]:
        # A NaN or infinite threshold behind a $variable would never (or always) hold, as in a condition.
        for name, variable in variables.items():
            value = variable.value if isinstance(variable, SourcedValue) else variable
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{name} = {value} is not a finite number")
        return variables

    def values(self) -> dict[str, Scalar]:
        """Variables as plain values."""
        return {k: v.value if isinstance(v, SourcedValue) else v for k, v in self.vars.items()}

    def source_of(self, name: str) -> SourcedValue | None:
        """The sourced form of variable ``name`` if it has one."""
        value = self.vars.get(name)
        return value if isinstance(value, SourcedValue) else None


class CheckPack(BaseModel):
    """A whole ``checks/<model>.toml`` file."""

    model_config = ConfigDict(extra="forbid")
    pack: PackInfo
    checks: list[CheckSpec] = Field(default_factory=list)
