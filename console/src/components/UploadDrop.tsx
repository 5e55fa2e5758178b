// A drop zone for files that is also an ordinary file picker: dragging files onto it and choosing them with the
// keyboard (the visible "Choose files" button is a real <input type=file>) give the same list to `onFiles`.
import { useId, useState } from "preact/hooks";

interface UploadDropProps {
  label: string;
  hint?: string;
  onFiles: (files: File[]) => void;
  disabled?: boolean;
}

export function UploadDrop({ label, hint, onFiles, disabled = false }: UploadDropProps) {
  const id = useId();
  const [over, setOver] = useState(false);
  return (
    <div
      class="drop-zone"
      data-over={over}
      onDragOver={(event) => {
        event.preventDefault(); // allows the drop
        setOver(true);
      }}
      onDragLeave={() => { setOver(false); }}
      onDrop={(event) => {
        event.preventDefault();
        setOver(false);
        const files = [...(event.dataTransfer?.files ?? [])];
        if (files.length > 0 && !disabled) {
          onFiles(files);
        }
      }}
    >
      <p>
        <strong>{label}</strong>
      </p>
      {hint ? <p class="hint" id={`${id}-hint`}>{hint}</p> : null}
      <label for={id}>Or choose files</label>{" "}
      <input
        id={id}
        type="file"
        multiple
        disabled={disabled}
        aria-describedby={hint ? `${id}-hint` : undefined}
        onChange={(event) => {
          const files = [...(event.currentTarget.files ?? [])];
          event.currentTarget.value = ""; // the same file can be chosen again
          if (files.length > 0) {
            onFiles(files);
          }
        }}
      />
    </div>
  );
}
