"""Handlers: thin translations between protobuf messages and the domain. One module per service.

`HANDLERS` maps each implemented service's full name to its handler factory; `server.app` serves every other
generated service as `unimplemented`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from server.auth import KeyVerifier
from server.settings import Settings
from server.store.db import Database

__all__ = ["HANDLERS", "Deps"]


@dataclass
class Deps:
    """What handlers need from the process: configuration and the data layer."""

    settings: Settings
    db: Database

    def key_verifier(self) -> KeyVerifier | None:
        return None


def _handlers() -> dict[str, Callable[[Deps], object]]:
    from server.services.tenants.group_service import GroupServiceHandler
    from server.services.tenants.tenant_service import TenantServiceHandler
    from server.services.tenants.user_service import UserServiceHandler

    return {
        "platform.tenants.v1.GroupService": GroupServiceHandler,
        "platform.tenants.v1.TenantService": TenantServiceHandler,
        "platform.tenants.v1.UserService": UserServiceHandler,
    }


HANDLERS: dict[str, Callable[[Deps], object]] = _handlers()
