"""Handlers: thin translations between protobuf messages and the domain. One module per service.

`HANDLERS` maps each implemented service's full name to its handler factory; `server.app` serves every other
generated service as `unimplemented`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from server.auth import KeyVerifier
from server.crypto import SecretBox
from server.keyauth import ApiKeyVerifier
from server.metering import Meter
from server.settings import Settings
from server.store.db import Database

__all__ = ["HANDLERS", "Deps"]


@dataclass
class Deps:
    """What handlers need from the process: configuration, the data layer and the one API-key verifier."""

    settings: Settings
    db: Database
    _verifier: ApiKeyVerifier | None = field(default=None, init=False, repr=False)
    _box: SecretBox | None = field(default=None, init=False, repr=False)
    _meter: Meter | None = field(default=None, init=False, repr=False)

    def meter(self) -> Meter:
        if self._meter is None:
            self._meter = Meter(self.db)
        return self._meter

    def secret_box(self) -> SecretBox:
        if self._box is None:
            self._box = SecretBox(self.settings)
        return self._box

    def key_verifier(self) -> KeyVerifier:
        if self._verifier is None:
            self._verifier = ApiKeyVerifier(self.db, self.settings.api_key_cache_seconds)
        return self._verifier


def _handlers() -> dict[str, Callable[[Deps], object]]:
    from server.services.conversations.conversation_item_service import ConversationItemServiceHandler
    from server.services.conversations.conversation_service import ConversationServiceHandler
    from server.services.metering.platform_usage_service import PlatformUsageServiceHandler
    from server.services.modelmanager.external_model_service import ExternalModelServiceHandler
    from server.services.modelmanager.model_alias_service import ModelAliasServiceHandler
    from server.services.modelmanager.model_deployment_service import ModelDeploymentServiceHandler
    from server.services.tenants.api_key_service import ApiKeyServiceHandler
    from server.services.tenants.group_service import GroupServiceHandler
    from server.services.tenants.service_account_service import ServiceAccountServiceHandler
    from server.services.tenants.tenant_service import TenantServiceHandler
    from server.services.tenants.user_service import UserServiceHandler

    return {
        "platform.conversations.v1.ConversationItemService": ConversationItemServiceHandler,
        "platform.conversations.v1.ConversationService": ConversationServiceHandler,
        "platform.metering.v1.PlatformUsageService": PlatformUsageServiceHandler,
        "platform.modelmanager.v1.ExternalModelService": ExternalModelServiceHandler,
        "platform.modelmanager.v1.ModelAliasService": ModelAliasServiceHandler,
        "platform.modelmanager.v1.ModelDeploymentService": ModelDeploymentServiceHandler,
        "platform.tenants.v1.ApiKeyService": ApiKeyServiceHandler,
        "platform.tenants.v1.GroupService": GroupServiceHandler,
        "platform.tenants.v1.ServiceAccountService": ServiceAccountServiceHandler,
        "platform.tenants.v1.TenantService": TenantServiceHandler,
        "platform.tenants.v1.UserService": UserServiceHandler,
    }


HANDLERS: dict[str, Callable[[Deps], object]] = _handlers()
