// One group and its members (a page of ListGroupMembers). Tenant admins add members (picked from the tenant's
// members, a page at a time from when the dialog opens, not on page load) and remove them.
import { useLocation } from "preact-iso";
import { useState } from "preact/hooks";
import { client } from "../../api/transport";
import { Dialog } from "../../components/Dialog";
import { ErrorBanner } from "../../components/ErrorBanner";
import { FormActions, SelectField } from "../../components/Fields";
import { Table, type Column } from "../../components/Table";
import { useAction } from "../../components/useAction";
import { usePagedList } from "../../components/usePagedList";
import { runOnSubmit } from "../../components/runOnSubmit";
import { routeUrl } from "../../app/routes";
import type { PageProps } from "../../app/routes";
import type { GroupMember } from "../../gen/platform/tenants/v1/group_pb";
import { GroupService } from "../../gen/platform/tenants/v1/group_service_pb";
import type { TenantMember } from "../../gen/platform/tenants/v1/tenant_pb";
import { TenantListService } from "../../gen/switchboard/tenants/v1/tenant_list_service_pb";

function personName(user: { userId: string; email: string; displayName: string } | undefined, fallback: string) {
  return user?.displayName || user?.email || fallback;
}

function AddMember({ tenantId, groupId, onAdded }: { tenantId: string; groupId: string; onAdded: () => void }) {
  const [open, setOpen] = useState(false);
  const [members, setMembers] = useState<TenantMember[] | undefined>(undefined);
  const [more, setMore] = useState(""); // the next page's token: the tenant's members come a page at a time
  const [userId, setUserId] = useState("");
  const loadMembers = useAction(async () => {
    const answer = await client(TenantListService).listTenantMembers({ tenantId, page: { pageSize: 100, pageToken: more } });
    const joined = [...(members ?? []), ...answer.members.filter((m) => !m.pending)];
    setMembers(joined);
    setMore(answer.nextPageToken);
    setUserId((chosen) => chosen || (joined[0]?.userId ?? ""));
  });
  const add = useAction(async () => {
    await client(GroupService).addGroupMember({ tenantId, groupId, userId });
  });
  const close = () => {
    setOpen(false);
    add.clear();
  };
  return (
    <>
      <button
        type="button"
        class="primary"
        onClick={() => {
          setOpen(true);
          if (members === undefined) {
            void loadMembers.run();
          }
        }}
      >
        Add member
      </button>
      <Dialog title="Add a member to the group" open={open} onClose={close}>
        <form onSubmit={runOnSubmit(add.run, () => { close(); onAdded(); })}>
          <ErrorBanner error={loadMembers.error ?? add.error} />
          {members === undefined ? (
            <p aria-busy="true">Loading the tenant's members…</p>
          ) : (
            <SelectField
              label="Member"
              value={userId}
              options={members.map((m) => ({ value: m.userId, label: `${personName(m.metadata, m.userId)} (${m.email || m.userId})` }))}
              onChange={setUserId}
              hint="Only people who have joined the tenant can be added."
            />
          )}
          {more ? (
            <button type="button" disabled={loadMembers.busy} onClick={() => void loadMembers.run()}>
              More members
            </button>
          ) : null}
          <FormActions submit="Add" busy={add.busy || userId === ""} onCancel={close} />
        </form>
      </Dialog>
    </>
  );
}

export default function GroupPage({ tenant, params }: PageProps) {
  const tenantId = tenant?.id ?? "";
  const groupId = params.group ?? "";
  const admin = tenant?.capabilities.tenantAdmin ?? false;
  const name = useLocation().query.name ?? "";
  const { load, reload, refresh, remove } = usePagedList(
    (page, signal) => client(TenantListService).listGroupMembers({ tenantId, groupId, page }, { signal }), (a) => a.members,
    (member: GroupMember) => client(GroupService).removeGroupMember({ tenantId, groupId, userId: member.userId }),
    [tenantId, groupId],
  );
  const columns: Column<GroupMember>[] = [
    { header: "Name", cell: (m) => personName(m.metadata, m.userId) },
    { header: "Email", cell: (m) => m.metadata?.email ?? "" },
    { header: "User ID", cell: (m) => <span class="mono">{m.userId}</span> },
  ];
  if (admin) {
    columns.push({
      header: "Actions",
      actions: true,
      cell: (m) => (
        <button type="button" class="danger" disabled={remove.busy} onClick={() => void remove.run(m)}>
          Remove <span class="visually-hidden">{personName(m.metadata, m.userId)}</span>
        </button>
      ),
    });
  }
  return (
    <section>
      <p>
        <a href={routeUrl({ path: "groups", scope: "tenant" }, tenantId)}>← Groups</a>
      </p>
      <div class="page-head">
        <h1>Group {name || groupId}</h1>
        {admin ? <AddMember tenantId={tenantId} groupId={groupId} onAdded={refresh} /> : null}
      </div>
      <p class="hint">
        ID <span class="mono">{groupId}</span>
      </p>
      <ErrorBanner error={remove.error} />
      <Table caption="Group members" columns={columns} load={load} rowKey={(m) => m.userId} reload={reload} empty="This group has no members." />
    </section>
  );
}
