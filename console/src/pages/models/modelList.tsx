// What the three model lists share beyond their paged table (components/usePagedList): the tenant's limits on each
// model (ScopeLimits, loaded when opened) for tenant admins and operators.
import type { Column } from "../../components/Table";
import { LimitScopeKind, type LimitTier } from "../../gen/switchboard/limits/v1/limit_policy_pb";
import { LimitsButton } from "../limits/ScopeLimits";

/** The limits a tenant sets on its calls to each model, as one more column (only for who may set them). */
export interface ModelLimits { tenantId: string; tiers: LimitTier[] }

export function withLimits<T>(columns: Column<T>[], limits: ModelLimits, modelId: (row: T) => string): Column<T>[] {
  if (limits.tiers.length === 0) {
    return columns;
  }
  return [...columns, {
    header: "Limits in this tenant",
    actions: true,
    cell: (row) => (
      <LimitsButton tenantId={limits.tenantId} scope={{ kind: LimitScopeKind.MODEL, id: modelId(row) }} tiers={limits.tiers}
        what={`the model ${modelId(row)}`} />
    ),
  }];
}
