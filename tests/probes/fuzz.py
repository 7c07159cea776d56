"""Shared hypothesis strategies for parser robustness: mangled real outputs and random text.

Every parser must answer any input with a ``ParsedOutput`` or a ``ParseError``; nothing else.
CI runs ``FUZZ_EXAMPLES`` cases per parser (default 2000); the long mode sets it to 10000+.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from console.probes.base import ParsedOutput, ParseError

FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "2000"))

FUZZ_SETTINGS = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=os.environ.get("FUZZ_RANDOM") is None,
)


def _mutations(base: bytes) -> st.SearchStrategy[bytes]:
    lines = base.split(b"\n")
    n = max(len(lines), 1)
    truncated = st.integers(0, len(base)).map(lambda k: base[:k])
    reordered = st.permutations(lines).map(b"\n".join)
    dropped = st.sets(st.integers(0, n - 1), max_size=max(1, n // 3)).map(
        lambda drop: b"\n".join(line for i, line in enumerate(lines) if i not in drop)
    )
    crlf = st.just(base.replace(b"\n", b"\r\n"))
    garbage_at = st.tuples(st.integers(0, len(base)), st.binary(min_size=1, max_size=64)).map(
        lambda t: base[: t[0]] + t[1] + base[t[0] :]
    )
    non_utf8 = st.integers(0, len(base)).map(lambda k: base[:k] + b"\xff\xfe\xc3" + base[k:])
    duplicated = st.integers(0, n - 1).map(lambda k: b"\n".join([*lines[: k + 1], *lines[k:]]))
    number_swap = st.sampled_from([b"N/A", b"-1", b"99999999999999999999", b"nan", b"", b"0x", b"1e309"]).flatmap(
        lambda rep: st.integers(0, max(len(base) - 1, 0)).map(lambda k: _replace_number_at(base, k, rep))
    )
    return st.one_of(truncated, reordered, dropped, crlf, garbage_at, non_utf8, duplicated, number_swap)


def _replace_number_at(base: bytes, start: int, rep: bytes) -> bytes:
    i = start
    while i < len(base) and not base[i : i + 1].isdigit():
        i += 1
    j = i
    while j < len(base) and (base[j : j + 1].isdigit() or base[j : j + 1] == b"."):
        j += 1
    return base[:i] + rep + base[j:]


def mangled_outputs(samples: list[Path]) -> st.SearchStrategy[bytes]:
    """Real outputs mangled in the ways logs get mangled, plus empty and random inputs."""
    bases = [p.read_bytes() for p in samples]
    from_samples = st.sampled_from(bases).flatmap(_mutations) if bases else st.nothing()
    return st.one_of(
        from_samples,
        st.just(b""),
        st.binary(max_size=512),
        st.text(max_size=512).map(lambda t: t.encode("utf-8", "surrogatepass")),
    )


def assert_total(parse: Callable[[str, str | None], ParsedOutput], text: str, kind: str | None = None) -> None:
    """``parse`` must return a ParsedOutput or raise ParseError with a reason; anything else fails."""
    try:
        result = parse(text, kind)
    except ParseError as exc:
        assert exc.reason, "ParseError without a reason"
        return
    assert isinstance(result, ParsedOutput)
    result.model_dump_json()  # the result must serialise, too
