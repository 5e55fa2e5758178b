"""The audit trail (issue 26): who changed what, from where, with which outcome, and when.

- `events`    the event as plain data (never a secret nor model content) and the actor behind a principal.
- `store`     writing, listing (filtered, keyset-paginated) and pruning rows of `audit_events`.
- `calls`     management calls: one event per state-changing RPC, added to the RPC's own transaction on success and
              written on its own when the call was refused or failed (nothing else was written then).
- `export`    the stream for a SIEM: JSON lines (file or stdout) or OTel logs over OTLP/HTTP.
"""

from server.audit.events import Actor, ActorType, AuditEvent, Outcome, Source, actor_of, outcome_of

__all__ = ["Actor", "ActorType", "AuditEvent", "Outcome", "Source", "actor_of", "outcome_of"]
