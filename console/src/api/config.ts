// What the server tells the front end at /console/config.json (server/console/static.py): no secrets.
export interface ConsoleConfig {
  /** The gateway's public base URL (chat and RAG uploads call it; CORS allows this console's origin). */
  gatewayUrl: string;
  /** The development one-click sign-in is offered (only `serve --demo`). */
  devSignIn: boolean;
  /** An OpenID Connect issuer is configured: "Sign in" goes through /console/auth/login. */
  oidc: boolean;
}

let loaded: Promise<ConsoleConfig> | undefined;

export function consoleConfig(): Promise<ConsoleConfig> {
  loaded ??= fetch("/console/config.json", { headers: { Accept: "application/json" } }).then(async (answer) => {
    if (!answer.ok) {
      throw new Error(`The console's configuration could not be loaded (HTTP ${answer.status}).`);
    }
    return (await answer.json()) as ConsoleConfig;
  });
  return loaded;
}
