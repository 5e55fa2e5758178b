// A secret the server shows once (a new API key): readable, selectable, copyable, and said plainly that it will not
// be shown again. It lives only in the component's props; nothing stores it.
import { useState } from "preact/hooks";
import { useId } from "preact/hooks";

export function SecretOnce({ label, secret }: { label: string; secret: string }) {
  const id = useId();
  const [copied, setCopied] = useState<"" | "copied" | "failed">("");
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret);
      setCopied("copied");
    } catch {
      setCopied("failed"); // no clipboard permission (or not a secure context): the text field is still there
    }
  };
  return (
    <div class="secret-once">
      <p class="banner banner-warning">Copy this secret now: it is shown only once and cannot be shown again.</p>
      <label for={id}>{label}</label>
      <div class="secret-row">
        <input
          id={id}
          class="secret-value"
          readOnly
          value={secret}
          spellcheck={false}
          autocomplete="off"
          onFocus={(event) => {
            event.currentTarget.select();
          }}
        />
        <button type="button" onClick={() => void copy()}>
          Copy
        </button>
      </div>
      <p class="hint" role="status" aria-live="polite">
        {copied === "copied" ? "Copied to the clipboard." : copied === "failed" ? "Copying failed: select the text and copy it." : ""}
      </p>
    </div>
  );
}
