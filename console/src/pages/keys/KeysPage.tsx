// API keys of the tenant that the caller may see (their own personal keys; tenant admins see every key). One call
// on load (a page of ListApiKeys); a key's limits are loaded when its Limits action is opened.
import { useState } from "preact/hooks";
import type { PageProps } from "../../app/routes";
import { limitTiers } from "../limits/names";
import { CreateKey } from "./CreateKey";
import { KeysTable } from "./KeysTable";

export default function KeysPage({ session, tenant }: PageProps) {
  const tenantId = tenant?.id ?? "";
  const [reload, setReload] = useState(0);
  const changed = () => { setReload((n) => n + 1); };
  return (
    <section>
      <div class="page-head">
        <h1>API keys</h1>
        <CreateKey tenantId={tenantId} onCreated={changed} />
      </div>
      <p class="lead">Keys call the gateway (/v1) in {tenant?.name}. A secret is shown once, when the key is created.</p>
      <KeysTable tenantId={tenantId} reload={reload} onChanged={changed} limitTiers={limitTiers(session, tenant)} />
    </section>
  );
}
