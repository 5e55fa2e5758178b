// One Connect transport for the whole console: same origin as the page (the management server serves both), the
// session cookie rides along by the browser's default (credentials "same-origin"), and reads go out as Connect GET
// (idempotent methods), which the server accepts without the CSRF header that POSTs carry.
import { Code, ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import type { DescService } from "@bufbuild/protobuf";

/** Where the browser goes when the session is missing or expired, returning to `next` afterwards. */
export function signInPath(next: string): string {
  return `/console/sign-in?next=${encodeURIComponent(next)}`;
}

function currentPath(): string {
  return location.pathname + location.search;
}

// An expired or missing session answers `unauthenticated` on any call: send the person to sign in and back here,
// so the page they were on is not lost.
const toSignIn: Interceptor = (next) => async (request) => {
  try {
    return await next(request);
  } catch (error) {
    if (error instanceof ConnectError && error.code === Code.Unauthenticated && !location.pathname.startsWith("/console/sign-in")) {
      location.assign(signInPath(currentPath()));
    }
    throw error;
  }
};

export const transport = createConnectTransport({
  baseUrl: location.origin,
  useHttpGet: true,
  interceptors: [toSignIn],
});

const clients = new Map<DescService, unknown>();

/** The (cached) client of one service, e.g. `client(GroupService).listGroups({ tenantId })`. */
export function client<T extends DescService>(service: T): Client<T> {
  let found = clients.get(service) as Client<T> | undefined;
  if (found === undefined) {
    found = createClient(service, transport);
    clients.set(service, found);
  }
  return found;
}
