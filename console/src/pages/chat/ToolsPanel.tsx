// The MCP servers a chat with a plain model may use, each either run freely or asked about before every call (the
// gateway's approval requests). Preset agents bring their own default servers and RAGs; RAGs the key can read are
// offered to plain models by the gateway itself. The list loads when the panel is first opened (one call).
import { useState } from "preact/hooks";
import { client } from "../../api/transport";
import { ErrorBanner } from "../../components/ErrorBanner";
import { Checkbox } from "../../components/Fields";
import { ExternalMcpServerService } from "../../gen/platform/agents/v1/external_mcp_server_service_pb";

export interface McpChoice {
  name: string;
  /** Ask the person before each call (require_approval: always). */
  ask: boolean;
}

interface ToolsPanelProps {
  tenantId: string;
  value: McpChoice[];
  onChange: (value: McpChoice[]) => void;
}

export function ToolsPanel({ tenantId, value, onChange }: ToolsPanelProps) {
  const [servers, setServers] = useState<{ name: string; label: string }[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const open = () => {
    if (servers !== undefined) {
      return;
    }
    setServers([]);
    client(ExternalMcpServerService)
      .listExternalMcpServers({}, { headers: { "X-Platform-Tenant-Id": tenantId } })
      .then(
        (answer) => {
          setServers(
            answer.externalMcpServers
              .filter((s) => s.tenantId === "" || s.tenantId === tenantId)
              .map((s) => ({ name: s.name, label: s.displayName && s.displayName !== s.name ? `${s.displayName} (${s.name})` : s.name })),
          );
        },
        (caught: unknown) => {
          setError(caught);
        },
      );
  };
  const chosen = (name: string) => value.find((c) => c.name === name);
  const set = (name: string, choice: McpChoice | undefined) => {
    const rest = value.filter((c) => c.name !== name);
    onChange(choice === undefined ? rest : [...rest, choice]);
  };
  return (
    <details
      class="panel"
      onToggle={(event) => {
        if (event.currentTarget.open) {
          open();
        }
      }}
    >
      <summary>Tools {value.length > 0 ? `(${value.length})` : ""}</summary>
      <ErrorBanner error={error} />
      {servers === undefined || servers.length === 0 ? (
        <p class="hint">{servers === undefined ? "" : "No MCP server is available to you."}</p>
      ) : (
        <ul class="plain-list">
          {servers.map((server) => {
            const choice = chosen(server.name);
            return (
              <li key={server.name}>
                <Checkbox
                  label={server.label}
                  name={`mcp-${server.name}`}
                  checked={choice !== undefined}
                  onChange={(on) => { set(server.name, on ? { name: server.name, ask: true } : undefined); }}
                />
                {choice !== undefined ? (
                  <Checkbox
                    label="Ask me before each call"
                    name={`ask-${server.name}`}
                    checked={choice.ask}
                    onChange={(ask) => { set(server.name, { name: server.name, ask }); }}
                  />
                ) : null}
              </li>
            );
          })}
        </ul>
      )}
    </details>
  );
}
