// The gateway (another origin: config.json's gatewayUrl) takes API keys, not the console's session cookie. Pages that
// call it (chat, RAG uploads) get a short-lived Personal (all resources) key of the signed-in person through
// CreateApiKey: it acts as them (their conversations, their grants), lives only in this module's memory (never in
// storage, never rendered) and expires on its own, so a closed tab leaves nothing usable behind. One key per tenant
// and page load, created on first use, renewed shortly before it expires, and re-created when the gateway refuses it.
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { consoleConfig } from "./config";
import { client } from "./transport";
import { ApiKeyType } from "../gen/platform/tenants/v1/api_key_pb";
import { ApiKeyService } from "../gen/platform/tenants/v1/api_key_service_pb";

/** How long a console key lives: long enough for a working session, short enough that a leaked one soon dies. */
export const KEY_LIFETIME_MS = 8 * 60 * 60 * 1000;

/** A key this close to its expiry is replaced before use, so a long upload does not start with a dying key. */
const RENEW_BEFORE_MS = 5 * 60 * 1000;

interface HeldKey {
  secret: string;
  expires: number;
}

const keys = new Map<string, Promise<HeldKey>>();

async function mint(tenantId: string): Promise<HeldKey> {
  const expires = Date.now() + KEY_LIFETIME_MS;
  const answer = await client(ApiKeyService).createApiKey({
    tenantId,
    type: ApiKeyType.PERSONAL_ALL_RESOURCES,
    name: `console-${new Date().toISOString().slice(0, 16)}`,
    description: "Created by the web console for its chat and uploads; kept in the page's memory only.",
    expireTime: timestampFromDate(new Date(expires)),
    grants: [],
  });
  return { secret: answer.secret, expires };
}

async function heldKey(tenantId: string, renew: boolean): Promise<HeldKey> {
  const held = renew ? undefined : await keys.get(tenantId)?.catch(() => undefined);
  if (held !== undefined && held.expires - Date.now() > RENEW_BEFORE_MS) {
    return held;
  }
  const minted = mint(tenantId);
  keys.set(tenantId, minted);
  // A refused CreateApiKey is not remembered: the next call asks again (and shows that refusal).
  minted.catch(() => keys.delete(tenantId));
  return minted;
}

/** The bearer secret for gateway calls in this tenant (one CreateApiKey per tenant until it nears expiry). */
export async function gatewayKey(tenantId: string): Promise<string> {
  return (await heldKey(tenantId, false)).secret;
}

/** Forget a key the gateway refused (revoked meanwhile): the next call mints a new one. */
export function dropGatewayKey(tenantId: string): void {
  keys.delete(tenantId);
}

/** An error the gateway answered, with its OpenAI-style message (shown to the person as it is). */
export class GatewayError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

/** The gateway's error body (OpenAI's `{"error": {"message", "code"}}`) as a GatewayError. */
export async function gatewayError(answer: Response): Promise<GatewayError> {
  let message = `The gateway answered HTTP ${answer.status}.`;
  let code = "";
  try {
    const body = (await answer.json()) as { error?: { message?: string; code?: string | null } };
    message = body.error?.message ?? message;
    code = body.error?.code ?? "";
  } catch {
    // not JSON: the status says enough
  }
  return new GatewayError(answer.status, message, code);
}

/**
 * fetch() against the gateway with the person's console key: `path` is below the gateway URL (e.g. "/v1/models").
 * A 401 (the key expired or was revoked meanwhile) gets one new key and one retry.
 */
export async function gatewayFetch(tenantId: string, path: string, init: RequestInit = {}): Promise<Response> {
  const { gatewayUrl } = await consoleConfig();
  const base = gatewayUrl.replace(/\/+$/, "").replace(/\/v1$/, "");
  const send = async (renew: boolean) => {
    const { secret } = await heldKey(tenantId, renew);
    const headers = new Headers(init.headers);
    headers.set("Authorization", `Bearer ${secret}`);
    return fetch(`${base}${path}`, { ...init, headers, credentials: "omit" });
  };
  const first = await send(false);
  if (first.status !== 401 || init.body instanceof ReadableStream) {
    return first;
  }
  return send(true);
}

/** GET a JSON answer from the gateway, or throw its error. */
export async function gatewayJson<T>(tenantId: string, path: string, init: RequestInit = {}): Promise<T> {
  const answer = await gatewayFetch(tenantId, path, init);
  if (!answer.ok) {
    throw await gatewayError(answer);
  }
  return (await answer.json()) as T;
}
