// In-cluster model servers the tenant can use; operators (can_manage_models) register, edit, share and delete them.
import { create } from "@bufbuild/protobuf";
import { useState } from "preact/hooks";
import { found, sharingTarget } from "../../api/sharing";
import { client } from "../../api/transport";
import { DeleteButton } from "../../components/DeleteButton";
import { Dialog } from "../../components/Dialog";
import { ErrorBanner } from "../../components/ErrorBanner";
import { FormActions, SelectField, TextField, chosenEnum } from "../../components/Fields";
import { ShareButton } from "../../components/SharingEditor";
import { Table, type Column } from "../../components/Table";
import { formatTime } from "../../components/format";
import { runOnSubmit } from "../../components/runOnSubmit";
import { useAction } from "../../components/useAction";
import { usePagedList } from "../../components/usePagedList";
import { ModelCapabilitiesSchema, TaskType } from "../../gen/platform/modelmanager/v1/capabilities_pb";
import { ModelDeploymentSchema, type ModelDeployment } from "../../gen/platform/modelmanager/v1/model_deployment_pb";
import { ModelDeploymentService } from "../../gen/platform/modelmanager/v1/model_deployment_service_pb";
import { ResourceListService } from "../../gen/switchboard/resources/v1/resource_list_service_pb";
import { TASKS, TASK_NAMES } from "./labels";
import { withLimits, type ModelLimits } from "./modelList";

/** A tenant's members read only their own tenant in a platform resource's shared-with list; operators read it all. */
function sharingLabel(sharing: ModelDeployment["sharing"]): string {
  if (sharing?.shareToAll) return "All tenants";
  const count = sharing?.sharedWith.length ?? 0;
  return count === 1 ? "1 tenant" : `${count} tenants`;
}

interface DeploymentDraft { name: string; publicModelId: string; displayName: string; endpointUrl: string; servedModelId: string; modelUrl: string; task: TaskType }

/** Registering an in-cluster model server (operators), or editing one: an edit starts from it as stored. */
function DeploymentForm({ initial, editing, onDone, onCancel }: {
  initial: DeploymentDraft; editing: boolean; onDone: () => void; onCancel: () => void;
}) {
  const [draft, setDraft] = useState(initial);
  const set = (key: keyof Omit<DeploymentDraft, "task">) => (value: string) => { setDraft({ ...draft, [key]: value }); };
  const submit = useAction(async () => {
    const api = client(ModelDeploymentService);
    const deployment = editing ? found((await api.getModelDeployment({ name: draft.name })).modelDeployment) : create(ModelDeploymentSchema);
    deployment.name = draft.name.trim();
    deployment.publicModelId = draft.publicModelId.trim();
    deployment.displayName = draft.displayName.trim();
    deployment.endpointUrl = draft.endpointUrl.trim();
    deployment.servedModelId = draft.servedModelId.trim();
    deployment.capabilities = create(ModelCapabilitiesSchema, { taskType: draft.task });
    if (draft.modelUrl.trim() !== "" || editing) {
      deployment.modelUrl = draft.modelUrl.trim();
    }
    if (editing) {
      await api.updateModelDeployment({ modelDeployment: deployment });
    } else {
      await api.createModelDeployment({ modelDeployment: deployment });
    }
  });
  return (
    <form onSubmit={runOnSubmit(submit.run, onDone)}>
      <ErrorBanner error={submit.error} />
      {editing ? <p>Deployment <span class="mono">{draft.name}</span> (<span class="mono">{draft.publicModelId}</span>)</p> : (
        <>
          <TextField label="Resource name" name="deployment-name" value={draft.name} onInput={set("name")} required autoFocus
            hint="Lowercase letters, digits and hyphens; it cannot change later." />
          <TextField label="Model id" name="deployment-model-id" value={draft.publicModelId} onInput={set("publicModelId")} required
            hint="What clients send as `model`; it cannot change later." />
        </>
      )}
      <TextField label="Display name" name="deployment-display-name" value={draft.displayName} onInput={set("displayName")} />
      <TextField label="Endpoint URL" name="endpoint-url" value={draft.endpointUrl} onInput={set("endpointUrl")} required
        hint="The in-cluster server's OpenAI-compatible base URL, e.g. http://vllm-chat:8000/v1" />
      <TextField label="Served model id" name="served-model-id" value={draft.servedModelId} onInput={set("servedModelId")}
        hint="Sent upstream; empty: the model id." />
      <SelectField label="Task" name="deployment-task" value={String(draft.task)}
        options={TASKS.map((t) => ({ value: String(t), label: TASK_NAMES[t] }))}
        onChange={(v) => { setDraft({ ...draft, task: chosenEnum(TASKS, v, TaskType.TEXT_GENERATION) }); }} />
      <TextField label="Weights URL" name="model-url" value={draft.modelUrl} onInput={set("modelUrl")}
        hint="Where the weights come from (hf://org/model, s3://…): matches the deployment to GPU nodes' caches." />
      <FormActions submit={editing ? "Save deployment" : "Add deployment"} busy={submit.busy} onCancel={onCancel} />
    </form>
  );
}

export function Deployments({ operator, limits }: { operator: boolean; limits: ModelLimits }) {
  const { load, reload, refresh, remove } = usePagedList(
    (page, signal) => client(ResourceListService).listModelDeployments({ page }, { signal }), (a) => a.modelDeployments,
    (name: string) => client(ModelDeploymentService).deleteModelDeployment({ name }),
  );
  const [editing, setEditing] = useState<{ draft: DeploymentDraft; editing: boolean } | undefined>(undefined);
  const done = () => { setEditing(undefined); refresh(); };
  const columns: Column<ModelDeployment>[] = [
    { header: "Model id", cell: (d) => <span class="mono">{d.publicModelId}</span> },
    { header: "Name", cell: (d) => d.displayName },
    { header: "Resource", cell: (d) => <span class="mono">{d.name}</span> },
    { header: "Task", cell: (d) => TASK_NAMES[d.capabilities?.taskType ?? TaskType.UNSPECIFIED] },
    { header: "Sharing", cell: (d) => sharingLabel(d.sharing) },
    { header: "Created", cell: (d) => formatTime(d.createTime) },
  ];
  if (operator) {
    columns.push({
      header: "Actions",
      actions: true,
      cell: (d) => (
        <div class="row-actions">
          <button type="button" onClick={() => {
            setEditing({
              editing: true,
              draft: {
                name: d.name, publicModelId: d.publicModelId, displayName: d.displayName, endpointUrl: d.endpointUrl,
                servedModelId: d.servedModelId, modelUrl: d.modelUrl ?? "", task: d.capabilities?.taskType ?? TaskType.TEXT_GENERATION,
              },
            });
          }}>
            Edit <span class="visually-hidden">{d.publicModelId}</span>
          </button>
          <ShareButton label={d.publicModelId} target={() => sharingTarget("deployment", d.name, d.publicModelId, true)} />
          <DeleteButton label={d.publicModelId} question={`Delete ${d.publicModelId}?`} busy={remove.busy} onDelete={() => void remove.run(d.name)} />
        </div>
      ),
    });
  }
  return (
    <section aria-labelledby="deployments-title">
      <div class="page-head">
        <h2 id="deployments-title">Model deployments</h2>
        {operator ? (
          <button type="button" class="primary" onClick={() => {
            setEditing({ editing: false, draft: { name: "", publicModelId: "", displayName: "", endpointUrl: "", servedModelId: "", modelUrl: "", task: TaskType.TEXT_GENERATION } });
          }}>Add deployment</button>
        ) : null}
      </div>
      <ErrorBanner error={remove.error} />
      <Table caption="Model deployments" columns={withLimits(columns, limits, (d) => d.publicModelId)} load={load} rowKey={(d) => d.name} reload={reload}
        empty="No model deployments you can use." />
      <Dialog title={editing?.editing ? "Edit deployment" : "Add deployment"} open={editing !== undefined} onClose={() => { setEditing(undefined); }}>
        {editing === undefined ? null : (
          <DeploymentForm initial={editing.draft} editing={editing.editing} onDone={done} onCancel={() => { setEditing(undefined); }} />
        )}
      </Dialog>
    </section>
  );
}
