// An ordered list a person can reorder with the keyboard as well as the mouse: each item has Move up / Move down
// buttons, and a focused item also moves with Alt+Arrow keys; every move is announced in a live region, and focus
// follows the moved item so the next key press moves it again.
import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";

interface OrderedListProps<T> {
  label: string;
  items: readonly T[];
  itemKey: (item: T) => string;
  itemLabel: (item: T) => string;
  onChange: (items: T[]) => void;
  render?: (item: T) => ComponentChildren;
}

function moved<T>(items: readonly T[], from: number, to: number): T[] {
  const next = [...items];
  const [item] = next.splice(from, 1);
  if (item !== undefined) {
    next.splice(to, 0, item);
  }
  return next;
}

export function OrderedList<T>({ label, items, itemKey, itemLabel, onChange, render }: OrderedListProps<T>) {
  const [announce, setAnnounce] = useState("");
  const [focusKey, setFocusKey] = useState<string | undefined>(undefined);
  const list = useRef<HTMLOListElement>(null);
  useEffect(() => {
    if (focusKey !== undefined) {
      list.current?.querySelector<HTMLElement>(`[data-key="${CSS.escape(focusKey)}"]`)?.focus();
    }
  }, [focusKey, items]);
  const move = (index: number, to: number) => {
    const item = items[index];
    if (item === undefined || to < 0 || to >= items.length) {
      return;
    }
    onChange(moved(items, index, to));
    setFocusKey(itemKey(item));
    setAnnounce(`${itemLabel(item)} moved to position ${to + 1} of ${items.length}.`);
  };
  return (
    <>
      <ol class="ordered-list" ref={list} aria-label={label}>
        {items.map((item, index) => {
          const name = itemLabel(item);
          return (
            <li
              key={itemKey(item)}
              data-key={itemKey(item)}
              tabIndex={0}
              aria-label={`${index + 1}. ${name}. Alt+Up and Alt+Down move it.`}
              onKeyDown={(event) => {
                if (event.altKey && (event.key === "ArrowUp" || event.key === "ArrowDown")) {
                  event.preventDefault();
                  move(index, event.key === "ArrowUp" ? index - 1 : index + 1);
                }
              }}
            >
              <span class="grow">{index + 1}. {render ? render(item) : name}</span>
              <button type="button" disabled={index === 0} onClick={() => { move(index, index - 1); }}>
                Move up <span class="visually-hidden">{name}</span>
              </button>
              <button type="button" disabled={index === items.length - 1} onClick={() => { move(index, index + 1); }}>
                Move down <span class="visually-hidden">{name}</span>
              </button>
              <button type="button" onClick={() => {
                onChange(items.filter((_x, i) => i !== index));
                setAnnounce(`${name} removed.`);
              }}>
                Remove <span class="visually-hidden">{name}</span>
              </button>
            </li>
          );
        })}
      </ol>
      <p class="visually-hidden" role="status" aria-live="polite">{announce}</p>
    </>
  );
}
