// Limits in words, shared by the policies table, the current-use list and the limits panels; and which tiers a
// person may set, from GetSession only.
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Session, TenantAccess } from "../../app/session";
import { BudgetPeriod, LimitMetric, LimitScopeKind, LimitTier, type LimitUsage } from "../../gen/switchboard/limits/v1/limit_policy_pb";

export const TIER_NAMES: Record<LimitTier, string> = {
  [LimitTier.UNSPECIFIED]: "",
  [LimitTier.PLATFORM]: "Platform",
  [LimitTier.TENANT]: "Tenant",
};

export const SCOPE_NAMES: Record<LimitScopeKind, string> = {
  [LimitScopeKind.UNSPECIFIED]: "",
  [LimitScopeKind.TENANT]: "Whole tenant",
  [LimitScopeKind.SERVICE_ACCOUNT]: "Service account",
  [LimitScopeKind.API_KEY]: "API key",
  [LimitScopeKind.MODEL]: "Model",
};

export const PERIOD_NAMES: Record<BudgetPeriod, string> = {
  [BudgetPeriod.UNSPECIFIED]: "",
  [BudgetPeriod.DAY]: "day",
  [BudgetPeriod.WEEK]: "week",
  [BudgetPeriod.MONTH]: "month",
};

export const METRIC_NAMES: Record<LimitMetric, string> = {
  [LimitMetric.UNSPECIFIED]: "",
  [LimitMetric.REQUESTS_PER_MINUTE]: "Requests per minute",
  [LimitMetric.TOKENS_PER_MINUTE]: "Tokens per minute",
  [LimitMetric.CONCURRENT_REQUESTS]: "Concurrent requests",
  [LimitMetric.TOKEN_BUDGET]: "Token budget",
};

/** A usage entry's "used of limit" in words, or why it is unknown. */
export function useOf(entry: LimitUsage): string {
  if (entry.used === undefined) {
    return `limit ${entry.limit.toLocaleString()}; current use is counted by the gateways (no shared counter store)`;
  }
  const reset = entry.resetTime ? `, resets ${timestampDate(entry.resetTime).toLocaleString()}` : "";
  return `${entry.used.toLocaleString()} of ${entry.limit.toLocaleString()} used, ${(entry.remaining ?? 0n).toLocaleString()} left${reset}`;
}

/** The tiers the person may set in a tenant (operators: the platform's ceiling; its admins: the tenant's own). Empty:
 * no limits are shown at all, since reading a tenant's policies is for the same people (the server decides). */
export function limitTiers(session: Session, tenant: TenantAccess | undefined): LimitTier[] {
  return [
    ...(session.canManageTenants ? [LimitTier.PLATFORM] : []),
    ...(tenant?.capabilities.tenantAdmin ? [LimitTier.TENANT] : []),
  ];
}
