// Creating or editing a preset agent: its base model (a text-generation model or alias), instructions, sampling,
// up to four output guardrails in the order they run (reorderable from the keyboard), and the MCP servers and RAGs
// it brings by default. Each choice is searched among the caller's reachable resources a server page at a time
// (ResourceListService), when the editor opens (never on page load); the server re-checks each one against what the
// caller may invoke.
import { create } from "@bufbuild/protobuf";
import { useMemo, useState } from "preact/hooks";
import { client } from "../../api/transport";
import { ErrorBanner } from "../../components/ErrorBanner";
import { FormActions, TextField } from "../../components/Fields";
import { mcpChoices } from "../../components/mcpChoices";
import { OrderedList } from "../../components/OrderedList";
import { SearchPicker, combined, searched, type Choice, type ChoiceLoader } from "../../components/SearchPicker";
import { useAction } from "../../components/useAction";
import { runOnSubmit } from "../../components/runOnSubmit";
import { OwnerField, type Owner } from "../../components/OwnerField";
import { PresetAgentSamplingSchema, PresetAgentSchema, type PresetAgent } from "../../gen/platform/agents/v1/preset_agent_pb";
import { PresetAgentService } from "../../gen/platform/agents/v1/preset_agent_service_pb";
import { TaskType } from "../../gen/platform/modelmanager/v1/capabilities_pb";
import { ResourceListService } from "../../gen/switchboard/resources/v1/resource_list_service_pb";

const MAX_GUARDRAILS = 4;

/** The models of one task the caller can use (deployments and external models; aliases too for text generation),
 * by public model id. */
function modelChoices(task: TaskType): ChoiceLoader {
  const lists = client(ResourceListService);
  const ofTask = (m: { publicModelId: string; capabilities?: { taskType: TaskType } | undefined }): Choice | undefined =>
    m.capabilities?.taskType === task ? { value: m.publicModelId, label: m.publicModelId } : undefined;
  const models = [
    searched((r, signal) => lists.listModelDeployments(r, { signal }), (a) => a.modelDeployments, ofTask),
    searched((r, signal) => lists.listExternalModels(r, { signal }), (a) => a.externalModels, ofTask),
  ];
  const aliases = searched((r, signal) => lists.listModelAliases(r, { signal }), (a) => a.aliases,
    (a) => (a.alias?.publicModelId ? { value: a.alias.publicModelId, label: a.alias.publicModelId } : undefined));
  return combined(...models, ...(task === TaskType.TEXT_GENERATION ? [aliases] : []));
}

function ragChoices(tenantId: string): ChoiceLoader {
  return searched((r, signal) => client(ResourceListService).listRags({ ...r, tenantId }, { signal }),
    (a) => a.rags, (r) => ({ value: r.id, label: r.displayName || r.name }));
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
  const [owner, setOwner] = useState<Owner>(tenantAllowed ? "tenant" : "platform");
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
  const [mcpServers, setMcpServers] = useState<string[]>([...(agent?.defaultMcpServers ?? [])]);
  const [rags, setRags] = useState<string[]>([...(agent?.defaultRags ?? [])]);
  const loaders = useMemo(() => ({
    base: modelChoices(TaskType.TEXT_GENERATION),
    guardrails: modelChoices(TaskType.GUARDRAIL),
    mcp: mcpChoices(tenantId),
    rags: ragChoices(tenantId),
  }), [tenantId]);
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
  const toggler = (list: string[], set: (v: string[]) => void) => (choice: Choice, on: boolean) => {
    set(on ? [...list.filter((v) => v !== choice.value), choice.value] : list.filter((v) => v !== choice.value));
  };
  return (
    <form onSubmit={runOnSubmit(save.run, onDone)}>
      <ErrorBanner error={save.error} />
      {agent === undefined ? (
        <>
          <OwnerField tenantAllowed={tenantAllowed} platformAllowed={platformAllowed} value={owner} onChange={setOwner} />
          <TextField label="Name" name="agent-name" value={form.name} onInput={field("name")} required autoFocus
            hint="Lowercase letters, digits and hyphens; it cannot change later." />
          <TextField label="Model id" name="agent-model-id" value={form.publicModelId} onInput={field("publicModelId")} required
            hint="What applications send as `model` to use this agent, e.g. team/helper." />
        </>
      ) : <p>Agent <span class="mono">{agent.publicModelId}</span></p>}
      <TextField label="Display name" name="agent-display-name" value={form.displayName} onInput={field("displayName")} />
      <SearchPicker label="Base model" name="base-model" single load={loaders.base} chosen={(m) => m === form.baseModel}
        onToggle={(choice) => { field("baseModel")(choice.value); }} empty="No text-generation model or alias you can use matches." />
      <p class="hint">{form.baseModel ? <>Base model: <span class="mono">{form.baseModel}</span></> : "Choose the base model."}</p>
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
        {guardrails.length < MAX_GUARDRAILS ? (
          <SearchPicker label="Guardrails to add" name="guardrail" load={loaders.guardrails} chosen={(g) => guardrails.includes(g)}
            onToggle={toggler(guardrails, setGuardrails)} empty="No guardrail model you can use matches." />
        ) : null}
        <p class="hint">At most {MAX_GUARDRAILS}.</p>
      </fieldset>
      <SearchPicker label="Default MCP servers" name="mcp-server" load={loaders.mcp} chosen={(s) => mcpServers.includes(s)}
        onToggle={toggler(mcpServers, setMcpServers)} empty="No MCP server you can use matches." />
      <SearchPicker label="Default RAGs" name="rag" load={loaders.rags} chosen={(r) => rags.includes(r)}
        onToggle={toggler(rags, setRags)} empty="No RAG you can use matches." />
      <fieldset>
        <legend>Sampling (empty: the model's defaults)</legend>
        <TextField label="Temperature" name="temperature" value={form.temperature} onInput={field("temperature")} />
        <TextField label="Top p" name="top-p" value={form.topP} onInput={field("topP")} />
        <TextField label="Most output tokens" name="max-output-tokens" value={form.maxOutputTokens} onInput={field("maxOutputTokens")} />
      </fieldset>
      <FormActions submit={agent === undefined ? "Create agent" : "Save agent"} busy={save.busy} onCancel={onCancel} />
    </form>
  );
}
