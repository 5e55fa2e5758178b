"""What a credential may call on the management API: THE rule for API keys, applied once per RPC.

API keys are credentials for *using* resources (the model gateway, conversations, MCP tools), not for running the
platform. Every management call made with a key passes `require_callable` in the authentication interceptor, before
the request body is read, whatever the method; deny by default, so a method added later is refused to keys until it
is listed here. A key may call:

- read methods (`NO_SIDE_EFFECTS` in the contract), which answer within the key's reach and never with admin-only
  views: a personal key reads what it is granted and never beyond its owner's read access; a service-account key
  reads what it is granted among what its tenant sees; a Personal (all resources) key reads what its owner reads.
  Who belongs to the tenant is no resource a key can be granted, so the member lists (the tenant's members and
  pending invites, a group's members: people's emails and roles) are closed to keys, whoever owns them;
- the conversation methods, since a key owns conversations (a personal or Personal (all resources) key as its owner,
  a service-account key as its service account);
- the invoker's side of MCP OAuth (`GetExternalMcpServerOAuthMetadata`, `ExchangeExternalMcpOAuthToken`), which
  need `can_read` on the server, i.e. a server within the key's reach.

Nothing else, whoever owns the key (a tenant admin's key included): no API keys (not even reading them: creating,
extending, disabling, granting or attaching a key is the owner's decision, taken in a signed-in session), no service
accounts, no managing members, invites, groups or tenants (nor listing members), no creating, updating, deleting or
sharing any resource, no platform operation. The permission predicates agree (`can_admin_tenant`, `has_capability`,
resource `can_admin` are false for keys), so domain code called from elsewhere (the gateway) reaches the same answer.
"""

from __future__ import annotations

from server.domain.principal import Principal
from server.errors import PermissionDenied

__all__ = ["KEY_CLOSED_READS", "KEY_CLOSED_SERVICES", "KEY_WRITES", "key_may_call", "require_callable"]

# Services a key may not call at all, reads included: managing credentials and who holds them.
KEY_CLOSED_SERVICES = frozenset(
    {
        "platform.tenants.v1.ApiKeyService",
        "platform.tenants.v1.ServiceAccountService",
        "switchboard.audit.v1.AuditService",  # the audit trail: who did what, read in a signed-in session only
        "switchboard.console.v1.ConsoleService",  # the web console describes signed-in sessions only
        "switchboard.usage.v1.UsageService",  # who used what, how much: the console's charts, for people
    }
)

# Reads closed to keys: who the tenant's people are (members, invites, group members) is never within a key's reach.
KEY_CLOSED_READS = frozenset(
    {
        "platform.tenants.v1.TenantService/ListTenantMembers",
        "platform.tenants.v1.GroupService/ListGroupMembers",
        # The same lists a page at a time, and the pages of what ApiKeyService and ServiceAccountService list.
        "switchboard.tenants.v1.TenantListService/ListTenantMembers",
        "switchboard.tenants.v1.TenantListService/ListGroupMembers",
        "switchboard.tenants.v1.TenantListService/ListApiKeys",
        "switchboard.tenants.v1.TenantListService/ListServiceAccounts",
    }
)

# The only methods with side effects a key may call.
KEY_WRITES = frozenset(
    {
        "platform.conversations.v1.ConversationService/CreateConversation",
        "platform.conversations.v1.ConversationService/UpdateConversation",
        "platform.conversations.v1.ConversationService/DeleteConversation",
        "platform.conversations.v1.ConversationItemService/CreateItems",
        "platform.conversations.v1.ConversationItemService/DeleteItem",
        "platform.conversations.v1.ConversationItemService/TruncateConversation",
        "platform.agents.v1.ExternalMcpServerService/GetExternalMcpServerOAuthMetadata",
        "platform.agents.v1.ExternalMcpServerService/ExchangeExternalMcpOAuthToken",
    }
)


def key_may_call(service: str, method: str, *, side_effect_free: bool) -> bool:
    if service in KEY_CLOSED_SERVICES:
        return False
    path = f"{service}/{method}"
    if side_effect_free:
        return path not in KEY_CLOSED_READS
    return path in KEY_WRITES


def require_callable(principal: Principal, service: str, method: str, *, side_effect_free: bool) -> None:
    """Refuse a key's call to anything but reads (member lists excepted), its conversations and MCP OAuth (see the
    module docstring)."""
    if principal.api_key is None or key_may_call(service, method, side_effect_free=side_effect_free):
        return
    raise PermissionDenied(
        f"API keys may not call {service}/{method}: keys use resources, they do not manage keys, service accounts, "
        "members, groups, tenants or resources; use a signed-in session"
    )
