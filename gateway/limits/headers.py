"""The rate-limit headers OpenAI sends, in its formats, so SDKs and clients read ours the same way.

`x-ratelimit-{limit,remaining,reset}-{requests,tokens}` describe the tightest requests-per-minute and tokens-per-minute
limits that apply (the one with the least left); resets are durations in Go's notation as OpenAI sends them ("1s",
"59.5s", "6m0s", "20ms"). A refusal adds `retry-after` (whole seconds, rounded up) and `retry-after-ms`, which the
openai SDKs honour up to two minutes; a refusal no wait can cure (a request larger than the limit, a budget that
resets in days) says `x-should-retry: false`.
"""

from __future__ import annotations

import math

from multidict import istr

__all__ = ["NAMES", "duration", "retry_headers"]


def _seconds(ms: int) -> str:
    """ms (< 60 000) as Go writes the seconds part: 1s, 59.5s, 3.25s, 0.001s."""
    whole, frac = divmod(ms, 1000)
    if frac % 10 == 0:  # whole hundredths, as every reset the limiter writes is: no formatting
        return str(whole) + _HUNDREDTHS[frac // 10]
    return f"{whole}.{frac:03d}".rstrip("0") + "s"


_HUNDREDTHS = ["s"] + [f".{h:02d}".rstrip("0") + "s" for h in range(1, 100)]


def duration(ms: int) -> str:
    """`ms` milliseconds (none if negative) in Go's time.Duration notation: 20ms, 1s, 59.5s, 6m0s, 1h2m3s."""
    if ms < 1000:
        return f"{max(ms, 0)}ms"
    if ms < 60_000:  # the common case (a minute window): one format
        return _seconds(ms)
    hours, ms = divmod(ms, 3_600_000)
    minutes, ms = divmod(ms, 60_000)
    if hours:
        return f"{hours}h{minutes}m{_seconds(ms)}"
    return f"{minutes}m{_seconds(ms)}"


# As multidict's case-folded names, so merging them into a response's headers, as every limited answer does, does not
# fold each name again (half the merge's cost).
NAMES = {
    kind: (istr(f"x-ratelimit-limit-{kind}"), istr(f"x-ratelimit-remaining-{kind}"), istr(f"x-ratelimit-reset-{kind}"))
    for kind in ("requests", "tokens")
}


# Beyond this the openai SDKs do not wait (MAX_RETRY_AFTER_DELAY), so a retry could not help.
SDK_RETRY_LIMIT = 120.0


def retry_headers(wait_seconds: float, *, curable: bool = True) -> dict[str, str]:
    wait = max(wait_seconds, 0.001)
    retry = curable and wait <= SDK_RETRY_LIMIT
    return {
        "retry-after": str(math.ceil(wait)),
        "retry-after-ms": str(math.ceil(wait * 1000)),
        "x-should-retry": "true" if retry else "false",
    }
