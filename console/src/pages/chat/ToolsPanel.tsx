// The MCP servers a chat with a plain model may use, each either run freely or asked about before every call (the
// gateway's approval requests). Preset agents bring their own default servers and RAGs; RAGs the key can read are
// offered to plain models by the gateway itself. The servers are searched a page at a time (SearchPicker), from when
// the panel is first opened: the page load itself asks for none.
import { useMemo, useState } from "preact/hooks";
import { Checkbox } from "../../components/Fields";
import { mcpChoices } from "../../components/mcpChoices";
import { SearchPicker } from "../../components/SearchPicker";

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
  const [opened, setOpened] = useState(false);
  const load = useMemo(() => mcpChoices(tenantId), [tenantId]);
  const set = (name: string, choice: McpChoice | undefined) => {
    const rest = value.filter((c) => c.name !== name);
    onChange(choice === undefined ? rest : [...rest, choice]);
  };
  return (
    <details
      class="panel"
      onToggle={(event) => {
        if (event.currentTarget.open) {
          setOpened(true);
        }
      }}
    >
      <summary>Tools {value.length > 0 ? `(${value.length})` : ""}</summary>
      {opened ? (
        <SearchPicker label="MCP servers" name="mcp" load={load} chosen={(name) => value.some((c) => c.name === name)}
          onToggle={(choice, on) => { set(choice.value, on ? { name: choice.value, ask: true } : undefined); }}
          empty="No MCP server you can use matches." />
      ) : null}
      {value.length > 0 ? (
        <ul class="plain-list">
          {value.map((choice) => (
            <li key={choice.name}>
              <span class="mono">{choice.name}</span>
              <Checkbox
                label="Ask me before each call"
                name={`ask-${choice.name}`}
                checked={choice.ask}
                onChange={(ask) => { set(choice.name, { name: choice.name, ask }); }}
              />
            </li>
          ))}
        </ul>
      ) : null}
    </details>
  );
}
