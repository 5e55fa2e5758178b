// A filtered list's form: the person edits a draft and "Apply" hands it to the page's loader, so typing makes no
// calls; "Clear" resets both. Every filtered list (the audit trail, captured exchanges) uses this one.
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { localDate } from "../pages/keys/CreateKey";

export interface FilterState<F> {
  draft: F;
  applied: F;
  field: (name: keyof F) => (value: string) => void;
  apply: () => void;
  clear: () => void;
}

export function useFilters<F>(none: F): FilterState<F> {
  const [draft, setDraft] = useState<F>(none);
  const [applied, setApplied] = useState<F>(none);
  return {
    draft,
    applied,
    field: (name) => (value) => {
      setDraft((now) => ({ ...now, [name]: value }));
    },
    apply: () => {
      setApplied(draft);
    },
    clear: () => {
      setDraft(none);
      setApplied(none);
    },
  };
}

/** A range typed in `datetime-local` fields, as the API's optional start and end times (an empty end is left out). */
export function timeRange(from: string, to: string): { startTime?: Timestamp; endTime?: Timestamp } {
  const start = localDate(from);
  const end = localDate(to);
  return {
    ...(start !== undefined ? { startTime: timestampFromDate(start) } : {}),
    ...(end !== undefined ? { endTime: timestampFromDate(end) } : {}),
  };
}

export function FilterForm<F>({ label, filters, children }: { label: string; filters: FilterState<F>; children: ComponentChildren }) {
  return (
    <form
      class="filters"
      aria-label={label}
      onSubmit={(event) => {
        event.preventDefault();
        filters.apply();
      }}
    >
      {children}
      <div class="form-actions">
        <button type="submit" class="primary">
          Apply
        </button>
        <button type="button" onClick={filters.clear}>
          Clear
        </button>
      </div>
    </form>
  );
}
