// Every list in the console is loaded one page at a time through a PageLoader (the tenant's lists through
// switchboard.tenants.v1.TenantListService, the resource lists through switchboard.resources.v1.ResourceListService:
// keyset pages of the spec's lists); the Table component keeps the page
// tokens it has seen so "previous" needs no refetch of earlier pages, and nothing ever walks all pages.

export interface Page<T> {
  items: T[];
  /** Empty when this is the last page. */
  nextPageToken: string;
}

export type PageLoader<T> = (pageToken: string, pageSize: number, signal: AbortSignal) => Promise<Page<T>>;

/** Page sizes offered by tables; the first is the default. */
export const PAGE_SIZES = [25, 50, 100] as const;

/** The page a keyset-paged list method is asked for (switchboard.tenants.v1.PageRequest). */
export interface PageRequest {
  pageSize: number;
  pageToken: string;
}

/**
 * A loader over a server-paginated list method: `call` asks the server for one page, `items` picks that page's
 * items out of the answer; the answer's nextPageToken is the next page's token (empty on the last page).
 */
export function serverPages<A extends { nextPageToken: string }, T>(
  call: (page: PageRequest, signal: AbortSignal) => Promise<A>,
  items: (answer: A) => T[],
): PageLoader<T> {
  return async (pageToken, pageSize, signal) => {
    const answer = await call({ pageSize, pageToken }, signal);
    return { items: items(answer), nextPageToken: answer.nextPageToken };
  };
}

/**
 * A loader over a list method of the spec that answers in one response (it has no page_token): one call, then the
 * table pages through that answer locally (the token is an offset into it), so the page stays small however long
 * the list is. Kept in one place so switching such a list to a server-paginated method changes only its loader.
 */
export function singleResponse<T>(load: (signal: AbortSignal) => Promise<T[]>): PageLoader<T> {
  let answer: Promise<T[]> | undefined;
  return async (pageToken, pageSize, signal) => {
    if (pageToken === "" || answer === undefined) {
      answer = load(signal); // the first page (or a reload) asks the server again
    }
    const start = pageToken === "" ? 0 : Number(pageToken);
    const all = await answer;
    const end = start + pageSize;
    return { items: all.slice(start, end), nextPageToken: end < all.length ? String(end) : "" };
  };
}
