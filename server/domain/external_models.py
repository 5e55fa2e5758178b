"""External model connectors: a remote provider's model served through the gateway under a publicModelId.

Platform-owned (CreateExternalModel, can_manage_models) or tenant-owned (CreateTenantExternalModel, the tenant's
create-external-model capability; the creator manages it). The provider API key is encrypted at rest and never
returned. Sharing changes only through `set_sharing`.

Outbound: a base URL is checked by the egress guard when it is stored (a tenant's model may never point at protected
addresses, nor at private ones no network policy allows; a platform model may use private ones). A stored key is
bound to its destination: an update that moves the model to another base URL or provider without giving the key
again is refused (`api_key`), so a key is never sent to an address its owner did not give it for.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import IntEnum

from sqlalchemy.ext.asyncio import AsyncSession

from server import permissions
from server.crypto import SecretBox
from server.domain import usage
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
    MAX_API_VERSION,
    MAX_DISPLAY_NAME,
    MAX_PROVIDER_MODEL_ID,
    MAX_QUERY_PREFIX,
    limit_text,
    require_header_secret,
    require_http_url,
    require_nonempty,
    validate_resource_name,
)
from server.errors import InvalidArgument
from server.permissions import Capability, ResourceKind, ResourceRef, Sharing
from server.store.keyset import Window
from server.store.models import ExternalModelRow

__all__ = [
    "ExternalModel",
    "ExternalModelSpec",
    "Provider",
    "create",
    "delete",
    "get",
    "list_readable",
    "metrics",
    "update",
]

KIND = ResourceKind.EXTERNAL_MODEL


class Provider(IntEnum):
    """Numbers match platform.modelmanager.v1.ExternalModelProvider."""

    VENDOR_A = 1
    VENDOR_B = 2
    CUSTOM_COMPATIBLE = 3


@dataclass(frozen=True)
class ExternalModelSpec:
    name: str
    provider: int
    provider_model_id: str
    api_key: str  # empty: none given (update keeps the stored one)
    base_url: str
    api_version: str
    public_model_id: str
    display_name: str
    capabilities: Capabilities | None  # None = not given: update keeps them, create takes text generation
    query_prefix: str | None  # None = not given (update keeps it); "" disables; a value sets it


@dataclass(frozen=True)
class ExternalModel:
    """As returned to clients: no API key, ever."""

    name: str
    tenant_id: str | None
    provider: Provider
    provider_model_id: str
    base_url: str
    api_version: str
    public_model_id: str
    display_name: str
    capabilities: Capabilities
    query_prefix: str | None
    sharing: Sharing
    created_at: datetime


def _ref(name: str) -> ResourceRef:
    return ResourceRef(KIND, name)


def _build(row: ExternalModelRow, owner: permissions.Ownership) -> ExternalModel:
    return ExternalModel(
        name=row.name,
        tenant_id=row.tenant_id,
        provider=Provider(row.provider),
        provider_model_id=row.provider_model_id,
        base_url=row.base_url,
        api_version=row.api_version,
        public_model_id=row.public_model_id,
        display_name=row.display_name,
        capabilities=Capabilities(row.task_type, tuple(row.input_modalities or ())),
        query_prefix=row.query_prefix,
        sharing=owner.sharing,
        created_at=row.created_at,
    )


def _provider(value: int) -> Provider:
    try:
        return Provider(value)
    except ValueError:
        raise InvalidArgument("provider must be VENDOR_A, VENDOR_B or CUSTOM_COMPATIBLE", field="provider") from None


def _endpoint(provider: Provider, base_url: str, api_version: str) -> tuple[str, str]:
    """baseUrl is required for CUSTOM_COMPATIBLE and VENDOR_B, apiVersion for VENDOR_B; VENDOR_A's is configured."""
    if provider == Provider.VENDOR_A:
        if base_url:
            raise InvalidArgument("base_url is set by the platform for VENDOR_A", field="base_url")
        return "", api_version
    url = require_http_url(base_url, "base_url")
    if provider == Provider.VENDOR_B:
        require_nonempty(api_version, "api_version")
    return url, api_version


def _reach(tenant_id: str | None) -> Reach:
    return Reach.PLATFORM if tenant_id is None else Reach.TENANT


def _check_text(spec: ExternalModelSpec) -> None:
    limit_text(spec.provider_model_id, "provider_model_id", MAX_PROVIDER_MODEL_ID)
    limit_text(spec.display_name, "display_name", MAX_DISPLAY_NAME)
    limit_text(spec.query_prefix or "", "query_prefix", MAX_QUERY_PREFIX)
    limit_text(spec.api_version, "api_version", MAX_API_VERSION)
    if spec.api_key:
        require_header_secret(spec.api_key, "api_key")


async def create(
    session: AsyncSession,
    principal: Principal,
    spec: ExternalModelSpec,
    box: SecretBox,
    *,
    tenant_id: str | None,
    check: EndpointCheck,
) -> ExternalModel:
    if tenant_id is None:
        permissions.require_platform_scope(principal, "can_manage_models")
    else:
        tenant_id = permissions.resolve_tenant(principal, tenant_id)
        await permissions.require_capability(session, principal, tenant_id, Capability.CREATE_EXTERNAL_MODEL)
    name = validate_resource_name(spec.name)
    provider = _provider(spec.provider)
    base_url, api_version = _endpoint(provider, spec.base_url, spec.api_version)
    require_nonempty(spec.provider_model_id, "provider_model_id")
    _check_text(spec)
    if base_url:
        await check(base_url, field="base_url", reach=_reach(tenant_id))
    capabilities = spec.capabilities or capabilities_of(0, ())
    # Sharing is read-only here (UpdateExternalModelSharing is its only write path): a new model starts private.
    await permissions.create_resource(session, principal, _ref(name), tenant_id=tenant_id)
    await claim_public_model_id(session, spec.public_model_id, _ref(name))
    row = ExternalModelRow(
        name=name,
        tenant_id=tenant_id,
        provider=int(provider),
        provider_model_id=spec.provider_model_id,
        api_key_encrypted=box.seal(spec.api_key) if spec.api_key else None,
        base_url=base_url,
        api_version=api_version,
        public_model_id=spec.public_model_id,
        display_name=spec.display_name or spec.public_model_id,
        task_type=capabilities.task_type,
        input_modalities=list(capabilities.input_modalities),
        query_prefix=spec.query_prefix,
    )
    session.add(row)
    await session.flush()
    return _build(row, await permissions.ownership(session, _ref(name), principal))


async def _row(session: AsyncSession, name: str) -> ExternalModelRow:
    row = await session.get(ExternalModelRow, name)
    assert row is not None, "a resource row without its external model"
    return row


async def get(session: AsyncSession, principal: Principal, name: str) -> ExternalModel:
    owner = await permissions.require_admin(session, principal, _ref(name))
    return _build(await _row(session, name), owner)


async def metrics(
    session: AsyncSession, principal: Principal, name: str, window: usage.Window, step: timedelta | None
) -> tuple[int, list[tuple[usage.Bucket, usage.TokenTotals]]]:
    """Token usage of the model per step (every call that reached it, through an alias too). Like get, it needs
    can_admin: a shared model's usage spans every tenant that calls it."""
    await permissions.require_admin(session, principal, _ref(name))
    await _row(session, name)
    return await usage.target_token_series(session, _ref(name), window, step)


async def update(
    session: AsyncSession, principal: Principal, spec: ExternalModelSpec, box: SecretBox, *, check: EndpointCheck
) -> ExternalModel:
    """Everything but name, publicModelId (immutable) and sharing. An empty apiKey keeps the stored one, unless the
    destination (base URL or provider) changes: then the key must be given again."""
    owner = await permissions.require_admin(session, principal, _ref(spec.name))
    row = await _row(session, spec.name)
    immutable_public_model_id(spec.public_model_id, row.public_model_id)
    provider = _provider(spec.provider) if spec.provider else Provider(row.provider)
    # An omitted base URL keeps the stored one, except for VENDOR_A, whose base URL is the platform's.
    requested_base = spec.base_url if spec.base_url or provider == Provider.VENDOR_A else row.base_url
    base_url, api_version = _endpoint(provider, requested_base, spec.api_version or row.api_version)
    moved = base_url != row.base_url or int(provider) != row.provider
    if moved and row.api_key_encrypted is not None and not spec.api_key:
        raise InvalidArgument(
            "api_key must be given again when base_url or provider changes: the stored key is only ever sent to the "
            "destination it was given for",
            field="api_key",
        )
    if base_url and spec.base_url:
        await check(base_url, field="base_url", reach=_reach(row.tenant_id))
    row.provider, row.base_url, row.api_version = int(provider), base_url, api_version
    _check_text(spec)
    if spec.provider_model_id:
        row.provider_model_id = spec.provider_model_id
    if spec.api_key:
        row.api_key_encrypted = box.seal(spec.api_key)
    if spec.display_name:
        row.display_name = spec.display_name
    if spec.capabilities is not None:
        row.task_type = spec.capabilities.task_type
        row.input_modalities = list(spec.capabilities.input_modalities)
    if spec.query_prefix is not None:
        row.query_prefix = spec.query_prefix
    await session.flush()
    return _build(row, owner)


async def delete(session: AsyncSession, principal: Principal, name: str) -> None:
    await permissions.require_admin(session, principal, _ref(name))
    await release_and_delete(session, _ref(name), await _row(session, name))


async def list_readable(
    session: AsyncSession, principal: Principal, window: Window | None = None
) -> list[ExternalModel]:
    """Every external model the caller can read, by name (a window: one keyset page of them)."""
    found = await readable_targets(session, principal, KIND, ExternalModelRow, window)
    return [_build(row, owner) for row, owner in found]
