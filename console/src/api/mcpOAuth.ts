// The per-user OAuth connection to an MCP server, in the browser: GetExternalMcpServerOAuthMetadata gives the
// non-secret settings and the redirect URI; the browser makes the PKCE verifier (S256) and a state, opens the
// authorization server in a popup, and the popup's return to /console/mcp-oauth-callback hands the code back to
// this tab (postMessage to the opener, or a BroadcastChannel when the opener was cut off). This tab then asks
// Switchboard to redeem it (ExchangeExternalMcpOAuthToken: Switchboard holds the client secret) and keeps the
// tokens in memory only (mcpTokens), for the chat page's calls; closing the tab forgets them.
import { signal } from "@preact/signals";
import { client } from "./transport";
import { ExternalMcpServerService } from "../gen/platform/agents/v1/external_mcp_server_service_pb";

export const CALLBACK_CHANNEL = "switchboard-mcp-oauth";
export const CALLBACK_MESSAGE = "switchboard-mcp-oauth-callback";

export interface McpToken {
  accessToken: string;
  tokenType: string;
  refreshToken: string;
  scope: string;
  /** Milliseconds since the epoch; undefined when the server gave no lifetime. */
  expiresAt: number | undefined;
}

/** The signed-in person's MCP tokens by server name, in this tab's memory only (the chat page reads them). */
export const mcpTokens = signal<ReadonlyMap<string, McpToken>>(new Map());

export interface CallbackParams {
  type: typeof CALLBACK_MESSAGE;
  state: string;
  code: string;
  error: string;
  errorDescription: string;
  /** The authorization server's name for itself on the response (RFC 9207), null when it sent none. */
  iss: string | null;
}

function base64url(bytes: Uint8Array): string {
  let text = "";
  for (const byte of bytes) {
    text += String.fromCharCode(byte);
  }
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function randomText(bytes: number): string {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

/** The PKCE pair (RFC 7636, S256): a 43-character verifier and its SHA-256 challenge. */
export async function pkcePair(): Promise<{ verifier: string; challenge: string }> {
  const verifier = randomText(32);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  return { verifier, challenge: base64url(new Uint8Array(digest)) };
}

/** Waits for the popup's callback with this state (the first one; others are not ours). */
function callback(state: string, popup: Window, abort: AbortSignal): Promise<CallbackParams> {
  return new Promise((resolve, reject) => {
    const channel = new BroadcastChannel(CALLBACK_CHANNEL);
    const done = () => {
      window.removeEventListener("message", onMessage);
      channel.close();
      clearInterval(closedCheck);
    };
    const accept = (data: unknown) => {
      const params = data as Partial<CallbackParams> | null;
      if (params?.type === CALLBACK_MESSAGE && params.state === state) {
        done();
        resolve(params as CallbackParams);
      }
    };
    const onMessage = (event: MessageEvent) => {
      if (event.origin === location.origin) {
        accept(event.data);
      }
    };
    window.addEventListener("message", onMessage);
    channel.onmessage = (event: MessageEvent) => { accept(event.data); };
    // A popup the person closed without finishing ends the wait, in words.
    const closedCheck = setInterval(() => {
      if (popup.closed) {
        done();
        reject(new Error("The sign-in window was closed before the connection finished."));
      }
    }, 500);
    abort.addEventListener("abort", () => {
      done();
      reject(new DOMException("Cancelled.", "AbortError"));
    });
  });
}

/**
 * Connects the signed-in person to one MCP server. `popup` is a window opened by the click itself (browsers block
 * windows opened later, after an await); it is sent to the authorization server here.
 */
export async function connectMcpServer(name: string, popup: Window, abort: AbortSignal): Promise<McpToken> {
  const api = client(ExternalMcpServerService);
  const meta = await api.getExternalMcpServerOAuthMetadata({ name }, { signal: abort });
  const oauth = meta.oauth;
  if (oauth === undefined || oauth.authorizationUrl === "") {
    throw new Error("This server has no OAuth authorization endpoint configured or discovered.");
  }
  const { verifier, challenge } = await pkcePair();
  const state = randomText(16);
  const url = new URL(oauth.authorizationUrl);
  const query: Record<string, string> = {
    ...oauth.authorizationParameters,
    response_type: "code",
    client_id: oauth.clientId,
    redirect_uri: meta.redirectUri,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state,
  };
  if (oauth.scopes.length > 0) {
    query.scope = oauth.scopes.join(" ");
  }
  if (oauth.resource) {
    query.resource = oauth.resource;
  }
  for (const [key, value] of Object.entries(query)) {
    url.searchParams.set(key, value);
  }
  popup.location.href = url.toString();
  const answer = await callback(state, popup, abort);
  popup.close();
  if (answer.error) {
    throw new Error(`The authorization server refused: ${answer.errorDescription || answer.error}`);
  }
  // RFC 9207, against the OAuth mix-up: an answer from another authorization server than the one this sign-in
  // started at (a hostile server can send the person on to an honest one) must not be redeemed for this server.
  // Compared exactly, as the RFC says; a registration whose issuer is unknown cannot be checked.
  if (answer.iss !== null && oauth.issuerUrl !== "" && answer.iss !== oauth.issuerUrl) {
    throw new Error(
      `The sign-in was answered by another authorization server (${answer.iss}) than this MCP server's ` +
        `(${oauth.issuerUrl}); nothing was redeemed. Ask an admin to check the server's registration.`,
    );
  }
  const tokens = await api.exchangeExternalMcpOAuthToken(
    { name, code: answer.code, codeVerifier: verifier, redirectUri: meta.redirectUri, metadataVersion: meta.metadataVersion },
    { signal: abort },
  );
  const token: McpToken = {
    accessToken: tokens.accessToken,
    tokenType: tokens.tokenType,
    refreshToken: tokens.refreshToken,
    scope: tokens.scope,
    expiresAt: tokens.expiresIn > 0n ? Date.now() + Number(tokens.expiresIn) * 1000 : undefined,
  };
  const next = new Map(mcpTokens.value);
  next.set(name, token);
  mcpTokens.value = next;
  return token;
}

/** Forget one server's token (disconnect in this tab). */
export function forgetMcpToken(name: string): void {
  const next = new Map(mcpTokens.value);
  next.delete(name);
  mcpTokens.value = next;
}
