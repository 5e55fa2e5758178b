// The gateway (another origin: config.json's gatewayUrl) takes API keys, not the console's session cookie. Pages that
// call it (chat, RAG uploads) use a short-lived Personal (all resources) key of the signed-in person, made through
// CreateApiKey: it acts as them (their conversations, their grants) and is never rendered.
//
// One key per tenant per console session (a browser tab), not per page load: it is kept in sessionStorage, so a
// reload or the next page reuses it, and it dies with the tab. sessionStorage and not localStorage: it is never
// shared with other tabs or kept after the tab closes; a script that could read it could read this module's memory
// just as well (the CSP admits only the console's own scripts). Keeping the secret on the server instead would need
// the management server to proxy every gateway call, streams and 127 MiB uploads included. The key lives an hour,
// is renewed (and the old one revoked) shortly before it expires or when the gateway refuses it, is bound to the
// person it was made for, and every key this tab holds is revoked at sign-out.
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { session } from "../app/session";
import { consoleConfig } from "./config";
import { client } from "./transport";
import { ApiKeyType } from "../gen/platform/tenants/v1/api_key_pb";
import { ApiKeyService } from "../gen/platform/tenants/v1/api_key_service_pb";

/** How long a console key lives: a working session's stretch; a leaked one soon dies. */
export const KEY_LIFETIME_MS = 60 * 60 * 1000;

/** A key this close to its expiry is replaced before use, so a long upload does not start with a dying key. */
const RENEW_BEFORE_MS = 5 * 60 * 1000;

const STORED = "switchboard.console.gatewayKeys";

interface HeldKey {
  id: string;
  secret: string;
  expires: number;
  /** The person it acts as: another sign-in in the same tab never inherits it. */
  userId: string;
}

type Held = Record<string, HeldKey>; // by tenant id

function stored(): Held {
  try {
    return JSON.parse(sessionStorage.getItem(STORED) ?? "{}") as Held;
  } catch {
    return {}; // storage disabled or garbled: keys then last a page load
  }
}

function store(held: Held): void {
  try {
    sessionStorage.setItem(STORED, JSON.stringify(held));
  } catch {
    // storage disabled: the key is still held in memory below for this page load
  }
}

const minting = new Map<string, Promise<HeldKey>>();

function revoke(tenantId: string, key: HeldKey): Promise<unknown> {
  return client(ApiKeyService).revokeApiKey({ tenantId, apiKeyId: key.id });
}

async function mint(tenantId: string, userId: string): Promise<HeldKey> {
  const expires = Date.now() + KEY_LIFETIME_MS;
  const answer = await client(ApiKeyService).createApiKey({
    tenantId,
    type: ApiKeyType.PERSONAL_ALL_RESOURCES,
    name: `console-${new Date().toISOString().slice(0, 16)}`,
    description: "Made by the web console for its chat and uploads; held by one browser tab, revoked at sign-out.",
    expireTime: timestampFromDate(new Date(expires)),
    grants: [],
  });
  const key = { id: answer.apiKey?.id ?? "", secret: answer.secret, expires, userId };
  store({ ...stored(), [tenantId]: key });
  return key;
}

async function heldKey(tenantId: string, renew: boolean): Promise<HeldKey> {
  const userId = session.value?.user.id ?? "";
  const pending = minting.get(tenantId);
  if (pending !== undefined && !renew) {
    return pending;
  }
  const held = stored()[tenantId];
  const ours = held?.userId === userId ? held : undefined;
  if (!renew && ours !== undefined && ours.expires - Date.now() > RENEW_BEFORE_MS) {
    return ours;
  }
  const minted = mint(tenantId, userId);
  minting.set(tenantId, minted);
  minted.then(
    () => {
      if (ours !== undefined) {
        void revoke(tenantId, ours).catch(() => undefined); // replaced: it expires on its own if this fails
      }
    },
    () => undefined, // a refused CreateApiKey is not remembered: the next call asks again (and shows that refusal)
  ).finally(() => minting.delete(tenantId));
  return minted;
}

/** The bearer secret for gateway calls in this tenant (one key per tenant and tab until it nears expiry). */
export async function gatewayKey(tenantId: string): Promise<string> {
  return (await heldKey(tenantId, false)).secret;
}

/** Forget a key the gateway refused (revoked or expired meanwhile): the next call makes a new one. */
export function dropGatewayKey(tenantId: string): void {
  store(Object.fromEntries(Object.entries(stored()).filter(([tenant]) => tenant !== tenantId)));
}

/** At sign-out: revoke every key this tab holds and forget them (a key that cannot be revoked expires within the
 * hour). */
export async function revokeGatewayKeys(): Promise<void> {
  const held = stored();
  store({});
  await Promise.allSettled(Object.entries(held).map(([tenantId, key]) => revoke(tenantId, key)));
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
export function gatewayErrorOf(status: number, body: string): GatewayError {
  let message = `The gateway answered HTTP ${status}.`;
  let code = "";
  try {
    const parsed = JSON.parse(body) as { error?: { message?: string; code?: string | null } };
    message = parsed.error?.message ?? message;
    code = parsed.error?.code ?? "";
  } catch {
    // not JSON: the status says enough
  }
  return new GatewayError(status, message, code);
}

export async function gatewayError(answer: Response): Promise<GatewayError> {
  return gatewayErrorOf(answer.status, await answer.text());
}

/**
 * fetch() against the gateway with the person's console key: `path` is below the gateway URL (e.g. "/v1/models"),
 * or an absolute URL the gateway gave (a RAG's `rag_url`). A 401 (the key expired or was revoked meanwhile) gets one
 * new key and one retry.
 */
export async function gatewayFetch(tenantId: string, path: string, init: RequestInit = {}): Promise<Response> {
  const url = /^https?:\/\//.test(path) ? path : `${(await consoleConfig()).gatewayUrl.replace(/\/+$/, "").replace(/\/v1$/, "")}${path}`;
  const send = async (renew: boolean) => {
    const { secret } = await heldKey(tenantId, renew);
    const headers = new Headers(init.headers);
    headers.set("Authorization", `Bearer ${secret}`);
    return fetch(url, { ...init, headers, credentials: "omit" });
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
