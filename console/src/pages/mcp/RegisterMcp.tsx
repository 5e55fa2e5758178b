// Registering an MCP server: probe its URL first (Discover…: the auth it asks for, its own name, whether clients
// may register themselves), then name it and give the credentials its auth type needs — none, an API key (bearer),
// static headers, or OAuth authorization code (client id, scopes, optional endpoints, the confidential client
// secret). Secrets are write-only: the server seals them and never returns them.
import { create } from "@bufbuild/protobuf";
import { useState } from "preact/hooks";
import { client } from "../../api/transport";
import { Dialog } from "../../components/Dialog";
import { ErrorBanner } from "../../components/ErrorBanner";
import { FormActions, SelectField, TextField } from "../../components/Fields";
import { useAction } from "../../components/useAction";
import { runOnSubmit } from "../../components/runOnSubmit";
import { OwnerField, type Owner } from "../../components/OwnerField";
import {
  ExternalMcpAuthType,
  ExternalMcpServerSchema,
  ExternalMcpStaticHeaderValueSchema,
  type ExternalMcpServerDiscovery,
} from "../../gen/platform/agents/v1/external_mcp_server_pb";
import { ExternalMcpServerService } from "../../gen/platform/agents/v1/external_mcp_server_service_pb";
import { AUTH_NAMES } from "./labels";

type AuthChoice = "none" | "bearer" | "headers" | "oauth";

const AUTH_CHOICES: readonly { value: AuthChoice; label: string }[] = [
  { value: "none", label: "None" },
  { value: "bearer", label: "API key (bearer token)" },
  { value: "headers", label: "Static headers" },
  { value: "oauth", label: "OAuth authorization code (each person connects)" },
];

const FROM_DISCOVERY: Partial<Record<ExternalMcpAuthType, AuthChoice>> = {
  [ExternalMcpAuthType.NONE]: "none",
  [ExternalMcpAuthType.BEARER]: "bearer",
  [ExternalMcpAuthType.OAUTH_AUTHORIZATION_CODE]: "oauth",
};

interface Header { name: string; value: string }

export function RegisterMcp({ tenantId, tenantAllowed, platformAllowed, onCreated }: {
  tenantId: string; tenantAllowed: boolean; platformAllowed: boolean; onCreated: () => void;
}) {
  const [open, setOpen] = useState(false);
  const [owner, setOwner] = useState<Owner>(tenantAllowed ? "tenant" : "platform");
  const [url, setUrl] = useState("");
  const [found, setFound] = useState<ExternalMcpServerDiscovery | undefined>(undefined);
  const [name, setName] = useState("");
  const [displayName, setDisplayName] = useState("");
  const [auth, setAuth] = useState<AuthChoice>("none");
  const [apiKey, setApiKey] = useState("");
  const [headers, setHeaders] = useState<Header[]>([{ name: "", value: "" }]);
  const [oauth, setOauth] = useState({ clientId: "", clientSecret: "", scopes: "", authorizationUrl: "", tokenUrl: "" });
  const discover = useAction(async () => {
    const api = client(ExternalMcpServerService);
    const answer = owner === "platform"
      ? await api.discoverPlatformExternalMcpServer({ serverUrl: url.trim() })
      : await api.discoverExternalMcpServer({ serverUrl: url.trim(), tenantId });
    setFound(answer.discovery);
    const kind = answer.discovery === undefined ? undefined : FROM_DISCOVERY[answer.discovery.authType];
    if (kind !== undefined) {
      setAuth(kind);
    }
    if (answer.discovery?.serverName && displayName === "") {
      setDisplayName(answer.discovery.serverName);
    }
  });
  const submit = useAction(async () => {
    const server = create(ExternalMcpServerSchema, {
      name: name.trim(),
      displayName: displayName.trim(),
      serverUrl: url.trim(),
      auth: {
        type: auth === "bearer" ? ExternalMcpAuthType.BEARER : auth === "oauth" ? ExternalMcpAuthType.OAUTH_AUTHORIZATION_CODE : ExternalMcpAuthType.NONE,
        ...(auth === "oauth"
          ? {
              oauth: {
                clientId: oauth.clientId.trim(),
                scopes: oauth.scopes.split(/\s+/).filter(Boolean),
                authorizationUrl: oauth.authorizationUrl.trim(),
                tokenUrl: oauth.tokenUrl.trim(),
              },
            }
          : {}),
      },
    });
    const secrets = {
      apiKey: auth === "bearer" ? apiKey : "",
      staticHeaders: auth === "headers"
        ? headers.filter((h) => h.name.trim() !== "").map((h) => create(ExternalMcpStaticHeaderValueSchema, { name: h.name.trim(), value: h.value }))
        : [],
      oauthClientSecret: auth === "oauth" ? oauth.clientSecret : "",
    };
    const api = client(ExternalMcpServerService);
    if (owner === "platform") {
      await api.createPlatformExternalMcpServer({ externalMcpServer: server, ...secrets });
    } else {
      await api.createExternalMcpServer({ externalMcpServer: server, tenantId, ...secrets });
    }
  });
  const close = () => {
    setOpen(false);
    setFound(undefined);
    setApiKey("");
    setOauth({ ...oauth, clientSecret: "" });
    setHeaders([{ name: "", value: "" }]);
    submit.clear();
    discover.clear();
  };
  return (
    <>
      <button type="button" class="primary" onClick={() => { setOpen(true); }}>Register MCP server</button>
      <Dialog title="Register MCP server" open={open} onClose={close}>
        <form onSubmit={runOnSubmit(submit.run, () => { close(); onCreated(); })}>
          <ErrorBanner error={submit.error ?? discover.error} />
          <OwnerField tenantAllowed={tenantAllowed} platformAllowed={platformAllowed} value={owner} onChange={setOwner} />
          <TextField label="Server URL" name="server-url" value={url} onInput={setUrl} required autoFocus
            hint="The MCP endpoint (streamable HTTP), e.g. https://mcp.example.com/mcp" />
          <div class="form-actions">
            <button type="button" disabled={discover.busy || url.trim() === ""} onClick={() => void discover.run()}>
              {discover.busy ? "Probing…" : "Discover"}
            </button>
          </div>
          <p class="hint" role="status">
            {found === undefined ? "" : `Found${found.serverName ? ` “${found.serverName}”` : ""}: ${AUTH_NAMES[found.authType]}` +
              (found.dynamicClientRegistrationSupported ? "; clients may register themselves." : ".")}
          </p>
          <TextField label="Name" name="mcp-name" value={name} onInput={setName} required
            hint="The prefix of its tools' names for models, e.g. github_ (letters, digits, _ . -)." />
          <TextField label="Display name" name="mcp-display-name" value={displayName} onInput={setDisplayName} />
          <SelectField label="Authentication" name="auth-type" value={auth} options={AUTH_CHOICES} onChange={setAuth} />
          {auth === "bearer" ? (
            <TextField label="API key" name="mcp-api-key" value={apiKey} onInput={setApiKey} required
              hint="Sent as a bearer token; write-only." />
          ) : null}
          {auth === "headers" ? (
            <fieldset>
              <legend>Static headers</legend>
              <p class="hint">Sent on every request to the server; the values are write-only.</p>
              {headers.map((header, i) => (
                <div class="header-row" key={i}>
                  <TextField label={`Header ${i + 1} name`} name={`header-name-${i}`} value={header.name}
                    onInput={(v) => { setHeaders(headers.map((h, j) => (j === i ? { ...h, name: v } : h))); }} />
                  <TextField label={`Header ${i + 1} value`} name={`header-value-${i}`} value={header.value}
                    onInput={(v) => { setHeaders(headers.map((h, j) => (j === i ? { ...h, value: v } : h))); }} />
                  {headers.length > 1 ? (
                    <button type="button" onClick={() => { setHeaders(headers.filter((_h, j) => j !== i)); }}>
                      Remove header {i + 1}
                    </button>
                  ) : null}
                </div>
              ))}
              <button type="button" onClick={() => { setHeaders([...headers, { name: "", value: "" }]); }}>Add header</button>
            </fieldset>
          ) : null}
          {auth === "oauth" ? (
            <fieldset>
              <legend>OAuth client</legend>
              <TextField label="Client id" name="oauth-client-id" value={oauth.clientId} required
                onInput={(v) => { setOauth({ ...oauth, clientId: v }); }} />
              <TextField label="Client secret" name="oauth-client-secret" value={oauth.clientSecret}
                onInput={(v) => { setOauth({ ...oauth, clientSecret: v }); }} hint="Kept by Switchboard only; empty for a public client." />
              <TextField label="Scopes" name="oauth-scopes" value={oauth.scopes}
                onInput={(v) => { setOauth({ ...oauth, scopes: v }); }} hint="Separated by spaces." />
              <TextField label="Authorization URL" name="oauth-authorization-url" value={oauth.authorizationUrl}
                onInput={(v) => { setOauth({ ...oauth, authorizationUrl: v }); }} hint="Empty: discovered from the server." />
              <TextField label="Token URL" name="oauth-token-url" value={oauth.tokenUrl}
                onInput={(v) => { setOauth({ ...oauth, tokenUrl: v }); }} hint="Empty: discovered from the server." />
            </fieldset>
          ) : null}
          <FormActions submit="Register" busy={submit.busy} onCancel={close} />
        </form>
      </Dialog>
    </>
  );
}
