"""Loading check packs: the built-in ``checks/`` directory, then the operator's own directories.

A user file for the same model overrides built-in checks by id (a whole ``[[checks]]`` table), may add
new ones, and turns checks off by id with ``disable = ["pcie.replay"]`` in its ``[pack]`` table. A bad
file is a ``CheckConfigError`` naming the file and the field; so is a disabled id no pack defines.
"""

from __future__ import annotations

import re
import tomllib
from importlib import resources
from pathlib import Path

from pydantic import ValidationError

from console.checks.metrics import METRICS
from console.checks.spec import ORDERING, CheckPack, CheckSpec, PackInfo, SourcedValue
from console.inventory.model import GPU_MODELS
from console.probes.ids import PROBE_IDS


class CheckConfigError(ValueError):
    """A check file that cannot be used; the message names the file and the field."""


def builtin_checks_dir() -> Path:
    """``checks/`` of the source tree, or the copy shipped inside the wheel."""
    source_tree = Path(__file__).resolve().parents[3] / "checks"
    if source_tree.is_dir():
        return source_tree
    return Path(str(resources.files("console") / "_data" / "checks"))


_PLAIN = re.compile(r"[\w.$-]+", re.ASCII)


def _plain(name: object) -> str:
    """A key or id from the file as it may appear in a one-line message: plain words as is, the rest quoted."""
    text = str(name)
    return text if _PLAIN.fullmatch(text) else repr(text)


# A sourced variable is ``SourcedValue | Scalar``: pydantic names the union member it tried in the error's path
# (``pack.vars.x.SourcedValue.doc``), which is no field of the file.
_UNION_MEMBERS = {SourcedValue.__name__}


def _loc(loc: tuple[int | str, ...], pack: dict[str, object]) -> str:
    parts: list[str] = []
    for i, item in enumerate(loc):
        if item in _UNION_MEMBERS:
            continue
        if isinstance(item, int):
            if i > 0 and loc[i - 1] == "checks":
                checks = pack.get("checks")
                if isinstance(checks, list) and item < len(checks) and isinstance(checks[item], dict):
                    check_id = checks[item].get("id")
                    parts.append(f"[{item}](id={_plain(check_id)})" if check_id else f"[{item}]")
                    continue
            parts.append(f"[{item}]")
        else:
            parts.append(f".{_plain(item)}" if parts else _plain(item))
    return "".join(parts)


def load_pack_file(path: Path) -> CheckPack:
    """Read and validate one pack file."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CheckConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CheckConfigError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:
        raise CheckConfigError(f"{path}: not valid TOML: nested too deeply") from None
    try:
        pack = CheckPack.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise CheckConfigError(f"{path}: field {_loc(first['loc'], data)}: {first['msg']}") from None
    model = pack.pack.model.upper()
    if model not in (*GPU_MODELS, COMMON_MODEL):
        raise CheckConfigError(f"{path}: field pack.model: unknown GPU model {pack.pack.model!r}")
    for index, check in enumerate(pack.checks):
        where = f"{path}: field checks[{index}](id={_plain(check.id)})"
        if check.metric not in METRICS:
            raise CheckConfigError(f"{where}.metric: unknown metric {check.metric!r}")
        if check.compare == "pin" and not check.pin_field:
            raise CheckConfigError(f"{where}.pin_field: required when compare = 'pin'")
        if check.compare == "threshold" and not (check.fail_if or check.warn_if):
            raise CheckConfigError(f"{where}: a threshold check needs fail_if or warn_if")
        for field, probe in [*((f"requires[{i}]", p) for i, p in enumerate(check.requires)),
                             ("when_unsupported", check.when_unsupported)]:  # fmt: skip
            if probe is not None and probe not in PROBE_IDS:
                raise CheckConfigError(f"{where}.{field}: no probe is called {_plain(probe)}{_known_probes()}")
    for probe in pack.pack.timeouts:
        if probe not in PROBE_IDS:
            raise CheckConfigError(f"{path}: field pack.timeouts: no probe is called {_plain(probe)}{_known_probes()}")
    return pack


def _known_probes() -> str:
    return f" (the probes: {', '.join(sorted(PROBE_IDS))})"


# Variables every check may use without declaring them: they come from the inventory.
_CONTEXT_VARS = {"gpu_count"}
COMMON_MODEL = "ALL"


def _check_variables(pack: CheckPack, origin: dict[str, Path]) -> None:
    known = set(pack.pack.vars) | _CONTEXT_VARS
    values = pack.pack.values()
    for check in pack.checks:
        if not check.enabled:
            continue
        for cond in check.conditions():
            if cond is None or not cond.operand.startswith("$"):
                continue
            where = f"{origin.get(check.id, '<checks>')}: field checks(id={_plain(check.id)})"
            name = cond.operand[1:]
            if name not in known:
                raise CheckConfigError(
                    f"{where}: unknown variable {_plain(cond.operand)} for model {_plain(pack.pack.model)}"
                )
            value = values.get(name)
            # "80" in quotes would compare as no number on any GPU: every GPU UNKNOWN, found only on a sweep.
            if (
                cond.op in ORDERING
                and name in values
                and (isinstance(value, bool) or not isinstance(value, int | float))
            ):
                raise CheckConfigError(
                    f"{where}: {cond.op} {_plain(cond.operand)} needs a number, but model {_plain(pack.pack.model)}"
                    f" sets {_plain(name)} = {_plain(repr(value))} (write it without quotes)"
                )


def load_packs(extra_dirs: list[Path] | None = None) -> dict[str, CheckPack]:
    """Packs per GPU model: the common pack merged with each model's, built-in first, then the operator's.

    Later files override earlier checks by id and variables by name.
    """
    loaded: list[tuple[Path, CheckPack]] = []
    for directory in [builtin_checks_dir(), *(extra_dirs or [])]:
        if not directory.is_dir():
            raise CheckConfigError(f"{directory}: check directory does not exist")
        loaded.extend((path, load_pack_file(path)) for path in sorted(directory.glob("*.toml")))
    packs: dict[str, CheckPack] = {}
    origin: dict[str, dict[str, Path]] = {}
    for model in GPU_MODELS:
        merged = CheckPack(pack=PackInfo(model=model))
        where: dict[str, Path] = {}
        disabled: set[str] = set()
        for scope in (COMMON_MODEL, model):
            for path, pack in loaded:
                if pack.pack.model.upper() == scope:
                    merged = _merge(merged, pack)
                    where.update({c.id: path for c in pack.checks})
                    disabled.update(pack.pack.disable)
        # Turned off after every file is merged: a site's common file may disable a model pack's check.
        merged.checks = [c.model_copy(update={"enabled": False}) if c.id in disabled else c for c in merged.checks]
        if merged.checks:
            packs[model] = merged
            origin[model] = where
    for model, pack in packs.items():
        _check_variables(pack, origin[model])
    defined = {check.id for pack in packs.values() for check in pack.checks}
    for path, pack in loaded:
        unknown = [name for name in pack.pack.disable if name not in defined]
        if unknown:  # a typo would leave the check on while the operator believes it off
            raise CheckConfigError(f"{path}: field pack.disable: no check is called {', '.join(map(_plain, unknown))}")
    return packs


def _merge(base: CheckPack, override: CheckPack) -> CheckPack:
    checks: dict[str, CheckSpec] = {c.id: c for c in base.checks}
    for check in override.checks:
        checks[check.id] = check
    description = override.pack.description or base.pack.description
    info = base.pack.model_copy(
        update={
            "vars": {**base.pack.vars, **override.pack.vars},
            "timeouts": {**base.pack.timeouts, **override.pack.timeouts},
            "description": description,
        }
    )
    return CheckPack(pack=info, checks=list(checks.values()))
