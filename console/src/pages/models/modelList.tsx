// What the three model lists share: rows a page at a time from ResourceListService with a delete action, and the
// tenant's limits on each model (ScopeLimits, loaded when opened) for tenant admins and operators.
import { useState } from "preact/hooks";
import { serverPages, type PageRequest } from "../../api/pagination";
import type { Column } from "../../components/Table";
import { useAction } from "../../components/useAction";
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

/**
 * One kind of model as a table's rows, a page at a time from ResourceListService, and the row action that deletes
 * one by its resource name. A delete, or `refresh` after a create or an edit, reloads the table from its first page.
 */
export function useModelList<A extends { nextPageToken: string }, T>(
  list: (page: PageRequest, signal: AbortSignal) => Promise<A>,
  items: (answer: A) => T[],
  remove: (name: string) => Promise<unknown>,
) {
  const [reload, setReload] = useState(0);
  const refresh = () => { setReload((n) => n + 1); };
  // Made once: a new loader would send the table back to its first page on every render.
  const [load] = useState(() => serverPages(list, items));
  const removal = useAction(async (name: string) => {
    await remove(name);
    refresh();
  });
  return { load, reload, refresh, remove: removal };
}
