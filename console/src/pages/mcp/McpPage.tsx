// MCP servers the person may use in this tenant (the tenant's and the platform's): a page of ListExternalMcpServers
// per load. Registering (tenant Editors and Admins; operators for platform servers), sharing and deleting what they
// manage, and — for servers where each person signs in (OAuth) — connecting this tab (api/mcpOAuth.ts), whose token
// the chat page then uses from memory.
import { useState } from "preact/hooks";
import { connectMcpServer, forgetMcpToken, mcpTokens } from "../../api/mcpOAuth";
import { sharingTarget } from "../../api/sharing";
import { inTenant } from "../../api/tenantScope";
import { client } from "../../api/transport";
import { routeUrl, type PageProps } from "../../app/routes";
import { ErrorBanner } from "../../components/ErrorBanner";
import { ShareButton } from "../../components/SharingEditor";
import { Table, type Column } from "../../components/Table";
import { useAction } from "../../components/useAction";
import { usePagedList } from "../../components/usePagedList";
import { DeleteButton } from "../../components/DeleteButton";
import { ExternalMcpAuthType, type ExternalMcpServerSummary } from "../../gen/platform/agents/v1/external_mcp_server_pb";
import { ExternalMcpServerService } from "../../gen/platform/agents/v1/external_mcp_server_service_pb";
import { ResourceListService } from "../../gen/switchboard/resources/v1/resource_list_service_pb";
import { AUTH_NAMES } from "./labels";
import { RegisterMcp } from "./RegisterMcp";
import "../resources.css";

function Connect({ server }: { server: ExternalMcpServerSummary }) {
  const [abort, setAbort] = useState<AbortController | undefined>(undefined);
  const connect = useAction(async (popup: Window) => {
    const controller = new AbortController();
    setAbort(controller);
    try {
      await connectMcpServer(server.name, popup, controller.signal);
    } finally {
      setAbort(undefined);
    }
  });
  const token = mcpTokens.value.get(server.name);
  const label = server.displayName || server.name;
  if (token !== undefined) {
    const minutes = token.expiresAt === undefined ? undefined : Math.max(0, Math.round((token.expiresAt - Date.now()) / 60000));
    return (
      <span>
        <span class="state state-active">Connected</span>
        <span class="hint">{minutes === undefined ? " (this tab)" : ` (this tab, ${minutes} min left)`}</span>{" "}
        <button type="button" onClick={() => { forgetMcpToken(server.name); }}>
          Disconnect <span class="visually-hidden">{label}</span>
        </button>
      </span>
    );
  }
  return (
    <span>
      <button
        type="button"
        disabled={connect.busy}
        onClick={() => {
          // Opened by the click itself, so no popup blocker stops it; the flow sends it to the sign-in page.
          const popup = window.open("about:blank", "mcp-oauth", "popup,width=520,height=700");
          if (popup === null) {
            connect.clear();
            alert("Allow pop-up windows for this site to connect: the server's sign-in page opens in one.");
            return;
          }
          void connect.run(popup);
        }}
      >
        {connect.busy ? "Connecting…" : "Connect"} <span class="visually-hidden">{label}</span>
      </button>
      {abort !== undefined ? (
        <button type="button" onClick={() => { abort.abort(); }}>Cancel</button>
      ) : null}
      <ErrorBanner error={connect.error} />
    </span>
  );
}

export default function McpPage({ session, tenant }: PageProps) {
  const tenantId = tenant?.id ?? "";
  const tenantAdmin = tenant?.capabilities.tenantAdmin ?? false;
  const { load, reload, refresh, remove } = usePagedList(
    (page, signal) => client(ResourceListService).listExternalMcpServers({ page }, inTenant(tenantId, signal)), (a) => a.externalMcpServers,
    (name: string) => client(ExternalMcpServerService).deleteExternalMcpServer({ name }), [tenantId],
  );
  // Tenant servers are managed by the tenant's admins and their creator (the creator is not in the listing, so those
  // who may register servers see the buttons and the server refuses the rest in words); platform ones by operators.
  const manages = (s: ExternalMcpServerSummary) =>
    s.tenantId === "" ? session.canManageTenants : tenantAdmin || (tenant?.capabilities.createMcpServer ?? false);
  const columns: Column<ExternalMcpServerSummary>[] = [
    { header: "Name", cell: (s) => <span class="mono">{s.name}</span> },
    { header: "Display name", cell: (s) => s.displayName },
    { header: "Authentication", cell: (s) => AUTH_NAMES[s.authType] },
    { header: "Owner", cell: (s) => (s.tenantId === "" ? "Platform" : "This tenant") },
    {
      header: "Your connection",
      cell: (s) => (s.userAuthRequired || s.authType === ExternalMcpAuthType.OAUTH_AUTHORIZATION_CODE ? <Connect server={s} /> : "Not needed"),
    },
    {
      header: "Actions",
      actions: true,
      cell: (s) =>
        manages(s) ? (
          <div class="row-actions">
            <ShareButton label={s.name} target={() => sharingTarget("mcp", s.name, `MCP server ${s.name}`, s.tenantId === "")} />
            <DeleteButton label={s.name} question={`Delete the MCP server ${s.name}?`} busy={remove.busy}
              onDelete={() => void remove.run(s.name)} />
          </div>
        ) : null,
    },
  ];
  const tenantAllowed = tenant?.capabilities.createMcpServer ?? false;
  return (
    <section>
      <div class="page-head">
        <h1>MCP servers</h1>
        {tenantAllowed || session.canManageTenants ? (
          <RegisterMcp tenantId={tenantId} tenantAllowed={tenantAllowed} platformAllowed={session.canManageTenants}
            onCreated={refresh} />
        ) : null}
        {session.canManageTenants ? <a href={routeUrl({ path: "mcp/network-policies", scope: "tenant" }, tenantId)}>Network policies</a> : null}
      </div>
      <p class="lead">
        Tool servers models may call through the gateway. Servers marked “each person connects” need your own sign-in:
        its token stays in this tab's memory (the chat page uses it) and is forgotten when the tab closes.
      </p>
      <ErrorBanner error={remove.error} />
      <Table caption="MCP servers" columns={columns} load={load} rowKey={(s) => s.name} reload={reload} empty="No MCP servers you can use." />
    </section>
  );
}
