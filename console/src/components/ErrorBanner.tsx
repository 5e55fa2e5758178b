// A failed call in plain words (api/errors.ts), announced to screen readers as it appears.
import { plainWords } from "../api/errors";

export function ErrorBanner({ error }: { error: unknown }) {
  if (error === undefined || error === null) {
    return null;
  }
  return (
    <div class="banner banner-error" role="alert">
      {plainWords(error)}
    </div>
  );
}
