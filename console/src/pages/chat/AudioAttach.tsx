// An audio attachment, transcribed by the gateway (/v1/audio/transcriptions) into the message box. The spec's chat
// client takes audio files of up to 127 MiB: a larger file is refused here, before any upload, saying so.
import { useId, useState } from "preact/hooks";
import { gatewayError, gatewayFetch } from "../../api/gatewayKey";

/** The spec's limit on an audio file in chat (Limits: "Audio file size in chat: up to 127 MiB"). */
export const AUDIO_LIMIT_BYTES = 127 * 1024 * 1024;

function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(2)} MiB`;
}

export function AudioAttach({ tenantId, model, onText }: { tenantId: string; model: string | undefined; onText: (text: string) => void }) {
  const id = useId();
  const [status, setStatus] = useState<{ text: string; error: boolean } | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const pick = async (file: File | undefined) => {
    if (file === undefined) {
      return;
    }
    if (file.size > AUDIO_LIMIT_BYTES) {
      setStatus({ text: `${file.name} (${mib(file.size)}) is over the 127 MiB limit for audio files in chat.`, error: true });
      return;
    }
    if (model === undefined) {
      setStatus({ text: "No speech-to-text model is available to you, so audio cannot be transcribed.", error: true });
      return;
    }
    setBusy(true);
    setStatus({ text: `Transcribing ${file.name} (${mib(file.size)})…`, error: false });
    try {
      const form = new FormData();
      form.append("model", model);
      form.append("file", file, file.name);
      form.append("response_format", "json");
      const answer = await gatewayFetch(tenantId, "/v1/audio/transcriptions", { method: "POST", body: form });
      if (!answer.ok) {
        throw await gatewayError(answer);
      }
      const body = (await answer.json()) as { text?: string };
      onText(body.text ?? "");
      setStatus({ text: `${file.name} transcribed into the message.`, error: false });
    } catch (caught) {
      setStatus({ text: caught instanceof Error ? caught.message : "The audio could not be transcribed.", error: true });
    } finally {
      setBusy(false);
    }
  };
  return (
    <span class="audio-attach">
      <label for={id} class="button">
        Attach audio
      </label>
      <input
        id={id}
        class="visually-hidden"
        type="file"
        name="audio"
        accept="audio/*"
        disabled={busy}
        onChange={(event) => {
          const input = event.currentTarget;
          void pick(input.files?.[0]).finally(() => {
            input.value = "";
          });
        }}
      />
      {status !== undefined ? (
        <span class={status.error ? "field-error" : "hint"} role="status">
          {status.text}
        </span>
      ) : null}
    </span>
  );
}
