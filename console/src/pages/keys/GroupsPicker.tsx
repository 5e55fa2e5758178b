// The groups a new key is attached to (it then acts with their permissions): the groups the caller may attach keys
// to, a page at a time (TenantListService.ListGroups with api_key_attachable), loaded when the form opens.
import { useEffect, useState } from "preact/hooks";
import { client } from "../../api/transport";
import { ErrorBanner } from "../../components/ErrorBanner";
import { Checkbox } from "../../components/Fields";
import type { Group } from "../../gen/platform/tenants/v1/group_pb";
import { TenantListService } from "../../gen/switchboard/tenants/v1/tenant_list_service_pb";

const PAGE = 50;

export function GroupsPicker({ tenantId, value, onChange }: { tenantId: string; value: string[]; onChange: (ids: string[]) => void }) {
  const [groups, setGroups] = useState<Group[]>([]);
  const [next, setNext] = useState<string | undefined>(""); // undefined: no more pages
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const more = async (pageToken: string, signal?: AbortSignal) => {
    setBusy(true);
    try {
      const answer = await client(TenantListService).listGroups(
        { tenantId, apiKeyAttachable: true, page: { pageSize: PAGE, pageToken } },
        signal ? { signal } : {},
      );
      setGroups((shown) => [...shown, ...answer.groups]);
      setNext(answer.nextPageToken || undefined);
    } catch (caught) {
      if (!signal?.aborted) {
        setError(caught);
      }
    } finally {
      setBusy(false);
    }
  };
  useEffect(() => {
    const abort = new AbortController();
    void more("", abort.signal);
    return () => { abort.abort(); };
    // The first page once per tenant; `more` is this render's closure over the same tenant.
  }, [tenantId]);
  if (groups.length === 0 && next === undefined && error === undefined) {
    return null; // no group this person may attach keys to: nothing to offer
  }
  return (
    <fieldset>
      <legend>Groups</legend>
      <p class="hint">The key also reaches what these groups are shared with.</p>
      <ErrorBanner error={error} />
      <div class="choices" aria-busy={busy}>
        {groups.map((group) => (
          <Checkbox key={group.id} label={group.name} checked={value.includes(group.id)}
            onChange={(on) => { onChange(on ? [...value, group.id] : value.filter((id) => id !== group.id)); }} />
        ))}
      </div>
      {next !== undefined && groups.length > 0 ? (
        <button type="button" disabled={busy} onClick={() => void more(next)}>
          More groups
        </button>
      ) : null}
    </fieldset>
  );
}
