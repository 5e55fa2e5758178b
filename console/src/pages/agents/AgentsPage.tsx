// Preset agents the person may use in this tenant: a page of ListPresetAgents per load; creating (the tenant's
// create-agent capability, or operators for platform agents), editing, sharing and deleting those they manage.
import { useState } from "preact/hooks";
import { sharingTarget } from "../../api/sharing";
import { client } from "../../api/transport";
import type { PageProps } from "../../app/routes";
import { Dialog } from "../../components/Dialog";
import { ErrorBanner } from "../../components/ErrorBanner";
import { ShareButton } from "../../components/SharingEditor";
import { Table, type Column } from "../../components/Table";
import { usePagedList } from "../../components/usePagedList";
import { DeleteButton } from "../../components/DeleteButton";
import type { PresetAgent } from "../../gen/platform/agents/v1/preset_agent_pb";
import { PresetAgentService } from "../../gen/platform/agents/v1/preset_agent_service_pb";
import { ResourceListService } from "../../gen/switchboard/resources/v1/resource_list_service_pb";
import { AgentEditor } from "./AgentEditor";
import "../resources.css";

export default function AgentsPage({ session, tenant }: PageProps) {
  const tenantId = tenant?.id ?? "";
  const tenantAdmin = tenant?.capabilities.tenantAdmin ?? false;
  const tenantAllowed = tenant?.capabilities.createAgent ?? false;
  const platformAllowed = session.canManageModels;
  const [editing, setEditing] = useState<{ agent: PresetAgent | undefined } | undefined>(undefined);
  const { load, reload, refresh, remove } = usePagedList(
    (page, signal) => client(ResourceListService).listPresetAgents({ tenantId, page }, { signal }), (a) => a.presetAgents,
    (name: string) => client(PresetAgentService).deletePresetAgent({ name }), [tenantId],
  );
  // Tenant agents: their admins and creator (not in the listing: those who may create agents see the buttons, the
  // server refuses the rest in words); platform agents: operators.
  const manages = (a: PresetAgent) => (a.tenantId === "" ? platformAllowed : tenantAdmin || tenantAllowed);
  const columns: Column<PresetAgent>[] = [
    { header: "Model id", cell: (a) => <span class="mono">{a.publicModelId}</span> },
    { header: "Name", cell: (a) => a.displayName || a.name },
    {
      header: "Base model",
      cell: (a) => (
        <>
          <span class="mono">{a.baseModel}</span>
          {a.baseModelResolved ? null : <strong class="warning-text"> (deleted: choose another)</strong>}
        </>
      ),
    },
    { header: "Guardrails", cell: (a) => (a.outputGuardrails.length === 0 ? "none" : a.outputGuardrails.join(" → ")) },
    { header: "Tools", cell: (a) => `${a.defaultMcpServers.length} MCP, ${a.defaultRags.length} RAG` },
    {
      header: "Actions",
      actions: true,
      cell: (a) =>
        manages(a) ? (
          <div class="row-actions">
            <button type="button" onClick={() => { setEditing({ agent: a }); }}>
              Edit <span class="visually-hidden">{a.publicModelId}</span>
            </button>
            <ShareButton label={a.publicModelId} target={() => sharingTarget("agent", a.name, `agent ${a.publicModelId}`, a.tenantId === "")} />
            <DeleteButton label={a.publicModelId} question={`Delete the agent ${a.publicModelId}?`} busy={remove.busy}
              onDelete={() => void remove.run(a.name)} />
          </div>
        ) : null,
    },
  ];
  const done = () => { setEditing(undefined); refresh(); };
  return (
    <section>
      <div class="page-head">
        <h1>Preset agents</h1>
        {tenantAllowed || platformAllowed ? (
          <button type="button" class="primary" onClick={() => { setEditing({ agent: undefined }); }}>Create agent</button>
        ) : null}
      </div>
      <p class="lead">Assistants used like a model: a base model with instructions, default tools and RAGs, and output guardrails.</p>
      <ErrorBanner error={remove.error} />
      <Table caption="Preset agents" columns={columns} load={load} rowKey={(a) => a.name} reload={reload} empty="No preset agents you can use." />
      <Dialog title={editing?.agent === undefined ? "Create agent" : "Edit agent"} open={editing !== undefined} onClose={() => { setEditing(undefined); }}>
        {editing === undefined ? null : (
          <AgentEditor tenantId={tenantId} agent={editing.agent} platformAllowed={platformAllowed} tenantAllowed={tenantAllowed}
            onDone={done} onCancel={() => { setEditing(undefined); }} />
        )}
      </Dialog>
    </section>
  );
}
