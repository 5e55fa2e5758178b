// A button that opens a dialog holding the form of one action (create, invite, …). Every way out (Cancel, Escape, a
// call that succeeded) closes it alike: the last error goes, and onReset empties what the next opening should not show.
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { Dialog } from "./Dialog";
import { ErrorBanner } from "./ErrorBanner";
import { FormActions } from "./Fields";
import { runOnSubmit } from "./runOnSubmit";
import type { Action } from "./useAction";

interface FormDialogProps {
  /** The label of the button that opens the dialog. */
  opener: string;
  title: string;
  /** The label of the form's submit button. */
  submit: string;
  action: Action<[]>;
  /** Empties the form's fields when the dialog closes. */
  onReset?: () => void;
  /** After the action succeeded and the dialog closed (a reload of the list, say). */
  onDone: () => void;
  children: ComponentChildren;
}

export function FormDialog({ opener, title, submit, action, onReset, onDone, children }: FormDialogProps) {
  const [open, setOpen] = useState(false);
  const close = () => {
    setOpen(false);
    onReset?.();
    action.clear();
  };
  return (
    <>
      <button type="button" class="primary" onClick={() => { setOpen(true); }}>
        {opener}
      </button>
      <Dialog title={title} open={open} onClose={close}>
        <form onSubmit={runOnSubmit(action.run, () => { close(); onDone(); })}>
          <ErrorBanner error={action.error} />
          {children}
          <FormActions submit={submit} busy={action.busy} onCancel={close} />
        </form>
      </Dialog>
    </>
  );
}
