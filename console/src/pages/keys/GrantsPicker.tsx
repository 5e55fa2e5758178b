// The resources a new key is granted: pick a kind, then search the caller's reachable resources of that kind, a
// server page at a time (ResourceListService, searched as the person types; the server lists only what the caller can
// read, which is exactly what it lets a key be granted). Chosen grants show as removable chips.
import { useMemo, useState } from "preact/hooks";
import { inTenant } from "../../api/tenantScope";
import { client } from "../../api/transport";
import { SelectField, chosenEnum } from "../../components/Fields";
import { SearchPicker, searched, type Choice, type ChoiceLoader } from "../../components/SearchPicker";
import { ResourceKind } from "../../gen/platform/tenants/v1/api_key_pb";
import { ResourceListService } from "../../gen/switchboard/resources/v1/resource_list_service_pb";

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

function labelled(name: string, displayName: string): Choice {
  return { value: name, label: displayName && displayName !== name ? `${displayName} (${name})` : name };
}

/** The caller's reachable resources of one kind, searched, from that kind's paged list. */
function reachable(kind: ResourceKind, tenantId: string): ChoiceLoader {
  const lists = client(ResourceListService);
  switch (kind) {
    case ResourceKind.MODEL_DEPLOYMENT:
      return searched((r, signal) => lists.listModelDeployments(r, { signal }), (a) => a.modelDeployments, (d) => labelled(d.name, d.displayName));
    case ResourceKind.EXTERNAL_MODEL:
      return searched((r, signal) => lists.listExternalModels(r, { signal }), (a) => a.externalModels, (m) => labelled(m.name, m.displayName));
    case ResourceKind.MODEL_ALIAS:
      return searched((r, signal) => lists.listModelAliases(r, { signal }), (a) => a.aliases, (a) => labelled(a.name, a.alias?.publicModelId ?? ""));
    case ResourceKind.PRESET_AGENT:
      return searched((r, signal) => lists.listPresetAgents({ ...r, tenantId }, { signal }), (a) => a.presetAgents, (a) => labelled(a.name, a.displayName));
    case ResourceKind.MCP_SERVER:
      // Listed within the tenant: a signed-in person's MCP servers are refused without one.
      return searched((r, signal) => lists.listExternalMcpServers(r, inTenant(tenantId, signal)), (a) => a.externalMcpServers,
        (s) => labelled(s.name, s.displayName));
    case ResourceKind.RAG:
      return searched((r, signal) => lists.listRags({ ...r, tenantId }, { signal }), (a) => a.rags, (r) => ({ value: r.id, label: r.displayName || r.name }));
    case ResourceKind.UNSPECIFIED:
      return () => Promise.resolve({ items: [], nextPageToken: "" });
  }
}

interface GrantsPickerProps {
  tenantId: string;
  value: Grant[];
  onChange: (grants: Grant[]) => void;
}

export function GrantsPicker({ tenantId, value, onChange }: GrantsPickerProps) {
  const [kind, setKind] = useState<ResourceKind>(ResourceKind.MODEL_DEPLOYMENT);
  const load = useMemo(() => reachable(kind, tenantId), [kind, tenantId]);
  const chosen = (name: string) => value.some((g) => g.kind === kind && g.name === name);
  const toggle = (choice: Choice, on: boolean) => {
    const others = value.filter((g) => !(g.kind === kind && g.name === choice.value));
    onChange(on ? [...others, { kind, name: choice.value, label: choice.label }] : others);
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
      <SearchPicker key={kind} label={`${KIND_NAMES[kind]}s`} name="grant" load={load} chosen={chosen} onToggle={toggle}
        empty={`You can reach no ${KIND_NAMES[kind].toLowerCase()} in this tenant that matches.`} />
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
