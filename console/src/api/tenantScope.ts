// Call options that scope a signed-in person's call to one tenant (X-Platform-Tenant-Id, server/auth.py). Lists
// that only make sense within a tenant (ListExternalMcpServers: the tenant's servers and the platform's) are refused
// without it; the server checks the person belongs to the tenant, so this only says which one they mean.
export const TENANT_HEADER = "X-Platform-Tenant-Id";

export function inTenant(tenantId: string, signal?: AbortSignal): { headers: Record<string, string>; signal?: AbortSignal } {
  return signal === undefined ? { headers: { [TENANT_HEADER]: tenantId } } : { headers: { [TENANT_HEADER]: tenantId }, signal };
}
