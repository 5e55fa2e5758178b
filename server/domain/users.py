"""Users as the identity provider describes them, and what happens when one first signs in."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from server import permissions
from server.domain.validation import require_user_id
from server.errors import NotFound
from server.store.db import insert_ignoring_duplicates
from server.store.models import ApiKeyRow, TenantInviteRow, TenantMemberRow, UserRow, utcnow
from server.tokens import TokenClaims

__all__ = ["UserInfo", "delete_user", "resolve_users", "sign_in"]


@dataclass(frozen=True)
class UserInfo:
    user_id: str
    email: str
    display_name: str


async def sign_in(session: AsyncSession, claims: TokenClaims) -> None:
    """Record the user and accept every pending invite addressed to their email.

    A new user's first requests may arrive together on several replicas, so every insert here tolerates having
    been done already by a concurrent sign-in.
    """
    await insert_ignoring_duplicates(
        session,
        UserRow,
        {
            "id": claims.user_id,
            "email": claims.email or None,
            "display_name": claims.display_name,
            "created_at": utcnow(),
        },
    )
    user = await session.get(UserRow, claims.user_id)
    assert user is not None
    user.email = claims.email or user.email
    user.display_name = claims.display_name or user.display_name
    user.deleted_at = None
    if claims.email:
        invites = (await session.scalars(select(TenantInviteRow).where(TenantInviteRow.email == claims.email))).all()
        for invite in invites:
            await insert_ignoring_duplicates(
                session,
                TenantMemberRow,
                {"tenant_id": invite.tenant_id, "user_id": claims.user_id, "role": invite.role, "created_at": utcnow()},
            )
            permissions.forget_membership(session, invite.tenant_id, claims.user_id)
        # A Core delete: a concurrent sign-in may have removed the invites already.
        await session.execute(delete(TenantInviteRow).where(TenantInviteRow.email == claims.email))
    await session.flush()


async def resolve_users(session: AsyncSession, user_ids: Iterable[str]) -> dict[str, UserInfo]:
    """Users that still resolve (known and not deprovisioned), in one query."""
    ids = list(set(user_ids))
    if not ids:
        return {}
    rows = await session.scalars(select(UserRow).where(UserRow.id.in_(ids), UserRow.deleted_at.is_(None)))
    return {r.id: UserInfo(r.id, r.email or "", r.display_name) for r in rows}


async def delete_user(session: AsyncSession, user_id: str) -> None:
    """Mark a user as deprovisioned by the identity provider.

    Memberships stay as they are (an administrator removes them deliberately); reads show such users without
    metadata, because they no longer resolve. The keys they own stop working (`server.keyauth` refuses a key whose
    owner is deprovisioned): touching them here drops every process's cached lookups of them.
    """
    require_user_id(user_id)
    user = await session.get(UserRow, user_id)
    if user is None or user.deleted_at is not None:
        raise NotFound(f"user {user_id!r} not found", field="user_id")
    user.deleted_at = utcnow()
    await session.execute(update(ApiKeyRow).where(ApiKeyRow.owner_user_id == user_id).values(updated_at=utcnow()))
    await session.flush()
