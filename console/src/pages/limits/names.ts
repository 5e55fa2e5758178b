// Limits in words, shared by the policies table and the current-use list.
import { timestampDate } from "@bufbuild/protobuf/wkt";
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
