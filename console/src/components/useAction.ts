// One state machine for buttons that call the API: busy while the call runs (the button is disabled, so a double
// click does not create twice), the error kept for the ErrorBanner, cleared by the next attempt.
import { useCallback, useState } from "preact/hooks";

export interface Action<A extends unknown[]> {
  run: (...args: A) => Promise<boolean>;
  busy: boolean;
  error: unknown;
  clear: () => void;
}

export function useAction<A extends unknown[]>(perform: (...args: A) => Promise<unknown>): Action<A> {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const run = useCallback(
    async (...args: A): Promise<boolean> => {
      setBusy(true);
      setError(undefined);
      try {
        await perform(...args);
        return true;
      } catch (caught) {
        setError(caught);
        return false;
      } finally {
        setBusy(false);
      }
    },
    [perform],
  );
  return { run, busy, error, clear: () => { setError(undefined); } };
}
