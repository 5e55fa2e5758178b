// The signed-in person as the server describes them (switchboard.console.v1.ConsoleService/GetSession): who they
// are, their platform roles, and per tenant what the console may offer. Loaded once per page load; nothing here is
// derived from roles in TypeScript, so a rule changes in one place (server/permissions).
import { signal } from "@preact/signals";
import { client } from "../api/transport";
import { TenantRole } from "../gen/platform/tenants/v1/tenant_pb";
import { ConsoleService } from "../gen/switchboard/console/v1/console_service_pb";

export interface Capabilities {
  tenantAdmin: boolean;
  listMembers: boolean;
  share: boolean;
  createRag: boolean;
  createAgent: boolean;
  createExternalModel: boolean;
  createMcpServer: boolean;
  /** Holds content capture: turns it on and off and reads captured exchanges. */
  capture: boolean;
}

export interface TenantAccess {
  id: string;
  name: string;
  role: TenantRole;
  capabilities: Capabilities;
}

export interface Session {
  user: { id: string; email: string; displayName: string };
  canManageTenants: boolean;
  canManageModels: boolean;
  tenants: TenantAccess[];
}

/** The session once loaded (undefined while loading or signed out). */
export const session = signal<Session | undefined>(undefined);

const ROLE_NAMES: Record<TenantRole, string> = {
  [TenantRole.UNSPECIFIED]: "none",
  [TenantRole.MEMBER]: "member",
  [TenantRole.EDITOR]: "editor",
  [TenantRole.ADMIN]: "admin",
};

export function roleName(role: TenantRole): string {
  return ROLE_NAMES[role];
}

/** GetSession, mapped to the console's shape (message fields made plain values). */
export async function loadSession(): Promise<Session> {
  const answer = await client(ConsoleService).getSession({});
  return {
    user: {
      id: answer.user?.userId ?? "",
      email: answer.user?.email ?? "",
      displayName: answer.user?.displayName ?? "",
    },
    canManageTenants: answer.canManageTenants,
    canManageModels: answer.canManageModels,
    tenants: answer.tenants.map((access) => ({
      id: access.tenantId,
      name: access.tenantName,
      role: access.role,
      capabilities: {
        tenantAdmin: access.capabilities?.tenantAdmin ?? false,
        listMembers: access.capabilities?.listMembers ?? false,
        share: access.capabilities?.share ?? false,
        createRag: access.capabilities?.createRag ?? false,
        createAgent: access.capabilities?.createAgent ?? false,
        createExternalModel: access.capabilities?.createExternalModel ?? false,
        createMcpServer: access.capabilities?.createMcpServer ?? false,
        capture: access.capabilities?.capture ?? false,
      },
    })),
  };
}
