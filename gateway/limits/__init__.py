"""Rate limits, concurrency caps and token budgets in the gateway (issue 25).

`limiter` admits and settles calls against the policies of server.domain.limits, counting in the store `setup`
picks (server.store.limit_counters: in process; server.store.redis_counters: Redis shared by replicas;
server.store.shared_counters: memory shared by a gateway's workers); `estimate` is what a call reserves; `headers`
writes OpenAI's rate-limit headers.
gateway.calls is the one place every inference surface passes through.
"""

from gateway.limits.limiter import Grant, Limiter, LimitExceeded
from gateway.limits.setup import open_limiter

__all__ = ["Grant", "LimitExceeded", "Limiter", "open_limiter"]
