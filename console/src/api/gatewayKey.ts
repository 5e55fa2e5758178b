// The key the console's own gateway calls carry (RAG uploads and /context here, the chat page's calls): a
// short-lived Personal (all resources) key of the signed-in person, created through CreateApiKey the first time a
// page needs it and kept only in this module's memory — never in storage, never in the URL — so it is gone when the
// tab closes and expires on its own an hour later. The gateway accepts only API keys, not the session cookie,
// which is why the console mints one at all.
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { client } from "./transport";
import { ApiKeyType } from "../gen/platform/tenants/v1/api_key_pb";
import { ApiKeyService } from "../gen/platform/tenants/v1/api_key_service_pb";

const LIFETIME_MS = 60 * 60 * 1000;
/** A key this close to its expiry is replaced before use, so a long upload does not start with a dying key. */
const RENEW_BEFORE_MS = 5 * 60 * 1000;

interface HeldKey {
  secret: string;
  id: string;
  expiresAt: number;
}

const held = new Map<string, Promise<HeldKey>>();

async function mint(tenantId: string): Promise<HeldKey> {
  const expiresAt = Date.now() + LIFETIME_MS;
  const answer = await client(ApiKeyService).createApiKey({
    tenantId,
    type: ApiKeyType.PERSONAL_ALL_RESOURCES,
    name: "Console (this browser tab)",
    description: "Created by the web console for its own gateway calls; held in the tab's memory only.",
    expireTime: timestampFromDate(new Date(expiresAt)),
  });
  return { secret: answer.secret, id: answer.apiKey?.id ?? "", expiresAt };
}

/** The bearer secret for gateway calls in this tenant (one CreateApiKey per tenant per hour at most). */
export async function gatewayKey(tenantId: string): Promise<string> {
  let pending = held.get(tenantId);
  if (pending !== undefined) {
    const key = await pending.catch(() => undefined);
    if (key !== undefined && key.expiresAt - Date.now() > RENEW_BEFORE_MS) {
      return key.secret;
    }
  }
  pending = mint(tenantId);
  held.set(tenantId, pending);
  pending.catch(() => held.delete(tenantId)); // a failed mint is retried by the next call, not cached
  return (await pending).secret;
}

/** Forget a key the gateway refused (revoked meanwhile): the next call mints a new one. */
export function dropGatewayKey(tenantId: string): void {
  held.delete(tenantId);
}
