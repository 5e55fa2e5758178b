// A form's submit runs its action (useAction's run) in place of the browser's own submission. Only a call that
// succeeded goes on (closing the dialog, reloading the list): a failed one leaves the form as it was, its error
// shown, to correct and send again.
export function runOnSubmit(run: () => Promise<boolean>, onSuccess?: () => void): (event: SubmitEvent) => void {
  return (event) => {
    event.preventDefault();
    void run().then((ok) => {
      if (ok) {
        onSuccess?.();
      }
    });
  };
}
