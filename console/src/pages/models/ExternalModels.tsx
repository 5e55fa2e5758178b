// Models served by outside providers: operators create platform ones, people with the tenant's create-external-model
// capability the tenant's own; the page decides who may share and delete each row (canManage).
import { create } from "@bufbuild/protobuf";
import { useState } from "preact/hooks";
import { sharingTarget } from "../../api/sharing";
import { client } from "../../api/transport";
import { DeleteButton } from "../../components/DeleteButton";
import { ErrorBanner } from "../../components/ErrorBanner";
import { SelectField, TextField, chosenEnum } from "../../components/Fields";
import { FormDialog } from "../../components/FormDialog";
import { OwnerField, type Owner } from "../../components/OwnerField";
import { ShareButton } from "../../components/SharingEditor";
import { Table, type Column } from "../../components/Table";
import { useAction } from "../../components/useAction";
import { usePagedList } from "../../components/usePagedList";
import { ModelCapabilitiesSchema, TaskType } from "../../gen/platform/modelmanager/v1/capabilities_pb";
import { ExternalModelProvider, ExternalModelSchema, type ExternalModelSummary } from "../../gen/platform/modelmanager/v1/external_model_pb";
import { ExternalModelService } from "../../gen/platform/modelmanager/v1/external_model_service_pb";
import { ResourceListService } from "../../gen/switchboard/resources/v1/resource_list_service_pb";
import { PROVIDERS, PROVIDER_NAMES, TASKS, TASK_NAMES } from "./labels";
import { withLimits, type ModelLimits } from "./modelList";

function CreateExternalModel({ tenantId, platform, tenantAllowed, onCreated }: {
  tenantId: string; platform: boolean; tenantAllowed: boolean; onCreated: () => void;
}) {
  const [owner, setOwner] = useState<Owner>(tenantAllowed ? "tenant" : "platform");
  const [form, setForm] = useState({ name: "", publicModelId: "", displayName: "", providerModelId: "", baseUrl: "", apiKey: "", apiVersion: "" });
  const [provider, setProvider] = useState<ExternalModelProvider>(ExternalModelProvider.CUSTOM_COMPATIBLE);
  const [task, setTask] = useState<TaskType>(TaskType.TEXT_GENERATION);
  const field = (key: keyof typeof form) => (value: string) => { setForm({ ...form, [key]: value }); };
  const submit = useAction(async () => {
    const externalModel = create(ExternalModelSchema, {
      ...form,
      provider,
      capabilities: create(ModelCapabilitiesSchema, { taskType: task }),
    });
    const api = client(ExternalModelService);
    if (owner === "platform") {
      await api.createExternalModel({ externalModel });
    } else {
      await api.createTenantExternalModel({ externalModel, tenantId });
    }
  });
  return (
    <FormDialog opener="Add external model" title="Add external model" submit="Add" action={submit} onDone={onCreated}>
      <OwnerField tenantAllowed={tenantAllowed} platformAllowed={platform} value={owner} onChange={setOwner} />
      <TextField label="Resource name" name="external-name" value={form.name} onInput={field("name")} required autoFocus
        hint="Lowercase letters, digits and hyphens; it cannot change later." />
      <TextField label="Model id" name="public-model-id" value={form.publicModelId} onInput={field("publicModelId")} required
        hint="What clients send as `model`; unique across all models and aliases." />
      <TextField label="Display name" name="display-name" value={form.displayName} onInput={field("displayName")} />
      <SelectField label="Provider" name="provider" value={String(provider)}
        options={PROVIDERS.map((p) => ({ value: String(p), label: PROVIDER_NAMES[p] }))}
        onChange={(v) => { setProvider(chosenEnum(PROVIDERS, v, ExternalModelProvider.CUSTOM_COMPATIBLE)); }} />
      <TextField label="Provider's model id" name="provider-model-id" value={form.providerModelId} onInput={field("providerModelId")} required />
      <TextField label="Base URL" name="base-url" value={form.baseUrl} onInput={field("baseUrl")}
        hint="The provider's API base, e.g. https://api.example.com/v1" />
      <TextField label="API key" name="api-key" value={form.apiKey} onInput={field("apiKey")}
        hint="Write-only: stored encrypted and never shown again." />
      {provider === ExternalModelProvider.VENDOR_B ? (
        <TextField label="API version" name="api-version" value={form.apiVersion} onInput={field("apiVersion")} />
      ) : null}
      <SelectField label="Task" name="task" value={String(task)}
        options={TASKS.map((t) => ({ value: String(t), label: TASK_NAMES[t] }))}
        onChange={(v) => { setTask(chosenEnum(TASKS, v, TaskType.TEXT_GENERATION)); }} />
    </FormDialog>
  );
}

export function ExternalModels({ tenantId, operator, tenantAllowed, canManage, limits }: {
  tenantId: string; operator: boolean; tenantAllowed: boolean; canManage: (m: ExternalModelSummary) => boolean; limits: ModelLimits;
}) {
  const { load, reload, refresh, remove } = usePagedList(
    (page, signal) => client(ResourceListService).listExternalModels({ page }, { signal }), (a) => a.externalModels,
    (name: string) => client(ExternalModelService).deleteExternalModel({ name }),
  );
  const columns: Column<ExternalModelSummary>[] = [
    { header: "Model id", cell: (m) => <span class="mono">{m.publicModelId}</span> },
    { header: "Name", cell: (m) => m.displayName },
    { header: "Resource", cell: (m) => <span class="mono">{m.name}</span> },
    { header: "Provider", cell: (m) => `${PROVIDER_NAMES[m.provider]}: ${m.providerModelId}` },
    { header: "Task", cell: (m) => TASK_NAMES[m.capabilities?.taskType ?? TaskType.UNSPECIFIED] },
    { header: "Owner", cell: (m) => (m.tenantId ? (m.tenantId === tenantId ? "This tenant" : m.tenantId) : "Platform") },
    {
      header: "Actions",
      actions: true,
      cell: (m) =>
        canManage(m) ? (
          <div class="row-actions">
            <ShareButton label={m.publicModelId} target={() => sharingTarget("external-model", m.name, m.publicModelId, m.tenantId === "")} />
            <DeleteButton label={m.publicModelId} question={`Delete ${m.publicModelId}?`} busy={remove.busy} onDelete={() => void remove.run(m.name)} />
          </div>
        ) : null,
    },
  ];
  return (
    <section aria-labelledby="external-title">
      <div class="page-head">
        <h2 id="external-title">External models</h2>
        {operator || tenantAllowed ? (
          <CreateExternalModel tenantId={tenantId} platform={operator} tenantAllowed={tenantAllowed}
            onCreated={refresh} />
        ) : null}
      </div>
      <ErrorBanner error={remove.error} />
      <Table caption="External models" columns={withLimits(columns, limits, (m) => m.publicModelId)} load={load} rowKey={(m) => m.name} reload={reload}
        empty="No external models you can use." />
    </section>
  );
}
