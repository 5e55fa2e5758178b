"""The metering journal (server.metering_journal): what a process metered survives its kill -9 and is written once by
the next meter on the same directory; a batch replayed after it had committed lands once; a live process's journal
is never taken from it. Real processes, killed with SIGKILL, on both databases."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from sqlalchemy import func, select

from server import metering
from server.metering import _USAGE_VALUES, Meter, UsageEvent
from server.metering_journal import Journal
from server.store.db import Database as Db
from server.store.models import ApiTrafficRow, UsageEventRow
from tests.conftest import ONE_BACKEND, Database

EVENTS = 1_234  # more than one transaction's worth (1,000)
START = datetime(2026, 4, 1, 8, 0, 0, tzinfo=UTC)

# Meters EVENTS usage events and as many requests, then kills itself before its flusher could write any of them
# (it waits half a second for a batch to gather).
_METER_THEN_DIE = """
import asyncio, os, signal, sys
from datetime import datetime, timedelta
from pathlib import Path
from server.metering import Meter, UsageEvent
from server.store.db import Database

async def main(url, journal, tenant, events, start):
    meter = Meter(Database(url), Path(journal))
    meter.start()
    for i in range(events):
        at = start + timedelta(seconds=i)
        meter.usage(UsageEvent(tenant_id=tenant, api_key_id="k", user_id="u", model_id="m", call_kind=1,
                               prompt_tokens=i, request_bytes=i, occurred_at=at))
        meter.traffic("svc-" + tenant, 200, i, 2 * i, at=start + timedelta(seconds=i // 10))
    os.kill(os.getpid(), signal.SIGKILL)

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), datetime.fromisoformat(sys.argv[5])))
"""

# Holds a journal with one line in it until stdin closes.
_HOLD = """
import sys
from pathlib import Path
from server.metering_journal import Journal

journal = Journal(Path(sys.argv[1]))
journal.append(b'["t","held",200,0,0,0]\\n')
print("holding", flush=True)
sys.stdin.read()
"""

# Journals one request, prepares the spare segment the next batch would take, then is killed before using it.
_PREPARE_THEN_DIE = """
import os, signal, sys
from pathlib import Path
from server.metering_journal import Journal

journal = Journal(Path(sys.argv[1]))
journal.append(('["t","svc-%s",200,1775030400,3,4]\\n' % sys.argv[2]).encode())
journal.prepare()
os.kill(os.getpid(), signal.SIGKILL)
"""


def _killed(script: str, *args: str) -> None:
    """Runs a script that kills itself with SIGKILL."""
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, timeout=60, check=False)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode(errors="replace")


def _metered_then_killed(url: str, journal: Path, tenant: str) -> None:
    _killed(_METER_THEN_DIE, url, str(journal), tenant, str(EVENTS), START.isoformat())


def _segments(journal: Path) -> list[Path]:
    return sorted(journal.glob("*.journal"))


async def _counts(db: Db, tenant: str) -> tuple[int, int, int, int]:
    """(usage rows, distinct call ids, traffic rows, requests counted) for the tenant's rows."""
    async with db.read() as session:
        usage, calls = (
            await session.execute(
                select(func.count(), func.count(UsageEventRow.call_id.distinct())).where(
                    UsageEventRow.tenant_id == tenant
                )
            )
        ).one()
        rows, requests = (
            await session.execute(
                select(func.count(), func.coalesce(func.sum(ApiTrafficRow.requests), 0)).where(
                    ApiTrafficRow.service == f"svc-{tenant}"
                )
            )
        ).one()
    return int(usage), int(calls), int(rows), int(requests)


async def _replay(db: Db, journal: Path) -> None:
    """A new process's meter on the same directory: it replays at its start; closing it waits for that."""
    meter = Meter(db, journal)
    meter.start()
    await asyncio.sleep(0)
    await meter.close()


async def test_a_killed_process_loses_nothing_and_a_replayed_batch_lands_once(database: Database) -> None:
    journal = Path(tempfile.mkdtemp(prefix="switchboard-journal-"))
    tenant = f"journal-{database.backend}-{os.getpid()}"
    db = Db(database.url)
    try:
        _metered_then_killed(database.url, journal, tenant)
        left = _segments(journal)
        assert len(left) == 1  # the dead process's one batch, nothing of it in the database yet
        assert await _counts(db, tenant) == (0, 0, 0, 0)
        kept = Path(tempfile.mkdtemp(prefix="switchboard-journal-copy-"))
        shutil.copy2(left[0], kept / left[0].name)

        await _replay(db, journal)
        assert await _counts(db, tenant) == (EVENTS, EVENTS, (EVENTS + 9) // 10, EVENTS)
        assert _segments(journal) == []  # written: deleted

        # As if the replaying process had died after its commit, before deleting the segment: replayed again.
        shutil.copy2(kept / left[0].name, left[0])
        await _replay(db, journal)
        assert await _counts(db, tenant) == (EVENTS, EVENTS, (EVENTS + 9) // 10, EVENTS)
        assert _segments(journal) == []  # written (as nothing), not refused and kept
        async with db.read() as session:
            rows = (
                await session.execute(
                    select(UsageEventRow.prompt_tokens, UsageEventRow.occurred_at)
                    .where(UsageEventRow.tenant_id == tenant)
                    .order_by(UsageEventRow.prompt_tokens)
                )
            ).all()
        at = [value.replace(tzinfo=UTC) if value.tzinfo is None else value for _, value in rows]
        assert [tokens for tokens, _ in rows] == list(range(EVENTS))
        assert at == [START + timedelta(seconds=i) for i in range(EVENTS)]  # every field as metered
    finally:
        await db.close()
        shutil.rmtree(journal, ignore_errors=True)


def test_a_live_process_keeps_its_journal() -> None:
    journal = Path(tempfile.mkdtemp(prefix="switchboard-journal-"))
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(journal)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == b"holding\n"
        other = Journal(journal)
        assert other.leftovers() == []  # held by a live writer: not ours to replay
        holder.kill()
        holder.wait(30)
        taken = other.leftovers()  # its writer is gone: now it is
        assert [list(s.lines()) for s in taken] == [[b'["t","held",200,0,0,0]']]
        for segment in taken:
            segment.discard()
        other.close()
        assert _segments(journal) == []
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(30)
        shutil.rmtree(journal, ignore_errors=True)


async def test_a_journal_that_cannot_be_kept_leaves_metering_working(database: Database, tmp_path: Path) -> None:
    """A journal directory that cannot be created (here under a regular file; a read-only volume alike) costs
    protection against kill -9, never the metering itself."""
    blocker = tmp_path / "not-a-directory"
    blocker.write_bytes(b"")
    tenant = f"journal-off-{database.backend}-{os.getpid()}"
    db = Db(database.url)
    try:
        meter = Meter(db, blocker / "journal")
        meter.start()
        meter.usage(UsageEvent(tenant_id=tenant, api_key_id="k", user_id="u", model_id="m", call_kind=1))
        meter.traffic(f"svc-{tenant}", 200, 1, 2)
        await meter.close()
        assert await _counts(db, tenant) == (1, 1, 1, 1)
    finally:
        await db.close()


async def test_an_idle_meter_rescans_on_schedule_and_does_not_spin(
    database: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no calls to write, the meter still rescans the journal every RESCAN_SECONDS; it once stopped doing so after
    the first interval and spun instead (a wait with no time left, thousands of times a second, in every idle
    process)."""
    monkeypatch.setattr(metering, "RESCAN_SECONDS", 0.05)
    db = Db(database.url)
    meter = Meter(db, tmp_path / "journal")
    waits = 0
    replays = 0
    real_wait_for = asyncio.wait_for
    real_replay = meter._replay

    async def counted_wait_for(awaitable: Any, seconds: float | None) -> Any:
        nonlocal waits
        if awaitable is meter._wakeup:  # the meter's own idle wait, not the database driver's (it uses wait_for too)
            waits += 1
        return await real_wait_for(awaitable, seconds)

    async def counted_replay() -> None:
        nonlocal replays
        replays += 1
        await real_replay()

    monkeypatch.setattr(metering.asyncio, "wait_for", counted_wait_for)
    monkeypatch.setattr(meter, "_replay", counted_replay)
    try:
        meter.start()
        await asyncio.sleep(0.6)  # about 12 intervals with nothing to write
        await meter.close()
    finally:
        await db.close()
    assert replays >= 4, replays  # the journal was rescanned while idle
    assert waits <= replays + 2, (waits, replays)  # one wait per interval, not a spin


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _opened(path: Path) -> int:
    """The rank of a segment among those of its journal, in the order they were opened (its name ends in it)."""
    return int(path.name.removesuffix(".journal").rsplit("-", 1)[1])


def _written(path: Path) -> bytes:
    """A segment file's lines, read as a replay reads them (up to the first NUL)."""
    return path.read_bytes().split(b"\0", 1)[0]


def test_a_rotation_takes_the_segment_prepared_ahead_and_a_spare_does_not_leak(tmp_path: Path) -> None:
    """The flusher prepares the next segment off the event loop; the rotation on the loop only switches to it (no
    file is created there), the lines that follow go to it, and a spare nobody took is deleted at a graceful stop."""
    fds = _open_fds()
    journal = Journal(tmp_path)
    journal.append(b'["t","a",200,0,0,0]\n')
    journal.prepare()
    journal.prepare()  # one spare, however often it is asked for
    prepared = set(_segments(tmp_path))
    assert len(prepared) == 2
    taken = journal.rotate()
    assert taken is not None
    assert set(_segments(tmp_path)) == prepared  # the rotation opened no file: it took the spare
    journal.append(b'["t","b",200,0,0,0]\n')
    (spare,) = prepared - {taken.path}
    assert list(taken.lines()) == [b'["t","a",200,0,0,0]']  # one batch per segment
    assert _written(spare) == b'["t","b",200,0,0,0]\n'
    taken.discard()
    journal.forget(taken)

    # Without a spare ready (a failed preparation), the rotation opens one itself.
    again = journal.rotate()
    assert again is not None and again.path == spare
    assert len(_segments(tmp_path)) == 2
    again.discard()
    journal.forget(again)

    journal.prepare()  # a spare left unused
    assert len(_segments(tmp_path)) == 2
    journal.close()
    assert _segments(tmp_path) == []
    assert _open_fds() == fds  # no descriptor (nor mapping) of a segment or a spare left open


async def test_a_meter_keeps_a_spare_ready_and_deletes_it_at_its_stop(database: Database, tmp_path: Path) -> None:
    tenant = f"journal-spare-{database.backend}-{os.getpid()}"
    db = Db(database.url)
    try:
        meter = Meter(db, tmp_path)
        meter.start()
        for _ in range(200):
            if len(_segments(tmp_path)) == 2:
                break
            await asyncio.sleep(0.05)
        first, spare = sorted(_segments(tmp_path), key=_opened)  # the current segment, then the spare
        meter.traffic(f"svc-{tenant}", 200, 1, 2)
        for _ in range(200):  # the batch is written within the linger (0.5 s), then a new spare prepared
            left = _segments(tmp_path)
            if first not in left and len(left) == 2:
                break
            await asyncio.sleep(0.05)
        assert await _counts(db, tenant) == (0, 0, 1, 1)
        left = _segments(tmp_path)
        assert first not in left and spare in left and len(left) == 2  # the spare is current; a new spare is ready
        await meter.close()
        assert _segments(tmp_path) == []
    finally:
        await db.close()


async def test_a_dead_process_s_spare_replays_as_nothing(
    database: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tenant = f"journal-dead-spare-{database.backend}-{os.getpid()}"
    _killed(_PREPARE_THEN_DIE, str(tmp_path), tenant)
    assert sorted(_written(path) for path in _segments(tmp_path)) == [
        b"",  # the spare: allocated, never written
        f'["t","svc-{tenant}",200,1775030400,3,4]\n'.encode(),
    ]
    db = Db(database.url)
    try:
        with caplog.at_level(logging.WARNING, logger="switchboard.metering"):
            await _replay(db, tmp_path)
        assert await _counts(db, tenant) == (0, 0, 1, 1)  # the one request, once; nothing from the spare
        assert _segments(tmp_path) == []  # both deleted
        replays = [r.getMessage() for r in caplog.records if "replaying" in r.getMessage()]
        assert replays == [
            "metering journal: replaying 0 usage events and 1 traffic counts"
            " (left by an earlier process or a failed write)"
        ]  # the spare is not replayed as a batch
    finally:
        await db.close()


@ONE_BACKEND
async def test_a_replay_stops_at_the_first_batch_the_database_refuses(
    database: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Three dead processes' batches; then a database that is down (its file's directory missing): trying the other
    # two would only wait out the same retries each, while new batches wait behind them.
    journal = tmp_path / "journal"
    tenants = [f"journal-refused-{i}-{os.getpid()}" for i in range(3)]
    for tenant in tenants:
        _killed(_PREPARE_THEN_DIE, str(journal), tenant)
    down = Db(f"sqlite+aiosqlite:///{tmp_path / 'missing' / 'switchboard.db'}")
    try:
        with caplog.at_level(logging.WARNING, logger="switchboard.metering"):
            await _replay(down, journal)
    finally:
        await down.close()
    replays = [r for r in caplog.records if "replaying" in r.getMessage()]
    stacks = [r for r in caplog.records if r.exc_info]
    # One batch tried by each replay (the meter's start and its stop; trying every batch, six), the six failed
    # attempts logged with one stack.
    assert len(replays) == 2 and len(stacks) == 1
    assert sum(1 for path in _segments(journal) if _written(path)) == 3  # every batch kept

    db = Db(database.url)
    try:
        await _replay(db, journal)
        assert [await _counts(db, tenant) for tenant in tenants] == [(0, 0, 1, 1)] * 3
        assert _segments(journal) == []
    finally:
        await db.close()


def _closing_event(tenant: str, call_id: str = "") -> UsageEvent:
    return UsageEvent(
        tenant,
        "k",
        "u",
        "m",
        1,
        prompt_tokens=1,
        total_tokens=1,
        call_id=call_id,
        occurred_at=datetime(2001, 1, 1, tzinfo=UTC),
    )


def _dead_process_segment(directory: Path, tenant: str, events: int) -> None:
    """A segment a killed process left behind (lines journaled, never written): the next rescan replays it."""
    journal = Journal(directory)
    for i in range(events):
        event = _closing_event(tenant, f"dead-{secrets.token_hex(6)}-{i}")
        journal.append(orjson.dumps(("u", *_USAGE_VALUES(event), event.occurred_at), option=orjson.OPT_APPEND_NEWLINE))
    segment = journal._current
    assert segment is not None
    segment.release()  # its process is gone: the file stays, nobody holds it


@ONE_BACKEND
async def test_events_metered_while_the_meter_closes_are_not_lost(database: Database, tmp_path: Path) -> None:
    """Calls that finish while the meter stops (requests still in flight at SIGTERM) land: close()'s last rescan
    replays a dead process's segment here, and the calls metered meanwhile were neither written nor kept (close()
    returned and deleted the segment that held them; found by probing)."""
    tenant = f"t-close-{secrets.token_hex(4)}"
    journal = tmp_path / "journal"
    db = Db(database.url)
    try:
        meter = Meter(db, journal)
        meter.start()
        await asyncio.sleep(0.3)  # the start-up replay is done
        _dead_process_segment(journal, f"{tenant}-dead", 3000)
        metered = 0
        closing = asyncio.create_task(meter.close())
        deadline = time.monotonic() + 20
        while not closing.done() and time.monotonic() < deadline:
            meter.usage(_closing_event(tenant))
            metered += 1
            await asyncio.sleep(0.01)
        await closing
        # A later process on the same journal directory writes whatever this one left behind.
        again = Meter(db, journal)
        again.start()
        await asyncio.sleep(0)
        await again.close()
        async with db.read() as s:
            written = int(await s.scalar(select(func.count()).where(UsageEventRow.tenant_id == tenant)) or 0)
            dead = int(await s.scalar(select(func.count()).where(UsageEventRow.tenant_id == f"{tenant}-dead")) or 0)
        assert dead == 3000
        assert written == metered, (written, metered)
    finally:
        await db.close()
