// A server-paginated table: it asks its PageLoader for one page at a time (page_size, page_token), remembers the
// tokens of pages already passed so "Previous" is one call, and never loads more than the page it shows. A change
// of `reload` (after a create or delete) starts again from the first page.
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { PAGE_SIZES, type Page, type PageLoader } from "../api/pagination";
import { ErrorBanner } from "./ErrorBanner";

export interface Column<T> {
  header: string;
  cell: (row: T) => ComponentChildren;
  /** Cells that are actions (buttons) are labelled for narrow screens by their buttons, not a header. */
  actions?: boolean;
}

interface TableProps<T> {
  caption: string;
  columns: Column<T>[];
  load: PageLoader<T>;
  rowKey: (row: T) => string;
  /** Bump to reload from the first page. */
  reload?: number;
  empty?: string;
}

export function Table<T>({ caption, columns, load, rowKey, reload = 0, empty = "Nothing here yet." }: TableProps<T>) {
  const [pageSize, setPageSize] = useState<number>(PAGE_SIZES[0]);
  // Where we are: the tokens of the pages passed (tokens[i] loads page i). A new loader, page size or reload starts
  // over at the first page; deriving that here (not in an effect) keeps it to one call.
  const resetKey = `${reload}:${pageSize}`;
  const [position, setPosition] = useState({ load, resetKey, tokens: [""], index: 0 });
  const current =
    position.load === load && position.resetKey === resetKey ? position : { load, resetKey, tokens: [""], index: 0 };
  const { tokens, index } = current;
  const [page, setPage] = useState<Page<T> | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const token = tokens[index] ?? "";
  // What the shown answer (or error) was for; the table is busy until it is for what is asked now. Derived, not set
  // in the effect, so the page number and "busy" change in the same render (no moment showing stale rows as done).
  const [settled, setSettled] = useState<{ load: PageLoader<T>; token: string; pageSize: number; reload: number }>();
  const loading =
    settled?.load !== load || settled.token !== token || settled.pageSize !== pageSize || settled.reload !== reload;

  useEffect(() => {
    const abort = new AbortController();
    const asked = { load, token, pageSize, reload };
    load(token, pageSize, abort.signal).then(
      (answer) => {
        if (!abort.signal.aborted) {
          setPage(answer);
          setError(undefined);
          setSettled(asked);
        }
      },
      (caught: unknown) => {
        if (!abort.signal.aborted) {
          setError(caught);
          setSettled(asked);
        }
      },
    );
    return () => {
      abort.abort();
    };
  }, [load, token, pageSize, reload]);

  const goTo = (nextIndex: number, nextTokens: string[] = tokens) => {
    setPosition({ ...current, tokens: nextTokens, index: nextIndex });
  };
  const next = () => {
    if (page?.nextPageToken) {
      goTo(index + 1, [...tokens.slice(0, index + 1), page.nextPageToken]);
    }
  };
  const rows = page?.items ?? [];
  return (
    <div class="table-block" aria-busy={loading}>
      <ErrorBanner error={error} />
      {/* A wide table scrolls sideways on narrow screens: focusable so a keyboard can scroll it too. */}
      <div class="table-scroll" role="region" aria-label={caption} tabIndex={0}>
        <table class="table">
          <caption>{caption}</caption>
          <thead>
            <tr>
              {columns.map((column) => (
                <th key={column.header} scope="col">
                  {column.header}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((row) => (
              <tr key={rowKey(row)}>
                {columns.map((column) => (
                  <td key={column.header} data-label={column.actions ? undefined : column.header}>
                    {column.cell(row)}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {!loading && rows.length === 0 && error === undefined ? <p class="empty">{empty}</p> : null}
      {loading && page === undefined ? <p class="empty">Loading…</p> : null}
      <nav class="pager" aria-label={`${caption}: pages`}>
        <button type="button" disabled={index === 0 || loading} onClick={() => { goTo(index - 1); }}>
          Previous
        </button>
        <span aria-live="polite">Page {index + 1}</span>
        <button type="button" disabled={!page?.nextPageToken || loading} onClick={next}>
          Next
        </button>
        <label class="page-size">
          Rows
          <select
            value={String(pageSize)}
            onChange={(event) => {
              setPageSize(Number(event.currentTarget.value));
            }}
          >
            {PAGE_SIZES.map((size) => (
              <option key={size} value={String(size)}>
                {size}
              </option>
            ))}
          </select>
        </label>
      </nav>
    </div>
  );
}
