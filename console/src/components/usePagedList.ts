// What a page with a server-paged table and a delete action needs: the Table's loader, its reload counter, and the
// delete. A delete, or `refresh` after a create or an edit, reloads the table from its first page.
import { useMemo, useState } from "preact/hooks";
import { serverPages, type PageRequest } from "../api/pagination";
import { useAction } from "./useAction";

/**
 * Rows a page at a time from `list` (`items` picks them out of each answer), and `remove` as an action that reloads
 * the table once the row is gone. `deps` are what `list` reads from the page's props (the tenant, a group's id).
 */
export function usePagedList<A extends { nextPageToken: string }, T, R>(
  list: (page: PageRequest, signal: AbortSignal) => Promise<A>,
  items: (answer: A) => T[],
  remove: (row: R) => Promise<unknown>,
  deps: readonly unknown[] = [],
) {
  const [reload, setReload] = useState(0);
  const refresh = () => { setReload((n) => n + 1); };
  // Rebuilt only when `deps` change (picking another tenant keeps the page mounted): the Table goes back to its first
  // page whenever its loader changes, so a loader made on every render would pin it there.
  const load = useMemo(() => serverPages(list, items), deps);
  const removal = useAction(async (row: R) => {
    await remove(row);
    refresh();
  });
  return { load, reload, refresh, remove: removal };
}
