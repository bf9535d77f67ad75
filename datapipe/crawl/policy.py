"""How every fetch from a crawl behaves: one policy, Common Crawl's published limits as its defaults.

Common Crawl serves all its users together from a few thousand requests a second, and says so (its notes on
errors and its own downloader, ``cc-downloader``, set the same figures): at most about
ten files in flight per client; on 503 or S3's ``SlowDown`` (and 429) back off exponentially with jitter, from one
second up to an hour; a 403 means access is refused (stop, do not retry); fetch whole files, not record by record
(a range crawler was blocked in 2025). Ranges here only resume a file whose transfer broke.

:meth:`FetchPolicy.verdict` says what a response or a failure means; :meth:`FetchPolicy.wait` how long to wait
before the next try ("full jitter": uniform in [0, min(cap, base * 2**attempt)], as AWS's architecture note on
back-off recommends, so that many clients throttled together do not return together).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from datapipe import __version__

RETRY, STOP, OK = "retry", "stop", "ok"
# answers that mean "slow down, then ask again": throttling and a server's temporary failures
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# answers that mean the file will not be had by asking again: refused, or not there
STOP_STATUSES = frozenset({401, 403, 404, 410})


@dataclass(frozen=True)
class FetchPolicy:
    """The limits of fetching from a crawl (every figure overridable in the mixture).

    ``in_flight``: files fetched at once by one build; ``base_s`` and ``cap_s``: the first back-off's ceiling and
    the largest; ``give_up_s``: how long one file may spend waiting in back-off before it is reported missing (not
    skipped silently); ``attempts``: tries of one file at the most; ``timeout_s``: a connection or a read that
    stalls this long is a failure (and a retry); ``mb_per_s``: what the dry run assumes one transfer moves a
    second, to say how long a plan takes (nothing throttles to it)."""

    in_flight: int = 10
    base_s: float = 1.0
    cap_s: float = 3600.0
    give_up_s: float = 6 * 3600.0
    attempts: int = 30
    timeout_s: float = 60.0
    mb_per_s: float = 20.0  # one transfer's throughput, as the dry run's time estimate assumes (not a limit)
    user_agent: str = f"datapipe/{__version__} (pretraining data builds)"

    def __post_init__(self) -> None:
        if self.in_flight < 1 or self.attempts < 1:
            raise ValueError("fetch policy: in_flight and attempts must be >= 1")
        if not 0 < self.base_s <= self.cap_s or self.give_up_s <= 0 or self.timeout_s <= 0:
            raise ValueError("fetch policy: expected 0 < base_s <= cap_s, give_up_s > 0 and timeout_s > 0")
        if self.mb_per_s <= 0:
            raise ValueError("fetch policy: expected mb_per_s > 0")

    @staticmethod
    def verdict(status: int | None, body: bytes = b"") -> str:
        """``ok``, ``retry`` or ``stop`` for an HTTP status (``None``: the connection failed or broke, a retry).
        S3 answers throttling as 503 ``SlowDown``; some proxies as a 400 whose body says ``SlowDown``."""
        if status is None or status in RETRY_STATUSES or b"SlowDown" in body[:512]:
            return RETRY
        if 200 <= status < 300:
            return OK
        return STOP

    def wait(self, attempt: int, rng: random.Random) -> float:
        """Seconds to wait before try ``attempt + 1`` (``attempt`` from 0): uniform in [0, min(cap, base *
        2**attempt)]."""
        ceiling = min(self.cap_s, self.base_s * 2.0 ** min(attempt, 62))
        return rng.uniform(0.0, ceiling)
