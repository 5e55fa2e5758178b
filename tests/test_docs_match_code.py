"""Facts the docs state that the code decides: docs/configuration.md lists every setting `server/settings.py` reads,
with its default, and nothing else; the RAG page states the default hybrid search weights a new RAG gets."""

from __future__ import annotations

import re

from server.domain.rags import DEFAULT_DENSE_WEIGHT, DEFAULT_LEXICAL_WEIGHT
from server.settings import load_settings
from tests.readme import DOCS, ROOT

_READ = re.compile(r'_get\(env, "([A-Z0-9_]+)"')
_ROW = re.compile(r"^\| (`SWITCHBOARD_[^|]+)\|([^|]+)\|", re.M)


def _documented() -> dict[str, str]:
    """Variable -> the default column of its row (a row may name several variables: `A` / `B`, or `A`, `B`)."""
    rows = {}
    for names, default in _ROW.findall((DOCS / "configuration.md").read_text()):
        for name in re.findall(r"`(SWITCHBOARD_[A-Z0-9_]+)`", names):
            rows[name] = default.strip()
    return rows


def test_every_setting_is_documented_and_every_row_is_a_setting() -> None:
    read = {f"SWITCHBOARD_{name}" for name in _READ.findall((ROOT / "server" / "settings.py").read_text())}
    assert read, "server/settings.py no longer reads settings through _get"
    assert set(_documented()) == read


def test_plain_defaults_are_the_ones_the_code_uses() -> None:
    """Rows whose default is one backticked value: that value is what load_settings gives for an empty environment
    (compared as text, so `5` matches 5.0 and `false` matches False)."""
    defaults = load_settings({})
    checked = 0
    for name, default in _documented().items():
        plain = re.fullmatch(r"`([^`]*)`(?: \([^)]*\))?", default)
        attribute = name.removeprefix("SWITCHBOARD_").lower()
        if plain is None or not hasattr(defaults, attribute):
            continue
        value = getattr(defaults, attribute)
        shown = str(value).lower() if isinstance(value, bool) else str(value)
        assert shown.removesuffix(".0") == plain[1], f"{name}: documented {plain[1]}, the code uses {value!r}"
        checked += 1
    assert checked > 20, checked


def test_the_rag_page_states_the_default_search_weights() -> None:
    text = " ".join((DOCS / "rag.md").read_text().split())
    dense, lexical = f"{DEFAULT_DENSE_WEIGHT:g}", f"{DEFAULT_LEXICAL_WEIGHT:g}"
    assert f"`denseWeight`/`lexicalWeight` 0\u2013100, default {dense} and {lexical}," in text
    assert f"default weights dense {dense} : lexical {lexical};" in text
    for page in (*DOCS.glob("*.md"), ROOT / "README.md"):  # no other default anywhere
        assert "default 1 each" not in page.read_text(), page
