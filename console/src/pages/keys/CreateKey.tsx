// Creating an API key: name, optional expiry, its grants (or Personal (all resources), which follows the owner's own
// access and takes none), then the secret, shown once with a copy button. For a service account's page the type is
// fixed to that account.
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { useState } from "preact/hooks";
import { client } from "../../api/transport";
import { Dialog } from "../../components/Dialog";
import { ErrorBanner } from "../../components/ErrorBanner";
import { FormActions, SelectField, TextField, chosenEnum } from "../../components/Fields";
import { SecretOnce } from "../../components/SecretOnce";
import { useAction } from "../../components/useAction";
import { runOnSubmit } from "../../components/runOnSubmit";
import { ApiKeyType } from "../../gen/platform/tenants/v1/api_key_pb";
import { ApiKeyService } from "../../gen/platform/tenants/v1/api_key_service_pb";
import { GrantsPicker, type Grant } from "./GrantsPicker";
import { GroupsPicker } from "./GroupsPicker";

/** A datetime-local value (the person's time zone) as a Date, or undefined when empty. */
export function localDate(value: string): Date | undefined {
  return value === "" ? undefined : new Date(value);
}

const PERSONAL_TYPES = [
  { value: String(ApiKeyType.PERSONAL), label: "Personal: only the granted resources" },
  { value: String(ApiKeyType.PERSONAL_ALL_RESOURCES), label: "Personal (all resources): everything you can use" },
] as const;

interface CreateKeyProps {
  tenantId: string;
  /** Set on a service account's page: the key belongs to that account. */
  serviceAccountId?: string;
  onCreated: () => void;
}

export function CreateKey({ tenantId, serviceAccountId, onCreated }: CreateKeyProps) {
  const [open, setOpen] = useState(false);
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [type, setType] = useState<string>(String(ApiKeyType.PERSONAL));
  const [expiry, setExpiry] = useState("");
  const [grants, setGrants] = useState<Grant[]>([]);
  const [groupIds, setGroupIds] = useState<string[]>([]);
  const [secret, setSecret] = useState<string | undefined>(undefined);
  const keyType = serviceAccountId !== undefined ? ApiKeyType.SERVICE_ACCOUNT : chosenEnum([ApiKeyType.PERSONAL, ApiKeyType.PERSONAL_ALL_RESOURCES], type, ApiKeyType.PERSONAL);
  const takesGrants = keyType !== ApiKeyType.PERSONAL_ALL_RESOURCES;
  const create = useAction(async () => {
    const expireAt = localDate(expiry);
    const answer = await client(ApiKeyService).createApiKey({
      tenantId,
      type: keyType,
      name: name.trim(),
      description: description.trim(),
      serviceAccountId: serviceAccountId ?? "",
      ...(expireAt !== undefined ? { expireTime: timestampFromDate(expireAt) } : {}),
      grants: takesGrants ? grants.map((g) => ({ kind: g.kind, name: g.name })) : [],
      groupIds: takesGrants ? groupIds : [],
    });
    setSecret(answer.secret);
    onCreated();
  });
  const close = () => {
    setOpen(false);
    setName("");
    setDescription("");
    setExpiry("");
    setGrants([]);
    setGroupIds([]);
    setSecret(undefined); // the secret is forgotten with the dialog
    create.clear();
  };
  return (
    <>
      <button type="button" class="primary" onClick={() => { setOpen(true); }}>
        Create key
      </button>
      <Dialog title="Create API key" open={open} onClose={close}>
        {secret !== undefined ? (
          <div>
            <SecretOnce label={`Secret of ${name}`} secret={secret} />
            <div class="form-actions">
              <button type="button" class="primary" onClick={close}>
                Done
              </button>
            </div>
          </div>
        ) : (
          <form onSubmit={runOnSubmit(create.run)}>
            <ErrorBanner error={create.error} />
            <TextField label="Name" name="name" value={name} onInput={setName} required maxLength={200} autoFocus />
            <TextField label="Description" name="description" value={description} onInput={setDescription} />
            {serviceAccountId === undefined ? (
              <SelectField label="Type" name="type" value={type} options={PERSONAL_TYPES} onChange={setType} />
            ) : null}
            <TextField label="Expires" name="expiry" type="datetime-local" value={expiry} onInput={setExpiry}
              hint="Leave empty for a key that does not expire." />
            {takesGrants ? <GrantsPicker tenantId={tenantId} value={grants} onChange={setGrants} /> : null}
            {takesGrants ? <GroupsPicker tenantId={tenantId} value={groupIds} onChange={setGroupIds} /> : null}
            <FormActions submit="Create key" busy={create.busy} onCancel={close} />
          </form>
        )}
      </Dialog>
    </>
  );
}
