// Stable model ids that point at a deployment or an external model; operators create, repoint, share and delete them.
import { create } from "@bufbuild/protobuf";
import { useState } from "preact/hooks";
import { found, sharingTarget } from "../../api/sharing";
import { client } from "../../api/transport";
import { DeleteButton } from "../../components/DeleteButton";
import { Dialog } from "../../components/Dialog";
import { ErrorBanner } from "../../components/ErrorBanner";
import { Checkbox, FormActions, SelectField, TextField, chosenEnum } from "../../components/Fields";
import { ShareButton } from "../../components/SharingEditor";
import { Table, type Column } from "../../components/Table";
import { runOnSubmit } from "../../components/runOnSubmit";
import { useAction } from "../../components/useAction";
import { usePagedList } from "../../components/usePagedList";
import { ModelAliasSchema, ModelAliasTargetKind, ModelAliasTargetRefSchema } from "../../gen/platform/modelmanager/v1/model_alias_pb";
import { ModelAliasService, type ListModelAliasesResponse_Item } from "../../gen/platform/modelmanager/v1/model_alias_service_pb";
import { ResourceListService } from "../../gen/switchboard/resources/v1/resource_list_service_pb";
import { TARGET_KINDS, TARGET_KIND_NAMES } from "./labels";
import { withLimits, type ModelLimits } from "./modelList";

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

export function Aliases({ operator, limits }: { operator: boolean; limits: ModelLimits }) {
  const { load, reload, refresh, remove } = usePagedList(
    (page, signal) => client(ResourceListService).listModelAliases({ page }, { signal }), (a) => a.aliases,
    (name: string) => client(ModelAliasService).deleteModelAlias({ name }),
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
