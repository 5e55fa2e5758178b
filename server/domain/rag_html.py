"""How deeply an HTML document nests, estimated in one linear pass before the HTML parser sees it.

lexbor's tree builder is quadratic in nesting depth: once the stack of open elements is deep (of any elements, spans
included), each `<div>`, and each end tag it has to look for, scans that stack. 8,000 nested divs took 0.1-0.5 s to
parse here, so 80,000 of them (a 1 MB upload) would hold a gateway worker for a minute. The pass counts, in order,
the opening and closing tags of every element that can nest, leaving out what cannot add depth: void elements,
elements whose end tag is optional (a second `<p>` or `<li>` closes the first), and the content of comments,
scripts and styles. It over-counts sloppy HTML that never closes its divs, so the bound is set far above real
documents (rarely deeper than 50). It costs about what parsing costs on a page of millions of tags, and
milliseconds on ordinary ones.
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["MAX_HTML_DEPTH", "html_depth"]

MAX_HTML_DEPTH = 1000

_OPENERS = re.compile(rb"<!--|<script\b|<style\b")
_CLOSERS = {b"<!--": b"-->", b"<script": b"</script", b"<style": b"</style"}
_VOID = ["area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"]
_OPTIONAL_END = ["p", "li", "dt", "dd", "option", "optgroup", "tr", "td", "th", "thead", "tbody", "tfoot"]
_FLAT = [*_VOID, *_OPTIONAL_END, "colgroup", "caption", "rb", "rt", "rtc", "rp", "html", "head", "body"]
_FLAT_TAG = re.compile(rb"</?(?:" + "|".join(_FLAT).encode() + rb")(?![a-z0-9-])")
_CLOSE = re.compile(rb"</(?=[a-z])")
_OPEN = re.compile(rb"<(?=[a-z])")
_STEP = bytes.maketrans(b"()", bytes([1, 255]))  # 255 is -1 as a signed byte
_NOT_STEP = bytes(b for b in range(256) if b not in b"()")


def html_depth(html: str) -> int:
    """The deepest running count of open nestable elements (an upper bound for well-formed HTML).

    Done in C over the whole text, not per tag in Python (a flat 12 MB page has two million tags): every tag that
    cannot nest is cut, each remaining opening tag becomes +1 and each closing tag -1, and the depth is the running
    sum kept from going below zero (a stray closing tag before the others must not hide their nesting)."""
    marks = _markup(html.encode(errors="surrogatepass").lower()).translate(None, b"()")
    marks = _OPEN.sub(b"(", _CLOSE.sub(b")", _FLAT_TAG.sub(b"", marks)))
    steps = np.frombuffer(marks.translate(_STEP, _NOT_STEP), dtype=np.int8)
    if steps.size == 0:
        return 0
    sums = np.cumsum(steps, dtype=np.int64)
    floor = np.minimum.accumulate(np.minimum(sums, 0))
    return int((sums - floor).max())


def _markup(html: bytes) -> bytes:
    """The document without comments, scripts and styles; linear even when they are never closed."""
    pieces, position = [], 0
    while (opener := _OPENERS.search(html, position)) is not None:
        pieces.append(html[position : opener.start()])
        end = html.find(_CLOSERS[opener[0]], opener.end())
        position = len(html) if end < 0 else end + len(_CLOSERS[opener[0]])
    pieces.append(html[position:])
    return b"".join(pieces)
