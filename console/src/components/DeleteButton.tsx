// A row's destructive action (delete, remove, revoke), asking the person first with the browser's own confirm():
// what it does cannot be undone. The row's name follows the visible verb for screen readers, so each row's button
// has a name of its own ("Delete acme") while the table shows just "Delete".
export function DeleteButton({ action = "Delete", label, question, busy, onDelete }: {
  action?: string;
  label?: string;
  question: string;
  busy: boolean;
  onDelete: () => void;
}) {
  return (
    <button type="button" class="danger" disabled={busy}
      onClick={() => { if (confirm(question)) { onDelete(); } }}>
      {action}{label === undefined ? null : <> <span class="visually-hidden">{label}</span></>}
    </button>
  );
}
