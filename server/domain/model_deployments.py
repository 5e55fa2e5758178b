"""In-cluster model deployments: an OpenAI-compatible endpoint registered under a publicModelId.

Platform-scoped: created and managed with can_manage_models from platform scope; tenants read (and invoke) them
through Sharing and grants. Deleting a deployment keeps the aliases that point at it; they report it unresolved.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from server import permissions
from server.domain.model_registry import (
    Capabilities,
    capabilities_of,
    claim_public_model_id,
    immutable_public_model_id,
    readable_targets,
    release_and_delete,
)
from server.domain.networks import EndpointCheck, Reach
from server.domain.principal import Principal
from server.domain.validation import (
    MAX_DISPLAY_NAME,
    MAX_PROVIDER_MODEL_ID,
    MAX_QUERY_PREFIX,
    limit_text,
    require_http_url,
    validate_resource_name,
)
from server.errors import InvalidArgument
from server.permissions import ResourceKind, ResourceRef, Sharing
from server.store.db import new_id
from server.store.keyset import Window
from server.store.models import ModelDeploymentRow

__all__ = ["Deployment", "DeploymentSpec", "create", "delete", "get", "list_readable", "update"]

KIND = ResourceKind.MODEL_DEPLOYMENT
_MODEL_URL_MAX = 2048
_MAX_MODEL_LEN = 2**31 - 1  # the column's (a 32-bit integer)


@dataclass(frozen=True)
class DeploymentSpec:
    name: str
    public_model_id: str
    display_name: str
    endpoint_url: str
    served_model_id: str
    capabilities: Capabilities | None  # None = not given: update keeps them, create takes text generation
    max_model_len: int | None  # None = not given: update keeps it
    query_prefix: str | None  # None = not given (update keeps it); "" disables; a value sets it
    sharing: Sharing
    model_url: str | None = None  # None = not given (update keeps it); "" clears; a value sets it


@dataclass(frozen=True)
class Deployment:
    name: str
    public_model_id: str
    display_name: str
    endpoint_url: str
    served_model_id: str
    capabilities: Capabilities
    max_model_len: int | None
    query_prefix: str | None
    sharing: Sharing
    created_at: datetime
    model_url: str = ""


def _ref(name: str) -> ResourceRef:
    return ResourceRef(KIND, name)


async def _view(session: AsyncSession, principal: Principal, row: ModelDeploymentRow) -> Deployment:
    return _build(row, await permissions.ownership(session, _ref(row.name), principal))


def _build(row: ModelDeploymentRow, owner: permissions.Ownership) -> Deployment:
    return Deployment(
        name=row.name,
        public_model_id=row.public_model_id,
        display_name=row.display_name,
        endpoint_url=row.endpoint_url,
        served_model_id=row.served_model_id or row.public_model_id,
        capabilities=Capabilities(row.task_type, tuple(row.input_modalities or ())),
        max_model_len=row.max_model_len,
        query_prefix=row.query_prefix,
        sharing=owner.sharing,
        created_at=row.created_at,
        model_url=row.model_url,
    )


def _model_url(value: str | None) -> str | None:
    if value is not None and (len(value) > _MODEL_URL_MAX or any(ord(c) < 32 or ord(c) == 127 for c in value)):
        raise InvalidArgument(
            f"model_url must be at most {_MODEL_URL_MAX} characters without control characters", field="model_url"
        )
    return value


def _max_len(value: int | None) -> int | None:
    if value is not None and not 0 < value <= _MAX_MODEL_LEN:
        raise InvalidArgument(
            f"runtime_info.max_model_len must be between 1 and {_MAX_MODEL_LEN}", field="runtime_info.max_model_len"
        )
    return value


async def create(
    session: AsyncSession, principal: Principal, spec: DeploymentSpec, *, check: EndpointCheck
) -> Deployment:
    permissions.require_platform_scope(principal, "can_manage_models")
    name = validate_resource_name(spec.name)
    endpoint = require_http_url(spec.endpoint_url, "endpoint_url")
    limit_text(spec.query_prefix or "", "query_prefix", MAX_QUERY_PREFIX)
    # Deployments are registered by platform operators only: private (in-cluster) addresses are theirs to use.
    await check(endpoint, field="endpoint_url", reach=Reach.PLATFORM)
    capabilities = spec.capabilities or capabilities_of(0, ())
    await permissions.create_resource(session, principal, _ref(name), tenant_id=None, sharing=spec.sharing)
    await claim_public_model_id(session, spec.public_model_id, _ref(name))
    row = ModelDeploymentRow(
        name=name,
        public_model_id=spec.public_model_id,
        display_name=limit_text(spec.display_name, "display_name", MAX_DISPLAY_NAME) or spec.public_model_id,
        endpoint_url=endpoint,
        served_model_id=limit_text(spec.served_model_id, "served_model_id", MAX_PROVIDER_MODEL_ID)
        or spec.public_model_id,
        task_type=capabilities.task_type,
        input_modalities=list(capabilities.input_modalities),
        max_model_len=_max_len(spec.max_model_len),
        query_prefix=spec.query_prefix,
        model_url=_model_url(spec.model_url) or "",
        uid=new_id("md"),
    )
    session.add(row)
    await session.flush()
    return await _view(session, principal, row)


async def _row(session: AsyncSession, name: str) -> ModelDeploymentRow:
    row = await session.get(ModelDeploymentRow, name)
    assert row is not None, "a resource row without its deployment"
    return row


async def get(session: AsyncSession, principal: Principal, name: str) -> Deployment:
    await permissions.require_read(session, principal, _ref(name))
    return await _view(session, principal, await _row(session, name))


async def update(
    session: AsyncSession, principal: Principal, spec: DeploymentSpec, *, check: EndpointCheck
) -> Deployment:
    """Update everything but publicModelId (immutable) and sharing (UpdateModelDeploymentSharing)."""
    await permissions.require_admin(session, principal, _ref(spec.name))
    row = await _row(session, spec.name)
    immutable_public_model_id(spec.public_model_id, row.public_model_id)
    if spec.endpoint_url:
        endpoint = require_http_url(spec.endpoint_url, "endpoint_url")
        await check(endpoint, field="endpoint_url", reach=Reach.PLATFORM)
        row.endpoint_url = endpoint
    if spec.display_name:
        row.display_name = limit_text(spec.display_name, "display_name", MAX_DISPLAY_NAME)
    if spec.served_model_id:
        row.served_model_id = limit_text(spec.served_model_id, "served_model_id", MAX_PROVIDER_MODEL_ID)
    if spec.capabilities is not None:
        row.task_type = spec.capabilities.task_type
        row.input_modalities = list(spec.capabilities.input_modalities)
    if spec.max_model_len is not None:
        row.max_model_len = _max_len(spec.max_model_len)
    if spec.query_prefix is not None:
        row.query_prefix = limit_text(spec.query_prefix, "query_prefix", MAX_QUERY_PREFIX)
    if spec.model_url is not None:
        row.model_url = _model_url(spec.model_url) or ""
    await session.flush()
    return await _view(session, principal, row)


async def delete(session: AsyncSession, principal: Principal, name: str) -> None:
    await permissions.require_admin(session, principal, _ref(name))
    await release_and_delete(session, _ref(name), await _row(session, name))


async def list_readable(session: AsyncSession, principal: Principal, window: Window | None = None) -> list[Deployment]:
    """Every deployment the caller can read, by name (a window: one keyset page of them)."""
    found = await readable_targets(session, principal, KIND, ModelDeploymentRow, window)
    return [_build(row, owner) for row, owner in found]
