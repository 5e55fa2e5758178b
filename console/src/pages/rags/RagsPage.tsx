// The tenant's RAGs: a server-listed table with each RAG's stored bytes against its quota (a page of ListRags and, for
// tenant admins, one GetTenantUsage on load), creation (the tenant's create-RAG capability), sharing and deletion.
import { useEffect, useState } from "preact/hooks";
import { sharingTarget } from "../../api/sharing";
import { client } from "../../api/transport";
import { routeUrl, type PageProps } from "../../app/routes";
import { Dialog } from "../../components/Dialog";
import { ErrorBanner } from "../../components/ErrorBanner";
import { FormActions, SelectField, TextField } from "../../components/Fields";
import { ShareButton } from "../../components/SharingEditor";
import { Table, type Column } from "../../components/Table";
import { UsageBar } from "../../components/UsageBar";
import { useAction } from "../../components/useAction";
import { usePagedList } from "../../components/usePagedList";
import { runOnSubmit } from "../../components/runOnSubmit";
import { DeleteButton } from "../../components/DeleteButton";
import { TaskType } from "../../gen/platform/modelmanager/v1/capabilities_pb";
import { ExternalModelService } from "../../gen/platform/modelmanager/v1/external_model_service_pb";
import { ModelDeploymentService } from "../../gen/platform/modelmanager/v1/model_deployment_service_pb";
import type { Rag } from "../../gen/platform/ragmanager/v1/rag_pb";
import type { GetTenantUsageResponse } from "../../gen/platform/ragmanager/v1/rag_quota_service_pb";
import { RagQuotaService } from "../../gen/platform/ragmanager/v1/rag_quota_service_pb";
import { RagService } from "../../gen/platform/ragmanager/v1/rag_service_pb";
import { ResourceListService } from "../../gen/switchboard/resources/v1/resource_list_service_pb";
import "../resources.css";

/** The embedding models the caller can use (asked when the create form opens, not on page load). */
async function embeddingModels(signal: AbortSignal): Promise<string[]> {
  const [deployments, external] = await Promise.all([
    client(ModelDeploymentService).listModelDeployments({}, { signal }),
    client(ExternalModelService).listExternalModels({}, { signal }),
  ]);
  return [
    ...deployments.modelDeployments.filter((d) => d.capabilities?.taskType === TaskType.EMBEDDING).map((d) => d.publicModelId),
    ...external.externalModels.filter((m) => m.capabilities?.taskType === TaskType.EMBEDDING).map((m) => m.publicModelId),
  ];
}

function CreateRag({ tenantId, onCreated }: { tenantId: string; onCreated: (rag: Rag | undefined) => void }) {
  const [open, setOpen] = useState(false);
  const [models, setModels] = useState<string[] | undefined>(undefined);
  const [modelsError, setModelsError] = useState<unknown>(undefined);
  const [form, setForm] = useState({ name: "", displayName: "", embeddingModel: "", chunkSize: "" });
  useEffect(() => {
    if (!open) {
      return;
    }
    const abort = new AbortController();
    embeddingModels(abort.signal).then(
      (found) => {
        setModels(found);
        setForm((f) => ({ ...f, embeddingModel: f.embeddingModel || (found[0] ?? "") }));
      },
      (caught: unknown) => { if (!abort.signal.aborted) { setModelsError(caught); } },
    );
    return () => { abort.abort(); };
  }, [open]);
  const submit = useAction(async () => {
    const chunkSize = form.chunkSize.trim() === "" ? undefined : Number(form.chunkSize);
    const answer = await client(RagService).createRag({
      tenantId,
      rag: {
        name: form.name.trim(),
        displayName: form.displayName.trim(),
        embeddingModel: form.embeddingModel,
        ...(chunkSize === undefined ? {} : { chunking: { chunkSizeTokens: chunkSize } }),
      },
    });
    onCreated(answer.rag);
  });
  const close = () => { setOpen(false); submit.clear(); };
  return (
    <>
      <button type="button" class="primary" onClick={() => { setOpen(true); }}>Create RAG</button>
      <Dialog title="Create RAG" open={open} onClose={close}>
        <form onSubmit={runOnSubmit(submit.run, close)}>
          <ErrorBanner error={submit.error ?? modelsError} />
          <TextField label="Name" name="rag-name" value={form.name} required autoFocus maxLength={128}
            onInput={(v) => { setForm({ ...form, name: v }); }} hint="A handle unique in this tenant." />
          <TextField label="Display name" name="rag-display-name" value={form.displayName}
            onInput={(v) => { setForm({ ...form, displayName: v }); }} />
          {models === undefined ? <p class="empty">Loading embedding models…</p> : (
            <SelectField label="Embedding model" name="embedding-model" value={form.embeddingModel}
              options={models.map((m) => ({ value: m, label: m }))}
              onChange={(v) => { setForm({ ...form, embeddingModel: v }); }}
              hint="It can never change later: a new model needs a new RAG." />
          )}
          <TextField label="Chunk size (tokens)" name="chunk-size" value={form.chunkSize}
            onInput={(v) => { setForm({ ...form, chunkSize: v }); }} hint="16 to 8192; empty for the default (256)." />
          <FormActions submit="Create" busy={submit.busy} onCancel={close} />
        </form>
      </Dialog>
    </>
  );
}

export default function RagsPage({ session, tenant }: PageProps) {
  const tenantId = tenant?.id ?? "";
  const admin = tenant?.capabilities.tenantAdmin ?? false;
  const { load, reload, refresh, remove } = usePagedList(
    (page, signal) => client(ResourceListService).listRags({ tenantId, page }, { signal }), (a) => a.rags,
    (rag: Rag) => client(RagService).deleteRag({ id: rag.id }), [tenantId],
  );
  const [usage, setUsage] = useState<GetTenantUsageResponse | undefined>(undefined);
  const [usageError, setUsageError] = useState<unknown>(undefined);
  useEffect(() => {
    if (!admin) {
      return; // quotas are read by tenant admins (the server's rule); others see the bytes each RAG stores
    }
    const abort = new AbortController();
    client(RagQuotaService).getTenantUsage({ tenantId }, { signal: abort.signal }).then(setUsage, (caught: unknown) => {
      if (!abort.signal.aborted) { setUsageError(caught); }
    });
    return () => { abort.abort(); };
  }, [tenantId, admin, reload]);
  // Managing a tenant RAG is for its admins and creator (the server's rule; the creator is not in the listing, so
  // those who may create RAGs see the buttons and the server refuses the rest in words); platform RAGs: operators.
  const manages = (rag: Rag) => (rag.tenantId === "" ? session.canManageTenants : admin || (tenant?.capabilities.createRag ?? false));
  const quotaOf = (rag: Rag) => usage?.services.find((s) => s.id === rag.id)?.quotaBytes;
  const columns: Column<Rag>[] = [
    {
      header: "Name",
      cell: (rag) => <a href={routeUrl({ path: "rags/:rag", scope: "tenant" }, tenantId, { rag: rag.id })}>{rag.displayName || rag.name}</a>,
    },
    { header: "Embedding model", cell: (rag) => <span class="mono">{rag.embeddingModel}</span> },
    { header: "Stored", cell: (rag) => <UsageBar label={`Stored by ${rag.name}`} used={rag.usedBytes} total={quotaOf(rag)} /> },
    {
      header: "Actions",
      actions: true,
      cell: (rag) => !manages(rag) ? null : (
        <div class="row-actions">
          <ShareButton label={rag.name} target={() => sharingTarget("rag", rag.id, `RAG ${rag.name}`, rag.tenantId === "")} />
          <DeleteButton label={rag.name} question={`Delete the RAG ${rag.name} and everything uploaded to it?`}
            busy={remove.busy} onDelete={() => void remove.run(rag)} />
        </div>
      ),
    },
  ];
  return (
    <section>
      <div class="page-head">
        <h1>RAGs</h1>
        {tenant?.capabilities.createRag ? <CreateRag tenantId={tenantId} onCreated={refresh} /> : null}
      </div>
      <p class="lead">Document collections the gateway searches ({"{rag_url}"}/context, file_search, and their MCP tool).</p>
      <ErrorBanner error={usageError ?? remove.error} />
      {usage === undefined ? null : (
        <UsageBar label="All RAGs of the tenant" used={usage.tenantTotalUsedBytes} total={usage.tenantQuotaBytes} />
      )}
      <Table caption="RAGs" columns={columns} load={load} rowKey={(rag) => rag.id} reload={reload} empty="No RAGs you can use." />
    </section>
  );
}
