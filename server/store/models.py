"""ORM tables. The schema is owned by Alembic migrations under `migrations/`; a test asserts they agree."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from server.store.db import new_id

__all__ = [
    "ApiKeyGrantRow",
    "ApiKeyGroupRow",
    "ApiKeyRow",
    "AuditEventRow",
    "Base",
    "CaptureGrantRow",
    "CapturePolicyRow",
    "CapturedBodiesRow",
    "CapturedExchangeRow",
    "GroupListVersionRow",
    "GroupMemberRow",
    "GroupRow",
    "LimitPolicyRow",
    "LimitSoftCrossingRow",
    "PresetAgentRow",
    "PublicModelIdRow",
    "RagDeploymentRow",
    "RagTenantQuotaRow",
    "ResourcePermissionRow",
    "ResourceRow",
    "ResourceShareRow",
    "RevokedSessionRow",
    "ServiceAccountRow",
    "StoredResponseRow",
    "TenantInviteRow",
    "TenantMemberRow",
    "TenantRow",
    "UserRow",
    "utcnow",
]


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    type_annotation_map = {datetime: DateTime(timezone=True)}


class UserRow(Base):
    """A user seen through the identity provider; `deleted_at` marks one deprovisioned there."""

    __tablename__ = "users"
    id: Mapped[str] = mapped_column(String(128), primary_key=True)
    email: Mapped[str | None] = mapped_column(String(320), index=True)
    display_name: Mapped[str] = mapped_column(String(256), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    deleted_at: Mapped[datetime | None] = mapped_column(default=None)


class TenantRow(Base):
    __tablename__ = "tenants"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(128), unique=True)
    display_name: Mapped[str] = mapped_column(String(256), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class TenantMemberRow(Base):
    __tablename__ = "tenant_members"
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(128), primary_key=True, index=True)
    role: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class TenantInviteRow(Base):
    """An email invite; it becomes a `TenantMemberRow` when that email first signs in."""

    __tablename__ = "tenant_invites"
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True)
    email: Mapped[str] = mapped_column(String(320), primary_key=True, index=True)
    role: Mapped[int] = mapped_column(Integer)
    invited_by: Mapped[str] = mapped_column(String(128), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class GroupRow(Base):
    __tablename__ = "groups"
    __table_args__ = (UniqueConstraint("tenant_id", "name", name="uq_groups_tenant_name"),)
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class GroupMemberRow(Base):
    __tablename__ = "group_members"
    group_id: Mapped[str] = mapped_column(ForeignKey("groups.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(128), primary_key=True, index=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class GroupListVersionRow(Base):
    """A counter per tenant that moves with every change to its groups or their members, so a process may keep a
    tenant's group list and check it is current with one key lookup. Written only by the database's own triggers
    (migration 0003), in the writing transaction, so every path counts: cascades, other replicas, manual SQL. No
    foreign key: the triggers fire while a tenant's delete cascades to its groups, and must not fail it."""

    __tablename__ = "group_list_versions"
    tenant_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    version: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"))


class ServiceAccountRow(Base):
    __tablename__ = "service_accounts"
    __table_args__ = (UniqueConstraint("tenant_id", "name", name="uq_service_accounts_tenant_name"),)
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(128))
    description: Mapped[str] = mapped_column(Text, default="")
    created_by: Mapped[str] = mapped_column(String(128), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ApiKeyRow(Base):
    """An API key. Only a hash of the secret is stored; `prefix` lets a human recognise a key."""

    __tablename__ = "api_keys"
    # Keyset pages of a tenant's keys, oldest first (server.domain.pages).
    __table_args__ = (Index("ix_api_keys_tenant_created", "tenant_id", "created_at", "id"),)
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    type: Mapped[int] = mapped_column(Integer)
    state: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(128), default="")
    description: Mapped[str] = mapped_column(Text, default="")
    owner_user_id: Mapped[str | None] = mapped_column(String(128), index=True)
    service_account_id: Mapped[str | None] = mapped_column(
        ForeignKey("service_accounts.id", ondelete="CASCADE"), index=True
    )
    prefix: Mapped[str] = mapped_column(String(32))
    secret_hash: Mapped[bytes] = mapped_column(LargeBinary(32), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    expire_at: Mapped[datetime | None] = mapped_column(default=None)
    last_used_at: Mapped[datetime | None] = mapped_column(default=None)


class ApiKeyGrantRow(Base):
    __tablename__ = "api_key_grants"
    api_key_id: Mapped[str] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"), primary_key=True)
    resource_kind: Mapped[int] = mapped_column(Integer, primary_key=True)
    resource_name: Mapped[str] = mapped_column(String(128), primary_key=True)


class ApiKeyGroupRow(Base):
    __tablename__ = "api_key_groups"
    api_key_id: Mapped[str] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"), primary_key=True)
    group_id: Mapped[str] = mapped_column(ForeignKey("groups.id", ondelete="CASCADE"), primary_key=True, index=True)


class ResourceRow(Base):
    """The access-control record every resource kind shares: ownership, creator and sharing.

    `tenant_id` NULL means platform-scoped. Kind-specific data lives in the kind's own table keyed by (kind, name).
    """

    __tablename__ = "resources"
    kind: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    tenant_id: Mapped[str | None] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    created_by: Mapped[str | None] = mapped_column(String(128))
    share_to_all: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # This resource and no other ever: names are one namespace a kind, free again once a resource is deleted, and
    # a reference to a resource (an alias's target, an agent's models and MCP servers) pins its uid so that a
    # resource created later under the same name, by any tenant, is never taken for the one it named.
    uid: Mapped[str] = mapped_column(String(32), default=lambda: secrets.token_hex(16))


class ResourceShareRow(Base):
    """A platform-scoped resource shared read-only with one tenant."""

    __tablename__ = "resource_shares"
    kind: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True, index=True)


class ResourcePermissionRow(Base):
    """A grant of a role on one resource to a subject (user, group, service account, tenant, API key)."""

    __tablename__ = "resource_permissions"
    __table_args__ = (Index("ix_resource_permissions_subject", "subject_type", "subject_id"),)
    kind: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    subject_type: Mapped[int] = mapped_column(Integer, primary_key=True)
    subject_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    role: Mapped[int] = mapped_column(Integer, primary_key=True)


class PublicModelIdRow(Base):
    """The one namespace of client-facing model ids, shared by deployments, external models and aliases.

    Its primary key is what makes concurrent creates of one id yield exactly one winner.
    """

    __tablename__ = "public_model_ids"
    public_model_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    kind: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(128))


class UsageEventRow(Base):
    """One metered gateway call (written in batches off the hot path)."""

    __tablename__ = "usage_events"
    __table_args__ = (
        Index("ix_usage_events_time", "occurred_at"),
        # Per-target reads (deployment and external-model metrics) touch only their own target's rows.
        Index("ix_usage_events_target", "target_kind", "target_name", "occurred_at"),
        # A replayed metering journal inserts a call already written as nothing (server.metering).
        Index("ux_usage_events_call_id", "call_id", unique=True),
        # Only captured calls have a capture id: a partial index costs uncaptured rows nothing but its predicate.
        Index(
            "ix_usage_events_capture",
            "capture_id",
            postgresql_where=text("capture_id IS NOT NULL"),
            sqlite_where=text("capture_id IS NOT NULL"),
        ),
        # A member's own calls per model (server.domain.usage_rollups: no rollup holds user and model together).
        Index("ix_usage_events_user", "tenant_id", "user_id", "occurred_at"),
    )
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True)
    # The gateway's id of the call; NULL on rows written before migration 0006.
    call_id: Mapped[str | None] = mapped_column(String(40), default=None)
    occurred_at: Mapped[datetime] = mapped_column(default=utcnow)
    tenant_id: Mapped[str] = mapped_column(String(64), default="")
    api_key_id: Mapped[str] = mapped_column(String(64), default="")
    user_id: Mapped[str] = mapped_column(String(128), default="")
    model_id: Mapped[str] = mapped_column(String(128), default="")
    target_kind: Mapped[int] = mapped_column(Integer, default=0)
    target_name: Mapped[str] = mapped_column(String(128), default="")
    call_kind: Mapped[int] = mapped_column(Integer, default=0)
    prompt_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    completion_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    embedding_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    rerank_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    total_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    status: Mapped[int] = mapped_column(Integer, default=0)
    latency_ms: Mapped[float] = mapped_column(default=0.0)
    request_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    response_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    # The captured exchange of this call (server.capture), when content capture covered it; written with the row.
    capture_id: Mapped[str | None] = mapped_column(String(40), default=None)


class _UsageSums:
    """What a rollup row sums of the usage_events rows in its group."""

    requests: Mapped[int] = mapped_column(BigInteger)
    errors: Mapped[int] = mapped_column(BigInteger)  # status 400 or more
    prompt_tokens: Mapped[int] = mapped_column(BigInteger)
    completion_tokens: Mapped[int] = mapped_column(BigInteger)
    embedding_tokens: Mapped[int] = mapped_column(BigInteger)
    rerank_tokens: Mapped[int] = mapped_column(BigInteger)
    total_tokens: Mapped[int] = mapped_column(BigInteger)


class UsageTenantRollupRow(_UsageSums, Base):
    """usage_events summed per `grain` (3600: an hour, 86400: a UTC day) starting at `bucket` (epoch seconds), per
    tenant. Written only by the database's triggers (migration 0008) in the transaction that writes usage_events,
    so it always agrees with them, as the other rollups do. Read by server.domain.usage_rollups."""

    __tablename__ = "usage_tenant_rollups"
    tenant_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    grain: Mapped[int] = mapped_column(Integer, primary_key=True)
    bucket: Mapped[int] = mapped_column(BigInteger, primary_key=True)


class UsageModelRollupRow(_UsageSums, Base):
    """As UsageTenantRollupRow, per tenant, call kind and model."""

    __tablename__ = "usage_model_rollups"
    __table_args__ = (Index("ix_usage_model_rollups_time", "grain", "bucket"),)  # operators' reads across tenants
    tenant_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    grain: Mapped[int] = mapped_column(Integer, primary_key=True)
    bucket: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    call_kind: Mapped[int] = mapped_column(Integer, primary_key=True)
    model_id: Mapped[str] = mapped_column(String(128), primary_key=True)


class UsageKeyRollupRow(_UsageSums, Base):
    """As UsageModelRollupRow, per tenant, API key, calling user and call kind (no model: see migration 0008)."""

    __tablename__ = "usage_key_rollups"
    __table_args__ = (
        Index("ix_usage_key_rollups_key", "tenant_id", "grain", "api_key_id", "bucket"),  # the top keys' points
        Index("ix_usage_key_rollups_user", "tenant_id", "grain", "user_id", "bucket"),  # a member's own calls
    )
    tenant_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    grain: Mapped[int] = mapped_column(Integer, primary_key=True)
    bucket: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    api_key_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    call_kind: Mapped[int] = mapped_column(Integer, primary_key=True)


# The grain tag of calendar-month rows (a month's most seconds); their bucket is the month's first second (UTC).
USAGE_MONTH_GRAIN = 31 * 86400


class UsageApiKeyRollupRow(_UsageSums, Base):
    """As UsageTenantRollupRow, per tenant and API key alone, in hours, days and UTC calendar months
    (USAGE_MONTH_GRAIN; migration 0009): a key's month is one row, and the month rows are indexed by tokens, so the
    top keys come from the heaviest keys of each month (server.domain._usage_ranking)."""

    __tablename__ = "usage_api_key_rollups"
    __table_args__ = (
        Index(
            "ix_usage_api_key_rollups_month_tokens",
            "tenant_id",
            "bucket",
            "total_tokens",
            postgresql_where=text(f"grain = {USAGE_MONTH_GRAIN}"),
            sqlite_where=text(f"grain = {USAGE_MONTH_GRAIN}"),
        ),
    )
    tenant_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    api_key_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    grain: Mapped[int] = mapped_column(Integer, primary_key=True)
    bucket: Mapped[int] = mapped_column(BigInteger, primary_key=True)


class UsageModelCallRollupRow(_UsageSums, Base):
    """As UsageTenantRollupRow, per tenant and model, of the calls grouped by model only: model calls
    (server.domain.usage.MODEL_CALL_KINDS) that named a model (migration 0009)."""

    __tablename__ = "usage_model_call_rollups"
    __table_args__ = (Index("ix_usage_model_call_rollups_time", "grain", "bucket"),)  # operators' reads
    tenant_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    grain: Mapped[int] = mapped_column(Integer, primary_key=True)
    bucket: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    model_id: Mapped[str] = mapped_column(String(128), primary_key=True)


class ApiTrafficRow(Base):
    """The HTTP requests one service answered with one status in one second (`occurred_at`, a whole second), summed
    for GetPlatformApiTrafficSeries. Rows written before requests were counted per second hold one request each."""

    __tablename__ = "api_traffic"
    __table_args__ = (
        Index("ix_api_traffic_time", "occurred_at"),
        Index("ux_api_traffic_batch_key", "batch_key", unique=True),  # see UsageEventRow.call_id
    )
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True)
    # The journal batch and bucket the row sums (server.metering); NULL on rows written before migration 0006.
    batch_key: Mapped[str | None] = mapped_column(String(160), default=None)
    occurred_at: Mapped[datetime] = mapped_column(default=utcnow)
    service: Mapped[str] = mapped_column(String(64))
    status: Mapped[int] = mapped_column(Integer, default=0)
    requests: Mapped[int] = mapped_column(Integer, default=1, server_default="1")
    request_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    response_bytes: Mapped[int] = mapped_column(BigInteger, default=0)


class AuditEventRow(Base):
    """One audit event (server.audit): a state-changing management call, written in the transaction of the change it
    records, or a security-relevant gateway event. Never a secret nor model content: ids, names and codes only."""

    __tablename__ = "audit_events"
    __table_args__ = (
        Index("ix_audit_events_time", "occurred_at", "id"),
        Index("ix_audit_events_tenant_time", "tenant_id", "occurred_at", "id"),
    )
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    occurred_at: Mapped[datetime] = mapped_column(default=utcnow)
    tenant_id: Mapped[str] = mapped_column(String(64), default="")
    actor_type: Mapped[int] = mapped_column(Integer, default=0)
    user_id: Mapped[str] = mapped_column(String(128), default="")
    service_account_id: Mapped[str] = mapped_column(String(64), default="")
    api_key_id: Mapped[str] = mapped_column(String(64), default="")
    peer_address: Mapped[str] = mapped_column(String(128), default="")
    source: Mapped[int] = mapped_column(Integer, default=0)
    method: Mapped[str] = mapped_column(String(200))
    resource_kind: Mapped[str] = mapped_column(String(64), default="")
    resource_name: Mapped[str] = mapped_column(String(256), default="")
    outcome: Mapped[int] = mapped_column(Integer)
    code: Mapped[str] = mapped_column(String(32), default="")


class StoredResponseRow(Base):
    """A /v1/responses result kept for retrieval and `previous_response_id` (store: true). `context` is the whole
    model-facing history up to and including this response, so a follow-up needs no walk up the chain."""

    __tablename__ = "stored_responses"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(String(64), index=True)
    owner: Mapped[str] = mapped_column(String(160), index=True)  # the principal's subject id
    model_id: Mapped[str] = mapped_column(String(128))
    body: Mapped[dict[str, Any]] = mapped_column(JSON)  # the response object as served
    input_items: Mapped[list[Any]] = mapped_column(JSON, default=list)
    context: Mapped[list[Any]] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # The chain's MCP tool listings (mcp_list_tools items), so a follow-up reuses them instead of listing again.
    mcp_listings: Mapped[list[Any]] = mapped_column(JSON, default=list)


class ModelDeploymentRow(Base):
    __tablename__ = "model_deployments"
    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    public_model_id: Mapped[str] = mapped_column(String(128), unique=True)
    display_name: Mapped[str] = mapped_column(String(256), default="")
    endpoint_url: Mapped[str] = mapped_column(String(2048))
    served_model_id: Mapped[str] = mapped_column(String(256), default="")
    task_type: Mapped[int] = mapped_column(Integer, default=1)
    input_modalities: Mapped[list[int]] = mapped_column(JSON, default=list)
    max_model_len: Mapped[int | None] = mapped_column(Integer, default=None)
    query_prefix: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # Observability: a per-incarnation id (a deployment deleted and created again under its name gets a new one), and
    # where its weights come from, matched to the models cached on GPU nodes.
    uid: Mapped[str] = mapped_column(String(64), default=lambda: new_id("md"))
    model_url: Mapped[str] = mapped_column(String(2048), default="")


class ExternalModelRow(Base):
    __tablename__ = "external_models"
    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    tenant_id: Mapped[str | None] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    provider: Mapped[int] = mapped_column(Integer)
    provider_model_id: Mapped[str] = mapped_column(String(256))
    api_key_encrypted: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)
    base_url: Mapped[str] = mapped_column(String(2048), default="")
    api_version: Mapped[str] = mapped_column(String(64), default="")
    public_model_id: Mapped[str] = mapped_column(String(128), unique=True)
    display_name: Mapped[str] = mapped_column(String(256), default="")
    task_type: Mapped[int] = mapped_column(Integer, default=1)
    input_modalities: Mapped[list[int]] = mapped_column(JSON, default=list)
    query_prefix: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ExternalMcpServerRow(Base):
    """A registered external MCP server. Every secret (bearer token, static header values, OAuth client secret) is
    sealed with server.crypto and never returned; only whether each is set, and the header names, are readable."""

    __tablename__ = "external_mcp_servers"
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str | None] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    server_url: Mapped[str] = mapped_column(String(2048))
    display_name: Mapped[str] = mapped_column(String(256), default="")
    auth_type: Mapped[int] = mapped_column(Integer, default=1)
    oauth: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)  # non-secret OAuth configuration
    api_key_encrypted: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)
    client_secret_encrypted: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)
    static_header_names: Mapped[list[str]] = mapped_column(JSON, default=list)
    static_headers_encrypted: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)  # sealed JSON object
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class ModelAliasRow(Base):
    """An alias; its target may have been deleted since, in which case it reports itself unresolved."""

    __tablename__ = "model_aliases"
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    public_model_id: Mapped[str] = mapped_column(String(128), unique=True)
    display_name: Mapped[str] = mapped_column(String(256), default="")
    target_kind: Mapped[int] = mapped_column(Integer)
    target_name: Mapped[str] = mapped_column(String(128))
    pins: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)  # the target's uid (server.domain.resource_pins)
    unlisted: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class McpNetworkPolicyRow(Base):
    """A private-network exception for MCP egress. `allowed_networks` holds canonical CIDRs, sorted and
    deduplicated; `uid` is new for every creation and `resource_version` changes whenever the row does."""

    __tablename__ = "mcp_network_policies"
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    uid: Mapped[str] = mapped_column(String(64), unique=True)
    resource_version: Mapped[str] = mapped_column(String(64))
    description: Mapped[str] = mapped_column(Text, default="")
    allowed_networks: Mapped[list[str]] = mapped_column(JSON, default=list)
    created_by: Mapped[str] = mapped_column(String(128), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ConversationRow(Base):
    """A conversation, owned by exactly one user or one service account of its tenant.

    `last_sequence` is the highest item sequence ever assigned: appends bump it with one UPDATE … RETURNING, which
    serialises concurrent appends to one conversation (the row lock) and never reuses a number after deletions.
    """

    __tablename__ = "conversations"
    __table_args__ = (
        Index("ix_conversations_owner_user", "tenant_id", "owner_user_id", "created_at"),
        Index("ix_conversations_owner_sa", "owner_service_account_id", "created_at"),
    )
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"))
    owner_user_id: Mapped[str | None] = mapped_column(String(128), default=None)
    owner_service_account_id: Mapped[str | None] = mapped_column(
        ForeignKey("service_accounts.id", ondelete="CASCADE"), default=None
    )
    metadata_: Mapped[dict[str, str]] = mapped_column("metadata", JSON, default=dict)
    last_sequence: Mapped[int] = mapped_column(BigInteger, default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ConversationItemRow(Base):
    """One Responses item of a conversation. `sequence` orders a conversation's items; `data` holds the item's
    remaining fields (content parts, call_id, arguments, output, …) as JSON."""

    __tablename__ = "conversation_items"
    __table_args__ = (UniqueConstraint("conversation_id", "sequence", name="uq_conversation_items_sequence"),)
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id", ondelete="CASCADE"))
    sequence: Mapped[int] = mapped_column(BigInteger)
    type: Mapped[str] = mapped_column(String(64))
    role: Mapped[str] = mapped_column(String(32), default="")
    status: Mapped[str] = mapped_column(String(32), default="")
    data: Mapped[dict[str, object]] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


# --- preset agents (issue 12) ---


class PresetAgentRow(Base):
    """A preset agent. The base model and the guardrails are stored as the public id the creator named plus the
    resource it resolved to then, so a deleted model leaves the agent unresolved instead of silently following a
    new model that later claims the same id. `output_guardrails` is an ordered list of [public id, kind, name]."""

    __tablename__ = "preset_agents"
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str | None] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    public_model_id: Mapped[str] = mapped_column(String(128), unique=True)
    display_name: Mapped[str] = mapped_column(String(256), default="")
    base_public_model_id: Mapped[str] = mapped_column(String(128))
    base_kind: Mapped[int] = mapped_column(Integer)
    base_name: Mapped[str] = mapped_column(String(128))
    instructions: Mapped[str] = mapped_column(Text, default="")
    default_mcp_servers: Mapped[list[str]] = mapped_column(JSON, default=list)
    default_rags: Mapped[list[str]] = mapped_column(JSON, default=list)
    temperature: Mapped[float | None] = mapped_column(Float, default=None)
    top_p: Mapped[float | None] = mapped_column(Float, default=None)
    max_output_tokens: Mapped[int | None] = mapped_column(Integer, default=None)
    output_guardrails: Mapped[list[list[Any]]] = mapped_column(JSON, default=list)
    pins: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)  # uids of what it names (domain.resource_pins)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


# --- RAG deployments and their storage quotas (issue 11) ---


class RagDeploymentRow(Base):
    """A RAG deployment: its settings, its pinned vector size and its storage accounting.

    Its access record is the `resources` row (kind RAG, name = id). `name` is a handle unique per owner: two partial
    unique indexes, because NULL tenant ids (platform-owned RAGs) never collide in a plain unique constraint.
    `used_bytes` is the stored file content, changed only through server.domain.rag_storage (conditional updates,
    safe under concurrent uploads); `quota_bytes`/`quota` are the RAG's own quota (None: the tenant default applies).
    """

    __tablename__ = "rag_deployments"
    __table_args__ = (
        Index(
            "uq_rag_deployments_tenant_name",
            "tenant_id",
            "name",
            unique=True,
            sqlite_where=text("tenant_id IS NOT NULL"),
            postgresql_where=text("tenant_id IS NOT NULL"),
        ),
        Index(
            "uq_rag_deployments_platform_name",
            "name",
            unique=True,
            sqlite_where=text("tenant_id IS NULL"),
            postgresql_where=text("tenant_id IS NULL"),
        ),
    )
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    tenant_id: Mapped[str | None] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(64))
    display_name: Mapped[str] = mapped_column(String(256), default="")
    embedding_model: Mapped[str] = mapped_column(String(128))
    embedding_dimensions: Mapped[int | None] = mapped_column(Integer, default=None)
    chunk_size_tokens: Mapped[int] = mapped_column(Integer)
    chunk_overlap_tokens: Mapped[int] = mapped_column(Integer)
    rerank_model: Mapped[str | None] = mapped_column(String(128), default=None)
    top_k: Mapped[int] = mapped_column(Integer)
    score_threshold: Mapped[float | None] = mapped_column(Float, default=None)
    weights: Mapped[dict[str, float]] = mapped_column(JSON, default=dict)  # {"dense": w, "lexical": w}
    pins: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)  # its models' uids (domain.resource_pins)
    # The model its vectors come from (kind, name; pinned in `pins`): the alias's target when the RAG was created,
    # when `embedding_model` is an alias. None: not known (its model was gone when migration 0015 ran).
    embedding_target_kind: Mapped[int | None] = mapped_column(Integer, default=None)
    embedding_target_name: Mapped[str | None] = mapped_column(String(128), default=None)
    creator: Mapped[str] = mapped_column(String(128), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    used_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    quota_bytes: Mapped[int | None] = mapped_column(BigInteger, default=None)
    quota: Mapped[str | None] = mapped_column(String(64), default=None)  # as set, echoed back


class RagTenantQuotaRow(Base):
    """A tenant's RAG storage quotas: the aggregate quota and the default for RAGs without their own, each kept as
    bytes and as the quantity string that was set. The row is also the lock that serialises a tenant's uploads."""

    __tablename__ = "rag_tenant_quotas"
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True)
    quota_bytes: Mapped[int | None] = mapped_column(BigInteger, default=None)
    quota: Mapped[str | None] = mapped_column(String(64), default=None)
    default_quota_bytes: Mapped[int | None] = mapped_column(BigInteger, default=None)
    default_quota: Mapped[str | None] = mapped_column(String(64), default=None)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


# --- RAG files and chunks (issue 11). Deleting a RAG deployment cascades to all of them; the chunk index's
# engine-specific parts (the SQLite FTS5 table, the pgvector table and its per-RAG HNSW indexes) are created by
# server/store/rag_index at run time, because a vector index's dimension is pinned by a RAG's first embedding.


class RagFileRow(Base):
    """One file of a RAG. `status` is processing / ready / failed (`failure_reason` says why); its chunks are
    written in the same transaction that marks it ready, so a search never sees a half-ingested file."""

    __tablename__ = "rag_files"
    __table_args__ = (
        UniqueConstraint("rag_id", "external_id", name="uq_rag_files_external_id"),
        Index("ix_rag_files_rag_created", "rag_id", "created_at", "id"),
    )
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    rag_id: Mapped[str] = mapped_column(ForeignKey("rag_deployments.id", ondelete="CASCADE"))
    filename: Mapped[str] = mapped_column(String(512))
    content_type: Mapped[str] = mapped_column(String(128), default="")
    kind: Mapped[str] = mapped_column(String(32), default="")
    size_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    status: Mapped[str] = mapped_column(String(16))
    failure_reason: Mapped[str | None] = mapped_column(Text, default=None)
    external_id: Mapped[str | None] = mapped_column(String(512), default=None)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSON, default=dict)
    chunk_count: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class RagChunkRow(Base):
    """A chunk of a file. `embedding` holds little-endian float32 bytes where vectors are searched in process
    (SQLite, or PostgreSQL without pgvector); with pgvector the vector lives in rag_chunk_vectors instead."""

    __tablename__ = "rag_chunks"
    __table_args__ = (Index("ix_rag_chunks_rag", "rag_id", "id"),)
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True)
    rag_id: Mapped[str] = mapped_column(String(64))
    file_id: Mapped[str] = mapped_column(ForeignKey("rag_files.id", ondelete="CASCADE"), index=True)
    ordinal: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    token_count: Mapped[int] = mapped_column(Integer, default=0)
    embedding: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)


class RagIndexGenerationRow(Base):
    """Bumped in every transaction that adds or removes a RAG's chunks, so each replica's in-process vector
    matrix knows, with one primary-key read per query, when it is stale."""

    __tablename__ = "rag_index_generations"
    rag_id: Mapped[str] = mapped_column(ForeignKey("rag_deployments.id", ondelete="CASCADE"), primary_key=True)
    generation: Mapped[int] = mapped_column(BigInteger, default=0)


# --- Rate limits, concurrency caps and token budgets (issue 25): policies, and the soft-budget crossings the gateway
# records. Current counts live in the gateway's counter store (its memory, or Redis), not here.


class LimitPolicyRow(Base):
    """The limits one tier (1 platform, 2 tenant) sets on one scope (1 tenant, 2 service account, 3 API key, 4 model)
    of a tenant. Each limit is kept as its value and, in `quantities`, as the quantity string that was set."""

    __tablename__ = "limit_policies"
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True)
    tier: Mapped[int] = mapped_column(Integer, primary_key=True)
    scope_kind: Mapped[int] = mapped_column(Integer, primary_key=True)
    scope_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    requests_per_minute: Mapped[int | None] = mapped_column(BigInteger, default=None)
    tokens_per_minute: Mapped[int | None] = mapped_column(BigInteger, default=None)
    concurrent_requests: Mapped[int | None] = mapped_column(BigInteger, default=None)
    token_budget: Mapped[int | None] = mapped_column(BigInteger, default=None)
    budget_period: Mapped[int] = mapped_column(Integer, default=0)
    soft_budget: Mapped[int | None] = mapped_column(BigInteger, default=None)
    quantities: Mapped[dict[str, str]] = mapped_column(JSON, default=dict)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class LimitSoftCrossingRow(Base):
    """The first time a budget's use crossed its soft threshold in one period (`period` names it: 2026-11-25,
    2026-W48, 2026-11)."""

    __tablename__ = "limit_soft_crossings"
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True)
    tier: Mapped[int] = mapped_column(Integer, primary_key=True)
    scope_kind: Mapped[int] = mapped_column(Integer, primary_key=True)
    scope_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    period: Mapped[str] = mapped_column(String(16), primary_key=True)
    crossed_at: Mapped[datetime] = mapped_column(default=utcnow)


class RevokedSessionRow(Base):
    """A session token signed out before its expiry (server.session_revocations), by the SHA-256 of its signed part:
    refused until `expires_at`, when the token would be refused anyway and the row may go. Also a console sign-in
    flow that has finished (`SessionRevocations.spend`), by the SHA-256 of `spent:` and its state."""

    __tablename__ = "revoked_sessions"
    token_hash: Mapped[bytes] = mapped_column(LargeBinary(32), primary_key=True)
    expires_at: Mapped[datetime] = mapped_column(index=True)
    revoked_at: Mapped[datetime] = mapped_column(default=utcnow)


class CapturePolicyRow(Base):
    """Whether content capture (server.capture) is on for one scope of a tenant: the tenant itself (scope 1, scope_id
    the tenant id), a service account (2) or an API key (3). A row set off is kept, so who turned it off shows."""

    __tablename__ = "capture_policies"
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True)
    scope_kind: Mapped[int] = mapped_column(Integer, primary_key=True)
    scope_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    enabled: Mapped[bool] = mapped_column(Boolean, default=False)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_by: Mapped[str] = mapped_column(String(128), default="")


class CaptureGrantRow(Base):
    """The content capture capability granted to one user (a tenant admin) for one tenant by a platform operator."""

    __tablename__ = "capture_grants"
    tenant_id: Mapped[str] = mapped_column(ForeignKey("tenants.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(128), primary_key=True)
    granted_at: Mapped[datetime] = mapped_column(default=utcnow)
    granted_by: Mapped[str] = mapped_column(String(128), default="")


class CapturedExchangeRow(Base):
    """One captured gateway call: the ids it is filtered by, the full sizes of its bodies and whether each was cut at
    the capture's size bound (`*_truncated`); its bodies themselves are sealed in a `captured_bodies` group
    (`bodies_id`, at `bodies_index`), never stored in the clear. Rows written before migration 0010 hold their
    own bodies sealed alone in `sealed` instead (no group). Its usage row is the `usage_events` row whose capture_id
    is this id, written in the same transaction. On SQLite a WITHOUT ROWID table (its rows stored in the primary key's
    b-tree): a captured call's row is one b-tree insert fewer (measured 4.6 us a row against 6.4 us)."""

    __tablename__ = "captured_exchanges"
    __table_args__ = (
        Index("ix_captured_exchanges_time", "occurred_at", "id"),
        Index("ix_captured_exchanges_tenant_time", "tenant_id", "occurred_at", "id"),
        {"sqlite_with_rowid": False},
    )
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    occurred_at: Mapped[datetime] = mapped_column(default=utcnow)
    tenant_id: Mapped[str] = mapped_column(String(64), default="")
    api_key_id: Mapped[str] = mapped_column(String(64), default="")
    service_account_id: Mapped[str] = mapped_column(String(64), default="")
    user_id: Mapped[str] = mapped_column(String(128), default="")
    model_id: Mapped[str] = mapped_column(String(128), default="")
    call_kind: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[int] = mapped_column(Integer, default=0)
    sealed: Mapped[str | None] = mapped_column(Text, default=None)
    bodies_id: Mapped[str | None] = mapped_column(String(40), default=None)
    bodies_index: Mapped[int | None] = mapped_column(Integer, default=None)
    request_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    response_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    request_truncated: Mapped[bool] = mapped_column(Boolean, default=False)
    response_truncated: Mapped[bool] = mapped_column(Boolean, default=False)


class CapturedBodiesRow(Base):
    """The request and response bodies of a group of one tenant's captured exchanges that one meter batch wrote:
    compressed and sealed as one under the platform's secret key (`sealed`, AES-GCM as base64 text, server.crypto),
    so a captured call costs a share of one compression and one encryption rather than one of each
    (server.capture.store). `occurred_at` is the time of its newest exchange: the retention sweep deletes a group
    once every exchange in it is past the edge."""

    __tablename__ = "captured_bodies"
    __table_args__ = (
        Index("ix_captured_bodies_time", "occurred_at"),
        Index("ix_captured_bodies_tenant", "tenant_id"),
    )
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    occurred_at: Mapped[datetime] = mapped_column(default=utcnow)
    tenant_id: Mapped[str] = mapped_column(String(64), default="")
    sealed: Mapped[str] = mapped_column(Text)
