"""Seed one PostgreSQL tenant at the console's scale goals (issue 24): 100,000 API keys, 10,000 groups and
1,000,000 usage rows, with the people, service accounts and group members around them. Used by `bench
console_scale` and by the console's browser scale run; it writes with COPY (the rows cost the client seconds), and
the usage rollups are filled by the database's own triggers, one statement-level trigger per COPY of 200,000 rows
(most of the 4-7 minutes a million rows took on a loaded 2-core machine is the database building the rollups).

The shape is what a large tenant looks like, not a uniform spread: key traffic follows a Zipf law (a few keys make
most calls, most keys are idle in any month), models and call kinds are weighted like a chat-heavy platform, and
calls follow a daily rhythm over `days` days ending at `end`. Everything is derived from `seed` (same numbers,
same rows), ids included, so two runs can be compared.

    seeded = seed_tenant("postgresql://postgres@127.0.0.1:5432/mydb")   # after the schema is migrated

or from a shell, printing what was seeded as JSON (ids, the usage range):

    .venv/bin/python -m tests.console_seed postgresql://postgres@127.0.0.1:5432/mydb [usage rows]
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = ["Seeded", "seed_tenant"]

_MODELS = [f"model-{i:02d}" for i in range(20)]
# call kind -> weight: chat completions and responses dominate; MCP tool calls and RAG retrievals name no model.
_KINDS = {1: 50, 2: 20, 3: 15, 4: 5, 5: 2, 6: 5, 7: 3}


@dataclass
class Seeded:
    """What was written, for a benchmark or a browser run to ask about."""

    tenant_id: str
    admin_user_id: str
    member_user_ids: list[str]
    start: datetime  # the usage rows' range: [start, end)
    end: datetime
    api_key_ids: list[str] = field(default_factory=list)  # in creation order (the keyset order of ListApiKeys)
    group_ids: list[str] = field(default_factory=list)
    big_group_id: str = ""  # the group with every member in it
    service_account_ids: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)


def _copy(conn: Any, table: str, columns: tuple[str, ...], rows: Any) -> int:
    written = 0
    with conn.cursor() as cur, cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
            written += 1
    return written


def _zipf_weights(n: int, s: float) -> list[float]:
    return [1 / (i + 1) ** s for i in range(n)]


def seed_tenant(
    pg_url: str,
    *,
    keys: int = 100_000,
    groups: int = 10_000,
    usage_rows: int = 1_000_000,
    members: int = 2_000,
    service_accounts: int = 500,
    days: int = 30,
    end: datetime | None = None,
    seed: int = 24,
    tenant_name: str = "scale",
) -> Seeded:
    """Write the tenant into the migrated database at `pg_url` (a psycopg URL: postgresql://...)."""
    import psycopg

    rng = random.Random(seed)
    tag = hashlib.sha256(f"{seed}:{tenant_name}".encode()).hexdigest()[:8]
    end = (end or datetime.now(UTC)).replace(minute=0, second=0, microsecond=0)
    start = end - timedelta(days=days)
    created = start - timedelta(days=1)
    tenant_id = f"ten_{tag}scale000"
    admin = f"admin-{tag}"
    people = [f"user-{tag}-{i:05d}" for i in range(members)]
    seeded = Seeded(tenant_id, admin, people, start, end)
    with psycopg.connect(pg_url, autocommit=False) as conn:
        conn.execute(
            "INSERT INTO tenants (id, name, display_name, created_at) VALUES (%s, %s, %s, %s)",
            (tenant_id, f"{tenant_name}-{tag}", "Scale test tenant", created),
        )
        users = [admin, *people]
        seeded.counts["users"] = _copy(
            conn,
            "users",
            ("id", "email", "display_name", "created_at"),
            ((u, f"{u}@example.com", u.replace("-", " ").title(), created) for u in users),
        )
        roles = {admin: 3}
        seeded.counts["tenant_members"] = _copy(
            conn,
            "tenant_members",
            ("tenant_id", "user_id", "role", "created_at"),
            ((tenant_id, u, roles.get(u, 2 if i % 10 == 0 else 1), created) for i, u in enumerate(users)),
        )
        seeded.service_account_ids = [f"sa_{tag}{i:08x}" for i in range(service_accounts)]
        seeded.counts["service_accounts"] = _copy(
            conn,
            "service_accounts",
            ("id", "tenant_id", "name", "description", "created_by", "created_at"),
            (
                (sa, tenant_id, f"service-{i:05d}", "", admin, created + timedelta(seconds=i))
                for i, sa in enumerate(seeded.service_account_ids)
            ),
        )
        seeded.group_ids = [f"grp_{tag}{i:08x}" for i in range(groups)]
        seeded.big_group_id = seeded.group_ids[0]
        seeded.counts["groups"] = _copy(
            conn,
            "groups",
            ("id", "tenant_id", "name", "created_at"),
            ((g, tenant_id, f"group-{i:05d}", created) for i, g in enumerate(seeded.group_ids)),
        )

        def group_members() -> Any:
            for user in users:  # the big group: everyone
                yield (seeded.big_group_id, user, created)
            for g in seeded.group_ids[1:]:
                for user in rng.sample(users, 5):
                    yield (g, user, created)

        seeded.counts["group_members"] = _copy(
            conn, "group_members", ("group_id", "user_id", "created_at"), group_members()
        )

        seeded.api_key_ids = [f"key_{tag}{i:08x}" for i in range(keys)]

        def api_keys() -> Any:
            for i, key in enumerate(seeded.api_key_ids):
                account = seeded.service_account_ids[i % service_accounts] if i % 5 == 0 and service_accounts else None
                owner = None if account else users[i % len(users)]
                state = 3 if i % 50 == 0 else (2 if i % 23 == 0 else 1)
                at = created + timedelta(seconds=i)
                yield (
                    key, tenant_id, 2 if account else 1, state, f"key-{i:06d}", "", owner, account,
                    f"sb_{hashlib.sha256(key.encode()).hexdigest()[:7]}",
                    hashlib.sha256(f"{tag}{key}".encode()).digest(),
                    at, at,
                )  # fmt: skip

        seeded.counts["api_keys"] = _copy(
            conn,
            "api_keys",
            (
                "id", "tenant_id", "type", "state", "name", "description", "owner_user_id", "service_account_id",
                "prefix", "secret_hash", "created_at", "updated_at",
            ),
            api_keys(),
        )  # fmt: skip
        conn.commit()
        seeded.counts["usage_events"] = _usage(conn, seeded, usage_rows, rng, users)
    return seeded


def _usage(conn: Any, seeded: Seeded, rows: int, rng: random.Random, users: list[str]) -> int:
    """`rows` calls; keys drawn by Zipf (s=1.1) in a shuffled order (the busiest keys are not the oldest)."""
    keys = seeded.api_key_ids[:]
    rng.shuffle(keys)
    key_weights = _zipf_weights(len(keys), 1.1)
    model_weights = _zipf_weights(len(_MODELS), 0.8)
    kinds, kind_weights = list(_KINDS), list(_KINDS.values())
    span = int((seeded.end - seeded.start).total_seconds())
    columns = (
        "occurred_at", "tenant_id", "api_key_id", "user_id", "model_id", "target_kind", "target_name", "call_kind",
        "prompt_tokens", "completion_tokens", "embedding_tokens", "rerank_tokens", "total_tokens", "status",
        "latency_ms", "request_bytes", "response_bytes",
    )  # fmt: skip
    position = {key: i for i, key in enumerate(seeded.api_key_ids)}
    written = 0
    batch = 200_000
    while written < rows:
        n = min(batch, rows - written)
        chosen_keys = rng.choices(keys, key_weights, k=n)
        chosen_models = rng.choices(_MODELS, model_weights, k=n)
        chosen_kinds = rng.choices(kinds, kind_weights, k=n)

        def generated(chosen: Any) -> Any:
            for key, model, kind in chosen:
                # A daily rhythm: more calls in working hours (UTC), fewer at night.
                offset = rng.randrange(span)
                hour = (offset // 3600) % 24
                if not 7 <= hour <= 19 and rng.random() < 0.6:
                    offset = rng.randrange(span)
                i = position[key]
                user = "" if i % 5 == 0 else users[i % len(users)]  # service-account keys act for no user
                named = kind <= 5
                prompt = int(rng.expovariate(1 / 400)) if kind in (1, 2) else 0
                completion = int(rng.expovariate(1 / 150)) if kind in (1, 2) else 0
                embedding = int(rng.expovariate(1 / 200)) if kind == 3 else 0
                rerank = int(rng.expovariate(1 / 300)) if kind == 4 else 0
                yield (
                    seeded.start + timedelta(seconds=offset), seeded.tenant_id, key, user, model if named else "",
                    1 if named else 0, model if named else "", kind, prompt, completion, embedding, rerank,
                    prompt + completion + embedding + rerank, 200 if rng.random() > 0.03 else 429,
                    round(rng.uniform(50, 2000), 1), 800, 1500,
                )  # fmt: skip

        chosen = zip(chosen_keys, chosen_models, chosen_kinds, strict=True)
        written += _copy(conn, "usage_events", columns, generated(chosen))
        conn.commit()  # each COPY's statement trigger folds its rows into usage_rollups
    return written


if __name__ == "__main__":
    import dataclasses
    import json
    import sys

    found = seed_tenant(sys.argv[1], usage_rows=int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000)
    summary = dataclasses.asdict(found) | {"api_key_ids": found.api_key_ids[:10], "group_ids": found.group_ids[:10]}
    print(json.dumps(summary, default=str))
