// Members and invitations of a tenant (ListTenantMembers: joined members and pending invitations by email). Tenant
// admins invite by email, change roles and remove; others with the list capability only read.
import { useState } from "preact/hooks";
import { client } from "../../api/transport";
import type { PageProps } from "../../app/routes";
import { roleName } from "../../app/session";
import { ErrorBanner } from "../../components/ErrorBanner";
import { SelectField, TextField, chosenEnum } from "../../components/Fields";
import { Table, type Column } from "../../components/Table";
import { useAction } from "../../components/useAction";
import { usePagedList } from "../../components/usePagedList";
import { FormDialog } from "../../components/FormDialog";
import { DeleteButton } from "../../components/DeleteButton";
import { TenantRole, type TenantMember } from "../../gen/platform/tenants/v1/tenant_pb";
import { TenantService } from "../../gen/platform/tenants/v1/tenant_service_pb";
import { TenantListService } from "../../gen/switchboard/tenants/v1/tenant_list_service_pb";

const ROLES = [TenantRole.MEMBER, TenantRole.EDITOR, TenantRole.ADMIN] as const;

const ROLE_OPTIONS = [
  { value: String(TenantRole.MEMBER), label: "Member" },
  { value: String(TenantRole.EDITOR), label: "Editor" },
  { value: String(TenantRole.ADMIN), label: "Admin" },
] as const;

function Invite({ tenantId, onInvited }: { tenantId: string; onInvited: () => void }) {
  const [email, setEmail] = useState("");
  const [role, setRole] = useState<string>(String(TenantRole.MEMBER));
  const invite = useAction(async () => {
    await client(TenantService).inviteTenantMember({ tenantId, email: email.trim(), role: chosenEnum(ROLES, role, TenantRole.MEMBER) });
  });
  return (
    <FormDialog opener="Invite member" title="Invite a member" submit="Invite" action={invite}
      onReset={() => { setEmail(""); }} onDone={onInvited}>
      <TextField label="Email" type="email" name="email" value={email} onInput={setEmail} required autoFocus
        hint="The invitation applies when this person first signs in with this email." />
      <SelectField label="Role" value={role} options={ROLE_OPTIONS} onChange={setRole} />
    </FormDialog>
  );
}

export default function MembersPage({ tenant, session }: PageProps) {
  const tenantId = tenant?.id ?? "";
  const admin = tenant?.capabilities.tenantAdmin ?? false;
  const { load, reload, refresh, remove } = usePagedList(
    (page, signal) => client(TenantListService).listTenantMembers({ tenantId, page }, { signal }), (a) => a.members,
    (member: TenantMember) => client(TenantService).removeTenantMember(
      member.pending ? { tenantId, email: member.email } : { tenantId, userId: member.userId },
    ),
    [tenantId],
  );
  const change = useAction(async (member: TenantMember, role: TenantRole) => {
    await client(TenantService).updateTenantMemberRole({ tenantId, userId: member.userId, role });
    refresh();
  });
  const columns: Column<TenantMember>[] = [
    { header: "Name", cell: (m) => m.metadata?.displayName || (m.pending ? "(invited)" : m.userId) },
    { header: "Email", cell: (m) => m.email || m.metadata?.email || "" },
    {
      header: "Role",
      cell: (m) =>
        admin && !m.pending && m.userId !== session.user.id ? (
          <select
            aria-label={`Role of ${m.email || m.userId}`}
            value={String(m.role)}
            disabled={change.busy}
            onChange={(event) => void change.run(m, chosenEnum(ROLES, event.currentTarget.value, m.role))}
          >
            {ROLE_OPTIONS.map((o) => (
              <option key={o.value} value={o.value}>
                {o.label}
              </option>
            ))}
          </select>
        ) : (
          roleName(m.role)
        ),
    },
    { header: "Status", cell: (m) => (m.pending ? "Invited" : "Joined") },
  ];
  if (admin) {
    columns.push({
      header: "Actions",
      actions: true,
      // Not oneself: leaving a tenant is not what this page is for (and the last admin could lock everyone out).
      cell: (m) => m.userId === session.user.id ? null : (
        <DeleteButton action={m.pending ? "Cancel invitation" : "Remove"} label={m.email || m.userId}
          question={`Remove ${m.email || m.userId} from ${tenant?.name ?? "the tenant"}?`} busy={remove.busy}
          onDelete={() => void remove.run(m)} />
      ),
    });
  }
  return (
    <section>
      <div class="page-head">
        <h1>Members</h1>
        {admin ? <Invite tenantId={tenantId} onInvited={refresh} /> : null}
      </div>
      <ErrorBanner error={change.error ?? remove.error} />
      <Table caption={`Members of ${tenant?.name ?? ""}`} columns={columns} load={load}
        rowKey={(m) => m.userId || `invite:${m.email}`} reload={reload} empty="No members." />
    </section>
  );
}
