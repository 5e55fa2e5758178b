// Models of a tenant's view: model deployments, external models and aliases, one kind at a time (a page at a time
// from ResourceListService). Operators (can_manage_models) create platform external models and aliases and
// manage deployments; people with the tenant's create-external-model capability create tenant external models.
// Every row that the caller may manage has the one SharingEditor, and tenant admins and operators the tenant's
// limits on that model (ScopeLimits, loaded when opened). GPU and cache figures are on their own page.
import { LimitScopeKind, type LimitTier } from "../../gen/switchboard/limits/v1/limit_policy_pb";
import { limitTiers } from "../limits/names";
import { LimitsButton } from "../limits/ScopeLimits";
import "../resources.css";
import { create } from "@bufbuild/protobuf";
import { useLocation } from "preact-iso";
import { useState } from "preact/hooks";
import { serverPages, type PageRequest } from "../../api/pagination";
import { found, sharingTarget } from "../../api/sharing";
import { client } from "../../api/transport";
import { routeUrl, type PageProps } from "../../app/routes";
import { Dialog } from "../../components/Dialog";
import { ErrorBanner } from "../../components/ErrorBanner";
import { Checkbox, FormActions, SelectField, TextField, chosenEnum } from "../../components/Fields";
import { ShareButton } from "../../components/SharingEditor";
import { Table, type Column } from "../../components/Table";
import { formatTime } from "../../components/format";
import { useAction } from "../../components/useAction";
import { FormDialog } from "../../components/FormDialog";
import { runOnSubmit } from "../../components/runOnSubmit";
import { OwnerField, type Owner } from "../../components/OwnerField";
import { DeleteButton } from "../../components/DeleteButton";
import { ModelCapabilitiesSchema, TaskType } from "../../gen/platform/modelmanager/v1/capabilities_pb";
import { ExternalModelProvider, ExternalModelSchema, type ExternalModelSummary } from "../../gen/platform/modelmanager/v1/external_model_pb";
import { ExternalModelService } from "../../gen/platform/modelmanager/v1/external_model_service_pb";
import { ModelAliasSchema, ModelAliasTargetKind, ModelAliasTargetRefSchema } from "../../gen/platform/modelmanager/v1/model_alias_pb";
import { ModelAliasService, type ListModelAliasesResponse_Item } from "../../gen/platform/modelmanager/v1/model_alias_service_pb";
import { ModelDeploymentSchema, type ModelDeployment } from "../../gen/platform/modelmanager/v1/model_deployment_pb";
import { ModelDeploymentService } from "../../gen/platform/modelmanager/v1/model_deployment_service_pb";
import { ResourceListService } from "../../gen/switchboard/resources/v1/resource_list_service_pb";
import { PROVIDERS, PROVIDER_NAMES, TARGET_KINDS, TARGET_KIND_NAMES, TASKS, TASK_NAMES } from "./labels";

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

/** The limits a tenant sets on its calls to each model, as one more column (only for who may set them). */
interface ModelLimits { tenantId: string; tiers: LimitTier[] }

function withLimits<T>(columns: Column<T>[], limits: ModelLimits, modelId: (row: T) => string): Column<T>[] {
  if (limits.tiers.length === 0) {
    return columns;
  }
  return [...columns, {
    header: "Limits in this tenant",
    actions: true,
    cell: (row) => (
      <LimitsButton tenantId={limits.tenantId} scope={{ kind: LimitScopeKind.MODEL, id: modelId(row) }} tiers={limits.tiers}
        what={`the model ${modelId(row)}`} />
    ),
  }];
}

/**
 * One kind of model as a table's rows, a page at a time from ResourceListService, and the row action that deletes
 * one by its resource name. A delete, or `refresh` after a create or an edit, reloads the table from its first page.
 */
function useModelList<A extends { nextPageToken: string }, T>(
  list: (page: PageRequest, signal: AbortSignal) => Promise<A>,
  items: (answer: A) => T[],
  remove: (name: string) => Promise<unknown>,
) {
  const [reload, setReload] = useState(0);
  const refresh = () => { setReload((n) => n + 1); };
  // Made once: a new loader would send the table back to its first page on every render.
  const [load] = useState(() => serverPages(list, items));
  const removal = useAction(async (name: string) => {
    await remove(name);
    refresh();
  });
  return { load, reload, refresh, remove: removal };
}

function Deployments({ operator, limits }: { operator: boolean; limits: ModelLimits }) {
  const { load, reload, refresh, remove } = useModelList(
    (page, signal) => client(ResourceListService).listModelDeployments({ page }, { signal }), (a) => a.modelDeployments,
    (name) => client(ModelDeploymentService).deleteModelDeployment({ name }),
  );
  const [editing, setEditing] = useState<{ draft: DeploymentDraft; editing: boolean } | undefined>(undefined);
  const done = () => { setEditing(undefined); refresh(); };
  const columns: Column<ModelDeployment>[] = [
    { header: "Model id", cell: (d) => <span class="mono">{d.publicModelId}</span> },
    { header: "Name", cell: (d) => d.displayName },
    { header: "Resource", cell: (d) => <span class="mono">{d.name}</span> },
    { header: "Task", cell: (d) => TASK_NAMES[d.capabilities?.taskType ?? TaskType.UNSPECIFIED] },
    { header: "Sharing", cell: (d) => (d.sharing?.shareToAll ? "All tenants" : `${d.sharing?.sharedWith.length ?? 0} tenants`) },
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

function ExternalModels({ tenantId, operator, tenantAllowed, canManage, limits }: {
  tenantId: string; operator: boolean; tenantAllowed: boolean; canManage: (m: ExternalModelSummary) => boolean; limits: ModelLimits;
}) {
  const { load, reload, refresh, remove } = useModelList(
    (page, signal) => client(ResourceListService).listExternalModels({ page }, { signal }), (a) => a.externalModels,
    (name) => client(ExternalModelService).deleteExternalModel({ name }),
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

interface AliasDraft { publicModelId: string; displayName: string; kind: ModelAliasTargetKind; target: string; unlisted: boolean }

function AliasForm({ initial, handle, onDone, onCancel }: {
  initial: AliasDraft; handle: string | undefined; onDone: () => void; onCancel: () => void;
}) {
  const [draft, setDraft] = useState(initial);
  const submit = useAction(async () => {
    const api = client(ModelAliasService);
    // An edit starts from the alias as stored, so its sharing is kept as it is.
    const alias = handle === undefined ? create(ModelAliasSchema) : found((await api.getModelAlias({ name: handle })).alias);
    alias.publicModelId = draft.publicModelId.trim();
    alias.displayName = draft.displayName;
    alias.unlisted = draft.unlisted;
    alias.targetRef = create(ModelAliasTargetRefSchema, { kind: draft.kind, name: draft.target.trim() });
    if (handle === undefined) {
      await api.createModelAlias({ alias });
    } else {
      await api.updateModelAlias({ name: handle, alias });
    }
  });
  return (
    <form onSubmit={runOnSubmit(submit.run, onDone)}>
      <ErrorBanner error={submit.error} />
      {handle === undefined ? (
        <TextField label="Alias id" name="alias-id" value={draft.publicModelId} required autoFocus
          onInput={(v) => { setDraft({ ...draft, publicModelId: v }); }} hint="The stable id clients send; it cannot change later." />
      ) : <p>Alias <span class="mono">{draft.publicModelId}</span></p>}
      <TextField label="Display name" name="alias-display-name" value={draft.displayName}
        onInput={(v) => { setDraft({ ...draft, displayName: v }); }} />
      <SelectField label="Points at" name="target-kind" value={String(draft.kind)}
        options={TARGET_KINDS.map((k) => ({ value: String(k), label: TARGET_KIND_NAMES[k] }))}
        onChange={(v) => { setDraft({ ...draft, kind: chosenEnum(TARGET_KINDS, v, ModelAliasTargetKind.MODEL_DEPLOYMENT) }); }} />
      <TextField label="Target's resource name" name="target-name" value={draft.target} required
        onInput={(v) => { setDraft({ ...draft, target: v }); }} hint="The deployment's or external model's resource name (the Resource column above)." />
      <Checkbox label="Unlisted (hidden from model lists)" checked={draft.unlisted} onChange={(on) => { setDraft({ ...draft, unlisted: on }); }} />
      <FormActions submit={handle === undefined ? "Create alias" : "Save alias"} busy={submit.busy} onCancel={onCancel} />
    </form>
  );
}

function Aliases({ operator, limits }: { operator: boolean; limits: ModelLimits }) {
  const { load, reload, refresh, remove } = useModelList(
    (page, signal) => client(ResourceListService).listModelAliases({ page }, { signal }), (a) => a.aliases,
    (name) => client(ModelAliasService).deleteModelAlias({ name }),
  );
  const [editing, setEditing] = useState<{ handle: string | undefined; draft: AliasDraft } | undefined>(undefined);
  const done = () => { setEditing(undefined); refresh(); };
  const columns: Column<ListModelAliasesResponse_Item>[] = [
    { header: "Alias id", cell: (a) => <span class="mono">{a.alias?.publicModelId}</span> },
    { header: "Name", cell: (a) => a.alias?.displayName ?? "" },
    {
      header: "Points at",
      cell: (a) => (
        <>
          {TARGET_KIND_NAMES[a.alias?.targetRef?.kind ?? ModelAliasTargetKind.UNSPECIFIED]}{" "}
          <span class="mono">{a.alias?.targetRef?.name}</span>
          {a.alias?.targetUnresolved ? <strong class="warning-text"> (deleted: repoint it)</strong> : null}
        </>
      ),
    },
  ];
  if (operator) {
    columns.push({
      header: "Actions",
      actions: true,
      cell: (a) => {
        const id = a.alias?.publicModelId ?? a.name;
        return (
          <div class="row-actions">
            <button type="button" onClick={() => {
              setEditing({
                handle: a.name,
                draft: {
                  publicModelId: id,
                  displayName: a.alias?.displayName ?? "",
                  kind: a.alias?.targetRef?.kind ?? ModelAliasTargetKind.MODEL_DEPLOYMENT,
                  target: a.alias?.targetRef?.name ?? "",
                  unlisted: a.alias?.unlisted ?? false,
                },
              });
            }}>
              Edit <span class="visually-hidden">{id}</span>
            </button>
            <ShareButton label={id} target={() => sharingTarget("alias", a.name, id, true)} />
            <DeleteButton label={id} question={`Delete ${id}?`} busy={remove.busy} onDelete={() => void remove.run(a.name)} />
          </div>
        );
      },
    });
  }
  return (
    <section aria-labelledby="aliases-title">
      <div class="page-head">
        <h2 id="aliases-title">Aliases</h2>
        {operator ? (
          <button type="button" class="primary" onClick={() => {
            setEditing({ handle: undefined, draft: { publicModelId: "", displayName: "", kind: ModelAliasTargetKind.MODEL_DEPLOYMENT, target: "", unlisted: false } });
          }}>Create alias</button>
        ) : null}
      </div>
      <ErrorBanner error={remove.error} />
      <Table caption="Aliases" columns={withLimits(columns, limits, (a) => a.alias?.publicModelId ?? a.name)} load={load} rowKey={(a) => a.name} reload={reload} empty="No aliases you can use." />
      <Dialog title={editing?.handle === undefined ? "Create alias" : "Edit alias"} open={editing !== undefined}
        onClose={() => { setEditing(undefined); }}>
        {editing === undefined ? null : (
          <AliasForm initial={editing.draft} handle={editing.handle} onDone={done} onCancel={() => { setEditing(undefined); }} />
        )}
      </Dialog>
    </section>
  );
}

type Kind = "deployments" | "external" | "aliases";

const KINDS: readonly { kind: Kind; title: string }[] = [
  { kind: "deployments", title: "Deployments" },
  { kind: "external", title: "External models" },
  { kind: "aliases", title: "Aliases" },
];

export default function ModelsPage({ session, tenant }: PageProps) {
  const tenantId = tenant?.id ?? "";
  const operator = session.canManageModels;
  const tenantAdmin = tenant?.capabilities.tenantAdmin ?? false;
  // One kind at a time (?kind=…, so a link names what it shows): a load asks for one list, not three.
  const { query } = useLocation();
  const kind: Kind = KINDS.find((k) => k.kind === query.kind)?.kind ?? "deployments";
  const here = routeUrl({ path: "models", scope: "tenant" }, tenantId);
  // A tenant's own external models are managed by its admins (the server also lets their creator; it refuses
  // anyone else in plain words); platform ones by operators.
  const limits = { tenantId, tiers: limitTiers(session, tenant) };
  const canManage = (m: ExternalModelSummary) => (m.tenantId === "" ? operator : m.tenantId === tenantId && (tenantAdmin || operator));
  return (
    <section>
      <div class="page-head">
        <h1>Models</h1>
        {operator ? <a href={routeUrl({ path: "models/observability", scope: "tenant" }, tenantId)}>GPU and cache</a> : null}
      </div>
      <p class="lead">The models and aliases you can use in {tenant?.name}, and who they are shared with.</p>
      <nav class="sub-nav" aria-label="Kinds of model">
        {KINDS.map((k) => (
          <a key={k.kind} href={`${here}?kind=${k.kind}`} aria-current={k.kind === kind ? "page" : undefined}>{k.title}</a>
        ))}
      </nav>
      {kind === "deployments" ? <Deployments operator={operator} limits={limits} /> : null}
      {kind === "external" ? (
        <ExternalModels tenantId={tenantId} operator={operator} tenantAllowed={tenant?.capabilities.createExternalModel ?? false}
          canManage={canManage} limits={limits} />
      ) : null}
      {kind === "aliases" ? <Aliases operator={operator} limits={limits} /> : null}
    </section>
  );
}
