"""Hypothesis strategies for the files operators write: cluster inventories and check packs.

Two kinds of input reach the loaders: files that are nearly right (the real samples, mangled the way
editors and copy-paste mangle them, from ``tests.probes.fuzz``) and files that are well-formed TOML
with the right keys but wrong values, types and shapes (``inventory_documents``,
``check_pack_documents``), which get past the TOML decoder into validation and expansion.
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from console.checks.metrics import METRICS
from console.inventory.model import GPU_MODELS

# The long mode (bench/fuzz_long.py) sets FUZZ_EXAMPLES=10000; CI runs fewer, since every case is a file.
CONFIG_FUZZ_SETTINGS = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "200")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=os.environ.get("FUZZ_RANDOM") is None,
)

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def toml_text(document: dict[str, Any]) -> str:
    """``document`` as TOML: one ``key = value`` line per top-level key, tables inline."""
    return "".join(f"{_key(k)} = {_value(v)}\n" for k, v in document.items())


def _string(text: str) -> str:
    # A JSON string is a TOML basic string, once DEL (which JSON leaves raw, TOML refuses) is escaped.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else _string(name)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + "}"


def _tree(leaf: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        leaf,
        lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
        max_leaves=8,
    )


scalars = st.one_of(st.text(max_size=24), st.integers(), st.floats(), st.booleans())
anything = _tree(scalars)
words = st.text(alphabet=st.characters(codec="utf-8"), max_size=16)


def _numbers() -> st.SearchStrategy[str]:
    # Small bounds and absurd ones: a typo like gpu[1-10000000] must be refused, not expanded.
    return st.one_of(st.integers(0, 40), st.integers(10**6, 10**40)).map(str)


def hostlists() -> st.SearchStrategy[str]:
    """Hostlist expressions: valid ranges, absurd ranges, padding, stray brackets and operators."""
    prefix = st.text(alphabet="abgnpu0123-_.", min_size=0, max_size=5)
    bounds = st.tuples(_numbers(), _numbers()).map(lambda ab: f"{ab[0]}-{ab[1]}")
    ranges = st.lists(st.one_of(_numbers(), bounds), min_size=1, max_size=3).map(lambda r: "[" + ",".join(r) + "]")
    item = st.tuples(prefix, st.lists(ranges, max_size=3), prefix).map(lambda t: t[0] + "".join(t[1]) + t[2])
    noise = st.sampled_from(["[", "]", ",", "@rack1", "!", "&", "^", " ", "[-]", "[1-", "\x00", "é"])
    return st.lists(st.one_of(item, noise), min_size=1, max_size=4).map("".join)


def _optional(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """A table holding any subset of ``fields``, plus, sometimes, a key the schema does not know."""
    known = st.fixed_dictionaries({}, optional=fields)
    return st.tuples(known, st.dictionaries(words, anything, max_size=1)).map(lambda t: {**t[1], **t[0]})


def _sometimes(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(good, good, anything)


def inventory_documents() -> st.SearchStrategy[dict[str, Any]]:
    """Cluster files with the inventory's keys and random values, types and shapes."""
    model = _sometimes(st.sampled_from([*GPU_MODELS, "mi300x", " MI355X ", "MI999", ""]))
    ssh = _optional(
        {
            "user": _sometimes(words),
            "port": _sometimes(st.integers(-5, 70000)),
            "identity_file": _sometimes(words),
            "known_hosts": _sometimes(words),
            "proxy_jump": _sometimes(words),
            "connect_timeout_s": _sometimes(st.floats()),
            "max_channels_per_node": _sometimes(st.integers(-2, 100)),
            "max_handshakes": _sometimes(st.integers(-2, 100)),
            "max_commands": _sometimes(st.integers(-2, 100)),
        }
    )
    pin = _optional(
        {
            "rocm": _sometimes(words),
            "amdgpu_driver": _sometimes(words),
            "firmware": _sometimes(st.dictionaries(words, words, max_size=2)),
        }
    )
    pool = _optional(
        {
            "name": _sometimes(words),
            "gpu_model": model,
            "gpu_count": _sometimes(st.integers(-1, 100)),
            "nodes": _sometimes(hostlists()),
            "labels": _sometimes(st.dictionaries(words, words, max_size=3)),
            "pin": _sometimes(pin),
        }
    )
    host = _optional(
        {
            "address": _sometimes(words),
            "port": _sometimes(st.integers(-1, 70000)),
            "user": _sometimes(words),
            "labels": _sometimes(st.dictionaries(words, words, max_size=2)),
        }
    )
    return _optional(
        {
            "name": _sometimes(words),
            "ssh": _sometimes(ssh),
            "slurm": _sometimes(_optional({"controller": _sometimes(words), "partition": _sometimes(words)})),
            "pools": _sometimes(st.lists(pool, max_size=3)),
            "hosts": _sometimes(st.dictionaries(st.one_of(hostlists(), words), host, max_size=3)),
        }
    )


def _conditions() -> st.SearchStrategy[str]:
    ops = st.sampled_from(["<", "<=", ">", ">=", "==", "!=", "=~", ""])
    operand = st.one_of(st.integers().map(str), st.floats().map(str), words, words.map(lambda w: "$" + w))
    return st.one_of(st.tuples(ops, operand).map(lambda t: f"{t[0]} {t[1]}"), words)


def check_pack_documents() -> st.SearchStrategy[dict[str, Any]]:
    """Check packs with the pack format's keys and random values, types and shapes."""
    sourced = _optional(
        {
            "value": _sometimes(scalars),
            "source": _sometimes(words),
            "source_kind": _sometimes(st.sampled_from(["vendor-spec", "estimate", "pin", "fleet", "bogus"])),
        }
    )
    check = _optional(
        {
            "id": _sometimes(words),
            "title": _sometimes(words),
            "family": _sometimes(st.sampled_from(["ecc", "xgmi", "inventory", "stack", ""])),
            "metric": _sometimes(st.sampled_from([*sorted(METRICS), "no.such.metric"])),
            "fail_if": _sometimes(_conditions()),
            "warn_if": _sometimes(_conditions()),
            "compare": _sometimes(st.sampled_from(["threshold", "pin", "regex"])),
            "pin_field": _sometimes(st.sampled_from(["rocm", "firmware.*", "firmware.PSP", ""])),
            "on_mismatch": _sometimes(st.sampled_from(["WARN", "FAIL", "PASS", "warn"])),
            "relative_to": _sometimes(st.sampled_from(["pool-median", "cluster"])),
            "min_fleet": _sometimes(st.integers(-1, 10)),
            "on_missing": _sometimes(st.sampled_from(["UNKNOWN", "SKIP", "FAIL"])),
            "unit": _sometimes(words),
            "value_names": _sometimes(st.dictionaries(words, words, max_size=2)),
            "source": _sometimes(words),
            "source_kind": _sometimes(st.sampled_from(["vendor-spec", "estimate", "bogus"])),
            "requires": _sometimes(st.lists(st.sampled_from(["amdsmi.metric", "host.os", "nope"]), max_size=2)),
            "enabled": _sometimes(st.booleans()),
        }
    )
    pack = _optional(
        {
            "model": _sometimes(st.sampled_from([*GPU_MODELS, "ALL", "all", "MI999"])),
            "description": _sometimes(words),
            "vars": _sometimes(st.dictionaries(words, st.one_of(scalars, sourced), max_size=3)),
        }
    )
    return _optional({"pack": _sometimes(pack), "checks": _sometimes(st.lists(check, max_size=3))})
