"""The console's pages at its scale goals (issue 24) in headless chromium: one PostgreSQL tenant with 100,000 API
keys, 10,000 groups, 2,000 members and 500 service accounts (tests.console_seed, COPY), the real management server
serving the real build (console/dist), the seeded tenant admin's session cookie.

Measured for each page (console/e2e/scale.mjs), REPEATS loads in one browser: the time from navigation to the first
row of its table on screen (the page is usable then), p50 and p95, the API calls one load makes, and the time and
calls of its next page. Goals: interactive within 1 s, at most 3 calls a load. The usage pages' aggregates are
`bench console_scale`'s; this run seeds few usage rows (CONSOLE_BROWSER_USAGE_ROWS, default 10,000).

Needs PostgreSQL (SWITCHBOARD_BENCH_PG_URL), chromium and node; says so and skips otherwise.
"""

from __future__ import annotations

import json
import os
import time

from bench._backends import backends, using
from bench.common import running_server
from server.tokens import mint_token
from tests.console.harness import DIST, not_ready, run_script
from tests.console_seed import seed_tenant
from tests.pg_urls import libpq_url

REPEATS = 7
GOAL_MS = 1000
GOAL_CALLS = 3


def _p(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main() -> None:
    if "postgresql" not in backends() and "given" not in backends():
        print("console_browser needs PostgreSQL (SWITCHBOARD_BENCH_PG_URL); skipped")
        return
    reason = not_ready()
    if reason is not None:
        print(f"console_browser: {reason}; skipped")
        return
    os.environ["SWITCHBOARD_CONSOLE_DIR"] = str(DIST)
    backend = "given" if "given" in backends() else "postgresql"
    with using(backend):
        async with running_server() as (base, _port, settings):
            url = libpq_url(settings.database_url)
            started = time.perf_counter()
            rows = int(os.environ.get("CONSOLE_BROWSER_USAGE_ROWS", "10000"))
            seeded = seed_tenant(url, usage_rows=rows)
            import psycopg

            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("VACUUM ANALYZE")
            counts = ", ".join(f"{k} {v:,}" for k, v in seeded.counts.items())
            print(f"seeded in {time.perf_counter() - started:.0f} s: {counts}")
            tenant = f"{base}/console/t/{seeded.tenant_id}"
            pages = [
                {"name": "keys", "url": f"{tenant}/keys"},
                {"name": "groups", "url": f"{tenant}/groups"},
                {"name": "group (every member)", "url": f"{tenant}/groups/{seeded.big_group_id}"},
                {"name": "members", "url": f"{tenant}/members"},
                {"name": "service accounts", "url": f"{tenant}/service-accounts"},
            ]
            session = mint_token(settings, user_id=seeded.admin_user_id, ttl_seconds=3600)
            found = await run_script(
                "scale.mjs", {"base": base, "session": session, "repeats": REPEATS, "pages": pages}
            )
            print(f"{'page':24} {'p50 ms':>7} {'p95 ms':>7} {'calls':>5} {'next ms':>8} {'next calls':>10}")
            for name, result in found.items():
                times = result["times"]
                print(
                    f"{name:24} {_p(times, 0.5):7d} {_p(times, 0.95):7d} {len(result['calls']):5d} "
                    f"{result['nextMs']:8d} {result['nextCalls']:10d}"
                )
            slowest = max(_p(r["times"], 0.95) for r in found.values())
            most = max(len(r["calls"]) for r in found.values())
            met = json.dumps({"met": slowest <= GOAL_MS and most <= GOAL_CALLS})
            print(
                f"goals: interactive within {GOAL_MS} ms (slowest p95 {slowest} ms), "
                f"at most {GOAL_CALLS} calls a load (most {most}); {met}"
            )
