"""A search restricted to files, on PostgreSQL: the files' ids as one parameter, and the chunks of a few files.

psycopg adapts a Python list element by element in Python (28 ms for the 20,000 file ids a metadata filter every
file meets gives a search), and a bound parameter per id stops at 65,535; `text_array` builds one `text[]` literal
with a few passes of C string methods over the joined ids (well under a millisecond), parsed by the server.

A restriction to few chunks (one document of a large RAG) is searched from those chunks rather than from the RAG's
indexes, which would pass every chunk outside them on the way: `FEW_CHUNKS` finds them file by file through the
file_id index, and their postings or vectors are then read chunk by chunk through primary keys, whatever the
planner's statistics say (stale ones made it scan every chunk for the files)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["FEW_CHUNKS", "text_array"]

_SEPARATOR = "\x00"  # PostgreSQL text cannot hold it, so no value that can name a row contains it

# CTEs for `WITH`: `f`, the ids of the chunks of the files `:file_ids` (each file once however often it is named; of
# any RAG: a reader checks the rag_id of the rows it reads through them), at most `:few` + 1 of them; `n.held`, how
# many (over `:few`: too many to read one by one). A reader gates its reads on `n.held <= :few`, so a restriction
# too large costs `:few` + 1 index entries.
FEW_CHUNKS = (
    "f AS MATERIALIZED (SELECT c.id FROM (SELECT DISTINCT unnest(CAST(:file_ids AS text[])) AS file_id) AS u "
    "CROSS JOIN LATERAL (SELECT id FROM rag_chunks WHERE file_id = u.file_id OFFSET 0) AS c LIMIT :few + 1), "
    "n AS (SELECT count(*) AS held FROM f)"
)


def text_array(values: Sequence[str]) -> str:
    """`values` as a text[] literal, each quoted (inside quotes only `"` and `\\` need a backslash). A value holding
    NUL cannot equal any stored text, so it is left out rather than let it split into two."""
    joined = _SEPARATOR.join(values)
    if joined.count(_SEPARATOR) != max(len(values) - 1, 0):
        return text_array([v for v in values if _SEPARATOR not in v])
    if not values:
        return "{}"
    escaped = joined.replace("\\", "\\\\").replace('"', '\\"')
    return '{"' + escaped.replace(_SEPARATOR, '","') + '"}'
