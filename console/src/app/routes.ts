// The one table of the console's pages: each page module is registered here with its path, its title in the nav,
// its lazily loaded module, and who sees it. `visible` reads only what the server computed for the session
// (GetSession's platform roles and per-tenant capabilities); the server stays the authority on every call.
import type { ComponentType } from "preact";
import type { Session, TenantAccess } from "./session";

/** Props every page receives: the tenant picked in the shell (tenant pages) and the route's parameters. */
export interface PageProps {
  session: Session;
  tenant: TenantAccess | undefined;
  params: Record<string, string>;
}

export interface RouteEntry {
  /** Below /console; tenant pages are below /console/t/:tenant/. */
  path: string;
  title: string;
  scope: "platform" | "tenant";
  load: () => Promise<{ default: ComponentType<PageProps> }>;
  /** Shown in the nav (and reachable) for this session and tenant. */
  visible: (session: Session, tenant: TenantAccess | undefined) => boolean;
  /** Sub-pages (a group's members) are routed but not listed in the nav. */
  inNav?: boolean;
}

const member = (_s: Session, tenant: TenantAccess | undefined): boolean => tenant !== undefined;

export const ROUTES: RouteEntry[] = [
  {
    path: "tenants",
    title: "Tenants",
    scope: "platform",
    load: () => import("../pages/tenants/TenantsPage"),
    visible: (session) => session.canManageTenants,
  },
  {
    path: "members",
    title: "Members",
    scope: "tenant",
    load: () => import("../pages/members/MembersPage"),
    visible: (_s, tenant) => tenant?.capabilities.listMembers ?? false,
  },
  {
    path: "groups",
    title: "Groups",
    scope: "tenant",
    load: () => import("../pages/groups/GroupsPage"),
    visible: member, // every member may open Groups (the spec)
  },
  {
    path: "groups/:group",
    title: "Group",
    scope: "tenant",
    load: () => import("../pages/groups/GroupPage"),
    visible: member,
    inNav: false,
  },
  {
    path: "keys",
    title: "API keys",
    scope: "tenant",
    load: () => import("../pages/keys/KeysPage"),
    visible: member,
  },
  {
    path: "service-accounts",
    title: "Service accounts",
    scope: "tenant",
    load: () => import("../pages/service-accounts/ServiceAccountsPage"),
    visible: (_s, tenant) => tenant?.capabilities.tenantAdmin ?? false,
  },
  {
    path: "service-accounts/:account",
    title: "Service account",
    scope: "tenant",
    load: () => import("../pages/service-accounts/ServiceAccountPage"),
    visible: (_s, tenant) => tenant?.capabilities.tenantAdmin ?? false,
    inNav: false,
  },
  {
    path: "models",
    title: "Models",
    scope: "tenant",
    load: () => import("../pages/models/ModelsPage"),
    visible: member, // everyone lists the models they may use; managing them is decided per row and by the server
  },
  {
    path: "models/observability",
    title: "GPU and cache",
    scope: "tenant",
    load: () => import("../pages/models/ObservabilityPage"),
    visible: (session) => session.canManageModels,
    inNav: false,
  },
  {
    path: "rags",
    title: "RAGs",
    scope: "tenant",
    load: () => import("../pages/rags/RagsPage"),
    visible: member, // everyone lists the RAGs they may use; creating one is the tenant's create-RAG capability
  },
  {
    path: "rags/:rag",
    title: "RAG",
    scope: "tenant",
    load: () => import("../pages/rags/RagPage"),
    visible: member,
    inNav: false,
  },
  {
    path: "mcp",
    title: "MCP servers",
    scope: "tenant",
    load: () => import("../pages/mcp/McpPage"),
    visible: member, // everyone lists the servers they may use and connects to those that need their sign-in
  },
  {
    path: "mcp/network-policies",
    title: "MCP network policies",
    scope: "tenant",
    load: () => import("../pages/mcp/NetworkPoliciesPage"),
    visible: (session) => session.canManageTenants,
    inNav: false,
  },
  {
    // Where an MCP server's authorization server returns the person (SWITCHBOARD_MCP_OAUTH_REDIRECT_URI); it only
    // hands the code to the tab that asked, so any signed-in person may land here.
    path: "mcp-oauth-callback",
    title: "Connecting",
    scope: "platform",
    load: () => import("../pages/mcp/OAuthCallbackPage"),
    visible: () => true,
    inNav: false,
  },
  {
    path: "agents",
    title: "Preset agents",
    scope: "tenant",
    load: () => import("../pages/agents/AgentsPage"),
    visible: member, // everyone lists the agents they may use; creating one is the tenant's create-agent capability
  },
  {
    path: "chat",
    title: "Chat",
    scope: "tenant",
    load: () => import("../pages/chat/ChatPage"),
    visible: member, // the key it creates acts as the person: they chat with what they may invoke
  },
  {
    path: "usage",
    title: "Usage",
    scope: "tenant",
    load: () => import("../pages/usage/UsagePage"),
    visible: member, // admins read the tenant's calls, members their own keys' (UsageService decides)
  },
  {
    path: "usage",
    title: "Usage (all tenants)",
    scope: "platform",
    load: () => import("../pages/usage/UsagePage"),
    visible: (session) => session.canManageTenants,
  },
  {
    path: "audit",
    title: "Audit trail",
    scope: "tenant",
    load: () => import("../pages/audit/AuditPage"),
    visible: (_s, tenant) => tenant?.capabilities.tenantAdmin ?? false, // AuditService: the tenant's admins
  },
  {
    path: "audit",
    title: "Audit trail (all tenants)",
    scope: "platform",
    load: () => import("../pages/audit/AuditPage"),
    visible: (session) => session.canManageTenants,
  },
  {
    path: "capture",
    title: "Captured exchanges",
    scope: "tenant",
    load: () => import("../pages/capture/CapturePage"),
    visible: (_s, tenant) => tenant?.capabilities.capture ?? false, // CaptureService: holders of the capability
  },
  {
    path: "capture/:exchange",
    title: "Captured exchange",
    scope: "tenant",
    load: () => import("../pages/capture/ExchangePage"),
    visible: (_s, tenant) => tenant?.capabilities.capture ?? false,
    inNav: false,
  },
  {
    path: "limits",
    title: "Limits",
    scope: "tenant",
    load: () => import("../pages/limits/LimitsPage"),
    // Tenant admins set the tenant tier, operators the platform tier; LimitService refuses everyone else.
    visible: (session, tenant) => session.canManageTenants || (tenant?.capabilities.tenantAdmin ?? false),
  },
];

/** The URL of a route, for links: tenant pages carry the tenant id in the path so a link names what it shows. */
export function routeUrl(entry: Pick<RouteEntry, "path" | "scope">, tenantId?: string, params: Record<string, string> = {}): string {
  const path = entry.path.replace(/:([a-z]+)/g, (_m, name: string) => encodeURIComponent(params[name] ?? ""));
  return entry.scope === "tenant" ? `/console/t/${encodeURIComponent(tenantId ?? "")}/${path}` : `/console/${path}`;
}

/** The pattern preact-iso's router matches for a route. */
export function routePattern(entry: RouteEntry): string {
  return entry.scope === "tenant" ? `/console/t/:tenant/${entry.path}` : `/console/${entry.path}`;
}
