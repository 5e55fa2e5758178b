"""The audit trail as a stream for a SIEM (`SWITCHBOARD_AUDIT_EXPORT`): JSON lines to a file or stdout, or OTel logs
over OTLP/HTTP (protobuf). Each process exports the events it committed, after the commit, from a bounded buffer on
a task of its own (an event is never exported before its change is committed; a receiver that stays down loses
what does not fit, which the database still holds: the export is a feed, the table is the record)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from google.protobuf.timestamp_pb2 import Timestamp
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs, SeverityNumber
from opentelemetry.proto.resource.v1.resource_pb2 import Resource

from server.audit.events import ActorType, AuditEvent, Outcome, Source
from server.audit.outbox import Outbox
from server.audit.store import stored
from server.failure_log import RepeatedFailure

__all__ = ["AuditExport", "event_json", "otlp_request", "parse_target"]

log = logging.getLogger("switchboard.audit")

_ATTEMPTS = 3


def event_json(event: AuditEvent) -> dict[str, Any]:
    """The event as switchboard.audit.v1.AuditEvent's JSON (empty fields left out, as the API answers them)."""
    actor = {
        "type": f"ACTOR_TYPE_{ActorType(event.actor.type).name}",
        "userId": event.actor.user_id,
        "serviceAccountId": event.actor.service_account_id,
        "apiKeyId": event.actor.api_key_id,
    }
    found = {
        "id": event.id,
        "time": _rfc3339(event.time),
        "tenantId": event.tenant_id,
        "actor": {k: v for k, v in actor.items() if v},
        "peerAddress": event.peer_address,
        "source": f"SOURCE_{Source(event.source).name}",
        "method": event.method,
        "resourceKind": event.resource_kind,
        "resourceName": event.resource_name,
        "outcome": f"OUTCOME_{Outcome(event.outcome).name}",
        "code": event.code,
    }
    return {k: v for k, v in found.items() if v}


def _rfc3339(time: datetime) -> str:
    """As the API's JSON writes a timestamp (0, 3, 6 or 9 fractional digits: isoformat's .161000 is its .161)."""
    stamp = Timestamp()
    stamp.FromDatetime(time)
    return str(stamp.ToJsonString())


def _attribute(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


def _record(event: AuditEvent) -> LogRecord:
    nanos = int(event.time.timestamp() * 1_000_000_000)
    allowed = event.outcome == Outcome.ALLOWED
    fields = {
        "switchboard.audit.id": event.id,
        "switchboard.audit.method": event.method,
        "switchboard.audit.outcome": f"OUTCOME_{Outcome(event.outcome).name}",
        "switchboard.audit.code": event.code,
        "switchboard.audit.source": f"SOURCE_{Source(event.source).name}",
        "switchboard.tenant.id": event.tenant_id,
        "switchboard.audit.actor.type": f"ACTOR_TYPE_{ActorType(event.actor.type).name}",
        "enduser.id": event.actor.user_id,
        "switchboard.service_account.id": event.actor.service_account_id,
        "switchboard.api_key.id": event.actor.api_key_id,
        "client.address": event.peer_address,
        "switchboard.resource.kind": event.resource_kind,
        "switchboard.resource.name": event.resource_name,
    }
    return LogRecord(
        time_unix_nano=nanos,
        observed_time_unix_nano=nanos,
        severity_number=SeverityNumber.SEVERITY_NUMBER_INFO if allowed else SeverityNumber.SEVERITY_NUMBER_WARN,
        severity_text="INFO" if allowed else "WARN",
        event_name="switchboard.audit",
        body=AnyValue(string_value=orjson.dumps(event_json(event)).decode()),
        attributes=[_attribute(k, v) for k, v in fields.items() if v],
    )


def otlp_request(events: list[AuditEvent], service: str) -> ExportLogsServiceRequest:
    resource = Resource(attributes=[_attribute("service.name", service)])
    scope = ScopeLogs(scope=InstrumentationScope(name="switchboard.audit"), log_records=[_record(e) for e in events])
    return ExportLogsServiceRequest(resource_logs=[ResourceLogs(resource=resource, scope_logs=[scope])])


def parse_target(value: str) -> tuple[str, str]:
    """A target the settings accepted (`jsonl:-`, `jsonl:<file>`, `otlp:<URL>`) -> (kind, where); empty: off."""
    kind, _, where = value.partition(":")
    return kind, where


class AuditExport:
    """`session_factory` makes the guarded HTTP session OTLP posts through (server.egress)."""

    def __init__(
        self, target: str, *, service: str, session_factory: Callable[[], aiohttp.ClientSession] | None = None
    ) -> None:
        self._kind, self._where = parse_target(target)
        self._service = service
        self._session_factory = session_factory
        self._session: aiohttp.ClientSession | None = None
        self._outbox = Outbox(self._deliver, what="audit events (not exported: the export fell behind)")
        self._failures = RepeatedFailure(log, "exporting audit events")

    @property
    def enabled(self) -> bool:
        return bool(self._kind)

    def publish(self, event: AuditEvent) -> None:
        if self._kind:
            self._outbox.put(stored(event))  # what the trail holds: a request's whole field is not the event

    def start(self) -> None:
        if self._kind:
            self._outbox.start()

    async def flush(self) -> None:
        await self._outbox.flush()

    async def _deliver(self, batch: list[AuditEvent]) -> None:
        for attempt in range(_ATTEMPTS):
            try:
                await (self._post(batch) if self._kind == "otlp" else self._write(batch))
            except Exception:
                if attempt == _ATTEMPTS - 1:
                    self._failures.failed("exporting %d audit events failed; they stay in the database", len(batch))
                else:
                    await asyncio.sleep(0.5 * 2**attempt)
            else:
                self._failures.succeeded()
                return

    async def _write(self, batch: list[AuditEvent]) -> None:
        lines = b"".join(orjson.dumps(event_json(e)) + b"\n" for e in batch)
        if self._where == "-":
            sys.stdout.buffer.write(lines)
            sys.stdout.buffer.flush()
            return

        def append() -> None:
            with Path(self._where).open("ab") as out:
                out.write(lines)

        await asyncio.to_thread(append)

    async def _post(self, batch: list[AuditEvent]) -> None:
        if self._session is None:
            if self._session_factory is None:
                raise RuntimeError("an OTLP export needs an HTTP session")
            self._session = self._session_factory()
        body = otlp_request(batch, self._service).SerializeToString()
        headers = {"Content-Type": "application/x-protobuf"}
        async with self._session.post(self._where, data=body, headers=headers) as response:
            if response.status >= 300:
                raise RuntimeError(f"the OTLP receiver answered {response.status}")

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._outbox.close()
        if self._session is not None:
            await self._session.close()
            self._session = None
