// The frame around every page: a skip link, the header (tenant picker, the person, sign out) and the nav built from
// routes.ts for this session and the tenant in the URL. On narrow screens the nav wraps above the page.
import type { ComponentChildren } from "preact";
import { useLocation } from "preact-iso";
import { useId, useState } from "preact/hooks";
import { ROUTES, routeUrl, type RouteEntry } from "./routes";
import type { Session, TenantAccess } from "./session";

const TENANT_PATH = /^\/console\/t\/([^/]+)(?:\/(.*))?$/;

/** The tenant named by the URL, and the page path below it. */
export function tenantOf(url: string, session: Session): { tenant: TenantAccess | undefined; rest: string } {
  const match = TENANT_PATH.exec(url.split("?")[0] ?? "");
  if (match === null) {
    return { tenant: undefined, rest: "" };
  }
  const id = decodeURIComponent(match[1] ?? "");
  return { tenant: session.tenants.find((t) => t.id === id), rest: match[2] ?? "" };
}

function navEntries(session: Session, tenant: TenantAccess | undefined): RouteEntry[] {
  return ROUTES.filter((entry) => entry.inNav !== false && entry.visible(session, tenant));
}

/** The first page a person may open in a tenant (where the picker and the home page go). */
export function firstPage(session: Session, tenant: TenantAccess): string | undefined {
  const entry = ROUTES.find((e) => e.scope === "tenant" && e.inNav !== false && e.visible(session, tenant));
  return entry === undefined ? undefined : routeUrl(entry, tenant.id);
}

/** Sign-out through fetch: the tab's gateway keys are revoked first (while the session still lets it), then the
 * server clears the cookie and says where to go (the identity provider's sign-out page, or the console), and the
 * page goes there itself. */
function SignOut() {
  const [failed, setFailed] = useState(false);
  const signOut = async () => {
    try {
      await (await import("../api/gatewayKey")).revokeGatewayKeys(); // loaded here: the shell stays small
      const answer = await fetch("/console/auth/logout", { method: "POST", headers: { Accept: "application/json" } });
      const { location: next } = (await answer.json()) as { location: string };
      location.assign(next);
    } catch {
      setFailed(true);
    }
  };
  return (
    <>
      <button type="button" onClick={() => void signOut()}>
        Sign out
      </button>
      {failed ? <span role="alert">Signing out failed: try again.</span> : null}
    </>
  );
}

function TenantPicker({ session, tenant }: { session: Session; tenant: TenantAccess | undefined }) {
  const id = useId();
  const { route, url } = useLocation();
  if (session.tenants.length === 0) {
    return null;
  }
  const pick = (tenantId: string) => {
    const picked = session.tenants.find((t) => t.id === tenantId);
    if (picked === undefined) {
      return;
    }
    // Stay on the same kind of page in the new tenant when it is open to the person there.
    const top = tenantOf(url, session).rest.split("/")[0] ?? "";
    const same = ROUTES.find((e) => e.scope === "tenant" && e.path === top && e.visible(session, picked));
    route(same ? routeUrl(same, picked.id) : (firstPage(session, picked) ?? "/console/"));
  };
  return (
    <div class="tenant-picker">
      <label for={id}>Tenant</label>
      <select
        id={id}
        value={tenant?.id ?? ""}
        onChange={(event) => {
          pick(event.currentTarget.value);
        }}
      >
        {tenant === undefined ? <option value="">Choose a tenant</option> : null}
        {session.tenants.map((t) => (
          <option key={t.id} value={t.id}>
            {t.name}
          </option>
        ))}
      </select>
    </div>
  );
}

export function Shell({ session, url, children }: { session: Session; url: string; children: ComponentChildren }) {
  const { tenant } = tenantOf(url, session);
  const path = url.split("?")[0] ?? "";
  const entries = navEntries(session, tenant);
  return (
    <div class="shell">
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="/console/">
          Switchboard
        </a>
        <TenantPicker session={session} tenant={tenant} />
        <div class="who">
          <span class="who-name">{session.user.displayName || session.user.email || session.user.id}</span>
          <SignOut />
        </div>
      </header>
      <nav class="side" aria-label="Console">
        <ul>
          {entries.map((entry) => {
            const href = routeUrl(entry, tenant?.id);
            const current = path === href || path.startsWith(`${href}/`);
            return (
              <li key={`${entry.scope}:${entry.path}`}>
                <a href={href} aria-current={current ? "page" : undefined}>
                  {entry.title}
                </a>
              </li>
            );
          })}
        </ul>
      </nav>
      <main id="main" class="content" tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}
