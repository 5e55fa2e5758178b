// Rate limits, concurrency caps and token budgets of a tenant (switchboard.limits.v1.LimitService): the policies of
// both tiers (the platform operator's ceiling and the tenant admins' own), set, replaced and deleted here, and the
// current use of every limit that applies to one API key. A page load makes two calls (GetSession, and the first
// page of ListLimitPolicies: a tenant that limits many keys has many policies, read a page at a time); the key
// picker of "Current use" loads a page of keys when it is opened. The server decides who may set which tier; the page
// offers the tiers GetSession allows.
import { useState } from "preact/hooks";
import { client } from "../../api/transport";
import type { PageProps } from "../../app/routes";
import { Dialog } from "../../components/Dialog";
import { ErrorBanner } from "../../components/ErrorBanner";
import { formatTime } from "../../components/format";
import { Table, type Column } from "../../components/Table";
import { usePagedList } from "../../components/usePagedList";
import { DeleteButton } from "../../components/DeleteButton";
import { LimitScopeKind, type LimitPolicy } from "../../gen/switchboard/limits/v1/limit_policy_pb";
import { LimitService } from "../../gen/switchboard/limits/v1/limit_service_pb";
import { CurrentUse } from "./CurrentUse";
import { SCOPE_NAMES, TIER_NAMES, limitTiers } from "./names";
import { PolicyForm, describe } from "./PolicyForm";

export default function LimitsPage({ session, tenant }: PageProps) {
  const tenantId = tenant?.id ?? "";
  const [editing, setEditing] = useState<LimitPolicy | "new" | undefined>(undefined);
  const { load, reload, refresh, remove } = usePagedList(
    (page, signal) => client(LimitService).listLimitPolicies({ tenantId, page }, { signal }), (a) => a.policies,
    (policy: LimitPolicy) => client(LimitService).deleteLimitPolicy({ tenantId, tier: policy.tier, scope: policy.scope ?? {} }),
    [tenantId],
  );
  const tiers = limitTiers(session, tenant);
  const columns: Column<LimitPolicy>[] = [
    { header: "Set by", cell: (p) => TIER_NAMES[p.tier] },
    { header: "Applies to", cell: (p) => `${SCOPE_NAMES[p.scope?.kind ?? LimitScopeKind.UNSPECIFIED]}${p.scope?.id ? ` ${p.scope.id}` : ""}` },
    { header: "Limits", cell: (p) => describe(p.limits) },
    { header: "Updated", cell: (p) => formatTime(p.updateTime) },
    {
      header: "Actions",
      actions: true,
      cell: (p) =>
        tiers.includes(p.tier) ? (
          <div class="row-actions">
            <button type="button" onClick={() => { setEditing(p); }}>
              Edit
            </button>
            <DeleteButton busy={remove.busy} onDelete={() => void remove.run(p)}
              question={`Delete the ${TIER_NAMES[p.tier].toLowerCase()} limits on ${SCOPE_NAMES[p.scope?.kind ?? LimitScopeKind.UNSPECIFIED].toLowerCase()}?`} />
          </div>
        ) : null,
    },
  ];
  const done = () => {
    setEditing(undefined);
    refresh();
  };
  return (
    <section>
      <div class="page-head">
        <h1>Limits</h1>
        {tiers.length > 0 ? (
          <button type="button" class="primary" onClick={() => { setEditing("new"); }}>
            Set limits
          </button>
        ) : null}
      </div>
      <p class="lead">
        Rate limits, concurrency caps and token budgets of {tenant?.name}. The gateway applies every policy that
        covers a call; the tightest limit wins, and the tenant's own limits stay within the platform's.
      </p>
      <ErrorBanner error={remove.error} />
      <Table caption="Limit policies" columns={columns} load={load} rowKey={(p) => `${p.tier}:${p.scope?.kind ?? 0}:${p.scope?.id ?? ""}`}
        reload={reload} empty="No limits are set: calls are limited only by the platform's defaults." />
      <Dialog title={editing === "new" ? "Set limits" : "Edit limits"} open={editing !== undefined} onClose={() => { setEditing(undefined); }}>
        {editing !== undefined ? (
          <PolicyForm tenantId={tenantId} tiers={tiers} policy={editing === "new" ? undefined : editing} onDone={done}
            onCancel={() => { setEditing(undefined); }} />
        ) : null}
      </Dialog>
      <CurrentUse tenantId={tenantId} />
    </section>
  );
}
