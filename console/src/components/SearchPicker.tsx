// Choosing among resources that may number thousands: a search box asks the server for the first page of what
// matches (ResourceListService's `search`, 250 ms after the last keystroke), "More results" for the next one, and
// nothing ever loads the whole list. One choice (radios) or several (checkboxes); what is chosen stays chosen when it
// scrolls out of the results (the caller shows it).
import { useEffect, useId, useState } from "preact/hooks";
import type { Page } from "../api/pagination";
import { ErrorBanner } from "./ErrorBanner";
import { TextField } from "./Fields";

export interface Choice {
  value: string;
  label: string;
}

/** One page of the choices matching `search`, from the page `pageToken` names ("" the first). Keep its identity
 * stable (useMemo): a new loader starts the results again. */
export type ChoiceLoader = (search: string, pageToken: string, signal: AbortSignal) => Promise<Page<Choice>>;

/** A loader over a searchable ResourceListService method: `choice` makes an item a Choice, or leaves it out
 * (a model of another task), so a page may show fewer than it asked for. */
export function searched<A extends { nextPageToken: string }, T>(
  call: (request: { search: string; page: { pageSize: number; pageToken: string } }, signal: AbortSignal) => Promise<A>,
  items: (answer: A) => T[],
  choice: (item: T) => Choice | undefined,
): ChoiceLoader {
  return async (search, pageToken, signal) => {
    const answer = await call({ search, page: { pageSize: PICKER_PAGE, pageToken } }, signal);
    return { items: items(answer).flatMap((item) => choice(item) ?? []), nextPageToken: answer.nextPageToken };
  };
}

export const PICKER_PAGE = 20;
const TYPING_PAUSE_MS = 250;

/** Several paged lists searched as one (models: deployments, external models, aliases): the combined token keeps
 * each list's own, null once a list has ended. */
export function combined(...loaders: ChoiceLoader[]): ChoiceLoader {
  return async (search, pageToken, signal) => {
    const tokens = pageToken === "" ? loaders.map(() => "") : (JSON.parse(pageToken) as (string | null)[]);
    const pages = await Promise.all(
      loaders.map((load, i) => {
        const token = tokens[i];
        return token === null || token === undefined ? Promise.resolve({ items: [], nextPageToken: "" }) : load(search, token, signal);
      }),
    );
    const next = pages.map((page, i) => (tokens[i] === null || page.nextPageToken === "" ? null : page.nextPageToken));
    return { items: pages.flatMap((page) => page.items), nextPageToken: next.some((t) => t !== null) ? JSON.stringify(next) : "" };
  };
}

function Option({ choice, single, name, checked, onChange }: {
  choice: Choice; single: boolean; name: string; checked: boolean; onChange: (on: boolean) => void;
}) {
  const id = useId();
  return (
    <div class="checkbox">
      <input id={id} name={name} type={single ? "radio" : "checkbox"} checked={checked}
        onChange={(event) => { onChange(event.currentTarget.checked); }} />
      <label for={id}>{choice.label}</label>
    </div>
  );
}

interface SearchPickerProps {
  /** The group's legend; the search box is "Search <label, lower case>". */
  label: string;
  name: string;
  load: ChoiceLoader;
  chosen: (value: string) => boolean;
  onToggle: (choice: Choice, on: boolean) => void;
  /** Radios: choosing one replaces the other. */
  single?: boolean;
  /** What to say when nothing matches (with no search: when there is nothing at all). */
  empty: string;
}

export function SearchPicker({ label, name, load, chosen, onToggle, single = false, empty }: SearchPickerProps) {
  const [typed, setTyped] = useState("");
  const [search, setSearch] = useState("");
  const [items, setItems] = useState<Choice[] | undefined>(undefined);
  const [next, setNext] = useState("");
  const [more, setMore] = useState<string | undefined>(undefined); // the token of a page asked for
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    const pause = setTimeout(() => {
      setMore(undefined);
      setSearch(typed.trim());
    }, TYPING_PAUSE_MS);
    return () => { clearTimeout(pause); };
  }, [typed]);
  useEffect(() => {
    const abort = new AbortController();
    const token = more ?? "";
    if (token === "") {
      setItems(undefined);
    }
    setError(undefined);
    load(search, token, abort.signal).then(
      (page) => {
        setItems((known) => [...(token === "" ? [] : (known ?? [])), ...page.items]);
        setNext(page.nextPageToken);
      },
      (caught: unknown) => {
        if (!abort.signal.aborted) {
          setError(caught);
        }
      },
    );
    return () => { abort.abort(); };
  }, [load, search, more]);
  return (
    <fieldset class="search-picker">
      <legend>{label}</legend>
      <TextField type="search" label={`Search ${label.toLowerCase()}`} name={`${name}-search`} value={typed}
        onInput={setTyped} />
      <ErrorBanner error={error} />
      <div class="choices" aria-busy={items === undefined && error === undefined} aria-live="polite">
        {items === undefined ? null : items.length === 0 ? <p class="empty">{empty}</p> : items.map((choice) => (
          <Option key={choice.value} choice={choice} single={single} name={name} checked={chosen(choice.value)}
            onChange={(on) => { onToggle(choice, on); }} />
        ))}
      </div>
      {next !== "" && items !== undefined ? (
        <button type="button" onClick={() => { setMore(next); }}>More results</button>
      ) : null}
    </fieldset>
  );
}
