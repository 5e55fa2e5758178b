// Rate limits, concurrency caps and token budgets of a tenant (switchboard.limits.v1.LimitService): the policies of
// both tiers (the platform operator's ceiling and the tenant admins' own), set, replaced and deleted here, and the
// current use of every limit that applies to one API key. A page load makes two calls (GetSession,
// ListLimitPolicies, which answers a tenant's policies at once); the key picker of "Current use" loads a page of keys
// when it is opened. The server decides who may set which tier; the page offers the tiers GetSession allows.
import { useMemo, useState } from "preact/hooks";
import { singleResponse } from "../../api/pagination";
import { client } from "../../api/transport";
import type { PageProps } from "../../app/routes";
import { Dialog } from "../../components/Dialog";
import { ErrorBanner } from "../../components/ErrorBanner";
import { FormActions, SelectField, TextField, chosenEnum } from "../../components/Fields";
import { formatTime } from "../../components/format";
import { Table, type Column } from "../../components/Table";
import { useAction } from "../../components/useAction";
import {
  BudgetPeriod,
  LimitScopeKind,
  LimitTier,
  type LimitPolicy,
  type Limits,
} from "../../gen/switchboard/limits/v1/limit_policy_pb";
import { LimitService } from "../../gen/switchboard/limits/v1/limit_service_pb";
import { CurrentUse } from "./CurrentUse";
import { PERIOD_NAMES, SCOPE_NAMES, TIER_NAMES } from "./names";

/** A policy's limits in words: "600 requests/min · 1M tokens/month (soft 800k)". */
function describe(limits: Limits | undefined): string {
  if (limits === undefined) {
    return "";
  }
  const parts = [
    limits.requestsPerMinute !== undefined ? `${limits.requestsPerMinute} requests/min` : "",
    limits.tokensPerMinute !== undefined ? `${limits.tokensPerMinute} tokens/min` : "",
    limits.concurrentRequests !== undefined ? `${limits.concurrentRequests} at once` : "",
    limits.tokenBudget !== undefined
      ? `${limits.tokenBudget} tokens/${PERIOD_NAMES[limits.budgetPeriod]}${limits.softBudget !== undefined ? ` (soft ${limits.softBudget})` : ""}`
      : "",
  ];
  return parts.filter(Boolean).join(" · ");
}

const KINDS = [LimitScopeKind.TENANT, LimitScopeKind.SERVICE_ACCOUNT, LimitScopeKind.API_KEY, LimitScopeKind.MODEL];
const PERIODS = [BudgetPeriod.DAY, BudgetPeriod.WEEK, BudgetPeriod.MONTH];

interface Draft {
  tier: string;
  kind: string;
  id: string;
  rpm: string;
  tpm: string;
  concurrent: string;
  budget: string;
  period: string;
  soft: string;
}

function draftOf(policy: LimitPolicy | undefined, tier: LimitTier): Draft {
  const limits = policy?.limits;
  return {
    tier: String(policy?.tier ?? tier),
    kind: String(policy?.scope?.kind ?? LimitScopeKind.TENANT),
    id: policy?.scope?.id ?? "",
    rpm: limits?.requestsPerMinute ?? "",
    tpm: limits?.tokensPerMinute ?? "",
    concurrent: limits?.concurrentRequests ?? "",
    budget: limits?.tokenBudget ?? "",
    period: String(limits === undefined || limits.budgetPeriod === BudgetPeriod.UNSPECIFIED ? BudgetPeriod.MONTH : limits.budgetPeriod),
    soft: limits?.softBudget ?? "",
  };
}

/** Only the limits filled in: an empty field sets no limit of that kind. */
function limitsOf(draft: Draft): Partial<Limits> {
  const set = (value: string) => (value.trim() === "" ? undefined : value.trim());
  const budget = set(draft.budget);
  const limits: Record<string, unknown> = {
    requestsPerMinute: set(draft.rpm),
    tokensPerMinute: set(draft.tpm),
    concurrentRequests: set(draft.concurrent),
    tokenBudget: budget,
    softBudget: budget === undefined ? undefined : set(draft.soft),
    budgetPeriod: budget === undefined ? BudgetPeriod.UNSPECIFIED : chosenEnum(PERIODS, draft.period, BudgetPeriod.MONTH),
  };
  return Object.fromEntries(Object.entries(limits).filter(([, v]) => v !== undefined));
}

function PolicyForm({ tenantId, tiers, policy, onDone, onCancel }: {
  tenantId: string;
  tiers: LimitTier[];
  policy: LimitPolicy | undefined;
  onDone: () => void;
  onCancel: () => void;
}) {
  const [draft, setDraft] = useState<Draft>(() => draftOf(policy, tiers[0] ?? LimitTier.TENANT));
  const field = (name: keyof Draft) => (value: string) => {
    setDraft((now) => ({ ...now, [name]: value }));
  };
  const kind = chosenEnum(KINDS, draft.kind, LimitScopeKind.TENANT);
  const save = useAction(async () => {
    await client(LimitService).setLimitPolicy({
      tenantId,
      tier: chosenEnum(tiers, draft.tier, tiers[0] ?? LimitTier.TENANT),
      scope: { kind, id: kind === LimitScopeKind.TENANT ? "" : draft.id.trim() },
      limits: limitsOf(draft),
    });
  });
  const editing = policy !== undefined;
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        void save.run().then((ok) => {
          if (ok) onDone();
        });
      }}
    >
      <ErrorBanner error={save.error} />
      {!editing ? (
        <>
          <SelectField label="Set by" name="tier" value={draft.tier} onChange={field("tier")}
            options={tiers.map((t) => ({ value: String(t), label: t === LimitTier.PLATFORM ? "Platform (the tenant's ceiling)" : "Tenant (within the platform's limits)" }))} />
          <SelectField label="Applies to" name="kind" value={draft.kind} onChange={field("kind")}
            options={KINDS.map((k) => ({ value: String(k), label: SCOPE_NAMES[k] }))} />
          {kind !== LimitScopeKind.TENANT ? (
            <TextField label={kind === LimitScopeKind.MODEL ? "Model id" : `${SCOPE_NAMES[kind]} id`} name="scopeId"
              value={draft.id} onInput={field("id")} required />
          ) : null}
        </>
      ) : null}
      <p class="hint">Quantities like 600, 10k, 1M or 2.5M. Leave a field empty for no limit of that kind.</p>
      <TextField label="Requests per minute" name="rpm" value={draft.rpm} onInput={field("rpm")} autoFocus />
      <TextField label="Tokens per minute" name="tpm" value={draft.tpm} onInput={field("tpm")} />
      <TextField label="Concurrent requests" name="concurrent" value={draft.concurrent} onInput={field("concurrent")} />
      <TextField label="Token budget" name="budget" value={draft.budget} onInput={field("budget")} />
      <SelectField label="Budget period" name="period" value={draft.period} onChange={field("period")}
        options={PERIODS.map((p) => ({ value: String(p), label: `Per ${PERIOD_NAMES[p]} (UTC)` }))} />
      <TextField label="Soft budget" name="soft" value={draft.soft} onInput={field("soft")}
        hint="Crossing it is recorded and shown in current use; nothing is refused." />
      <FormActions submit={editing ? "Save limits" : "Set limits"} busy={save.busy} onCancel={onCancel} />
    </form>
  );
}

export default function LimitsPage({ session, tenant }: PageProps) {
  const tenantId = tenant?.id ?? "";
  const [reload, setReload] = useState(0);
  const [editing, setEditing] = useState<LimitPolicy | "new" | undefined>(undefined);
  const remove = useAction(async (policy: LimitPolicy) => {
    await client(LimitService).deleteLimitPolicy({ tenantId, tier: policy.tier, scope: policy.scope ?? {} });
    setReload((n) => n + 1);
  });
  const tiers = [
    ...(session.canManageTenants ? [LimitTier.PLATFORM] : []),
    ...(tenant?.capabilities.tenantAdmin ? [LimitTier.TENANT] : []),
  ];
  const load = useMemo(
    () => singleResponse(async (signal) => (await client(LimitService).listLimitPolicies({ tenantId }, { signal })).policies),
    [tenantId],
  );
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
            <button type="button" class="danger" disabled={remove.busy}
              onClick={() => {
                if (confirm(`Delete the ${TIER_NAMES[p.tier].toLowerCase()} limits on ${SCOPE_NAMES[p.scope?.kind ?? LimitScopeKind.UNSPECIFIED].toLowerCase()}?`)) {
                  void remove.run(p);
                }
              }}>
              Delete
            </button>
          </div>
        ) : null,
    },
  ];
  const done = () => {
    setEditing(undefined);
    setReload((n) => n + 1);
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
