"""Permission-gated content capture (issue 26): the request and response bodies of the gateway's inference calls,
recorded only for the tenants, service accounts and API keys a capability holder turned it on for.

- `exchange`  one call's bodies as the gateway sees them, each kept up to a bound (the rest cut and marked), and
              which policies cover which caller.
- `policies`  turning capture on and off for a scope, granting the capability, and what the gateway caches.
- `store`     rows of `captured_exchanges` and of `captured_bodies`, the groups their bodies are sealed in with the
              platform's secret key (one tenant's exchanges of a meter batch each), written with their usage rows
              in one transaction by `server.metering`; listed by keyset pages, opened one at a time, pruned by age.

Who may do any of it is decided in `server.permissions.capture`.
"""
