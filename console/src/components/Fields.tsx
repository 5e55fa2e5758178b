// Labelled form fields: every input has a visible <label>, its hint and error are tied to it with
// aria-describedby, and an error marks it aria-invalid, so the form reads the same with a screen reader.
import type { ComponentChildren } from "preact";
import { useId } from "preact/hooks";

interface FieldShell {
  label: string;
  hint?: string;
  error?: string;
}

function describedBy(id: string, hint?: string, error?: string): string | undefined {
  const ids = [hint ? `${id}-hint` : "", error ? `${id}-error` : ""].filter(Boolean).join(" ");
  return ids || undefined;
}

function Notes({ id, hint, error }: { id: string; hint?: string | undefined; error?: string | undefined }) {
  return (
    <>
      {hint ? (
        <p id={`${id}-hint`} class="hint">
          {hint}
        </p>
      ) : null}
      {error ? (
        <p id={`${id}-error`} class="field-error">
          {error}
        </p>
      ) : null}
    </>
  );
}

interface TextFieldProps extends FieldShell {
  value: string;
  onInput: (value: string) => void;
  type?: "text" | "email" | "datetime-local" | "search";
  required?: boolean;
  maxLength?: number;
  autoFocus?: boolean;
  placeholder?: string;
  name?: string;
}

export function TextField(props: TextFieldProps) {
  const id = useId();
  // Preact's input typings discriminate on one literal type at a time; every type listed in TextFieldProps is a
  // text-like input, so naming one of them here loses nothing.
  const type = (props.type ?? "text") as "text";
  return (
    <div class="field">
      <label for={id}>
        {props.label}
        {/* the input's required attribute is what a screen reader announces; this is for the eye */}
        {props.required ? <span class="required" aria-hidden="true"> (required)</span> : null}
      </label>
      <input
        id={id}
        name={props.name}
        type={type}
        value={props.value}
        required={props.required}
        maxLength={props.maxLength}
        autoFocus={props.autoFocus}
        placeholder={props.placeholder}
        aria-invalid={props.error ? true : undefined}
        aria-describedby={describedBy(id, props.hint, props.error)}
        onInput={(event) => {
          props.onInput(event.currentTarget.value);
        }}
      />
      <Notes id={id} hint={props.hint} error={props.error} />
    </div>
  );
}

interface SelectFieldProps<V extends string> extends FieldShell {
  value: V;
  options: readonly { value: V; label: string }[];
  onChange: (value: V) => void;
  name?: string;
}

export function SelectField<V extends string>(props: SelectFieldProps<V>) {
  const id = useId();
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <select
        id={id}
        name={props.name}
        value={props.value}
        aria-describedby={describedBy(id, props.hint, props.error)}
        onChange={(event) => {
          props.onChange(event.currentTarget.value as V);
        }}
      >
        {props.options.map((option) => (
          <option key={option.value} value={option.value}>
            {option.label}
          </option>
        ))}
      </select>
      <Notes id={id} hint={props.hint} error={props.error} />
    </div>
  );
}

interface CheckboxProps {
  label: ComponentChildren;
  checked: boolean;
  onChange: (checked: boolean) => void;
  name?: string;
}

export function Checkbox({ label, checked, onChange, name }: CheckboxProps) {
  const id = useId();
  return (
    <div class="checkbox">
      <input
        id={id}
        name={name}
        type="checkbox"
        checked={checked}
        onChange={(event) => {
          onChange(event.currentTarget.checked);
        }}
      />
      <label for={id}>{label}</label>
    </div>
  );
}

/** A form's buttons: the submit (disabled while busy, saying so) and an optional cancel. */
export function FormActions({ submit, busy, onCancel }: { submit: string; busy: boolean; onCancel?: () => void }) {
  return (
    <div class="form-actions">
      <button type="submit" class="primary" disabled={busy} aria-busy={busy}>
        {busy ? "Working…" : submit}
      </button>
      {onCancel ? (
        <button type="button" onClick={onCancel} disabled={busy}>
          Cancel
        </button>
      ) : null}
    </div>
  );
}

/** The enum value a <select> chose: option values are the enum's numbers as strings. */
export function chosenEnum<E extends number>(values: readonly E[], raw: string, fallback: E): E {
  return values.find((value) => String(value) === raw) ?? fallback;
}
