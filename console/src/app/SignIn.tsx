// The sign-in page: where an expired or missing session lands (with `next`, the page to return to). It offers what
// the server has: OpenID Connect sign-in when an issuer is configured, and the development one-click sign-in when
// the server runs with --demo (labelled so nobody mistakes it for production).
import { useEffect, useState } from "preact/hooks";
import { consoleConfig, type ConsoleConfig } from "../api/config";
import { ErrorBanner } from "../components/ErrorBanner";

/** Only same-origin console paths are followed after sign-in (the server checks again). */
export function safeNext(raw: string | null): string {
  return raw !== null && raw.startsWith("/console/") && !raw.startsWith("//") ? raw : "/console/";
}

export function SignIn() {
  const [config, setConfig] = useState<ConsoleConfig | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    consoleConfig().then(setConfig, setError);
  }, []);
  const next = encodeURIComponent(safeNext(new URLSearchParams(location.search).get("next")));
  return (
    <main class="sign-in" id="main">
      <h1>Switchboard console</h1>
      <p>Sign in to manage your tenants, keys and models.</p>
      <ErrorBanner error={error} />
      {config?.oidc ? (
        <a class="button primary" href={`/console/auth/login?next=${next}`}>
          Sign in
        </a>
      ) : null}
      {config?.devSignIn ? (
        <div class="dev-sign-in">
          <a class="button" href={`/console/auth/dev?next=${next}`}>
            Development sign-in as the demo admin
          </a>
          <p class="hint">Development only: offered because this server runs with --demo.</p>
        </div>
      ) : null}
      {config !== undefined && !config.oidc && !config.devSignIn ? (
        <p class="banner banner-warning">
          No sign-in is configured on this server: set SWITCHBOARD_OIDC_ISSUER and SWITCHBOARD_OIDC_CLIENT_ID.
        </p>
      ) : null}
    </main>
  );
}
