// Tenants (operators only: can_manage_tenants): list (a page at a time), create, rename (display name) and delete;
// each tenant's limits (its platform-tier ceiling, and its own tier where the operator is also its admin) beside it.
import { useState } from "preact/hooks";
import { client } from "../../api/transport";
import type { PageProps } from "../../app/routes";
import { Dialog } from "../../components/Dialog";
import { ErrorBanner } from "../../components/ErrorBanner";
import { FormActions, TextField } from "../../components/Fields";
import { Table, type Column } from "../../components/Table";
import { useAction } from "../../components/useAction";
import { usePagedList } from "../../components/usePagedList";
import { runOnSubmit } from "../../components/runOnSubmit";
import type { Tenant } from "../../gen/platform/tenants/v1/tenant_pb";
import { TenantService } from "../../gen/platform/tenants/v1/tenant_service_pb";
import { LimitScopeKind } from "../../gen/switchboard/limits/v1/limit_policy_pb";
import { ResourceListService } from "../../gen/switchboard/resources/v1/resource_list_service_pb";
import { limitTiers } from "../limits/names";
import { LimitsButton } from "../limits/ScopeLimits";
import { formatTime } from "../../components/format";
import { DeleteButton } from "../../components/DeleteButton";

function TenantForm({ tenant, onDone, onCancel }: { tenant: Tenant | undefined; onDone: () => void; onCancel: () => void }) {
  const [name, setName] = useState("");
  const [displayName, setDisplayName] = useState(tenant?.displayName ?? "");
  const save = useAction(async () => {
    if (tenant === undefined) {
      await client(TenantService).createTenant({ name: name.trim(), displayName: displayName.trim() });
    } else {
      await client(TenantService).updateTenant({ tenantId: tenant.id, displayName: displayName.trim() });
    }
  });
  return (
    <form onSubmit={runOnSubmit(save.run, onDone)}>
      <ErrorBanner error={save.error} />
      {tenant === undefined ? (
        <TextField label="Name" name="name" value={name} onInput={setName} required autoFocus
          hint="A short identifier: lowercase letters, digits and dashes." />
      ) : null}
      <TextField label="Display name" name="displayName" value={displayName} onInput={setDisplayName}
        autoFocus={tenant !== undefined} />
      <FormActions submit={tenant === undefined ? "Create" : "Save"} busy={save.busy} onCancel={onCancel} />
    </form>
  );
}

export default function TenantsPage({ session }: PageProps) {
  const [editing, setEditing] = useState<Tenant | "new" | undefined>(undefined);
  const { load, reload, refresh, remove } = usePagedList(
    (page, signal) => client(ResourceListService).listTenants({ page }, { signal }), (a) => a.tenants,
    (tenant: Tenant) => client(TenantService).deleteTenant({ tenantId: tenant.id }),
  );
  const columns: Column<Tenant>[] = [
    { header: "Name", cell: (t) => t.name },
    { header: "Display name", cell: (t) => t.displayName },
    { header: "ID", cell: (t) => <span class="mono">{t.id}</span> },
    { header: "Created", cell: (t) => formatTime(t.createTime) },
    {
      header: "Actions",
      actions: true,
      cell: (t) => (
        <div class="row-actions">
          <button type="button" onClick={() => { setEditing(t); }}>
            Edit <span class="visually-hidden">{t.name}</span>
          </button>
          <LimitsButton tenantId={t.id} scope={{ kind: LimitScopeKind.TENANT, id: "" }} what={`the tenant ${t.name}`}
            tiers={limitTiers(session, session.tenants.find((access) => access.id === t.id))} />
          <DeleteButton label={t.name} question={`Delete the tenant ${t.name} and everything in it?`} busy={remove.busy}
            onDelete={() => void remove.run(t)} />
        </div>
      ),
    },
  ];
  const close = () => { setEditing(undefined); };
  return (
    <section>
      <div class="page-head">
        <h1>Tenants</h1>
        <button type="button" class="primary" onClick={() => { setEditing("new"); }}>
          Create tenant
        </button>
      </div>
      <ErrorBanner error={remove.error} />
      <Table caption="Tenants" columns={columns} load={load} rowKey={(t) => t.id} reload={reload} />
      <Dialog title={editing === "new" ? "Create tenant" : "Edit tenant"} open={editing !== undefined} onClose={close}>
        <TenantForm
          tenant={editing === "new" ? undefined : editing}
          onCancel={close}
          onDone={() => {
            close();
            refresh();
          }}
        />
      </Dialog>
    </section>
  );
}
