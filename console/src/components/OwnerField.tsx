// Who owns a resource being created: this tenant, or the platform (the operators'). Only someone allowed both is
// asked; with one allowed, that one is the owner and there is nothing to choose.
import { SelectField } from "./Fields";

export type Owner = "tenant" | "platform";

const OWNERS: readonly { value: Owner; label: string }[] = [
  { value: "tenant", label: "This tenant" },
  { value: "platform", label: "The platform (operators)" },
];

export function OwnerField({ tenantAllowed, platformAllowed, value, onChange }: {
  tenantAllowed: boolean; platformAllowed: boolean; value: Owner; onChange: (owner: Owner) => void;
}) {
  return tenantAllowed && platformAllowed ? (
    <SelectField label="Owner" name="owner" value={value} options={OWNERS} onChange={onChange} />
  ) : null;
}
