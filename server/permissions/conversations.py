"""Conversations: who owns one, and who may see it. Stored responses (/v1/responses with `store`) are read through
the same gate (`conversation_owner`), so offboarding a member cuts both at once.

Owner
    Every conversation belongs to exactly one owner in one tenant, fixed when it is created:
    - a user, when created through the user's session or through one of the user's personal or Personal (all
      resources) keys of that tenant (those keys act as the user, so they all see the same conversations);
    - a service account, when created through one of its keys (every key of that service account sees them).
Visibility
    Only the owner sees a conversation, its items and its metadata. Tenant admins and platform operators do not:
    conversations are people's private exchanges with models, and no administrative task needs their content. An
    admin cuts access by removing the member or deleting the service account (which deletes its conversations).
    Every caller inside the tenant who may not see a conversation is told it does not exist (not_found), so
    conversation ids cannot be probed; callers outside the tenant never get that far (see Tenancy).
Tenancy
    The caller must belong to the tenant the request names: a session of a tenant member (Member, Editor or Admin),
    or an API key of that tenant (a personal key's owner must still be a member). Platform roles grant nothing here:
    a platform operator who is not a member is refused (permission_denied) like any outsider.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement
from sqlalchemy.ext.asyncio import AsyncSession

from server.domain.principal import ApiKeyType, Principal
from server.errors import PermissionDenied
from server.permissions.tenancy import resolve_tenant, tenant_role
from server.store.models import ConversationRow

__all__ = ["ConversationOwner", "conversation_owner", "owned_conversations", "owns_conversation"]


@dataclass(frozen=True)
class ConversationOwner:
    """The owner a caller acts as in one tenant: exactly one of user_id and service_account_id is set."""

    tenant_id: str
    user_id: str | None = None
    service_account_id: str | None = None


async def conversation_owner(session: AsyncSession, principal: Principal, tenant_id: str) -> ConversationOwner:
    """The gate of every conversation operation: the tenant must be the caller's, and the answer is whose
    conversations the caller sees there (its own). `tenant_id` is the request's; empty means the caller's scope."""
    tenant_id = resolve_tenant(principal, tenant_id)
    key = principal.api_key
    if key is not None and key.type == ApiKeyType.SERVICE_ACCOUNT and key.service_account_id:
        return ConversationOwner(tenant_id, service_account_id=key.service_account_id)
    if principal.user_id is None or await tenant_role(session, principal, tenant_id) is None:
        raise PermissionDenied("the caller is not a member of this tenant")
    return ConversationOwner(tenant_id, user_id=principal.user_id)


def owns_conversation(owner: ConversationOwner, row: ConversationRow) -> bool:
    return (
        row.tenant_id == owner.tenant_id
        and row.owner_user_id == owner.user_id
        and row.owner_service_account_id == owner.service_account_id
    )


def owned_conversations(owner: ConversationOwner) -> ColumnElement[bool]:
    """SQL condition selecting exactly the conversations `owns_conversation` admits."""
    if owner.service_account_id is not None:
        return (ConversationRow.tenant_id == owner.tenant_id) & (
            ConversationRow.owner_service_account_id == owner.service_account_id
        )
    return (
        (ConversationRow.tenant_id == owner.tenant_id)
        & (ConversationRow.owner_user_id == owner.user_id)
        & ConversationRow.owner_service_account_id.is_(None)
    )
