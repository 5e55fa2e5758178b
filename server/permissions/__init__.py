"""THE permission model: every "may this caller do that?" question is answered in this package and nowhere else.

- `tenancy`   tenant roles and capabilities, tenant admin, platform roles, group reads, tenant scoping of requests.
- `resources` one model for every resource kind: ownership (platform or tenant), creator rights, Sharing, grants
              to subjects (user, group, service account, tenant, API key) with roles, and API-key grants; answers
              can_read / can_admin / can_invoke, can_reference (what a resource may name to use on its own
              authority: usable in its owner tenant alone) and withdrawn (what it names and may no longer use),
              and lists what a principal can read in one query.
- `credentials` what an API key may call on the management API at all (deny by default), checked once per RPC.
- `limits`    who sets rate limits and budgets (operators: platform tier; tenant admins: tenant tier; never
              keys) and who reads their use (a key's holder, tenant admins, operators).
- `audit`     who reads the audit trail (operators: every tenant; tenant admins: their own).
- `capture`   who holds content capture (operators: every tenant; tenant admins an operator granted it to: theirs).
- `usage`     who reads usage aggregates (operators: every tenant; tenant admins: their tenant; members: their
              own calls).
- `conversations` who owns a conversation (a user or a service account) and who may see it (only the owner).
"""

from server.permissions.audit import audit_reach
from server.permissions.capture import (
    capture_reach,
    holds_capture,
    require_capture_grantee,
    require_capture_granter,
    require_capture_holder,
)
from server.permissions.conversations import (
    ConversationOwner,
    conversation_owner,
    owned_conversations,
    owns_conversation,
)
from server.permissions.credentials import key_may_call, require_callable
from server.permissions.limits import KeyHolder, require_limit_writer, require_usage_reader
from server.permissions.resources import (
    Ownership,
    Permission,
    ResourceKind,
    ResourceRef,
    Role,
    Sharing,
    SubjectType,
    add_permission,
    can_admin,
    can_invoke,
    can_read,
    can_reference,
    create_resource,
    delete_resource,
    forget_subject,
    list_permissions,
    ownership,
    ownerships,
    permission_of,
    readable_names,
    remove_permission,
    require_admin,
    require_read,
    set_sharing,
    withdrawn,
)
from server.permissions.tenancy import (
    Capability,
    Memberships,
    TenantRole,
    can_admin_tenant,
    can_attach_key_to_group,
    can_read_group,
    capabilities_in,
    follow_membership_changes,
    forget_membership,
    has_capability,
    member_user_ids,
    memberships_info,
    readable_groups_of,
    remember_roles,
    require_capability,
    require_group_read,
    require_listed_tenant,
    require_logged_in_user,
    require_platform_role,
    require_scope_membership,
    require_session,
    require_tenant_admin,
    require_tenant_member,
    require_tenant_scope,
    resolve_tenant,
    tenant_role,
    user_memberships,
)
from server.permissions.usage import UsageReach, usage_reach

__all__ = [
    "Capability",
    "ConversationOwner",
    "KeyHolder",
    "Memberships",
    "Ownership",
    "Permission",
    "ResourceKind",
    "ResourceRef",
    "Role",
    "Sharing",
    "SubjectType",
    "TenantRole",
    "UsageReach",
    "add_permission",
    "audit_reach",
    "can_admin",
    "can_admin_tenant",
    "can_attach_key_to_group",
    "can_invoke",
    "can_read",
    "can_read_group",
    "can_reference",
    "capabilities_in",
    "capture_reach",
    "conversation_owner",
    "create_resource",
    "delete_resource",
    "follow_membership_changes",
    "forget_membership",
    "forget_subject",
    "has_capability",
    "holds_capture",
    "key_may_call",
    "list_permissions",
    "member_user_ids",
    "memberships_info",
    "owned_conversations",
    "ownership",
    "ownerships",
    "owns_conversation",
    "permission_of",
    "readable_groups_of",
    "readable_names",
    "remember_roles",
    "remove_permission",
    "require_admin",
    "require_callable",
    "require_capability",
    "require_capture_grantee",
    "require_capture_granter",
    "require_capture_holder",
    "require_group_read",
    "require_limit_writer",
    "require_listed_tenant",
    "require_logged_in_user",
    "require_platform_role",
    "require_read",
    "require_scope_membership",
    "require_session",
    "require_tenant_admin",
    "require_tenant_member",
    "require_tenant_scope",
    "require_usage_reader",
    "resolve_tenant",
    "set_sharing",
    "tenant_role",
    "usage_reach",
    "user_memberships",
    "withdrawn",
]
