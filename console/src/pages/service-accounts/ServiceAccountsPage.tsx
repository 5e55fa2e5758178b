// Service accounts of a tenant (tenant admins): non-human identities that own keys. One call on load.
import { useState } from "preact/hooks";
import { client } from "../../api/transport";
import { routeUrl, type PageProps } from "../../app/routes";
import { ErrorBanner } from "../../components/ErrorBanner";
import { TextField } from "../../components/Fields";
import { formatTime } from "../../components/format";
import { Table, type Column } from "../../components/Table";
import { useAction } from "../../components/useAction";
import { usePagedList } from "../../components/usePagedList";
import { FormDialog } from "../../components/FormDialog";
import { DeleteButton } from "../../components/DeleteButton";
import type { ServiceAccount } from "../../gen/platform/tenants/v1/service_account_pb";
import { ServiceAccountService } from "../../gen/platform/tenants/v1/service_account_service_pb";
import { TenantListService } from "../../gen/switchboard/tenants/v1/tenant_list_service_pb";

function CreateAccount({ tenantId, onCreated }: { tenantId: string; onCreated: () => void }) {
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const create = useAction(async () => {
    await client(ServiceAccountService).createServiceAccount({ tenantId, name: name.trim(), description: description.trim() });
  });
  return (
    <FormDialog opener="Create service account" title="Create service account" submit="Create" action={create}
      onReset={() => { setName(""); setDescription(""); }} onDone={onCreated}>
      <TextField label="Name" value={name} onInput={setName} required autoFocus maxLength={200} />
      <TextField label="Description" value={description} onInput={setDescription} />
    </FormDialog>
  );
}

export default function ServiceAccountsPage({ tenant }: PageProps) {
  const tenantId = tenant?.id ?? "";
  const { load, reload, refresh, remove } = usePagedList(
    (page, signal) => client(TenantListService).listServiceAccounts({ tenantId, page }, { signal }), (a) => a.serviceAccounts,
    (account: ServiceAccount) => client(ServiceAccountService).deleteServiceAccount({ tenantId, serviceAccountId: account.id }),
    [tenantId],
  );
  const columns: Column<ServiceAccount>[] = [
    {
      header: "Name",
      cell: (a) => <a href={routeUrl({ path: "service-accounts/:account", scope: "tenant" }, tenantId, { account: a.id })}>{a.name}</a>,
    },
    { header: "Description", cell: (a) => a.description },
    { header: "Created", cell: (a) => formatTime(a.createTime) },
    {
      header: "Actions",
      actions: true,
      cell: (a) => (
        <DeleteButton label={a.name} question={`Delete the service account ${a.name}? Its keys stop working.`}
          busy={remove.busy} onDelete={() => void remove.run(a)} />
      ),
    },
  ];
  return (
    <section>
      <div class="page-head">
        <h1>Service accounts</h1>
        <CreateAccount tenantId={tenantId} onCreated={refresh} />
      </div>
      <ErrorBanner error={remove.error} />
      <Table caption="Service accounts" columns={columns} load={load} rowKey={(a) => a.id} reload={reload}
        empty="No service accounts yet." />
    </section>
  );
}
