// /console/ and any unknown path: go to the first page this person may open (their first tenant's, or the tenants
// page for an operator without tenants), or say plainly that there is nothing to show.
import { useLocation } from "preact-iso";
import { useEffect } from "preact/hooks";
import { session } from "./session";
import { firstPage } from "./Shell";

export function Home() {
  const { route, path } = useLocation();
  const current = session.value;
  const first = current?.tenants[0];
  const target =
    current === undefined
      ? undefined
      : first !== undefined
        ? firstPage(current, first)
        : current.canManageTenants
          ? "/console/tenants"
          : undefined;
  useEffect(() => {
    if (target !== undefined && (path === "/console/" || path === "/console")) {
      route(target, true);
    }
  }, [target, path, route]);
  if (target !== undefined && (path === "/console/" || path === "/console")) {
    return null;
  }
  return (
    <section>
      <h1>{target === undefined ? "Welcome" : "Page not found"}</h1>
      {target === undefined ? (
        <p>You are not a member of any tenant yet. Ask a tenant admin to invite you.</p>
      ) : (
        <p>
          There is no page at this address. <a href={target}>Go to the start page</a>.
        </p>
      )}
    </section>
  );
}
