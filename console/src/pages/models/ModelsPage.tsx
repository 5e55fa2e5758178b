// Models of a tenant's view: model deployments, external models and aliases, one kind at a time. The page works out
// from the session who may manage which rows and set the tenant's limits; the lists take that as given. GPU and
// cache figures are on their own page.
import { useLocation } from "preact-iso";
import { routeUrl, type PageProps } from "../../app/routes";
import type { ExternalModelSummary } from "../../gen/platform/modelmanager/v1/external_model_pb";
import { limitTiers } from "../limits/names";
import "../resources.css";
import { Aliases } from "./Aliases";
import { Deployments } from "./Deployments";
import { ExternalModels } from "./ExternalModels";

type Kind = "deployments" | "external" | "aliases";

const KINDS: readonly { kind: Kind; title: string }[] = [
  { kind: "deployments", title: "Deployments" },
  { kind: "external", title: "External models" },
  { kind: "aliases", title: "Aliases" },
];

export default function ModelsPage({ session, tenant }: PageProps) {
  const tenantId = tenant?.id ?? "";
  const operator = session.canManageModels;
  const tenantAdmin = tenant?.capabilities.tenantAdmin ?? false;
  // One kind at a time (?kind=…, so a link names what it shows): a load asks for one list, not three.
  const { query } = useLocation();
  const kind: Kind = KINDS.find((k) => k.kind === query.kind)?.kind ?? "deployments";
  const here = routeUrl({ path: "models", scope: "tenant" }, tenantId);
  // A tenant's own external models are managed by its admins (the server also lets their creator; it refuses
  // anyone else in plain words); platform ones by operators.
  const limits = { tenantId, tiers: limitTiers(session, tenant) };
  const canManage = (m: ExternalModelSummary) => (m.tenantId === "" ? operator : m.tenantId === tenantId && (tenantAdmin || operator));
  return (
    <section>
      <div class="page-head">
        <h1>Models</h1>
        {operator ? <a href={routeUrl({ path: "models/observability", scope: "tenant" }, tenantId)}>GPU and cache</a> : null}
      </div>
      <p class="lead">The models and aliases you can use in {tenant?.name}, and who they are shared with.</p>
      <nav class="sub-nav" aria-label="Kinds of model">
        {KINDS.map((k) => (
          <a key={k.kind} href={`${here}?kind=${k.kind}`} aria-current={k.kind === kind ? "page" : undefined}>{k.title}</a>
        ))}
      </nav>
      {kind === "deployments" ? <Deployments operator={operator} limits={limits} /> : null}
      {kind === "external" ? (
        <ExternalModels tenantId={tenantId} operator={operator} tenantAllowed={tenant?.capabilities.createExternalModel ?? false}
          canManage={canManage} limits={limits} />
      ) : null}
      {kind === "aliases" ? <Aliases operator={operator} limits={limits} /> : null}
    </section>
  );
}
