"""Reading the audit trail straight from the test database (what the server committed, nothing else)."""

from __future__ import annotations

from google.protobuf.descriptor_pb2 import MethodOptions
from sqlalchemy import func, select

from server.app import generated_services
from server.store.db import Database
from server.store.models import AuditEventRow
from tests.conftest import Database as TestDatabase


def state_changing_methods() -> list[str]:
    """Every method of the contract not marked side-effect free, as "package.Service/Method"."""
    return [
        f"{service.full_name}/{method.name}"
        for service in generated_services()
        for method in service.descriptor.methods
        if method.GetOptions().idempotency_level != MethodOptions.NO_SIDE_EFFECTS
    ]


class Trail:
    """The audit_events table of one test database."""

    def __init__(self, database: TestDatabase) -> None:
        self._db = Database(database.url)

    async def events(self, method: str) -> list[AuditEventRow]:
        async with self._db.read() as session:
            found = await session.scalars(
                select(AuditEventRow).where(AuditEventRow.method == f"/{method}").order_by(AuditEventRow.occurred_at)
            )
            return list(found.all())

    async def count(self) -> int:
        async with self._db.read() as session:
            return int((await session.scalar(select(func.count()).select_from(AuditEventRow))) or 0)

    async def all(self) -> list[AuditEventRow]:
        async with self._db.read() as session:
            return list((await session.scalars(select(AuditEventRow))).all())

    async def close(self) -> None:
        await self._db.close()
