// The page a browser on another origin loads: Connect-ES clients (Connect and gRPC-Web transports) calling the
// management API, and a plain fetch to the gateway. window.runCalls returns what the browser let the page see.
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { TenantService } from "./gen/platform/tenants/v1/tenant_service_pb";

type Outcome = { ok: boolean; code?: string; id?: string; count?: number; status?: number; requestId?: string };

function failed(err: unknown): Outcome {
  const e = ConnectError.from(err);
  return { ok: false, code: Code[e.code] };
}

async function runCalls(api: string, gateway: string, token: string, tag: string): Promise<Record<string, Outcome>> {
  const auth = { headers: { Authorization: `Bearer ${token}` }, timeoutMs: 10000 };
  const transports = {
    connect: createConnectTransport({ baseUrl: api }),
    connectGet: createConnectTransport({ baseUrl: api, useHttpGet: true }),
    grpcWeb: createGrpcWebTransport({ baseUrl: api }),
  };
  const results: Record<string, Outcome> = {};
  for (const [name, transport] of Object.entries(transports)) {
    const client = createClient(TenantService, transport);
    if (name !== "connectGet") {
      try {
        const created = await client.createTenant({ name: `browser-${name.toLowerCase()}-${tag}` }, auth);
        results[`create.${name}`] = { ok: true, id: created.tenant?.id };
      } catch (err) {
        results[`create.${name}`] = failed(err);
      }
    }
    try {
      const listed = await client.listTenants({}, { ...auth, headers: { ...auth.headers, "X-Platform-Tenant-Id": "" } });
      results[`list.${name}`] = { ok: true, count: listed.tenants.length };
    } catch (err) {
      results[`list.${name}`] = failed(err);
    }
    try {  // an error the page must be able to read (Grpc-Status / Connect error body)
      await client.listTenants({}, { headers: { Authorization: "Bearer not-a-token" }, timeoutMs: 10000 });
      results[`denied.${name}`] = { ok: true };
    } catch (err) {
      results[`denied.${name}`] = failed(err);
    }
  }
  try {  // the gateway: the Authorization header makes this a preflighted request
    const resp = await fetch(`${gateway}/models`, { headers: { Authorization: "Bearer sb_not_a_key" } });
    results["gateway.models"] = { ok: resp.ok, status: resp.status, requestId: resp.headers.get("x-request-id") ?? "" };
  } catch (err) {
    results["gateway.models"] = { ok: false, code: String(err) };
  }
  return results;
}

(window as unknown as { runCalls: typeof runCalls }).runCalls = runCalls;
document.title = "ready";
