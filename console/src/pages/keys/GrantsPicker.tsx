// The resources a new key is granted: pick a kind, and the caller's reachable resources of that kind are listed by
// that kind's own list method (one call when the kind is chosen; the server lists only what the caller can read,
// which is exactly what it lets a key be granted). Chosen grants show as removable chips.
import { useEffect, useState } from "preact/hooks";
import { inTenant } from "../../api/tenantScope";
import { client } from "../../api/transport";
import { ErrorBanner } from "../../components/ErrorBanner";
import { Checkbox, SelectField, chosenEnum } from "../../components/Fields";
import { ExternalMcpServerService } from "../../gen/platform/agents/v1/external_mcp_server_service_pb";
import { PresetAgentService } from "../../gen/platform/agents/v1/preset_agent_service_pb";
import { ExternalModelService } from "../../gen/platform/modelmanager/v1/external_model_service_pb";
import { ModelAliasService } from "../../gen/platform/modelmanager/v1/model_alias_service_pb";
import { ModelDeploymentService } from "../../gen/platform/modelmanager/v1/model_deployment_service_pb";
import { RagService } from "../../gen/platform/ragmanager/v1/rag_service_pb";
import { ResourceKind } from "../../gen/platform/tenants/v1/api_key_pb";

export interface Grant {
  kind: ResourceKind;
  /** What ResourceRef.name carries: the resource's name (a RAG's id, an alias's handle). */
  name: string;
  label: string;
}

export const KIND_NAMES: Record<ResourceKind, string> = {
  [ResourceKind.UNSPECIFIED]: "Resource",
  [ResourceKind.MODEL_DEPLOYMENT]: "Model deployment",
  [ResourceKind.EXTERNAL_MODEL]: "External model",
  [ResourceKind.MODEL_ALIAS]: "Model alias",
  [ResourceKind.PRESET_AGENT]: "Preset agent",
  [ResourceKind.MCP_SERVER]: "MCP server",
  [ResourceKind.RAG]: "RAG",
};

const KINDS = [
  ResourceKind.MODEL_DEPLOYMENT,
  ResourceKind.EXTERNAL_MODEL,
  ResourceKind.MODEL_ALIAS,
  ResourceKind.PRESET_AGENT,
  ResourceKind.MCP_SERVER,
  ResourceKind.RAG,
] as const;

type Choice = Omit<Grant, "kind">;

function labelled(name: string, displayName: string): Choice {
  return { name, label: displayName && displayName !== name ? `${displayName} (${name})` : name };
}

/** The caller's reachable resources of one kind, from that kind's list method. */
async function reachable(kind: ResourceKind, tenantId: string, signal: AbortSignal): Promise<Choice[]> {
  const options = { signal };
  switch (kind) {
    case ResourceKind.MODEL_DEPLOYMENT:
      return (await client(ModelDeploymentService).listModelDeployments({}, options)).modelDeployments.map((d) =>
        labelled(d.name, d.displayName),
      );
    case ResourceKind.EXTERNAL_MODEL:
      return (await client(ExternalModelService).listExternalModels({}, options)).externalModels.map((m) =>
        labelled(m.name, m.displayName),
      );
    case ResourceKind.MODEL_ALIAS:
      return (await client(ModelAliasService).listModelAliases({}, options)).aliases.map((a) => labelled(a.name, ""));
    case ResourceKind.PRESET_AGENT:
      return (await client(PresetAgentService).listPresetAgents({ tenantId }, options)).presetAgents.map((a) =>
        labelled(a.name, a.displayName),
      );
    case ResourceKind.MCP_SERVER:
      // Listed within the tenant: ListExternalMcpServers refuses a signed-in person's call without one.
      return (await client(ExternalMcpServerService).listExternalMcpServers({}, inTenant(tenantId, signal))).externalMcpServers.map((s) =>
        labelled(s.name, s.displayName),
      );
    case ResourceKind.RAG:
      return (await client(RagService).listRags({ tenantId }, options)).rags.map((r) => ({
        name: r.id,
        label: r.displayName || r.name,
      }));
    case ResourceKind.UNSPECIFIED:
      return [];
  }
}

interface GrantsPickerProps {
  tenantId: string;
  value: Grant[];
  onChange: (grants: Grant[]) => void;
}

export function GrantsPicker({ tenantId, value, onChange }: GrantsPickerProps) {
  const [kind, setKind] = useState<ResourceKind>(ResourceKind.MODEL_DEPLOYMENT);
  const [choices, setChoices] = useState<Choice[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    const abort = new AbortController();
    setChoices(undefined);
    setError(undefined);
    reachable(kind, tenantId, abort.signal).then(
      (found) => {
        if (!abort.signal.aborted) {
          setChoices(found);
        }
      },
      (caught: unknown) => {
        if (!abort.signal.aborted) {
          setError(caught);
        }
      },
    );
    return () => {
      abort.abort();
    };
  }, [kind, tenantId]);
  const chosen = (name: string) => value.some((g) => g.kind === kind && g.name === name);
  const toggle = (choice: Choice, on: boolean) => {
    const others = value.filter((g) => !(g.kind === kind && g.name === choice.name));
    onChange(on ? [...others, { kind, ...choice }] : others);
  };
  return (
    <fieldset>
      <legend>Grants</legend>
      <p class="hint">The key reaches only the resources granted here (and those of groups it is attached to).</p>
      <SelectField
        label="Kind of resource"
        value={String(kind)}
        options={KINDS.map((k) => ({ value: String(k), label: KIND_NAMES[k] }))}
        onChange={(v) => { setKind(chosenEnum(KINDS, v, ResourceKind.MODEL_DEPLOYMENT)); }}
      />
      <ErrorBanner error={error} />
      <div class="choices" aria-busy={choices === undefined && error === undefined}>
        {choices === undefined ? null : choices.length === 0 ? (
          <p class="empty">You can reach no {KIND_NAMES[kind].toLowerCase()} in this tenant.</p>
        ) : (
          choices.map((choice) => (
            <Checkbox key={choice.name} label={choice.label} checked={chosen(choice.name)}
              onChange={(on) => { toggle(choice, on); }} />
          ))
        )}
      </div>
      {value.length > 0 ? (
        <ul class="chips" aria-label="Chosen grants">
          {value.map((g) => (
            <li key={`${g.kind}:${g.name}`}>
              {KIND_NAMES[g.kind]}: {g.label}
              <button type="button" class="chip-remove" aria-label={`Remove ${KIND_NAMES[g.kind]} ${g.label}`}
                onClick={() => { onChange(value.filter((x) => x !== g)); }}>
                ×
              </button>
            </li>
          ))}
        </ul>
      ) : null}
    </fieldset>
  );
}
