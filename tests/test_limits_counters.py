"""The rate-limit counter stores (server.store.limit_counters, server.store.shared_counters,
server.store.redis_counters): one contract, in process, in memory shared by forked processes, and on a real Redis
(127.0.0.1:6379, a fresh key prefix per test), plus the windows, header formats and reservations built on them."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import socket
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from sqlalchemy import update

from gateway.limits.estimate import DEFAULT_OUTPUT_TOKENS, input_tokens, output_tokens
from gateway.limits.headers import duration, retry_headers
from gateway.limits.limiter import Grant, Limiter, LimitExceeded
from gateway.streaming import _text_size
from server.domain.limits import BudgetPeriod
from server.domain.limits_plan import budget_window, minute_window
from server.domain.principal import ApiKeyIdentity, ApiKeyType, Principal
from server.metering import CallKind
from server.store.db import Database as Db
from server.store.limit_counters import (
    ADMITTED,
    ASK_STORE,
    Counters,
    CountersUnavailable,
    MemoryCounters,
    Slot,
    Take,
)
from server.store.models import LimitPolicyRow, TenantRow
from server.store.permits import IDLE_SECONDS, PERMIT_LEASES, PERMIT_MIN_LIMIT
from server.store.redis_counters import RedisCounters
from server.store.shared_counters import PROBES, STRANDED_SECONDS, SharedCounters
from server.store.shared_permits import PermitTableBound, SharedPermits
from tests.conftest import Database, insert_rows, unique_name

REDIS_URL = "redis://127.0.0.1:6379/0"


def _redis_reachable() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=0.5):
            return True
    except OSError:
        return False


@pytest.fixture(params=["memory", "shared", "redis"])
async def counters(request: pytest.FixtureRequest) -> AsyncIterator[Counters]:
    if request.param == "memory":
        yield MemoryCounters()
        return
    if request.param == "shared":
        yield SharedCounters(slots=4096, workers=2)
        return
    if not _redis_reachable():
        pytest.fail("Redis is not running on 127.0.0.1:6379 (the tests and CI expect it there)")
    store = RedisCounters(REDIS_URL, prefix=f"test:{unique_name('counters')}:")
    try:
        yield store
    finally:
        await store.close()


def take(counter: str, limit: int, *, tokens: bool = False) -> Take:
    return Take(counter, limit, tokens, time.time() + 60)


async def test_takes_admit_up_to_the_limit_and_count_nothing_when_refused(counters: Counters) -> None:
    now = time.time()
    for expected in (1, 2, 3):
        outcome = await counters.acquire([take("rpm", 3), take("tpm", 100, tokens=True)], 10, [], "l", now)
        assert outcome.admitted and outcome.values == (expected, expected * 10)
    refused = await counters.acquire([take("tpm", 100, tokens=True), take("rpm", 3)], 10, [], "l", now)
    assert not refused.admitted and refused.refused == 1 and refused.values == (30, 3)
    # The refusal by the second limit counted nothing against the first.
    assert await counters.peek(["rpm", "tpm"], [], now) == (3, 30)
    too_big = await counters.acquire([take("tpm", 100, tokens=True)], 71, [], "l", now)
    assert not too_big.admitted and too_big.refused == 0
    assert (await counters.acquire([take("tpm", 100, tokens=True)], 70, [], "l", now)).values == (100,)
    # A counter at its limit admits nothing more, not even a call that reserves no tokens.
    assert not (await counters.acquire([take("tpm", 100, tokens=True)], 0, [], "l", now)).admitted


async def test_slots_hold_leases_until_finished(counters: Counters) -> None:
    now = time.time()
    assert (await counters.acquire([], 0, [Slot("cc", 2)], "a", now)).admitted
    assert (await counters.acquire([take("rpm", 10)], 0, [Slot("cc", 2)], "b", now)).admitted
    refused = await counters.acquire([take("rpm", 10)], 0, [Slot("cc", 2)], "c", now)
    assert not refused.admitted and refused.refused == 1
    assert await counters.peek(["rpm"], ["cc"], now) == (1, 2)  # the refused call took no request either
    await counters.finish([], 0, ["cc"], "a")
    assert (await counters.acquire([], 0, [Slot("cc", 2)], "c", now)).admitted
    assert await counters.peek([], ["cc"], now) == (2,)


async def test_finish_settles_reservations(counters: Counters) -> None:
    now = time.time()
    await counters.acquire([take("tpm", 1000, tokens=True)], 500, [], "a", now)
    assert await counters.finish([Take("tpm", 0, True, now + 60)], -380, [], "a") == (120,)
    assert await counters.finish([Take("tpm", 0, True, now + 60)], 30, [], "a") == (150,)
    # A settlement that comes after its window's counter expired leaves nothing behind.
    await counters.finish([Take("old", 0, True, now - 1)], -10, [], "a")
    assert await counters.peek(["old", "tpm"], [], now) == (0, 150)


async def test_concurrent_acquires_never_overshoot(counters: Counters) -> None:
    """64 callers at once against a limit of 25 (and, on Redis, through two clients standing for two replicas):
    exactly 25 admitted."""
    stores = [counters]
    if isinstance(counters, RedisCounters):
        stores.append(RedisCounters(REDIS_URL, prefix=counters._prefix))
    now = time.time()
    try:
        outcomes = await asyncio.gather(
            *(stores[i % len(stores)].acquire([take("burst", 25)], 0, [], f"l{i}", now) for i in range(64))
        )
    finally:
        for extra in stores[1:]:
            await extra.close()
    assert sum(o.admitted for o in outcomes) == 25


async def test_redis_unreachable_is_reported_as_such() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store = RedisCounters(f"redis://127.0.0.1:{port}/0", prefix="test:down:")
    try:
        with pytest.raises(CountersUnavailable):
            await store.acquire([take("x", 1)], 0, [], "l", time.time())
    finally:
        await store.close()


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (-5, "0ms"),
        (20, "20ms"),
        (1000, "1s"),
        (3250, "3.25s"),
        (59_500, "59.5s"),
        (59_881, "59.881s"),
        (1_010, "1.01s"),
        (60_000, "1m0s"),
        (360_000, "6m0s"),
        (3_723_250, "1h2m3.25s"),
    ],
)
def test_durations_are_written_as_openai_sends_them(ms: int, text: str) -> None:
    assert duration(ms) == text


def test_retry_headers_say_when_waiting_cannot_help() -> None:
    assert retry_headers(1.2) == {"retry-after": "2", "retry-after-ms": "1200", "x-should-retry": "true"}
    assert retry_headers(3600)["x-should-retry"] == "false"  # past what the SDK would wait


def test_windows() -> None:
    now = datetime(2026, 11, 25, 22, 30, 15, tzinfo=UTC).timestamp()
    minute = minute_window(now)
    assert minute.end - now == 45
    assert budget_window(BudgetPeriod.DAY, now).id == "d2026-11-25"
    assert budget_window(BudgetPeriod.DAY, now).end == datetime(2026, 11, 26, tzinfo=UTC).timestamp()
    week = budget_window(BudgetPeriod.WEEK, now)  # a Wednesday: the ISO week ends the next Monday
    assert week.id == "w2026-W48" and week.end == datetime(2026, 11, 30, tzinfo=UTC).timestamp()
    month = budget_window(BudgetPeriod.MONTH, datetime(2026, 12, 31, 23, 59, tzinfo=UTC).timestamp())
    assert month.id == "M2026-12" and month.end == datetime(2027, 1, 1, tzinfo=UTC).timestamp()


def reservation(
    kind: CallKind, body_bytes: int, payload: dict[str, Any] | None, default_output: int = DEFAULT_OUTPUT_TOKENS
) -> int:
    """What gateway.calls reserves for one model call: its input and the output its payload bounds."""
    return input_tokens(kind, body_bytes) + output_tokens(kind, payload, default_output)


def test_reservations() -> None:
    assert reservation(CallKind.CHAT_COMPLETION, 400, {"max_tokens": 50}) == 150
    # Both bounds set: the larger, whichever field carries it (upstreams differ in which they honour).
    assert reservation(CallKind.CHAT_COMPLETION, 401, {"max_completion_tokens": 7, "max_tokens": 50}) == 151
    assert reservation(CallKind.CHAT_COMPLETION, 401, {"max_completion_tokens": 50, "max_tokens": 7}) == 151
    # A preset agent's own bound stands in for the default, never for a bound the request sets.
    assert reservation(CallKind.CHAT_COMPLETION, 400, {}, default_output=50) == 150
    assert reservation(CallKind.CHAT_COMPLETION, 400, {"max_tokens": 20}, default_output=50) == 120
    assert reservation(CallKind.RESPONSE, 400, {"max_output_tokens": 20}, default_output=50) == 120
    assert reservation(CallKind.CHAT_COMPLETION, 400, {"max_tokens": 50, "n": 3}) == 250  # each choice may use it all
    assert reservation(CallKind.CHAT_COMPLETION, 400, {"n": 2}) == 100 + 2 * DEFAULT_OUTPUT_TOKENS
    assert reservation(CallKind.RESPONSE, 40, {}) == 10 + DEFAULT_OUTPUT_TOKENS
    assert reservation(CallKind.EMBEDDING, 400, {"max_tokens": 50}) == 100
    assert reservation(CallKind.TRANSCRIPTION, 10_000_000, None) == 0


def _chunk(delta: dict[str, Any], **extra: Any) -> bytes:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": None, **extra}
    return b"data: " + orjson.dumps({"id": "c", "model": "m", "choices": [choice], "usage": None}) + b"\n\n"


def _escaped_size(text: str) -> int:
    return len(orjson.dumps(text)) - 2  # as the string stands in JSON, quotes and backslashes escaped


@pytest.mark.parametrize(
    ("events", "size", "pieces"),
    [
        (_chunk({"role": "assistant", "content": "", "refusal": None}), 0, 0),
        (_chunk({"content": " world"}), 6, 1),
        (_chunk({"content": 'say "hi" \\'}), _escaped_size('say "hi" \\'), 1),
        (_chunk({"content": "a\\"}) + _chunk({"content": "b"}), _escaped_size("a\\") + 1, 2),
        (_chunk({"reasoning_content": "think", "content": "so"}), 7, 2),
        (_chunk({"reasoning": "think"}), 5, 1),
        (_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a": 2}'}}]}), _escaped_size('{"a": 2}'), 1),
        (_chunk({"content": "Hi"}, logprobs={"content": [{"token": "Hi", "logprob": -0.1}]}), 2, 1),
        (b'data: {"choices": [{"delta": {"content": "spaced"}}]}\n\n', 6, 1),
        (_chunk({}, finish_reason="stop"), 0, 0),
    ],
)
def test_the_text_a_stream_relays_is_measured_without_parsing(events: bytes, size: int, pieces: int) -> None:
    """What a stream cut off before its usage settles to (gateway.streaming, gateway.calls): the bytes of its text
    fields' string values, and how many there were."""
    assert _text_size(events) == (size, pieces)


async def test_redis_scripts_reload_after_a_flush_and_run_once() -> None:
    import redis.asyncio as redis

    store = RedisCounters(REDIS_URL, prefix=f"test:{unique_name('counters')}:")
    admin = redis.Redis.from_url(REDIS_URL)
    try:
        now = time.time()
        assert (await store.acquire([take("n", 10)], 0, [], "a", now)).values == (1,)
        await admin.script_flush()  # what a Redis restart does to loaded scripts
        outcomes = await asyncio.gather(*(store.acquire([take("n", 10)], 0, [], f"l{i}", now) for i in range(3)))
        assert sorted(o.values for o in outcomes) == [(2,), (3,), (4,)]  # each counted exactly once
        assert await store.peek(["n"], [], now) == (4,)
    finally:
        await admin.aclose()
        await store.close()


def _hammer(store: SharedCounters, worker: int, start: Any, out: multiprocessing.SimpleQueue[int]) -> None:
    """A forked worker: 3000 acquires of one request each against the shared limit of 4500; how many it got."""
    store.attach(worker)
    start.wait()  # both at once, so their operations interleave

    async def run() -> int:
        admitted = 0
        for i in range(3000):
            takes = [take("t|rpm", 4500), take("t|tpm", 10**6, tokens=True)]
            outcome = await store.acquire(takes, 3, [], f"{worker}-{i}", time.time())
            admitted += outcome.admitted
        return admitted

    out.put(asyncio.run(run()))


async def _reaped(procs: list[multiprocessing.process.BaseProcess]) -> None:
    """Start `procs` (forked from this one, so sharing its tables), wait for them all; each must exit with 0."""
    for proc in procs:
        proc.start()
    for proc in procs:
        await asyncio.to_thread(proc.join, 60)
        assert proc.exitcode == 0


async def _forked(target: Callable[..., None], *args: object) -> None:
    """`target(*args)` in a process forked from this one, waited for."""
    await _reaped([multiprocessing.get_context("fork").Process(target=target, args=args)])


async def _two_forked_workers(store: SharedCounters, work: Callable[..., None]) -> list[int]:
    """Workers 0 and 1 forked after `store` was made, each running `work(store, worker, start, out)`, both let go
    at once (`start`): the counts they put on `out`."""
    context = multiprocessing.get_context("fork")
    out: multiprocessing.SimpleQueue[int] = context.SimpleQueue()
    start = context.Barrier(2)
    await _reaped([context.Process(target=work, args=(store, worker, start, out)) for worker in range(2)])
    return [out.get(), out.get()]


async def test_shared_counters_are_exact_across_forked_processes() -> None:
    """Two processes forked after the table was made, 6000 calls between them, a limit of 4500: exactly 4500
    counted (without the locks, concurrent read-modify-writes lose counts and admit more)."""
    store = SharedCounters(slots=1024, workers=2)
    admitted = await _two_forked_workers(store, _hammer)
    assert sum(admitted) == 4500 and min(admitted) > 0  # both took part
    assert await store.peek(["t|rpm", "t|tpm"], [], time.time()) == (4500, 13500)


def _hold_and_die(store: SharedCounters, worker: int) -> None:
    store.attach(worker)
    outcome = asyncio.run(store.acquire([], 0, [Slot("t|cc", 2)], "held", time.time()))
    os._exit(0 if outcome.admitted else 1)  # dies with its lease held


async def test_a_dead_workers_leases_are_given_back() -> None:
    store = SharedCounters(slots=1024, workers=2)
    await _forked(_hold_and_die, store, 1)
    now = time.time()
    assert (await store.acquire([], 0, [Slot("t|cc", 2)], "mine", now)).admitted
    assert not (await store.acquire([], 0, [Slot("t|cc", 2)], "more", now)).admitted  # worker 1's lease still counts
    store.release_worker(1)  # what the gateway's parent does when it reaps worker 1
    assert await store.peek([], ["t|cc"], now) == (1,)
    assert (await store.acquire([], 0, [Slot("t|cc", 2)], "more", now)).admitted
    # Finishing a lease this process never held gives nothing back.
    await store.finish([], 0, ["t|cc"], "held")
    assert await store.peek([], ["t|cc"], now) == (2,)


def _die_locking(store: SharedCounters, worker: int, named: bool) -> None:
    """Die holding the region lock of tenant `t`: mid-operation (`named`, its holder word says so) or between taking
    the lock and naming itself. Reaches into the store: no public operation can be stopped half-way."""
    store.attach(worker)
    stripe = store._where("t|rpm").stripe
    if named:
        store._lock([stripe])
    else:
        store._locks[stripe].acquire()
    os._exit(0)


@pytest.mark.parametrize("named", [True, False], ids=["mid-operation", "before-naming-itself"])
async def test_a_region_lock_a_dead_worker_held_is_taken_over_when_it_is_reaped(named: bool) -> None:
    store = SharedCounters(slots=1024, workers=2)
    await _forked(_die_locking, store, 1, named)
    stripe = store._where("t|rpm").stripe
    assert not store._locks[stripe].acquire(False)  # the semaphore outlived its holder: still locked
    started = time.monotonic()
    store.release_worker(1)  # the parent reaps worker 1 (named: at once; else it would wait for ever)
    if not named:  # taken over only once held STRANDED_SECONDS by no one named: a lower bound, not a speed claim
        assert time.monotonic() - started >= STRANDED_SECONDS
    assert store._locks[stripe].acquire(False)  # free again
    store._locks[stripe].release()
    assert (await store.acquire([take("t|rpm", 3)], 0, [], "", time.time())).values == (1,)


async def test_a_full_shared_table_is_reported_and_expired_slots_are_reused() -> None:
    store = SharedCounters(slots=PROBES, workers=1, stripes=1)
    now = time.time()
    for i in range(PROBES):
        assert (await store.acquire([Take(f"t|c{i}", 5, False, now + 1)], 0, [], "l", now)).admitted
    with pytest.raises(CountersUnavailable):
        await store.acquire([take("t|one-too-many", 5)], 0, [], "l", now)
    # Once those windows have ended their slots are free again, and the old counts are gone.
    later = now + 2
    assert (await store.acquire([Take("t|one-too-many", 5, False, later + 60)], 0, [], "l", later)).values == (1,)
    assert await store.peek(["t|c0", "t|one-too-many"], [], later) == (0, 1)


# ---- worker-local permits on the shared table (server.store.shared_permits) -------------------------------------


async def test_shared_permits_admit_and_settle_covered_calls_without_the_table_and_go_back_when_idle() -> None:
    """A call the permits do not cover is counted in the table, taking a grant with it; the next calls are admitted
    and settled from it with no word of the table written (`values` are the counts less what this worker holds);
    spare leases above PERMIT_LEASES go back at once, a settlement larger than the permits hold is made in the table,
    and everything else goes back once idle, after which the table shows what the calls used and no lease."""
    table = SharedCounters(slots=1024, workers=1)
    permits = SharedPermits(table, idle_seconds=0.05)
    now = time.time()
    takes = [take("t|rpm", 10**6), take("t|tpm", 10**6, tokens=True)]
    slot = Slot("t|cc", 5000)
    bound = permits.bind(takes, [slot], now)
    assert isinstance(bound, PermitTableBound)

    async def table_counts() -> tuple[int, ...]:
        return await table.peek(["t|rpm", "t|tpm"], [slot.counter], now)

    assert bound.count(100, True, now) == ADMITTED and bound.values() == [1, 100]
    held = await table_counts()
    assert held[0] > 1 and held[1] > 100 and held[2] == 1 + PERMIT_LEASES  # the grant, counted in the table
    for _ in range(10):
        assert bound.count(100, True, now) == ADMITTED
    assert bound.values() == [11, 1100]
    for _ in range(10):
        assert bound.settle(7 - 100, True)
    assert bound.token_values() == [1100 - 10 * 93]
    assert await table_counts() == held
    assert bound.settle(7 - 100, True)  # the 33rd spare lease: above what a worker keeps, back to the table
    assert await table_counts() == (held[0], held[1], held[2] - 1)
    assert bound.count(100, True, now) == ADMITTED
    assert bound.settle(10**5, True)  # more than the permits hold: settled in the table
    assert bound.token_values() == [11 * 7 + 100 + 10**5]
    await asyncio.sleep(0.3)
    assert await table_counts() == (12, 11 * 7 + 100 + 10**5, 0)
    await permits.close()


async def test_shared_permits_give_back_the_lease_of_every_cap_a_call_held() -> None:
    """A call under two caps, ending when this worker already keeps all the spares it may: both caps' leases come
    back (the one above PERMIT_LEASES to the table), none is lost to the first cap's return."""
    table = SharedCounters(slots=1024, workers=1)
    permits = SharedPermits(table)
    now = time.time()
    caps = [Slot("t|key-cc", 5000), Slot("t|tenant-cc", 5000)]
    bound = permits.bind([], caps, now)
    assert bound.count(0, True, now) == ADMITTED  # its own lease and 32 spares of each cap
    assert bound.settle(0, True)
    assert await table.peek([], [c.counter for c in caps], now) == (PERMIT_LEASES, PERMIT_LEASES)
    await permits.close()
    assert await table.peek([], [c.counter for c in caps], now) == (0, 0)


async def test_shared_permits_bounded_by_the_room_left_are_not_topped_up_call_after_call() -> None:
    """A token limit whose room grants less than a top-up asks for (100,000 tokens: 1/8 of the room is 12,487, the
    top-up mark 25,600): the calls it covers still take no locked pass each, until half the grant is spent."""
    table = SharedCounters(slots=1024, workers=1)
    permits = SharedPermits(table)
    now = time.time()
    bound = permits.bind([take("t|tpm", 100_000, tokens=True)], [], now)
    assert bound.count(100, False, now) == ADMITTED
    (held,) = await table.peek(["t|tpm"], [], now)
    assert held == 100 + (100_000 - 100) // 8
    for _ in range(10):
        assert bound.count(100, False, now) == ADMITTED
    assert await table.peek(["t|tpm"], [], now) == (held,)
    assert bound.values() == [1100]
    await permits.close()
    assert await table.peek(["t|tpm"], [], now) == (1100,)


async def test_shared_permits_below_the_floor_or_off_an_event_loop_count_every_call_in_the_table() -> None:
    table = SharedCounters(slots=1024, workers=1)
    permits = SharedPermits(table)
    now = time.time()
    small = permits.bind([take("t|rpm", 10**6)], [Slot("t|cc", PERMIT_MIN_LIMIT - 1)], now)
    assert not isinstance(small, PermitTableBound)  # a cap too small to grant: the whole call is exact
    assert small.count(0, True, now) == ADMITTED
    assert await table.peek(["t|rpm"], ["t|cc"], now) == (1, 1)
    # No event loop, no timer to give idle permits back: none are taken.
    bound = permits.bind([take("t|big", 10**6)], [], now)
    assert await asyncio.to_thread(bound.count, 0, False, now) == ADMITTED
    assert await table.peek(["t|big"], [], now) == (1,)
    await permits.close()


def _spend(store: SharedCounters, worker: int, start: Any, out: multiprocessing.SimpleQueue[int]) -> None:
    """A forked worker counting through permits: 3000 calls against the shared limit of 2000; how many it got."""
    store.attach(worker)
    start.wait()

    async def run() -> int:
        permits = SharedPermits(store)
        bound = permits.bind([take("t|rpm", 2000), take("t|tpm", 10**7, tokens=True)], [], time.time())
        admitted = sum(bound.count(3, False, time.time()) == ADMITTED for _ in range(3000))
        await permits.close()
        return admitted

    out.put(asyncio.run(run()))


async def test_shared_permits_never_over_admit_across_forked_workers() -> None:
    """Permits are counted in the table when taken, and each worker spends its own on its next calls: two workers
    making 3000 calls each against 2000/minute admit exactly 2000 together, and the table shows exactly that."""
    store = SharedCounters(slots=1024, workers=2)
    assert sum(await _two_forked_workers(store, _spend)) == 2000
    assert await store.peek(["t|rpm", "t|tpm"], [], time.time()) == (2000, 6000)


def _hold_spares_and_die(store: SharedCounters, worker: int) -> None:
    store.attach(worker)

    async def run() -> None:
        bound = SharedPermits(store).bind([], [Slot("t|cc", 5000)], time.time())
        assert bound.count(0, True, time.time()) == ADMITTED
        assert bound.settle(0, True)  # its lease becomes a spare, held by this worker

    asyncio.run(run())
    os._exit(0)


async def test_a_dead_workers_spare_leases_are_given_back() -> None:
    store = SharedCounters(slots=1024, workers=2)
    await _forked(_hold_spares_and_die, store, 1)
    assert await store.peek([], ["t|cc"], time.time()) == (PERMIT_LEASES,)
    store.release_worker(1)
    assert await store.peek([], ["t|cc"], time.time()) == (0,)


@pytest.mark.parametrize("fail_closed", [False, True], ids=["fail-open", "fail-closed"])
async def test_a_full_shared_table_fails_open_or_closed_through_the_limiter(
    database: Database, fail_closed: bool
) -> None:
    """A call whose counter finds no free slot in the table is admitted unlimited or refused with a 429, as
    configured: never an error out of the limiter."""
    tenant = unique_name("lim")
    await insert_rows(database, TenantRow(id=tenant, name=tenant))
    await insert_rows(
        database,
        LimitPolicyRow(tenant_id=tenant, tier=1, quantities={}, scope_kind=1, scope_id="", requests_per_minute=10),
    )
    table = SharedCounters(slots=PROBES, workers=1, stripes=1)
    for i in range(PROBES):  # every slot of the one region live
        assert (await table.acquire([take(f"x|c{i}", 5)], 0, [], "", time.time())).admitted
    db = Db(database.url)
    limiter = Limiter(db, SharedPermits(table), ttl=60, fail_closed=fail_closed)
    caller = Principal(
        None, scoped_tenant_id=tenant, api_key=ApiKeyIdentity("k1", tenant, ApiKeyType.PERSONAL, "u", None)
    )
    try:
        if fail_closed:
            with pytest.raises(LimitExceeded, match="cannot be checked"):
                await limiter.admit(caller, "m", 1, with_slots=False)
        else:
            assert await limiter.admit(caller, "m", 1, with_slots=False) is None
    finally:
        await limiter.close()
        await db.close()


@pytest.fixture
async def replicas() -> AsyncIterator[tuple[RedisCounters, RedisCounters, RedisCounters]]:
    """Two gateway replicas counting in Redis with local permits, and an exact reader of the same counters."""
    prefix = f"test:{unique_name('permits')}:"
    if not _redis_reachable():
        pytest.fail("Redis is not running on 127.0.0.1:6379 (the tests and CI expect it there)")
    stores = (
        RedisCounters(REDIS_URL, prefix=prefix, permits=True),
        RedisCounters(REDIS_URL, prefix=prefix, permits=True),
        RedisCounters(REDIS_URL, prefix=prefix),
    )
    try:
        yield stores
    finally:
        for store in stores:
            await store.close()


async def test_permits_never_over_admit_and_are_spent_by_whoever_holds_them(
    replicas: tuple[RedisCounters, RedisCounters, RedisCounters],
) -> None:
    """Permits are counted in Redis when taken: two replicas alternating 3000 calls against 2000/minute admit
    exactly 2000 (what one holds when Redis has no room left it spends on its next calls), and Redis never shows
    more than the limit."""
    one, two, reader = replicas
    now = time.time()
    admitted = 0
    for i in range(3000):
        store = one if i % 2 else two
        outcome = await store.acquire([take("t|rpm", 2000), take("t|tpm", 10**6, tokens=True)], 5, [], f"l{i}", now)
        admitted += outcome.admitted
        if i % 250 == 0:
            assert (await reader.peek(["t|rpm"], [], now))[0] <= 2000
    assert admitted == 2000
    assert await reader.peek(["t|rpm"], [], now) == (2000,)


def _count_round_trips(store: RedisCounters) -> list[int]:
    """Counts, in the list returned, the round trips `store` makes to Redis: each takes a connection from its pool.
    (Wrapped on the pool, not by a subclass: RedisCounters may be compiled, and compiled classes take none.)"""
    counted = [0]
    pool = store._redis.connection_pool
    get_connection = pool.get_connection

    async def counting(*args: Any, **kwargs: Any) -> Any:
        counted[0] += 1
        return await get_connection(*args, **kwargs)

    pool.get_connection = counting
    return counted


async def test_token_permits_are_not_topped_up_and_given_back_call_after_call() -> None:
    """A token reservation is mostly refunded when its call ends (1041 reserved, 7 used). With 8 calls in flight,
    admitted together and ended together, the refunds must not push the permits over their cap and back under the
    top-up threshold round after round: 2000 calls take a handful of round trips, not hundreds."""
    store = RedisCounters(REDIS_URL, prefix=f"test:{unique_name('topup')}:", permits=True)
    round_trips = _count_round_trips(store)
    takes = [take("t|rpm", 10**9), take("t|tpm", 10**9, tokens=True)]
    try:
        for _ in range(250):
            for _ in range(8):
                assert (await store.acquire(takes, 1041, [], "l", time.time())).admitted
            await asyncio.sleep(0)  # the calls' own work: a top-up under way can answer meanwhile
            for _ in range(8):
                await store.finish([takes[1]], 7 - 1041, [], "l")
        assert round_trips[0] <= 20, round_trips
    finally:
        await store.close()


async def test_token_permits_the_room_left_bounded_are_not_topped_up_call_after_call() -> None:
    """A 20,000-token limit grants at most 1/8 of its room (2,487 to a 100-token call), and what it ever grants stays
    below the top-up mark of such calls' permits (25,600): the calls they cover must not each send a top-up."""
    store = RedisCounters(REDIS_URL, prefix=f"test:{unique_name('bounded')}:", permits=True)
    round_trips = _count_round_trips(store)
    takes = [take("t|tpm", 20_000, tokens=True)]
    try:
        for _ in range(20):
            assert (await store.acquire(takes, 100, [], "l", time.time())).admitted
            await asyncio.sleep(0.005)  # time for a top-up under way to come back
        assert round_trips[0] <= 3, round_trips
    finally:
        await store.close()


async def test_a_grant_of_tokens_is_not_given_back_when_the_call_that_took_it_ends() -> None:
    """A call that takes a grant of token permits reserves 1041 and uses 7: its refund lands on what it was granted,
    which must stay under the cap (a grant fills to the top-up target), not go back to Redis at once."""
    store = RedisCounters(REDIS_URL, prefix=f"test:{unique_name('grant')}:", permits=True)
    round_trips = _count_round_trips(store)
    tokens = take("t|tpm", 10**9, tokens=True)
    try:
        assert (await store.acquire([tokens], 1041, [], "l", time.time())).admitted
        await store.finish([tokens], 7 - 1041, [], "l")
        assert round_trips == [1]
    finally:
        await store.close()


async def test_leases_of_calls_admitted_while_a_grant_was_asked_for_go_back_together(
    replicas: tuple[RedisCounters, RedisCounters, RedisCounters],
) -> None:
    """40 calls arrive at once: the first asks for spare leases, the rest are admitted one by one meanwhile. When
    they end their leases outnumber what a replica keeps (PERMIT_LEASES): the surplus goes back in one round trip
    with the next trim, not one round trip per call, and what stays idle goes back after it."""
    one, _, reader = replicas
    round_trips = _count_round_trips(one)
    slot = Slot("t|cc", 10**4)
    now = time.time()
    outcomes = await asyncio.gather(*(one.acquire([], 0, [slot], f"l{i}", now) for i in range(40)))
    assert all(o.admitted for o in outcomes)
    held = (await reader.peek([], [slot.counter], now))[0]
    assert held == 40 + PERMIT_LEASES
    asked = round_trips[0]
    for i in range(40):
        await one.finish([], 0, [slot.counter], f"l{i}")
    assert round_trips[0] == asked  # kept until the trim
    await asyncio.sleep(IDLE_SECONDS * 0.5 + 0.05)
    assert (await reader.peek([], [slot.counter], time.time()))[0] in (held, PERMIT_LEASES)
    await asyncio.sleep(IDLE_SECONDS * 3)
    assert await reader.peek([], [slot.counter], time.time()) == (0,)
    assert round_trips[0] <= asked + 2


async def test_permits_held_idle_go_back_to_redis(replicas: tuple[RedisCounters, RedisCounters, RedisCounters]) -> None:
    one, _, reader = replicas
    now = time.time()
    outcome = await one.acquire([take("t|tpm", 10**6, tokens=True)], 100, [Slot("t|cc", 5000)], "a", now)
    assert outcome.admitted and outcome.values == (100,)  # the count, less what this replica holds for later
    held_tokens, held_leases = await reader.peek(["t|tpm"], ["t|cc"], now)
    assert held_tokens > 100 and held_leases > 1  # the permits it took are counted in Redis
    assert (await one.acquire([take("t|tpm", 10**6, tokens=True)], 100, [Slot("t|cc", 5000)], "b", now)).values == (
        200,
    )
    assert await reader.peek(["t|tpm"], ["t|cc"], now) == (held_tokens, held_leases)  # admitted from the permits
    await one.finish([Take("t|tpm", 0, True, now + 60)], -60, ["t|cc"], "a")
    await one.finish([Take("t|tpm", 0, True, now + 60)], -60, ["t|cc"], "b")
    await asyncio.sleep(IDLE_SECONDS * 3)
    # Unused, they went back: Redis shows what the calls used (2 x 40 tokens) and no lease held.
    assert await reader.peek(["t|tpm"], ["t|cc"], now) == (80, 0)


async def test_a_permit_bound_counts_what_the_permits_cover_and_leaves_the_rest_to_redis(
    replicas: tuple[RedisCounters, RedisCounters, RedisCounters],
) -> None:
    """What the limiter counts on with permits (`bind`): a call nothing held here covers is ASK_STORE (counted by
    `acquire`, which takes a grant); the next calls are admitted and settled from the grant without a round trip; a
    settlement larger than the units held is refused (False) for `finish` to make; once idle, everything goes back
    and Redis shows what the calls used and no lease."""
    one, _, reader = replicas
    round_trips = _count_round_trips(one)
    now = time.time()
    takes = [take("t|rpm", 10**6), take("t|tpm", 10**6, tokens=True)]
    slot = Slot("t|cc", 5000)
    bound = one.bind(takes, [slot], now)
    assert bound is not None
    assert bound.count(100, True, now) == ASK_STORE and round_trips[0] == 0
    assert (await one.acquire(takes, 100, [slot], "first", now)).admitted
    asked = round_trips[0]
    for _ in range(10):
        assert bound.count(100, True, now) == ADMITTED
    assert bound.values() == [11, 1100]  # the counts in Redis, less what this process holds for later calls
    for _ in range(9):
        assert bound.settle(7 - 100, True)
    assert bound.token_values() == [1100 - 9 * 93]
    assert round_trips[0] == asked
    assert not bound.settle(10**5, True)  # its lease given back, its 100,000 tokens left to `finish`
    assert await one.finish([takes[1]], 10**5, [], "") == (1100 - 9 * 93 + 10**5,)
    await one.finish([takes[1]], 7 - 100, [slot.counter], "first")
    await asyncio.sleep(IDLE_SECONDS * 3)
    assert await reader.peek(["t|rpm", "t|tpm"], [slot.counter], now) == (11, 10 * 7 + 100 + 10**5, 0)


async def test_limits_below_the_permit_floor_are_counted_call_by_call(
    replicas: tuple[RedisCounters, RedisCounters, RedisCounters],
) -> None:
    one, _, reader = replicas
    now = time.time()
    assert (await one.acquire([take("t|small", PERMIT_MIN_LIMIT - 1)], 0, [Slot("t|cc", 64)], "a", now)).admitted
    assert await reader.peek(["t|small"], ["t|cc"], now) == (1, 1)


async def test_permit_leases_never_exceed_a_concurrency_cap(
    replicas: tuple[RedisCounters, RedisCounters, RedisCounters],
) -> None:
    """1200 calls held at once through two replicas against a cap of 1000: never more than 1000 leases in Redis,
    and at most the spares the replicas hold (PERMIT_LEASES each) go unused."""
    one, two, reader = replicas
    now = time.time()
    outcomes = await asyncio.gather(
        *((one if i % 2 else two).acquire([], 0, [Slot("t|cap", 1000)], f"l{i}", now) for i in range(1200))
    )
    admitted = sum(o.admitted for o in outcomes)
    assert 1000 - 2 * PERMIT_LEASES <= admitted <= 1000
    assert (await reader.peek([], ["t|cap"], now))[0] <= 1000


# ---- the limiter over window-bound counters (gateway.limits.limiter: in process, shared, Redis with permits) ------


def _redis_permits() -> RedisCounters:
    return RedisCounters(REDIS_URL, prefix=f"test:{unique_name('bound')}:", permits=True)


_BOUND = pytest.mark.parametrize(
    "bound_store",
    [
        MemoryCounters,
        lambda: SharedCounters(slots=1024, workers=1),
        lambda: SharedPermits(SharedCounters(slots=1024, workers=1)),
        _redis_permits,
    ],
    ids=["in-process", "shared", "shared-permits", "redis-permits"],
)


@_BOUND
async def test_limiter_shares_tenant_counters_restarts_windows_and_settles_into_their_own(
    database: Database, bound_store: Callable[[], Counters]
) -> None:
    """Each (key, model) plan binds its window's counters once; two keys' plans must still count on the one tenant
    counter, a new minute must start from zero, and a call admitted in one minute must settle in that minute's
    counter, not in the next one's."""
    tenant = unique_name("lim")
    policy = {"tenant_id": tenant, "tier": 1, "quantities": {}}
    await insert_rows(database, TenantRow(id=tenant, name=tenant))
    await insert_rows(
        database,
        LimitPolicyRow(**policy, scope_kind=1, scope_id="", requests_per_minute=3),
        LimitPolicyRow(**policy, scope_kind=3, scope_id="k1", tokens_per_minute=100, concurrent_requests=1),
    )
    db = Db(database.url)
    limiter = Limiter(db, bound_store(), ttl=60, fail_closed=False)

    def caller(key: str) -> Principal:
        return Principal(
            None, scoped_tenant_id=tenant, api_key=ApiKeyIdentity(key, tenant, ApiKeyType.PERSONAL, "u", None)
        )

    async def admit(key: str, reserve: int, now: float, *, slots: bool = False) -> Grant | None:
        return await limiter.admit(caller(key), "m", reserve, with_slots=slots, now=now)

    try:
        start = minute_window(time.time()).end  # the start of a minute, so that start + 59 is still in it
        held = await admit("k1", 50, start, slots=True)
        assert held is not None and held.headers["x-ratelimit-remaining-requests"] == "2"
        with pytest.raises(LimitExceeded, match="concurrent requests"):  # the cap of 1 holds k1's lease
            await admit("k1", 1, start + 1, slots=True)
        await admit("k2", 1, start + 2)
        await admit("k2", 1, start + 3)
        with pytest.raises(LimitExceeded, match="requests per minute of the tenant"):  # k1 + k2 on one counter
            await admit("k2", 1, start + 4)
        # The next minute: counts restart; the earlier call, settled now (used 60 of its 50), adds its 10 tokens to
        # its own minute: the new minute's 90 + 10 still fits, its 100 + 1 would not.
        assert await admit("k1", 90, start + 60) is not None
        await limiter.finish(held, 60)
        fits = await admit("k1", 10, start + 61, slots=True)  # the settled lease freed the cap
        assert fits is not None and fits.headers["x-ratelimit-remaining-tokens"] == "0"
        with pytest.raises(LimitExceeded, match="tokens per minute of the API key"):
            await admit("k1", 1, start + 62)
    finally:
        await limiter.close()
        await db.close()


@_BOUND
async def test_limiter_applies_a_changed_policy_at_once(
    database: Database, bound_store: Callable[[], Counters]
) -> None:
    """Each call of a window reuses its (key, model) plan without looking the policies up; a policy write must still
    drop the plans with the cached policies, so the very next call is counted against the new limit."""
    tenant = unique_name("lim")
    await insert_rows(database, TenantRow(id=tenant, name=tenant))
    await insert_rows(
        database,
        LimitPolicyRow(tenant_id=tenant, tier=1, quantities={}, scope_kind=1, scope_id="", requests_per_minute=10),
    )
    db = Db(database.url)
    limiter = Limiter(db, bound_store(), ttl=60, fail_closed=False)
    caller = Principal(
        None, scoped_tenant_id=tenant, api_key=ApiKeyIdentity("k1", tenant, ApiKeyType.PERSONAL, "u", None)
    )
    try:
        start = minute_window(time.time()).end  # one minute for both calls
        first = await limiter.admit(caller, "m", 1, with_slots=False, now=start)
        assert first is not None and first.headers["x-ratelimit-limit-requests"] == "10"
        async with db.transaction() as session:  # the writing process drops its caches on commit
            await session.execute(
                update(LimitPolicyRow).where(LimitPolicyRow.tenant_id == tenant).values(requests_per_minute=1)
            )
        with pytest.raises(LimitExceeded, match="limit 1, used 1"):
            await limiter.admit(caller, "m", 1, with_slots=False, now=start + 1)
    finally:
        await limiter.close()
        await db.close()


@_BOUND
async def test_limiter_notices_a_soft_budget_crossed_when_a_call_settles(
    database: Database, bound_store: Callable[[], Counters], caplog: pytest.LogCaptureFixture
) -> None:
    """The soft threshold is watched on the counts a settlement leaves (each store's `token_values`): a call that
    reserved 50 and used 150 carries a budget of soft threshold 100 across it when it ends, not when it starts."""
    tenant = unique_name("lim")
    await insert_rows(database, TenantRow(id=tenant, name=tenant))
    await insert_rows(
        database,
        LimitPolicyRow(
            tenant_id=tenant,
            tier=1,
            quantities={},
            scope_kind=3,
            scope_id="k1",
            token_budget=1000,
            budget_period=int(BudgetPeriod.DAY),
            soft_budget=100,
        ),
    )
    db = Db(database.url)
    limiter = Limiter(db, bound_store(), ttl=60, fail_closed=False)
    caller = Principal(
        None, scoped_tenant_id=tenant, api_key=ApiKeyIdentity("k1", tenant, ApiKeyType.PERSONAL, "u", None)
    )
    try:
        with caplog.at_level("WARNING", logger="switchboard.gateway.limits"):
            grant = await limiter.admit(caller, "m", 50, with_slots=False)
            assert grant is not None
            assert "soft token budget crossed" not in caplog.text
            await limiter.finish(grant, 150)
    finally:
        await limiter.close()  # which awaits the crossing's record, and its log line
        await db.close()
    assert "soft token budget crossed" in caplog.text and "(150 of 100)" in caplog.text
