// Creating or editing a preset agent: its base model (a text-generation model or alias), instructions, sampling,
// up to four output guardrails in the order they run (reorderable from the keyboard), and the MCP servers and RAGs
// it brings by default. The choices are the caller's reachable resources, listed when the editor opens (never on
// page load); the server re-checks each one against what the caller may invoke.
import { create } from "@bufbuild/protobuf";
import { useEffect, useState } from "preact/hooks";
import { inTenant } from "../../api/tenantScope";
import { client } from "../../api/transport";
import { ErrorBanner } from "../../components/ErrorBanner";
import { Checkbox, FormActions, SelectField, TextField } from "../../components/Fields";
import { OrderedList } from "../../components/OrderedList";
import { useAction } from "../../components/useAction";
import { PresetAgentSamplingSchema, PresetAgentSchema, type PresetAgent } from "../../gen/platform/agents/v1/preset_agent_pb";
import { PresetAgentService } from "../../gen/platform/agents/v1/preset_agent_service_pb";
import { ExternalMcpServerService } from "../../gen/platform/agents/v1/external_mcp_server_service_pb";
import { TaskType } from "../../gen/platform/modelmanager/v1/capabilities_pb";
import { ExternalModelService } from "../../gen/platform/modelmanager/v1/external_model_service_pb";
import { ModelAliasService } from "../../gen/platform/modelmanager/v1/model_alias_service_pb";
import { ModelDeploymentService } from "../../gen/platform/modelmanager/v1/model_deployment_service_pb";
import { RagService } from "../../gen/platform/ragmanager/v1/rag_service_pb";

const MAX_GUARDRAILS = 4;

interface Choices {
  baseModels: string[];
  guardrails: string[];
  mcpServers: { name: string; label: string }[];
  rags: { id: string; label: string }[];
}

async function choices(tenantId: string, signal: AbortSignal): Promise<Choices> {
  const [deployments, external, aliases, servers, rags] = await Promise.all([
    client(ModelDeploymentService).listModelDeployments({}, { signal }),
    client(ExternalModelService).listExternalModels({}, { signal }),
    client(ModelAliasService).listModelAliases({}, { signal }),
    client(ExternalMcpServerService).listExternalMcpServers({}, inTenant(tenantId, signal)),
    client(RagService).listRags({ tenantId }, { signal }),
  ]);
  const models = [
    ...deployments.modelDeployments.map((d) => ({ id: d.publicModelId, task: d.capabilities?.taskType })),
    ...external.externalModels.map((m) => ({ id: m.publicModelId, task: m.capabilities?.taskType })),
  ];
  return {
    baseModels: [
      ...models.filter((m) => m.task === TaskType.TEXT_GENERATION).map((m) => m.id),
      ...aliases.aliases.map((a) => a.alias?.publicModelId ?? "").filter(Boolean),
    ],
    guardrails: models.filter((m) => m.task === TaskType.GUARDRAIL).map((m) => m.id),
    mcpServers: servers.externalMcpServers.map((s) => ({ name: s.name, label: s.displayName || s.name })),
    rags: rags.rags.map((r) => ({ id: r.id, label: r.displayName || r.name })),
  };
}

function optionalNumber(text: string): number | undefined {
  const trimmed = text.trim();
  return trimmed === "" ? undefined : Number(trimmed);
}

interface AgentEditorProps {
  tenantId: string;
  /** The agent as stored (editing), or undefined (creating). */
  agent: PresetAgent | undefined;
  platformAllowed: boolean;
  tenantAllowed: boolean;
  onDone: () => void;
  onCancel: () => void;
}

export function AgentEditor({ tenantId, agent, platformAllowed, tenantAllowed, onDone, onCancel }: AgentEditorProps) {
  const [options, setOptions] = useState<Choices | undefined>(undefined);
  const [optionsError, setOptionsError] = useState<unknown>(undefined);
  const [owner, setOwner] = useState<"tenant" | "platform">(tenantAllowed ? "tenant" : "platform");
  const [form, setForm] = useState({
    name: agent?.name ?? "",
    publicModelId: agent?.publicModelId ?? "",
    displayName: agent?.displayName ?? "",
    baseModel: agent?.baseModel ?? "",
    instructions: agent?.instructions ?? "",
    temperature: agent?.sampling?.temperature?.toString() ?? "",
    topP: agent?.sampling?.topP?.toString() ?? "",
    maxOutputTokens: agent?.sampling?.maxOutputTokens?.toString() ?? "",
  });
  const [guardrails, setGuardrails] = useState<string[]>([...(agent?.outputGuardrails ?? [])]);
  const [nextGuardrail, setNextGuardrail] = useState("");
  const [mcpServers, setMcpServers] = useState<string[]>([...(agent?.defaultMcpServers ?? [])]);
  const [rags, setRags] = useState<string[]>([...(agent?.defaultRags ?? [])]);
  useEffect(() => {
    const abort = new AbortController();
    choices(tenantId, abort.signal).then(
      (found) => {
        setOptions(found);
        setForm((f) => ({ ...f, baseModel: f.baseModel || (found.baseModels[0] ?? "") }));
        setNextGuardrail(found.guardrails[0] ?? "");
      },
      (caught: unknown) => { if (!abort.signal.aborted) { setOptionsError(caught); } },
    );
    return () => { abort.abort(); };
  }, [tenantId]);
  const field = (key: keyof typeof form) => (value: string) => { setForm({ ...form, [key]: value }); };
  const save = useAction(async () => {
    const temperature = optionalNumber(form.temperature);
    const topP = optionalNumber(form.topP);
    const maxOutputTokens = optionalNumber(form.maxOutputTokens);
    // An edit starts from the agent as stored, so what this form does not show (its sharing) is kept.
    const presetAgent = agent === undefined ? create(PresetAgentSchema) : create(PresetAgentSchema, agent);
    presetAgent.name = form.name.trim();
    presetAgent.publicModelId = form.publicModelId.trim();
    presetAgent.displayName = form.displayName.trim();
    presetAgent.baseModel = form.baseModel;
    presetAgent.instructions = form.instructions;
    presetAgent.outputGuardrails = guardrails;
    presetAgent.defaultMcpServers = mcpServers;
    presetAgent.defaultRags = rags;
    presetAgent.sampling = create(PresetAgentSamplingSchema, {
      ...(temperature === undefined ? {} : { temperature }),
      ...(topP === undefined ? {} : { topP }),
      ...(maxOutputTokens === undefined ? {} : { maxOutputTokens }),
    });
    const api = client(PresetAgentService);
    if (agent !== undefined) {
      await api.updatePresetAgent({ presetAgent });
    } else if (owner === "platform") {
      await api.createPlatformPresetAgent({ presetAgent });
    } else {
      await api.createPresetAgent({ tenantId, presetAgent });
    }
  });
  const toggle = (list: string[], set: (v: string[]) => void, value: string, on: boolean) => {
    set(on ? [...list.filter((v) => v !== value), value] : list.filter((v) => v !== value));
  };
  const addable = options?.guardrails.filter((g) => !guardrails.includes(g)) ?? [];
  return (
    <form onSubmit={(event) => {
      event.preventDefault();
      void save.run().then((ok) => { if (ok) { onDone(); } });
    }}>
      <ErrorBanner error={save.error ?? optionsError} />
      {agent === undefined ? (
        <>
          {platformAllowed && tenantAllowed ? (
            <SelectField label="Owner" name="owner" value={owner}
              options={[{ value: "tenant", label: "This tenant" }, { value: "platform", label: "The platform (operators)" }]}
              onChange={setOwner} />
          ) : null}
          <TextField label="Name" name="agent-name" value={form.name} onInput={field("name")} required autoFocus
            hint="Lowercase letters, digits and hyphens; it cannot change later." />
          <TextField label="Model id" name="agent-model-id" value={form.publicModelId} onInput={field("publicModelId")} required
            hint="What applications send as `model` to use this agent, e.g. team/helper." />
        </>
      ) : <p>Agent <span class="mono">{agent.publicModelId}</span></p>}
      <TextField label="Display name" name="agent-display-name" value={form.displayName} onInput={field("displayName")} />
      {options === undefined ? <p class="empty">Loading the models, servers and RAGs you can use…</p> : (
        <>
          <SelectField label="Base model" name="base-model" value={form.baseModel}
            options={[...new Set([form.baseModel, ...options.baseModels])].filter(Boolean).map((m) => ({ value: m, label: m }))}
            onChange={field("baseModel")} hint="A text-generation model or alias you can use." />
          <div class="field">
            <label for="agent-instructions">Instructions</label>
            <textarea id="agent-instructions" name="instructions" rows={4} value={form.instructions}
              onInput={(event) => { field("instructions")(event.currentTarget.value); }} />
          </div>
          <fieldset>
            <legend>Output guardrails, in the order they run</legend>
            {guardrails.length === 0 ? <p class="empty">No guardrails: answers go out as the model gives them.</p> : (
              <OrderedList label="Output guardrails" items={guardrails} itemKey={(g) => g} itemLabel={(g) => g} onChange={setGuardrails} />
            )}
            {guardrails.length < MAX_GUARDRAILS && addable.length > 0 ? (
              <div class="inline-add">
                <SelectField label="Guardrail to add" name="guardrail" value={addable.includes(nextGuardrail) ? nextGuardrail : (addable[0] ?? "")}
                  options={addable.map((g) => ({ value: g, label: g }))} onChange={setNextGuardrail} />
                <button type="button" onClick={() => {
                  const chosen = addable.includes(nextGuardrail) ? nextGuardrail : addable[0];
                  if (chosen !== undefined) { setGuardrails([...guardrails, chosen]); }
                }}>Add guardrail</button>
              </div>
            ) : null}
            <p class="hint">At most {MAX_GUARDRAILS}.</p>
          </fieldset>
          <fieldset>
            <legend>Default MCP servers</legend>
            {options.mcpServers.length === 0 ? <p class="empty">No MCP servers you can use.</p> : options.mcpServers.map((s) => (
              <Checkbox key={s.name} name="mcp-server" label={`${s.label} (${s.name})`} checked={mcpServers.includes(s.name)}
                onChange={(on) => { toggle(mcpServers, setMcpServers, s.name, on); }} />
            ))}
          </fieldset>
          <fieldset>
            <legend>Default RAGs</legend>
            {options.rags.length === 0 ? <p class="empty">No RAGs you can use.</p> : options.rags.map((r) => (
              <Checkbox key={r.id} name="rag" label={r.label} checked={rags.includes(r.id)}
                onChange={(on) => { toggle(rags, setRags, r.id, on); }} />
            ))}
          </fieldset>
          <fieldset>
            <legend>Sampling (empty: the model's defaults)</legend>
            <TextField label="Temperature" name="temperature" value={form.temperature} onInput={field("temperature")} />
            <TextField label="Top p" name="top-p" value={form.topP} onInput={field("topP")} />
            <TextField label="Most output tokens" name="max-output-tokens" value={form.maxOutputTokens} onInput={field("maxOutputTokens")} />
          </fieldset>
        </>
      )}
      <FormActions submit={agent === undefined ? "Create agent" : "Save agent"} busy={save.busy || options === undefined} onCancel={onCancel} />
    </form>
  );
}
