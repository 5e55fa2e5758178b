"""PostgreSQL's lexical search: BM25 over per-RAG postings, each term's list read best first.

Why not `ts_rank_cd` over the GIN index (what came before): it scores every chunk matching a kept term, and at
1,000,000 chunks a term in 2% of them is 20,000 rows to fetch and rank per query (48-73 ms p50 at 20k-60k chunks,
bench/rag_pg_scale.py); it also has no term statistics at all (no IDF), unlike the SQLite engine's BM25.

Here each chunk's lexemes (its stored `tsv`, `to_tsvector('english', text)`) become rows of `rag_terms` (chunk,
term, tf, dl and an `impact`), and each RAG's document frequencies, chunk count and total length live in
`rag_term_stats` and `rag_lexical_stats`, all kept by triggers on `rag_chunks` so every write path (uploads, file
and RAG deletions, a tenant's cascade, COPY) keeps them exact. A RAG's statistics count its own chunks only, so its
ranking never depends on another RAG's content (tests/test_rag_index.py).

A query reads, per term, only the top `depth` postings of an index ordered by `impact`, completes the scores of the
candidates that could still reach the top (the other terms' tf), and ranks them by BM25 (k1 1.2, b 0.75, IDF
ln(1 + (N - df + 0.5) / (df + 0.5)), lengths against the RAG's live mean). `impact` is a term's BM25 saturation at a
fixed reference length (`REF_LENGTH`) rather than the RAG's mean, which moves with every upload; it bounds the live
one (`live_bound`). So the threshold algorithm (Fagin) applies: when the `limit`-th best complete score is at least
the sum over unfinished lists of idf * (k1 + 1) * that bound at the list's last row, no chunk left unread can
outrank it and the ranking is exact; otherwise the lists are read again
deeper (x4), up to `MAX_DEPTH` rows a term, where the result is the best of what was read (how often that happens
and how close it stays to the exhaustive ranking: bench/rag_pg_scale.py, docs/rag.md).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from server.store.rag_index.base import Candidate, common_cap, plan_terms
from server.store.rag_index.pg_restriction import FEW_CHUNKS, text_array

__all__ = [
    "BACKFILL",
    "IMPACT_INDEX",
    "IMPACT_INDEX_DDL",
    "TABLES_DDL",
    "TRIGGERS_DDL",
    "Ranking",
    "bm25",
    "live_bound",
]

K1 = 1.2
B = 0.75
# Near the lexemes of a typical chunk (a 256-token chunk keeps ~60-150 once stopwords go): the closer to a RAG's mean,
# the tighter the bound above and the shallower the reads.
REF_LENGTH = 64.0
FIRST_DEPTH = 100  # rows a term at first, or 4 x limit if more
MAX_DEPTH = 6400
MAX_FEW = 10_000  # chunks a restriction may hold and still be read from its chunks
_IMPACT = f"tf::float8 / (tf + {K1} * (1 - {B} + {B} * dl::float8 / {REF_LENGTH}))"
_TF = "greatest(cardinality(u.positions), 1)"  # a tsvector keeps up to 256 positions per lexeme

IMPACT_INDEX = "ix_rag_terms_impact"
IMPACT_INDEX_DDL = (
    f"CREATE INDEX IF NOT EXISTS {IMPACT_INDEX} ON rag_terms (rag_id, term, impact DESC, chunk_id) INCLUDE (tf, dl)"
)


def _added(source: str) -> list[str]:
    """The postings and statistics of the chunks in `source` (a trigger's transition table, or rag_chunks)."""
    return [
        f"""INSERT INTO rag_terms (chunk_id, term, rag_id, tf, dl, impact)
  SELECT id, lexeme, rag_id, tf, dl, {_IMPACT}
  FROM (SELECT n.id, n.rag_id, u.lexeme, {_TF} AS tf, l.dl
        FROM {source} AS n
        CROSS JOIN LATERAL (SELECT coalesce(sum({_TF}), 0)::integer AS dl FROM unnest(n.tsv) AS u) AS l
        CROSS JOIN LATERAL unnest(n.tsv) AS u) AS p""",  # noqa: S608 - fixed fragments
        f"""INSERT INTO rag_term_stats (rag_id, term, df)
  SELECT n.rag_id, u.lexeme, count(*) FROM {source} AS n CROSS JOIN LATERAL unnest(n.tsv) AS u
  GROUP BY 1, 2 ORDER BY 1, 2
  ON CONFLICT (rag_id, term) DO UPDATE SET df = rag_term_stats.df + excluded.df""",  # noqa: S608 - fixed fragments
        f"""INSERT INTO rag_lexical_stats (rag_id, chunks, lexemes)
  SELECT n.rag_id, count(*), coalesce(sum((SELECT sum({_TF}) FROM unnest(n.tsv) AS u)), 0)
  FROM {source} AS n GROUP BY 1 ORDER BY 1
  ON CONFLICT (rag_id) DO UPDATE SET chunks = rag_lexical_stats.chunks + excluded.chunks,
    lexemes = rag_lexical_stats.lexemes + excluded.lexemes""",  # noqa: S608 - fixed fragments
    ]


_REMOVED = [
    "DELETE FROM rag_terms WHERE chunk_id IN (SELECT id FROM old_chunks)",
    "PERFORM 1 FROM rag_lexical_stats s WHERE s.rag_id IN (SELECT rag_id FROM old_chunks) ORDER BY s.rag_id FOR UPDATE",
    """PERFORM 1 FROM rag_term_stats s
  WHERE (s.rag_id, s.term) IN (SELECT o.rag_id, u.lexeme FROM old_chunks o CROSS JOIN LATERAL unnest(o.tsv) AS u)
  ORDER BY s.rag_id, s.term FOR UPDATE""",
    """UPDATE rag_term_stats s SET df = s.df - g.n
  FROM (SELECT o.rag_id, u.lexeme, count(*) AS n FROM old_chunks o CROSS JOIN LATERAL unnest(o.tsv) AS u
        GROUP BY 1, 2) AS g
  WHERE s.rag_id = g.rag_id AND s.term = g.lexeme""",
    """DELETE FROM rag_term_stats s
  USING (SELECT DISTINCT o.rag_id, u.lexeme FROM old_chunks o CROSS JOIN LATERAL unnest(o.tsv) AS u) AS g
  WHERE s.rag_id = g.rag_id AND s.term = g.lexeme AND s.df <= 0""",
    f"""UPDATE rag_lexical_stats s SET chunks = s.chunks - g.chunks, lexemes = s.lexemes - g.lexemes
  FROM (SELECT o.rag_id, count(*) AS chunks,
               coalesce(sum((SELECT sum({_TF}) FROM unnest(o.tsv) AS u)), 0) AS lexemes
        FROM old_chunks o GROUP BY 1) AS g
  WHERE s.rag_id = g.rag_id""",  # noqa: S608 - fixed fragments
]


def _function(name: str, statements: list[str]) -> str:
    body = "".join(f"  {s};\n" for s in statements)
    header = f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$"
    return f"{header}\nBEGIN\n{body}  RETURN NULL;\nEND $$"


# The postings and statistics, and the triggers that keep them. Statement-level with transition tables: one COPY or
# multi-row INSERT of a file's chunks runs each statement once. Statistics rows are locked in (rag, term) order, so
# concurrent uploads and deletions in one RAG wait for each other instead of deadlocking.
TABLES_DDL = [
    "CREATE TABLE IF NOT EXISTS rag_terms (chunk_id bigint NOT NULL, term text NOT NULL, "
    "rag_id varchar(64) NOT NULL, tf integer NOT NULL, dl integer NOT NULL, impact real NOT NULL, "
    "PRIMARY KEY (chunk_id, term))",
    IMPACT_INDEX_DDL,
    "CREATE TABLE IF NOT EXISTS rag_term_stats (rag_id varchar(64) NOT NULL REFERENCES rag_deployments(id) "
    "ON DELETE CASCADE, term text NOT NULL, df integer NOT NULL, PRIMARY KEY (rag_id, term))",
    "CREATE TABLE IF NOT EXISTS rag_lexical_stats (rag_id varchar(64) PRIMARY KEY REFERENCES rag_deployments(id) "
    "ON DELETE CASCADE, chunks bigint NOT NULL, lexemes bigint NOT NULL)",
]
TRIGGERS_DDL = [
    _function("rag_terms_added", _added("new_chunks")),
    _function("rag_terms_removed", _REMOVED),
    "CREATE OR REPLACE TRIGGER rag_chunks_terms_added AFTER INSERT ON rag_chunks "
    "REFERENCING NEW TABLE AS new_chunks FOR EACH STATEMENT EXECUTE FUNCTION rag_terms_added()",
    "CREATE OR REPLACE TRIGGER rag_chunks_terms_removed AFTER DELETE ON rag_chunks "
    "REFERENCING OLD TABLE AS old_chunks FOR EACH STATEMENT EXECUTE FUNCTION rag_terms_removed()",
]
# Chunks written before the triggers existed get their postings and statistics once, when the triggers are created.
BACKFILL = _added("rag_chunks")

# The query terms' df and the RAG's totals; and, for the rest of the search's transaction, no bitmap scans. Both keep
# the reads to what the query asks for whatever the planner's statistics say: taken while a RAG was small (or before
# its upload, as autovacuum's are until it catches up with a large one), they made it hash-join the RAG's whole
# vocabulary for the two or three terms of a query (3,000 chunks: 1.5 ms of a 3 ms search), hence a primary-key
# lookup per term; and read every posting of a term through a bitmap, then sort them, where the impact index gives
# the best `depth` in order (20,000 chunks, a term in all of them: 10 ms against 0.2; at a million, 50 times that).
# A bitmap scan cannot return rows in index order, so without it the lists are read as written.
_STATS = text(
    "SELECT q.lexeme, coalesce((SELECT s.df FROM rag_term_stats AS s WHERE s.rag_id = :rag_id AND s.term = q.lexeme), "
    "0), l.chunks, l.lexemes, set_config('enable_bitmapscan', 'off', true) "
    "FROM rag_lexical_stats AS l "
    "CROSS JOIN (SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', :words))) AS q "
    "WHERE l.rag_id = :rag_id"
)
_LISTS = (
    "SELECT t.term, p.chunk_id, p.tf, p.dl, p.impact FROM unnest(CAST(:terms AS text[])) AS t(term) "
    "CROSS JOIN LATERAL (SELECT r.chunk_id, r.tf, r.dl, r.impact FROM rag_terms AS r {join}"
    "WHERE r.rag_id = :rag_id AND r.term = t.term{filter} ORDER BY r.impact DESC, r.chunk_id LIMIT :depth) AS p"
)
_LISTS_OF_ALL = text(_LISTS.format(join="", filter=""))
_LISTS_OF_FILES = text(
    _LISTS.format(
        join="JOIN rag_chunks AS c ON c.id = r.chunk_id ", filter=" AND c.file_id = ANY(CAST(:file_ids AS text[]))"
    )
)
# A restriction to few chunks is ranked from their postings (pg_restriction), exactly: down the impact-ordered lists
# a restriction passes every posting of a term outside it before finding `depth` inside (three files of 20,000
# one-chunk files: 140 ms against 0.6). One posting per chunk and term read by primary key beats `depth` of a list
# for every chunk the restriction holds among the RAG's while the files hold fewer than sqrt(depth x chunks) chunks.
_OF_FILES = text(
    f"WITH {FEW_CHUNKS} SELECT n.held, p.chunk_id, p.term, p.tf, p.dl FROM n LEFT JOIN LATERAL ("  # noqa: S608
    "SELECT r.chunk_id, r.term, r.tf, r.dl, r.rag_id FROM f CROSS JOIN LATERAL (SELECT * FROM rag_terms AS t "
    "WHERE t.chunk_id = f.id AND t.term = ANY(CAST(:terms AS text[])) OFFSET 0) AS r WHERE n.held <= :few) AS p "
    "ON p.rag_id = :rag_id"  # after the subquery (OFFSET 0): by chunk alone, the primary key is the only index
)
_COMPLETE = text(
    "SELECT chunk_id, term, tf FROM rag_terms WHERE chunk_id = ANY(:ids) AND term = ANY(CAST(:terms AS text[]))"
)


@dataclass(frozen=True)
class Ranking:
    candidates: list[Candidate]
    terms: list[str]  # the lexemes searched
    exact: bool  # proven by the threshold, or every list read to its end
    depth: int  # rows read per term in the last pass


@dataclass
class _Seen:
    dl: int
    tfs: dict[str, int]


async def bm25(
    session: AsyncSession,
    *,
    rag_id: str,
    words: list[str],
    limit: int,
    file_ids: Sequence[str] | None,
    with_dense: bool,
    max_depth: int = MAX_DEPTH,
) -> Ranking:
    """The RAG's BM25 top `limit` for the ORed `words` (common ones left out by `plan_terms`)."""
    rows = (await session.execute(_STATS, {"words": " ".join(words), "rag_id": rag_id})).all()
    found = {str(r[0]): int(r[1]) for r in rows if int(r[1]) > 0}
    if not found:
        return Ranking([], [], exact=True, depth=0)
    chunks, lexemes = int(rows[0][2]), int(rows[0][3])
    cap = common_cap(chunks)
    terms = plan_terms(list(found), list(found.values()), cap, with_dense=with_dense)
    if not terms:
        return Ranking([], [], exact=True, depth=0)
    idf = {t: math.log(1 + (chunks - found[t] + 0.5) / (found[t] + 0.5)) for t in terms}
    mean = lexemes / chunks if chunks else REF_LENGTH
    depth = max(FIRST_DEPTH, 4 * limit)
    if file_ids is not None:
        few = min(math.isqrt(depth * chunks), MAX_FEW)
        if len(file_ids) <= few:  # each file has a chunk at least: more files than `few` are more chunks
            postings = await _postings_of_files(session, rag_id=rag_id, terms=terms, file_ids=file_ids, few=few)
            if postings is not None:
                return Ranking(_best(postings, idf, mean, limit), terms, exact=True, depth=0)
    while True:
        seen, last = await _read_lists(session, rag_id=rag_id, terms=terms, depth=depth, file_ids=file_ids)
        bounds = {t: idf[t] * (K1 + 1) * live_bound(impact, mean) for t, impact in last.items()}
        await _complete(session, seen, terms, bounds=bounds, limit=limit, score=lambda s: _score(s, idf, mean))
        scored = _best(seen, idf, mean, limit)
        # A chunk left unread can at most tie the last one kept; it would come after it as the lists, like the
        # ranking, break ties by chunk id. The tolerance absorbs the float4 rounding of `impact`.
        exact = not last or (len(scored) == limit and scored[-1].score >= sum(bounds.values()) * (1 - 1e-6))
        if exact or depth >= max_depth:
            return Ranking(scored, terms, exact=exact, depth=depth)
        depth = min(max_depth, depth * 4)


def _best(seen: dict[int, _Seen], idf: dict[str, float], mean: float, limit: int) -> list[Candidate]:
    """Best first, ties by chunk id; a Candidate only for those kept (a few hundred chunks are seen: ~40% less time
    than sorting them all as Candidates)."""
    best = heapq.nsmallest(limit, [(-_score(s, idf, mean), chunk_id) for chunk_id, s in seen.items()])
    return [Candidate(chunk_id=chunk_id, score=-negated) for negated, chunk_id in best]


async def _postings_of_files(
    session: AsyncSession, *, rag_id: str, terms: list[str], file_ids: Sequence[str], few: int
) -> dict[int, _Seen] | None:
    """Every posting of the query terms in the files' chunks, when they hold at most `few` chunks (else None)."""
    params = {"rag_id": rag_id, "terms": terms, "file_ids": text_array(file_ids), "few": few}
    seen: dict[int, _Seen] = {}
    for held, chunk_id, term, tf, dl in await session.execute(_OF_FILES, params):
        if held > few:
            return None
        if chunk_id is not None:
            entry = seen.get(chunk_id)
            if entry is None:
                entry = seen[chunk_id] = _Seen(dl, {})
            entry.tfs[term] = tf
    return seen


async def _read_lists(
    session: AsyncSession, *, rag_id: str, terms: list[str], depth: int, file_ids: Sequence[str] | None
) -> tuple[dict[int, _Seen], dict[str, float]]:
    """Each term's best `depth` postings; and, for the lists not read to their end, the impact of their last row."""
    params: dict[str, object] = {"terms": terms, "rag_id": rag_id, "depth": depth}
    statement = _LISTS_OF_ALL
    if file_ids is not None:
        statement, params["file_ids"] = _LISTS_OF_FILES, text_array(file_ids)
    seen: dict[int, _Seen] = {}
    counts: dict[str, int] = {}
    last: dict[str, float] = {}
    # psycopg gives int, str and float already; a chunk's entry is made only when first seen (half the loop's time).
    for term, chunk_id, tf, dl, impact in await session.execute(statement, params):
        entry = seen.get(chunk_id)
        if entry is None:
            entry = seen[chunk_id] = _Seen(dl, {})
        entry.tfs[term] = tf
        counts[term] = counts.get(term, 0) + 1
        last[term] = impact  # rows come best first within a term
    return seen, {t: float(impact) for t, impact in last.items() if counts[t] >= depth}


async def _complete(
    session: AsyncSession,
    seen: dict[int, _Seen],
    terms: list[str],
    *,
    bounds: dict[str, float],
    limit: int,
    score: Callable[[_Seen], float],
) -> None:
    """The tf of the other query terms of the candidates that could still reach the top `limit`.

    A term missing from a candidate's rows is absent from the chunk when its list was read to the end (no bound), and
    otherwise adds at most its list's bound. A candidate whose known score plus those bounds stays below the
    `limit`-th best known score cannot reach the top (completing only raises scores) and keeps its partial score:
    at 1M chunks completing every candidate of 6,400-row lists took a second."""
    known = {chunk_id: score(s) for chunk_id, s in seen.items()}
    floor = heapq.nlargest(limit, known.values())[-1] if len(known) >= limit else 0.0
    wanted = []
    for chunk_id, s in seen.items():
        gap = sum(bound for t, bound in bounds.items() if t not in s.tfs)
        if gap > 0 and known[chunk_id] + gap >= floor:
            wanted.append(chunk_id)
    if not wanted:
        return
    for chunk_id, term, tf in await session.execute(_COMPLETE, {"ids": wanted, "terms": terms}):
        seen[int(chunk_id)].tfs[str(term)] = int(tf)


def live_bound(impact: float, mean: float) -> float:
    """The most a posting of this `impact` can weigh (without idf and k1 + 1) at the RAG's live mean length.

    With a = k1 (1 - b), c = k1 b / REF_LENGTH and r = REF_LENGTH / mean: impact = tf / (tf + a + c dl) and the live
    weight is tf / (tf + a + r c dl) = 1 / (1 + r (1 / impact - 1) + x (1 - r)) with x = a / tf, which dl >= tf
    keeps at most 1 / impact - 1 - c. The largest weight is at the largest x when r >= 1 (tf = 1 if it can be) and
    as x tends to 0 when r < 1. Where the mean is the reference length the bound is the impact itself; for tf = 1 it
    is that posting's live weight, so a list of equal postings (ties) need not be read to its end."""
    a, c, r = K1 * (1 - B), K1 * B / REF_LENGTH, REF_LENGTH / mean
    inverse = 1 / impact
    x = max(0.0, min(a, inverse - 1 - c)) if r >= 1 else 0.0
    return 1 / (1 + r * (inverse - 1) + x * (1 - r))


def _score(seen: _Seen, idf: dict[str, float], mean: float) -> float:
    norm = K1 * (1 - B + B * seen.dl / mean)
    return sum(idf[t] * tf * (K1 + 1) / (tf + norm) for t, tf in seen.tfs.items())
