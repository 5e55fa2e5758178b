// Limits in words, shared by the policies table, the current use (LimitUse.tsx) and the limits panels; and which
// tiers a person may set, from GetSession only.
import type { Session, TenantAccess } from "../../app/session";
import { BudgetPeriod, LimitMetric, LimitScopeKind, LimitTier } from "../../gen/switchboard/limits/v1/limit_policy_pb";

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

/** The tiers the person may set in a tenant (operators: the platform's ceiling; its admins: the tenant's own). Empty:
 * no limits are shown at all, since reading a tenant's policies is for the same people (the server decides). */
export function limitTiers(session: Session, tenant: TenantAccess | undefined): LimitTier[] {
  return [
    ...(session.canManageTenants ? [LimitTier.PLATFORM] : []),
    ...(tenant?.capabilities.tenantAdmin ? [LimitTier.TENANT] : []),
  ];
}
