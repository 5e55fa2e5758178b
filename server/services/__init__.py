"""Handlers: thin translations between protobuf messages and the domain. One module per service.

`HANDLERS` maps each implemented service's full name to its handler factory; `server.app` serves every other
generated service as `unimplemented`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import aiohttp

from server.audit.calls import CallRecorder
from server.audit.export import AuditExport
from server.audit.retention import Retention
from server.auth import KeyVerifier
from server.capture.store import prune_exchanges
from server.crypto import SecretBox
from server.domain.networks import Reach
from server.egress import EgressGuard
from server.keyauth import ApiKeyVerifier
from server.metering import Meter
from server.observability import Sources, sources_from
from server.settings import Settings
from server.store.db import Database
from server.store.limit_counters import Counters
from server.store.redis_counters import RedisCounters

__all__ = ["HANDLERS", "Deps"]


@dataclass
class Deps:
    """What handlers need from the process: configuration, the data layer and the one API-key verifier."""

    settings: Settings
    db: Database
    _verifier: ApiKeyVerifier | None = field(default=None, init=False, repr=False)
    _box: SecretBox | None = field(default=None, init=False, repr=False)
    _meter: Meter | None = field(default=None, init=False, repr=False)
    _egress: EgressGuard | None = field(default=None, init=False, repr=False)
    _http: aiohttp.ClientSession | None = field(default=None, init=False, repr=False)
    _identity_http: aiohttp.ClientSession | None = field(default=None, init=False, repr=False)
    _sources: Sources | None = field(default=None, init=False, repr=False)
    _limit_counters: Counters | None = field(default=None, init=False, repr=False)
    _audit: CallRecorder | None = field(default=None, init=False, repr=False)
    _retention: Retention | None = field(default=None, init=False, repr=False)
    _capture_retention: Retention | None = field(default=None, init=False, repr=False)
    _export: AuditExport | None = field(default=None, init=False, repr=False)

    def audit_export(self) -> AuditExport:
        """The audit trail's stream for a SIEM (SWITCHBOARD_AUDIT_EXPORT); its OTLP posts pass the egress guard."""
        if self._export is None:
            self._export = AuditExport(
                self.settings.audit_export,
                service="switchboard-management",
                session_factory=lambda: self.egress_guard().session(Reach.PLATFORM),
            )
        return self._export

    def start_background(self) -> None:
        """The management process's own background work (started with its event loop): audit retention and export,
        and the retention of captured exchanges."""
        if self._retention is None:
            self._retention = Retention(self.db, self.settings.audit_retention_days)
        self._retention.start()
        if self._capture_retention is None:
            days = self.settings.capture_retention_days
            self._capture_retention = Retention(self.db, days, prune_exchanges, "captured exchanges")
        self._capture_retention.start()
        self.audit_export().start()

    def audit_recorder(self) -> CallRecorder:
        """The audit trail of management calls (it hooks the database's transactions: one per process)."""
        if self._audit is None:
            self._audit = CallRecorder(self.db, self.audit_export().publish)
        return self._audit

    def egress_guard(self) -> EgressGuard:
        """The process's one egress guard: every outbound MCP/OAuth connection goes through it."""
        if self._egress is None:
            self._egress = EgressGuard.from_settings(self.settings, self.db)
        return self._egress

    def identity_http(self) -> aiohttp.ClientSession:
        """The process's one session for the identity provider (OpenID discovery, tokens, JWKS): a destination the
        operator configured (`Reach.PLATFORM`), through the egress guard like every outbound call."""
        if self._identity_http is None or self._identity_http.closed:
            self._identity_http = self.egress_guard().session(Reach.PLATFORM)
        return self._identity_http

    def outbound_http(self) -> aiohttp.ClientSession:
        """The process's one pooled session for MCP servers and their OAuth endpoints, guarded by the egress guard
        (created on first use, inside the running event loop)."""
        if self._http is None or self._http.closed:
            self._http = self.egress_guard().session()
        return self._http

    async def close(self) -> None:
        if self._retention is not None:
            await self._retention.close()
        if self._capture_retention is not None:
            await self._capture_retention.close()
        if self._export is not None:
            await self._export.close()
        if self._http is not None:
            await self._http.close()
        if self._identity_http is not None:
            await self._identity_http.close()
        if self._meter is not None:
            await self._meter.close()  # flush the traffic counted so far
        if self._limit_counters is not None:
            await self._limit_counters.close()
        await self.db.close()

    def meter(self) -> Meter:
        if self._meter is None:
            self._meter = Meter(self.db, self.settings.metering_journal_path)
        return self._meter

    def observability_sources(self) -> Sources:
        if self._sources is None:
            self._sources = sources_from(self.settings)
        return self._sources

    def shared_limit_counters(self) -> Counters | None:
        """The rate-limit counters the gateways share (Redis, read exactly: no permits), for usage reads; None when
        they count in each gateway's memory (no SWITCHBOARD_REDIS_URL)."""
        url = self.settings.redis_url.reveal()
        if self._limit_counters is None and url:
            self._limit_counters = RedisCounters(url, prefix=self.settings.limits_redis_prefix)
        return self._limit_counters

    def secret_box(self) -> SecretBox:
        if self._box is None:
            self._box = SecretBox(self.settings)
        return self._box

    def key_verifier(self) -> KeyVerifier:
        if self._verifier is None:
            self._verifier = ApiKeyVerifier(self.db, self.settings.api_key_cache_seconds)
        return self._verifier


def _handlers() -> dict[str, Callable[[Deps], object]]:
    from server.services.agents.external_mcp_server_service import ExternalMcpServerServiceHandler
    from server.services.agents.preset_agent_service import PresetAgentServiceHandler
    from server.services.audit.audit_service import AuditServiceHandler
    from server.services.capture.capture_service import CaptureServiceHandler
    from server.services.console.console_service import ConsoleServiceHandler
    from server.services.conversations.conversation_item_service import ConversationItemServiceHandler
    from server.services.conversations.conversation_service import ConversationServiceHandler
    from server.services.limits.limit_service import LimitServiceHandler
    from server.services.metering.platform_usage_service import PlatformUsageServiceHandler
    from server.services.modelmanager.external_model_service import ExternalModelServiceHandler
    from server.services.modelmanager.model_alias_service import ModelAliasServiceHandler
    from server.services.modelmanager.model_deployment_observability_service import (
        ModelDeploymentObservabilityServiceHandler,
    )
    from server.services.modelmanager.model_deployment_service import ModelDeploymentServiceHandler
    from server.services.platform.mcp_network_policy_service import McpNetworkPolicyServiceHandler
    from server.services.ragmanager.rag_quota_service import RagQuotaServiceHandler
    from server.services.ragmanager.rag_service import RagServiceHandler
    from server.services.resources.resource_list_service import ResourceListServiceHandler
    from server.services.tenants.api_key_service import ApiKeyServiceHandler
    from server.services.tenants.group_service import GroupServiceHandler
    from server.services.tenants.service_account_service import ServiceAccountServiceHandler
    from server.services.tenants.tenant_list_service import TenantListServiceHandler
    from server.services.tenants.tenant_service import TenantServiceHandler
    from server.services.tenants.user_service import UserServiceHandler
    from server.services.usage.usage_service import UsageServiceHandler

    return {
        "platform.agents.v1.ExternalMcpServerService": ExternalMcpServerServiceHandler,
        "platform.agents.v1.PresetAgentService": PresetAgentServiceHandler,
        "platform.conversations.v1.ConversationItemService": ConversationItemServiceHandler,
        "platform.conversations.v1.ConversationService": ConversationServiceHandler,
        "platform.metering.v1.PlatformUsageService": PlatformUsageServiceHandler,
        "platform.modelmanager.v1.ExternalModelService": ExternalModelServiceHandler,
        "platform.modelmanager.v1.ModelAliasService": ModelAliasServiceHandler,
        "platform.modelmanager.v1.ModelDeploymentObservabilityService": ModelDeploymentObservabilityServiceHandler,
        "platform.modelmanager.v1.ModelDeploymentService": ModelDeploymentServiceHandler,
        "platform.platform.v1.McpNetworkPolicyService": McpNetworkPolicyServiceHandler,
        "platform.ragmanager.v1.RagQuotaService": RagQuotaServiceHandler,
        "platform.ragmanager.v1.RagService": RagServiceHandler,
        "platform.tenants.v1.ApiKeyService": ApiKeyServiceHandler,
        "platform.tenants.v1.GroupService": GroupServiceHandler,
        "platform.tenants.v1.ServiceAccountService": ServiceAccountServiceHandler,
        "platform.tenants.v1.TenantService": TenantServiceHandler,
        "platform.tenants.v1.UserService": UserServiceHandler,
        "switchboard.limits.v1.LimitService": LimitServiceHandler,
        "switchboard.audit.v1.AuditService": AuditServiceHandler,
        "switchboard.console.v1.ConsoleService": ConsoleServiceHandler,
        "switchboard.capture.v1.CaptureService": CaptureServiceHandler,
        "switchboard.usage.v1.UsageService": UsageServiceHandler,
        "switchboard.tenants.v1.TenantListService": TenantListServiceHandler,
        "switchboard.resources.v1.ResourceListService": ResourceListServiceHandler,
    }


HANDLERS: dict[str, Callable[[Deps], object]] = _handlers()
