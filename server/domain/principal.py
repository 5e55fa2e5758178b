"""Who is calling: a signed-in user (optionally scoped to a tenant) or an API key acting in its tenant."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

__all__ = ["ApiKeyIdentity", "ApiKeyType", "Principal"]


class ApiKeyType(IntEnum):
    """Numbers match platform.tenants.v1.ApiKeyType."""

    PERSONAL = 1
    SERVICE_ACCOUNT = 2
    PERSONAL_ALL_RESOURCES = 3


@dataclass(frozen=True)
class ApiKeyIdentity:
    key_id: str
    tenant_id: str
    type: ApiKeyType
    owner_user_id: str | None
    service_account_id: str | None


@dataclass(frozen=True)
class Principal:
    """The authenticated caller. `user_id` is the acting user (a key's owner for personal keys)."""

    user_id: str | None
    email: str = ""
    display_name: str = ""
    can_manage_tenants: bool = False
    can_manage_models: bool = False
    # The tenant the caller is scoped to: X-Platform-Tenant-Id for sessions, the key's tenant for keys.
    scoped_tenant_id: str | None = None
    api_key: ApiKeyIdentity | None = None

    @property
    def subject_id(self) -> str:
        """A stable id for audit and `created_by`: the user, or the service account behind a key."""
        if self.api_key is not None and self.api_key.service_account_id:
            return self.api_key.service_account_id
        return self.user_id or ""
