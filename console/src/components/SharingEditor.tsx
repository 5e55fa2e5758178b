// The one sharing and permissions editor, for every resource kind that has them (model deployments, external
// models, aliases, MCP servers, RAGs, preset agents): who may use the resource (its whole tenant, or for platform
// resources all or some tenants) and the explicit permissions (users, groups, service accounts, API keys) with
// their role. Each kind's calls live in api/sharing.ts; the server stays the judge of every change.
import { useEffect, useMemo, useState } from "preact/hooks";
import { singleResponse } from "../api/pagination";
import type { Grantee, SharingTarget, SharingValue } from "../api/sharing";
import { DeploymentRole, SubjectType } from "../gen/platform/modelmanager/v1/permission_pb";
import { Dialog } from "./Dialog";
import { ErrorBanner } from "./ErrorBanner";
import { Checkbox, FormActions, SelectField, TextField, chosenEnum } from "./Fields";
import { Table, type Column } from "./Table";
import { useAction } from "./useAction";
import { runOnSubmit } from "./runOnSubmit";

export const SUBJECT_NAMES: Record<SubjectType, string> = {
  [SubjectType.UNSPECIFIED]: "Subject",
  [SubjectType.USER]: "User",
  [SubjectType.GROUP]: "Group",
  [SubjectType.SERVICE_ACCOUNT]: "Service account",
  [SubjectType.TENANT]: "Tenant",
  [SubjectType.API_KEY]: "API key",
};

const ROLE_NAMES: Record<DeploymentRole, string> = {
  [DeploymentRole.UNSPECIFIED]: "none",
  [DeploymentRole.READER]: "Reader (use)",
  [DeploymentRole.ADMIN]: "Admin (manage)",
};

const SUBJECTS = [SubjectType.USER, SubjectType.GROUP, SubjectType.SERVICE_ACCOUNT, SubjectType.API_KEY, SubjectType.TENANT] as const;
const ROLES = [DeploymentRole.READER, DeploymentRole.ADMIN] as const;

function SharingForm({ target }: { target: SharingTarget }) {
  const [value, setValue] = useState<SharingValue | undefined>(undefined);
  const [tenants, setTenants] = useState("");
  const [loadError, setLoadError] = useState<unknown>(undefined);
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    const abort = new AbortController();
    target.readSharing(abort.signal).then(
      (found) => {
        setValue(found);
        setTenants(found.sharedWith.join(", "));
      },
      (caught: unknown) => {
        if (!abort.signal.aborted) {
          setLoadError(caught);
        }
      },
    );
    return () => { abort.abort(); };
  }, [target]);
  const save = useAction(async () => {
    if (value === undefined) {
      return;
    }
    const sharedWith = target.platformOwned ? tenants.split(/[\s,]+/).filter(Boolean) : [];
    await target.saveSharing({ shareToAll: value.shareToAll, sharedWith });
    setSaved(true);
  });
  if (loadError !== undefined) {
    return <ErrorBanner error={loadError} />;
  }
  if (value === undefined) {
    return <p class="empty">Loading…</p>;
  }
  return (
    <form
      onSubmit={runOnSubmit(() => {
        setSaved(false);
        return save.run();
      })}
    >
      <fieldset>
        <legend>Who may use it</legend>
        <ErrorBanner error={save.error} />
        <Checkbox
          name="share-to-all"
          label={target.platformOwned ? "Every tenant" : "Everyone in this tenant"}
          checked={value.shareToAll}
          onChange={(on) => { setValue({ ...value, shareToAll: on }); }}
        />
        {target.platformOwned ? (
          <TextField
            label="Also these tenants"
            name="shared-with"
            value={tenants}
            onInput={setTenants}
            hint="Tenant ids, separated by commas or spaces."
          />
        ) : null}
        <FormActions submit="Save sharing" busy={save.busy} />
        <p class="hint" role="status">{saved ? "Sharing saved." : ""}</p>
      </fieldset>
    </form>
  );
}

function Permissions({ target }: { target: SharingTarget }) {
  const [reload, setReload] = useState(0);
  const [type, setType] = useState<SubjectType>(SubjectType.USER);
  const [id, setId] = useState("");
  const [role, setRole] = useState<DeploymentRole>(DeploymentRole.READER);
  const load = useMemo(() => singleResponse((signal) => target.listPermissions(signal)), [target]);
  const add = useAction(async () => {
    await target.addPermission({ type, id: id.trim(), role });
    setId("");
    setReload((n) => n + 1);
  });
  const remove = useAction(async (grantee: Grantee) => {
    await target.removePermission(grantee);
    setReload((n) => n + 1);
  });
  const columns: Column<Grantee>[] = [
    { header: "Who", cell: (g) => SUBJECT_NAMES[g.type] },
    { header: "ID", cell: (g) => <span class="mono">{g.id}</span> },
    { header: "Role", cell: (g) => ROLE_NAMES[g.role] },
    {
      header: "Actions",
      actions: true,
      cell: (g) => (
        <button type="button" class="danger" disabled={remove.busy} onClick={() => void remove.run(g)}>
          Remove <span class="visually-hidden">{`${SUBJECT_NAMES[g.type]} ${g.id}`}</span>
        </button>
      ),
    },
  ];
  return (
    <>
      <ErrorBanner error={remove.error} />
      <Table caption="Permissions" columns={columns} load={load} rowKey={(g) => `${g.type}:${g.id}:${g.role}`}
        reload={reload} empty="No explicit permissions." />
      <form class="inline-form" onSubmit={runOnSubmit(add.run)}>
        <fieldset>
          <legend>Add a permission</legend>
          <ErrorBanner error={add.error} />
          <SelectField label="Who" name="subject-type" value={String(type)}
            options={SUBJECTS.map((s) => ({ value: String(s), label: SUBJECT_NAMES[s] }))}
            onChange={(v) => { setType(chosenEnum(SUBJECTS, v, SubjectType.USER)); }} />
          <TextField label={`${SUBJECT_NAMES[type]} id`} name="subject-id" value={id} onInput={setId} required />
          <SelectField label="Role" name="role" value={String(role)}
            options={ROLES.map((r) => ({ value: String(r), label: ROLE_NAMES[r] }))}
            onChange={(v) => { setRole(chosenEnum(ROLES, v, DeploymentRole.READER)); }} />
          <FormActions submit="Add permission" busy={add.busy} />
        </fieldset>
      </form>
    </>
  );
}

/** A "Share" button opening the editor for one resource; nothing is loaded until it is opened. */
export function ShareButton({ label, target }: { label: string; target: () => SharingTarget }) {
  const [open, setOpen] = useState<SharingTarget | undefined>(undefined);
  return (
    <>
      <button type="button" onClick={() => { setOpen(target()); }}>
        Share <span class="visually-hidden">{label}</span>
      </button>
      <Dialog title={`Sharing: ${open?.label ?? ""}`} open={open !== undefined} onClose={() => { setOpen(undefined); }}>
        {open === undefined ? null : <SharingEditor target={open} />}
      </Dialog>
    </>
  );
}

export function SharingEditor({ target }: { target: SharingTarget }) {
  return (
    <div class="sharing-editor">
      <SharingForm target={target} />
      {target.permissions ? <Permissions target={target} /> : null}
    </div>
  );
}
