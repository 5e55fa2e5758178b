"""One `serve --demo` for the browser runs that need the demo's world (chat first, then usage, audit and limits,
which read what the chat did; the resource pages last, as they add to the tenant): starting it (dev-models, the
demo's seeding) is most of their time."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from tests.conftest import Database
from tests.console.harness import DemoConsole, demo_console, not_ready


@pytest.fixture(scope="session")
def demo_ready(database: Database) -> None:
    if database.backend != "sqlite":
        pytest.skip("the browser drives the same gateway and API on either backend: one run is enough")
    reason = not_ready()
    if reason is not None:
        pytest.skip(reason)


@pytest_asyncio.fixture(scope="session")
async def demo_world(demo_ready: None, database: Database) -> AsyncIterator[DemoConsole]:
    async for found in demo_console(database):
        yield found
