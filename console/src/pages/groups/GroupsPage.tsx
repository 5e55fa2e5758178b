// Groups of a tenant: every member may open it (the spec); tenant admins also create and delete groups. One call on
// load (a page of ListGroups); creating or deleting reloads the first page.
import { useState } from "preact/hooks";
import { client } from "../../api/transport";
import { ErrorBanner } from "../../components/ErrorBanner";
import { TextField } from "../../components/Fields";
import { Table, type Column } from "../../components/Table";
import { useAction } from "../../components/useAction";
import { usePagedList } from "../../components/usePagedList";
import { FormDialog } from "../../components/FormDialog";
import { DeleteButton } from "../../components/DeleteButton";
import { routeUrl } from "../../app/routes";
import type { PageProps } from "../../app/routes";
import type { Group } from "../../gen/platform/tenants/v1/group_pb";
import { GroupService } from "../../gen/platform/tenants/v1/group_service_pb";
import { TenantListService } from "../../gen/switchboard/tenants/v1/tenant_list_service_pb";

function CreateGroup({ tenantId, onCreated }: { tenantId: string; onCreated: () => void }) {
  const [name, setName] = useState("");
  const create = useAction(async () => {
    await client(GroupService).createGroup({ tenantId, name: name.trim() });
  });
  return (
    <FormDialog opener="Create group" title="Create group" submit="Create" action={create}
      onReset={() => { setName(""); }} onDone={onCreated}>
      <TextField label="Name" name="name" value={name} onInput={setName} required maxLength={200} autoFocus />
    </FormDialog>
  );
}

export default function GroupsPage({ tenant }: PageProps) {
  const tenantId = tenant?.id ?? "";
  const admin = tenant?.capabilities.tenantAdmin ?? false;
  const { load, reload, refresh, remove } = usePagedList(
    (page, signal) => client(TenantListService).listGroups({ tenantId, page }, { signal }), (a) => a.groups,
    (group: Group) => client(GroupService).deleteGroup({ tenantId, groupId: group.id }), [tenantId],
  );
  const columns: Column<Group>[] = [
    {
      header: "Name",
      // The name rides along in the link, so the group's page can title itself without another call.
      cell: (group) => (
        <a href={`${routeUrl({ path: "groups/:group", scope: "tenant" }, tenantId, { group: group.id })}?name=${encodeURIComponent(group.name)}`}>
          {group.name}
        </a>
      ),
    },
    { header: "Members", cell: (group) => group.memberCount },
    { header: "ID", cell: (group) => <span class="mono">{group.id}</span> },
  ];
  if (admin) {
    columns.push({
      header: "Actions",
      actions: true,
      cell: (group) => (
        <DeleteButton label={group.name} question={`Delete the group ${group.name}?`} busy={remove.busy}
          onDelete={() => void remove.run(group)} />
      ),
    });
  }
  return (
    <section>
      <div class="page-head">
        <h1>Groups</h1>
        {admin ? <CreateGroup tenantId={tenantId} onCreated={refresh} /> : null}
      </div>
      <p class="lead">Groups gather members of {tenant?.name}; API keys attached to a group reach what it is shared with.</p>
      <ErrorBanner error={remove.error} />
      <Table caption="Groups" columns={columns} load={load} rowKey={(group) => group.id} reload={reload} empty="No groups yet." />
    </section>
  );
}
