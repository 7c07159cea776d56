"""Times written by another clock, or by this one before it was stepped: a report, a cached check or a
stored sweep dated in the future is no evidence of freshness.

A clock stepped back (NTP after a dead RTC, an operator's ``date -s``) makes every check written before
the step look younger than it is; one dated ahead of now by more than a small skew would count as fresh
for ever. So such a time is UNKNOWN "clock skew", never fresh, and a time that is not a number at all
(NaN, infinite) is no time.
"""

from __future__ import annotations

import math

# How far ahead of this host's clock a time may be and still be read as now: clocks kept by NTP agree to
# well under a second; two minutes covers a node whose NTP has not settled yet, not a stepped clock.
CLOCK_SKEW_S = 120.0


def age_text(seconds: float) -> str:
    """``42 s``, ``7 min``, ``5 h``, ``3 d``: how an operator reads an age."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


def unusable_time(at: float, now: float, what: str) -> str | None:
    """Why ``at`` cannot date ``what`` (not a number, or ahead of ``now`` past the skew); None when it can."""
    if not math.isfinite(at):
        return f"{what} has no usable time ({at!r})"
    ahead = at - now
    if ahead > CLOCK_SKEW_S:
        return (
            f"clock skew: {what} is dated {age_text(ahead)} in the future (more than {CLOCK_SKEW_S:g} s ahead"
            " of this host's clock)"
        )
    return None
