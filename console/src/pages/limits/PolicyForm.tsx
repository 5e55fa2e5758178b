// The form that sets or replaces one tier's limits on one scope, and a policy's limits in words: shared by the
// limits page (any scope) and the limits panel beside a key, a service account, a tenant or a model (its scope).
import { useState } from "preact/hooks";
import { client } from "../../api/transport";
import { ErrorBanner } from "../../components/ErrorBanner";
import { FormActions, SelectField, TextField, chosenEnum } from "../../components/Fields";
import { useAction } from "../../components/useAction";
import { runOnSubmit } from "../../components/runOnSubmit";
import {
  BudgetPeriod,
  LimitScopeKind,
  LimitTier,
  type LimitPolicy,
  type Limits,
} from "../../gen/switchboard/limits/v1/limit_policy_pb";
import { LimitService } from "../../gen/switchboard/limits/v1/limit_service_pb";
import { PERIOD_NAMES, SCOPE_NAMES } from "./names";

/** What a policy applies to: a key, a service account or a model by id; the tenant with an empty id. */
export interface ScopeRef {
  kind: LimitScopeKind;
  id: string;
}

/** A policy's limits in words: "600 requests/min · 1M tokens/month (soft 800k)". */
export function describe(limits: Limits | undefined): string {
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

function draftOf(policy: LimitPolicy | undefined, tier: LimitTier, scope: ScopeRef | undefined): Draft {
  const limits = policy?.limits;
  const kind = policy?.scope?.kind ?? scope?.kind ?? LimitScopeKind.TENANT;
  return {
    tier: String(policy?.tier ?? tier),
    kind: String(kind),
    id: policy?.scope?.id ?? scope?.id ?? "",
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

export function PolicyForm({ tenantId, tiers, policy, scope, onDone, onCancel }: {
  tenantId: string;
  tiers: LimitTier[];
  policy: LimitPolicy | undefined;
  /** A fixed scope (the panel beside a key, an account, a tenant, a model): no "Applies to" fields. */
  scope?: ScopeRef;
  onDone: () => void;
  onCancel: () => void;
}) {
  const [draft, setDraft] = useState<Draft>(() => draftOf(policy, tiers[0] ?? LimitTier.TENANT, scope));
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
    <form onSubmit={runOnSubmit(save.run, onDone)}>
      <ErrorBanner error={save.error} />
      {!editing ? (
        <SelectField label="Set by" name="tier" value={draft.tier} onChange={field("tier")}
          options={tiers.map((t) => ({ value: String(t), label: t === LimitTier.PLATFORM ? "Platform (the tenant's ceiling)" : "Tenant (within the platform's limits)" }))} />
      ) : null}
      {!editing && scope === undefined ? (
        <>
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
