// The shell: loads the session once, then lays out the header (tenant picker, who is signed in, sign out), the nav
// (the routes this session may use, from routes.ts) and the routed page. The sign-in page renders without a session.
import type { ComponentType } from "preact";
import { ErrorBoundary, LocationProvider, Route, Router, lazy, useLocation } from "preact-iso";
import { useEffect, useState } from "preact/hooks";
import { ErrorBanner } from "../components/ErrorBanner";
import { Home } from "./Home";
import { Shell } from "./Shell";
import { ROUTES, routePattern, type PageProps, type RouteEntry } from "./routes";
import { loadSession, session, type Session } from "./session";
import { SignIn } from "./SignIn";

interface RouteProps {
  params: Record<string, string>;
}

function NotAllowed() {
  return (
    <section>
      <h1>Not available</h1>
      <p>This page is not available to you in this tenant. Pick another page or tenant.</p>
    </section>
  );
}

/** One route's component: checks the route is visible to the session and hands the page its tenant. */
function routed(entry: RouteEntry): ComponentType<RouteProps> {
  const Page = lazy(entry.load) as ComponentType<PageProps>;
  return function RoutedPage({ params }: RouteProps) {
    const current = session.value;
    if (current === undefined) {
      return null;
    }
    const tenant = entry.scope === "tenant" ? current.tenants.find((t) => t.id === params.tenant) : undefined;
    if (!entry.visible(current, tenant)) {
      return <NotAllowed />;
    }
    return <Page session={current} tenant={tenant} params={params} />;
  };
}

const ROUTED = ROUTES.map((entry) => ({ pattern: routePattern(entry), component: routed(entry) }));

function SignedIn() {
  const [error, setError] = useState<unknown>(undefined);
  const { url } = useLocation();
  useEffect(() => {
    loadSession().then(
      (loaded: Session) => {
        session.value = loaded;
      },
      setError,
    );
  }, []);
  if (error !== undefined) {
    return (
      <main id="main" class="boot">
        <ErrorBanner error={error} />
      </main>
    );
  }
  if (session.value === undefined) {
    return (
      <main id="main" class="boot" aria-busy="true">
        <p>Loading…</p>
      </main>
    );
  }
  return (
    <Shell session={session.value} url={url}>
      <ErrorBoundary>
        <Router>
          {[
            ...ROUTED.map(({ pattern, component }) => <Route key={pattern} path={pattern} component={component} />),
            <Route key="home" default component={Home} />,
          ]}
        </Router>
      </ErrorBoundary>
    </Shell>
  );
}

function Root() {
  const { path } = useLocation();
  return path.startsWith("/console/sign-in") ? <SignIn /> : <SignedIn />;
}

// Links the router handles in the page; /console/auth/ (sign-in, sign-out) must reach the server as real navigations.
const ROUTED_LINKS = /^\/console(?!\/auth\/)/;

export function App() {
  return (
    <LocationProvider scope={ROUTED_LINKS}>
      <Root />
    </LocationProvider>
  );
}
