"""How deep lexbor's stack of open elements gets on an HTML document, found before lexbor parses it.

lexbor's tree builder is quadratic in nesting depth: once its stack of open elements is deep, each `<div>`, `<li>`,
and each end tag it has to look for scans that stack. 8,000 nested divs took 0.1-0.5 s to parse here, so 80,000 of
them (a 1 MB upload) would hold a gateway worker for a minute. Counting tags does not bound that depth: which tags
nest is decided by the HTML tree-construction rules, and every shortcut was a way around the count. `<div></span>`
nests every div (lexbor ignores an end tag that would cross a div), `<li><dd>` nest in each other without end,
`<optgroup>` nests in itself outside a select, a `<script>` inside `<svg>` is markup rather than raw text, a comment
opened inside a `<textarea>` or a CDATA section is text, `<script>` hides no `</script>` behind `<!--<script>`, and
`<p\v>` is no p (\v is no HTML whitespace).

So this module replays lexbor's tree construction (lexbor 3.1, as selectolax bundles it), keeping only what decides
the stack: the tokenizer's states (raw text, RCDATA, script escapes, CDATA in foreign content, comments, attribute
values), the insertion modes, foreign content and its integration points, implied end tags and scopes, the list of
active formatting elements with its reconstruction and the adoption agency algorithm, tables and templates.
`html_depth` is the deepest the stack gets, as lexbor builds it; tests/test_rag_html_depth.py holds documents on
which an earlier pre-scan was wrong. Where the replay meets what it does not follow, it stops following and bounds
the rest by its tags (no start tag adds more than four elements: an implied tbody and tr, or formatting elements
reconstructed once each), which only over-counts: a frameset, a doctype whose quirks mode it cannot tell when a
`<table>` would close a `<p>`, character references that would decide whether three formatting elements are alike,
whether an `<input>` in a table is hidden or an annotation-xml takes HTML, or whether a newline follows `<pre>`.

It reads tags with one regular expression in C and follows them in Python, about 2 µs a tag, in one pass that stops
once the depth passes the limit, and keeps its searches of the stack and of the list of formatting elements in C so
that no document costs it more per tag than lexbor's own scans (within a few times). A 10 MB page of a million tags
takes it 1.9 s, where lexbor takes 0.3 s (the tag count this replaced took 0.4 s); 52 MB of real documentation pages
3.5 s, where lexbor takes 0.4 s.
"""

from __future__ import annotations

import html as _html
import re
from collections.abc import Callable

__all__ = ["MAX_HTML_DEPTH", "html_depth"]

MAX_HTML_DEPTH = 1000

_SPACES = b"\t\n\f\r "
# A tag's attributes as the tokenizer splits them: a quoted value runs to its closing quote (`>` and `<` inside it are
# text), an unquoted one to whitespace or `>`; a `/` right before the closing `>` sets the self-closing flag unless an
# unquoted value took it. Possessive quantifiers: a page of millions of tags, or one endless tag, reads in linear time.
_ATTRIBUTES = (
    rb"(?:[\t\n\f\r ]++|/(?!>)|[^\t\n\f\r />][^\t\n\f\r />=]*+"
    rb"""(?:[\t\n\f\r ]*+=[\t\n\f\r ]*+(?:"[^"]*+(?:"|\Z)|'[^']*+(?:'|\Z)|[^\t\n\f\r >]*+))?)*+"""
)
# Markup in the tokenizer's data state: a tag (groups: the `/` of an end tag, the name, and an empty group when the
# document ends inside the tag, which drops it), a comment (`<!-->` and `<!--->` are whole ones), a DOCTYPE, CDATA
# opener or bogus comment (to the first `>`), and `</>`. A tag without quotes ends at its first `>`.
_TOKEN = re.compile(
    rb"""<(/?)([a-z][^\t\n\f\r />]*+)(?:[^>"']*+>|""" + _ATTRIBUTES + rb"(?:/?>|(\Z)))"
    rb"|<!--(?:-?>|.*?(?:--!?>|\Z))"
    rb"|<!(?!--)[^>]*+(?:>|\Z)|<\?[^>]*+(?:>|\Z)|</(?![a-z])(?!\Z)[^>]*+(?:>|\Z)",
    re.DOTALL,
)
_TAG_REST = re.compile(rb"(" + _ATTRIBUTES + rb")(/?)")  # a tag's attributes and self-closing flag
_ATTRIBUTE = re.compile(
    rb"[\t\n\f\r /]*+([^\t\n\f\r />][^\t\n\f\r />=]*+)"
    rb"""(?:[\t\n\f\r ]*+=[\t\n\f\r ]*+("[^"]*+"?|'[^']*+'?|[^\t\n\f\r >]*+))?"""
)
_RAW_TEXT_END = {
    name: re.compile(rb"</" + name + rb"[\t\n\f\r />]")
    for name in [b"style", b"xmp", b"iframe", b"noembed", b"noframes", b"textarea", b"title"]
}
# Script data: `<!--` escapes it, and inside that `<script>` double-escapes it, so that the next `</script>` does not
# end the script; `-->` leaves both. The match ends where the script's end tag starts, or with the document.
_SCRIPT_NAME = rb"script[\t\n\f\r />]"
_ESCAPED = rb"(?:[^<-]++|-(?!->)|<(?!/?" + _SCRIPT_NAME + rb"))*+"
_DOUBLE_ESCAPED = rb"(?:[^<-]++|-(?!->)|<(?!/" + _SCRIPT_NAME + rb"))*+"
_UNESCAPED = rb"(?:[^<]++|<(?!!--|/" + _SCRIPT_NAME + rb"))*+"
_SCRIPT = re.compile(
    _UNESCAPED + rb"(?:<!(?=--)(?:" + _ESCAPED + b"<" + _SCRIPT_NAME + _DOUBLE_ESCAPED + b"</" + _SCRIPT_NAME
    + rb")*+" + _ESCAPED + b"(?:<" + _SCRIPT_NAME + _DOUBLE_ESCAPED + rb")?(?:-->|(?=</" + _SCRIPT_NAME + rb")|\Z)"
    + _UNESCAPED + rb")*+"
)  # fmt: skip
_START_TAG = re.compile(rb"<[a-z]")
_DOCTYPE = re.compile(
    rb"<!doctype[\t\n\f\r ]*+([^\t\n\f\r >]*+)[\t\n\f\r ]*+"
    rb"""(?:public[\t\n\f\r ]*+(?:"([^"]*)"|'([^']*)')[\t\n\f\r ]*+(?:(?:"([^"]*)"|'([^']*)')[\t\n\f\r ]*+)?"""
    rb"""|system[\t\n\f\r ]*+(?:"([^"]*)"|'([^']*)')[\t\n\f\r ]*+)?>"""
)

# Element categories as lexbor's tag table has them (lexbor/html/tag_res.h). A foreign element's key is its local name
# after "m " (MathML) or "s " (SVG), and "M annotation-xml" is one that is an HTML integration point.
_SPECIAL, _FOREIGN, _SCOPE, _LIST, _BUTTON, _TABLE = 2, 4, 8, 16, 32, 64
_STOPS_LIST_ITEMS = 1  # special, but not address, div or p: where `<li>`, `<dd>` and `<dt>` stop looking
_RESETS_MODE = 128  # what "reset the insertion mode appropriately" looks for
_BOUNDARY = _SPECIAL | _STOPS_LIST_ITEMS | _SCOPE | _LIST | _BUTTON


def _words(text: str, prefixes: tuple[bytes, ...] = (b"",)) -> list[bytes]:
    return [prefix + word.encode() for word in text.split() for prefix in prefixes]


_CATEGORIES: dict[bytes, int] = {}
for _listed, _category in [
    (
        "area article aside base basefont bgsound blockquote body br center col colgroup dd details dir dl dt embed "
        "fieldset figcaption figure footer form frame frameset h1 h2 h3 h4 h5 h6 head header hgroup hr iframe image "
        "img input keygen li link listing main menu meta nav noembed noframes noscript param plaintext pre script "
        "search section source style summary tbody textarea tfoot thead title tr track wbr xmp",
        _SPECIAL | _STOPS_LIST_ITEMS,
    ),
    ("address div p", _SPECIAL),
    ("ol ul", _SPECIAL | _STOPS_LIST_ITEMS | _LIST),
    ("button", _SPECIAL | _STOPS_LIST_ITEMS | _BUTTON),
    ("applet caption marquee object select td th", _BOUNDARY),
    ("html table template", _BOUNDARY | _TABLE),
    (
        "m_mi m_mo m_mn m_ms m_mtext m_annotation-xml M_annotation-xml s_foreignobject s_desc s_title",
        _BOUNDARY | _FOREIGN,
    ),
]:
    for _key in _words(_listed):
        _CATEGORIES[_key.replace(b"_", b" ")] = _category
for _key in _words("td th tr tbody tfoot thead caption colgroup table template head body frameset html"):
    _CATEGORIES[_key] |= _RESETS_MODE
_IN = {c: bytes(1 if b & c else 0 for b in range(256)) for c in [1, 2, 8, 16, 32, 64, 128]}


def _names(names: str, foreign_too: bool = False) -> frozenset[bytes]:
    return frozenset(_words(names, (b"", b"m ", b"s ") if foreign_too else (b"",)))


# lexbor generates implied end tags by local name alone: a foreign <option> goes too.
_IMPLIED = _names("dd dt li optgroup option p rb rp rt rtc", foreign_too=True)
_THOROUGHLY_IMPLIED = _IMPLIED | _names("caption colgroup tbody td tfoot th thead tr", foreign_too=True)
_HEADINGS = [b"h1", b"h2", b"h3", b"h4", b"h5", b"h6"]
_HEADING_NAMES, _DD_DT, _CELLS = frozenset(_HEADINGS), frozenset([b"dd", b"dt"]), frozenset([b"td", b"th"])
_TABLE_SECTIONS = frozenset([b"tbody", b"thead", b"tfoot"])
_MATHML_TEXT = frozenset([b"m mi", b"m mo", b"m mn", b"m ms", b"m mtext"])
_HTML_INTEGRATION = frozenset([b"M annotation-xml", b"s foreignobject", b"s desc", b"s title"])
_TAKES_HTML = _MATHML_TEXT | _HTML_INTEGRATION  # foreign elements whose text follows the HTML rules
# Start tags that leave foreign content (lexbor's list: no "sup"; "font" only with color, face or size).
_BREAKOUT = _names(
    "b big blockquote body br center code dd div dl dt em embed h1 h2 h3 h4 h5 h6 head hr i img li listing menu "
    "meta nobr ol p pre ruby s small span strong strike sub table tt u ul var"
)
_HEADISH = _names("base basefont bgsound link meta noframes script style template title")
_TABLE_START = _names("caption col colgroup tbody tfoot thead td th tr table style script template input form image")
_TABLE_CONTEXT = _names("table template html")
_TABLE_BODY_CONTEXT = _names("tbody tfoot thead template html")
_ROW_CONTEXT = _names("tr template html")
_TABLE_TEXT = _names("table tbody tfoot thead tr")
_CELL_SWITCH = _names("caption col colgroup tbody td tfoot th thead tr")
_IGNORED_IN_TABLE = _CELL_SWITCH | {b"body", b"html"}  # end tags the table modes drop
_SLOW_END = _names(
    "a b big code em font i nobr s small strike strong tt u form template body html br applet marquee object "
    "table tbody tfoot thead tr td th caption col colgroup"
)

# "In body" start tags whose rule is a few fixed steps, in this order: close a p, reconstruct formatting elements,
# insert (and list as a formatting element), push a marker; then the tokenizer's raw text, or the newline rule.
_CLOSE_P, _RECONSTRUCT, _INSERT, _LISTED, _MARKER_AFTER, _RAW, _NEWLINE = 1, 2, 4, 8, 16, 32, 64
_BODY_START: dict[bytes, int] = {}
for _listed, _flags in [
    (
        "address article aside blockquote center details dialog dir div dl fieldset figcaption figure footer header "
        "hgroup main menu nav ol p search section summary ul",
        _CLOSE_P | _INSERT,
    ),
    ("pre listing", _CLOSE_P | _INSERT | _NEWLINE),
    ("plaintext", _CLOSE_P | _INSERT | _RAW),
    ("b big code em font i s small strike strong tt u", _RECONSTRUCT | _INSERT | _LISTED),
    ("applet marquee object", _RECONSTRUCT | _INSERT | _MARKER_AFTER),
    ("area br embed img keygen wbr image", _RECONSTRUCT),
    ("param source track caption col colgroup frame head tbody td tfoot th thead tr body html", 0),
    ("textarea iframe noembed", _INSERT | _RAW),
    ("xmp", _CLOSE_P | _RECONSTRUCT | _INSERT | _RAW),
]:
    _BODY_START.update(dict.fromkeys(_words(_listed), _flags))
_OTHER_START = _RECONSTRUCT | _INSERT
# How "in body" takes a start tag: 0, it reconstructs formatting elements and inserts (any other name too); 2, it
# closes a p and inserts; 3, it reconstructs, inserts and lists the element; 4, it reconstructs (a void element);
# 1, more than that, or a table mode reads the tag itself.
_SLOW_START = (
    _HEADISH
    | _TABLE_START
    | _names(
        "h1 h2 h3 h4 h5 h6 li dd dt form button a nobr table input hr select option optgroup rb rtc rp rt math svg "
        "frameset"
    )
)
_QUICK = (
    dict.fromkeys(_BODY_START, 1)
    | {name: 2 for name, flags in _BODY_START.items() if flags == _CLOSE_P | _INSERT}
    | {name: 3 for name, flags in _BODY_START.items() if flags & _LISTED}
    | {name: 4 for name, flags in _BODY_START.items() if flags == _RECONSTRUCT}
    | dict.fromkeys(_SLOW_START, 1)
)
_TABLE_END = _names("table tbody tfoot thead tr td th caption col colgroup body html template")
_BLOCK_END = _names(
    "address article aside blockquote button center details dialog dir div dl fieldset figcaption figure footer "
    "header hgroup listing main menu nav ol pre search section select summary ul"
)

_QUIRKS_PUBLIC = frozenset([b"-//w3o//dtd w3 html strict 3.0//en//", b"-/w3c/dtd html 4.0 transitional/en", b"html"])
_QUIRKS_PUBLIC_PREFIXES = tuple(
    line.encode()
    for line in """\
+//silmaril//dtd html pro v0r11 19970101//
-//as//dtd html 3.0 aswedit + extensions//
-//advasoft ltd//dtd html 3.0 aswedit + extensions//
-//ietf//dtd html 2.0 level 1//
-//ietf//dtd html 2.0 level 2//
-//ietf//dtd html 2.0 strict level 1//
-//ietf//dtd html 2.0 strict level 2//
-//ietf//dtd html 2.0 strict//
-//ietf//dtd html 2.0//
-//ietf//dtd html 2.1e//
-//ietf//dtd html 3.0//
-//ietf//dtd html 3.2 final//
-//ietf//dtd html 3.2//
-//ietf//dtd html 3//
-//ietf//dtd html level 0//
-//ietf//dtd html level 1//
-//ietf//dtd html level 2//
-//ietf//dtd html level 3//
-//ietf//dtd html strict level 0//
-//ietf//dtd html strict level 1//
-//ietf//dtd html strict level 2//
-//ietf//dtd html strict level 3//
-//ietf//dtd html strict//
-//ietf//dtd html//
-//metrius//dtd metrius presentational//
-//microsoft//dtd internet explorer 2.0 html strict//
-//microsoft//dtd internet explorer 2.0 html//
-//microsoft//dtd internet explorer 2.0 tables//
-//microsoft//dtd internet explorer 3.0 html strict//
-//microsoft//dtd internet explorer 3.0 html//
-//microsoft//dtd internet explorer 3.0 tables//
-//netscape comm. corp.//dtd html//
-//netscape comm. corp.//dtd strict html//
-//o'reilly and associates//dtd html 2.0//
-//o'reilly and associates//dtd html extended 1.0//
-//o'reilly and associates//dtd html extended relaxed 1.0//
-//sq//dtd html 2.0 hotmetal + extensions//
-//softquad software//dtd hotmetal pro 6.0::19990601::extensions to html 4.0//
-//softquad//dtd hotmetal pro 4.0::19971010::extensions to html 4.0//
-//spyglass//dtd html 2.0 extended//
-//sun microsystems corp.//dtd hotjava html//
-//sun microsystems corp.//dtd hotjava strict html//
-//w3c//dtd html 3 1995-03-24//
-//w3c//dtd html 3.2 draft//
-//w3c//dtd html 3.2 final//
-//w3c//dtd html 3.2//
-//w3c//dtd html 3.2s draft//
-//w3c//dtd html 4.0 frameset//
-//w3c//dtd html 4.0 transitional//
-//w3c//dtd html experimental 19960712//
-//w3c//dtd html experimental 970421//
-//w3c//dtd w3 html//
-//w3o//dtd w3 html 3.0//
-//webtechs//dtd mozilla html 2.0//
-//webtechs//dtd mozilla html//
""".splitlines()
)
_QUIRKS_WITHOUT_SYSTEM = (b"-//w3c//dtd html 4.01 frameset//", b"-//w3c//dtd html 4.01 transitional//")
_QUIRKS_SYSTEM = b"http://www.ibm.com/data/dtd/v11/ibmxhtml1-transitional.dtd"

(
    _INITIAL, _BEFORE_HTML, _BEFORE_HEAD, _IN_HEAD, _IN_HEAD_NOSCRIPT, _AFTER_HEAD, _IN_BODY, _IN_TABLE,
    _IN_CAPTION, _IN_COLUMN_GROUP, _IN_TABLE_BODY, _IN_ROW, _IN_CELL, _IN_TEMPLATE,
) = range(14)  # fmt: skip
_FAST_MODES = frozenset([_IN_BODY, _IN_TABLE, _IN_CAPTION, _IN_TABLE_BODY, _IN_ROW, _IN_CELL])
_MARKER = 0  # in the list of active formatting elements; elements listed there are numbered from 1
_MARKER_CODE = b"\x80\0\0\0"


def _code(number: int) -> bytes:
    """Four bytes for a number, of which only the first has its high bit set: a search in a run of them cannot
    find one out of step with the others."""
    return bytes((0x80 | (number >> 21) & 0x7F, (number >> 14) & 0x7F, (number >> 7) & 0x7F, number & 0x7F))


def html_depth(html: str, *, stop_above: int | None = MAX_HTML_DEPTH) -> int:
    """The deepest lexbor's stack of open elements gets on `html` (html, body and the rest), or an upper bound of it.

    The replay ends once the depth passes `stop_above`, returning the depth reached then: past that it would be as
    quadratic as lexbor. None follows the whole document."""
    return _Replay(html.encode(errors="surrogatepass"), stop_above).run()


class _Unfollowed(Exception):
    """The replay met what it does not follow; the rest of the document is bounded by its tags."""


class _TooDeep(Exception):
    """The stack passed the limit: how much deeper it would get does not matter."""


class _Replay:
    """One pass of lexbor's tree construction over a document, keeping the stack of open elements and nothing else.

    Names are read lowercased (the tokenizer lowercases tag and attribute names), attribute values as written."""

    def __init__(self, data: bytes, stop_above: int | None) -> None:
        self.data, self.low = data, data.lower()
        self.limit = (1 << 62) if stop_above is None else stop_above
        self.keys: list[bytes] = []  # the stack of open elements, bottom first
        self.key_codes = bytearray()  # the same as codes of their names, searched in C (see `code`)
        self.open_p = 0  # how many p elements are open: most start tags would close one
        self.ids: list[int] = []  # an element's number where its identity matters (formatting, form), else 0
        self.cats = bytearray()  # each open element's categories, searched in C
        self.open: set[int] = set()  # the numbered elements on the stack
        self.active: list[int] = []  # the list of active formatting elements
        # The same list as codes of each entry's name and of its name and attributes, searched and counted in C: a
        # list a thousand entries long would be scanned in Python by every formatting tag.
        self.active_names, self.active_kinds = bytearray(), bytearray()
        self.codes: dict[object, bytes] = {}
        self.markers = 0
        self.formatting: dict[int, tuple[bytes, int, int, bytes]] = {}  # number -> (name, attributes at, kind)
        self.next_id = 1
        self.mode = _INITIAL
        self.templates: list[int] = []  # the stack of template insertion modes
        self.form = 0  # the form element pointer
        self.head_seen = False
        self.quirks: bool | None = True  # None: a doctype this replay cannot classify
        self.deepest = 0
        self.raw: bytes | None = None  # a start tag just switched the tokenizer to raw text
        self.newline = False  # after <pre> and <listing>, a newline opening the next token is dropped
        self.pending = False  # lexbor holds table text and textarea text to the next token: no depth to note yet
        self.token: re.Match[bytes] | None = None
        self.pos = 0  # where the current token ends

    # The tokenizer's loop, switching to raw text and CDATA where tree construction says so.

    def run(self) -> int:
        low, size, pos = self.low, len(self.low), 0
        try:
            while pos < size:
                resume = self.tokens(pos)
                if resume < 0:
                    break
                pos = resume
        except _Unfollowed:
            rest = len(_START_TAG.findall(low, self.pos))
            return max(self.deepest, len(self.keys) + len(self.active) + 4 * (rest + 1) + 3)
        except _TooDeep:
            return max(self.deepest, len(self.keys), self.limit + 1)
        return max(self.deepest, len(self.keys))

    def tokens(self, pos: int) -> int:  # noqa: PLR0912, PLR0915 (the loop over every tag, flat: calls cost)
        """Reads tokens from `pos` until the tokenizer leaves its data state: where to resume, or -1 at the end."""
        low, keys, cats, ids, active, opened = self.low, self.keys, self.cats, self.ids, self.active, self.open
        active_names, active_kinds, key_codes, codes = self.active_names, self.active_kinds, self.key_codes, self.codes
        quick_of, category_of, slow_end, fast_modes = _QUICK.get, _CATEGORIES.get, _SLOW_END, _FAST_MODES
        fast, in_body, newline = self.mode in fast_modes, self.mode == _IN_BODY, self.newline
        for match in _TOKEN.finditer(low, pos):
            start, stop = match.span()
            if start > pos and (not in_body or newline or (active and active[-1] and active[-1] not in opened)):
                self.pos = stop
                self.text(pos, start, newline=newline)  # else text changes nothing
                fast, in_body = self.mode in fast_modes, self.mode == _IN_BODY
            pos, newline = stop, False
            end, name, eof = match.group(1, 2, 3)
            if name is None:
                resume = self.markup(match)
                if resume >= 0:
                    self.newline = False
                    return resume
                fast, in_body = self.mode in fast_modes, self.mode == _IN_BODY
                continue
            if eof is not None:
                return -1  # the document ends inside this tag, which drops it
            # The shortcut for most tags, where "in body" (to which each table mode sends them) only pops or pushes.
            if fast and not cats[-1] & _FOREIGN:
                if end:
                    if keys[-1] == name and (name not in slow_end or (ids[-1] and active[-1:] == ids[-1:])):
                        if keys.pop() == b"p":
                            self.open_p -= 1
                        cats.pop()
                        del key_codes[-4:]
                        if number := ids.pop():  # a formatting element, which the adoption agency just unlists
                            active.pop()
                            del active_names[-4:], active_kinds[-4:]
                            opened.discard(number)
                        continue
                elif (quick := quick_of(name, 0)) != 1 and (
                    not self.open_p if quick == 2 else not (active and active[-1] and active[-1] not in opened)
                ):
                    if quick == 3:
                        self.token = match
                        self.push_formatting(name)
                    elif quick != 4:
                        keys.append(name)
                        key_codes += codes.get(name) or self.code(name)
                        if name == b"p":
                            self.open_p += 1
                        cats.append(category_of(name, 0))
                        ids.append(0)
                    if len(keys) > self.deepest:
                        self.note()
                    continue
            self.pos, self.token, self.newline = stop, match, False
            self.tag(end == b"/", name)
            fast, in_body, newline = self.mode in fast_modes, self.mode == _IN_BODY, self.newline
            if len(keys) > self.deepest:
                self.note()
            if self.raw is not None:
                return self.skip_raw(pos)
        if pos < len(low):
            self.text(pos, len(low), newline=newline)
        return -1

    def markup(self, match: re.Match[bytes]) -> int:
        """Comments change nothing; a DOCTYPE sets the quirks mode; CDATA is text, in foreign content only."""
        low, start = self.low, match.start()
        if low.startswith(b"<![cdata[", start) and self.cats and self.cats[-1] & _FOREIGN:
            if self.data.startswith(b"<![CDATA[", start):
                return self.cdata(start + 9)
        elif self.mode == _INITIAL and low.startswith(b"<!doctype", start):
            self.doctype(match)
        return -1

    def tag(self, end: bool, name: bytes) -> None:
        if (
            self.mode in _FAST_MODES
            and not self.cats[-1] & _FOREIGN
            and (self.mode == _IN_BODY or name not in (_TABLE_END if end else _TABLE_START))
        ):
            self.in_body(end, name)  # where each table mode would send it
            return
        while not self.dispatch(end, name):
            pass

    def note(self, text: bool = False) -> None:
        if text and self.pending:
            return
        self.pending = False
        if len(self.keys) > self.deepest:
            self.deepest = len(self.keys)
            if self.deepest > self.limit:
                raise _TooDeep

    def cdata(self, pos: int) -> int:
        end = self.low.find(b"]]>", pos)
        end = len(self.low) if end < 0 else end
        if end > pos:
            self.text(pos, end)
        return end + 3

    def skip_raw(self, pos: int) -> int:
        """Past a raw text element's content: where tokenizing resumes."""
        name, self.raw = self.raw, None
        assert name is not None
        low, size = self.low, len(self.low)
        if name == b"plaintext":
            self.pos = size
            self.text(pos, size)  # lexbor reads it in the current insertion mode, not the text one
            return -1
        if name == b"script":
            found = _SCRIPT.match(low, pos)
            end = found.end() if found else size
        else:
            found = _RAW_TEXT_END[name].search(low, pos)
            end = found.start() if found else size
        if name == b"textarea":  # likewise, after dropping a first newline; its end tag is a plain end tag
            self.pending = True
            self.text(pos, end, newline=True)
            return end
        if end >= size:
            return -1
        self.pop()  # the end tag, in the text insertion mode
        tag = _TOKEN.match(low, end)
        return tag.end() if tag is not None and tag[3] is None else -1

    def text(self, start: int, end: int, newline: bool = False) -> None:
        keys, low = self.keys, self.low
        if newline:
            start = self.past_newline(start, end)
        if start >= end or (self.cats and self.cats[-1] & _FOREIGN and keys[-1] not in _TAKES_HTML):
            return  # text in foreign content reconstructs nothing
        mode = self.mode
        if mode in (_IN_BODY, _IN_CELL, _IN_CAPTION, _IN_TEMPLATE):
            if self.active and low.count(0, start, end) < end - start:  # NUL alone is dropped
                self.reconstruct()
        elif mode in (_IN_TABLE, _IN_TABLE_BODY, _IN_ROW):
            if keys[-1] not in _TABLE_TEXT:
                if self.active and low.count(0, start, end) < end - start:
                    self.reconstruct()
            elif self.active and _non_space(low[start:end].replace(b"\0", b"")):
                self.reconstruct()
                self.pending = True
        elif _non_space(low[start:end]):
            if mode == _IN_COLUMN_GROUP:
                if keys[-1] != b"colgroup":
                    return
                self.pop()
                self.mode = _IN_TABLE
            else:
                _MODES[mode](self, False, b"")  # that mode's "anything else"
            self.text(start, end)
        self.note(text=True)

    def past_newline(self, start: int, end: int) -> int:
        low = self.low
        if low.startswith(b"\r\n", start):
            return start + 2
        if low[start : start + 1] in (b"\n", b"\r"):
            return start + 1
        if low[start : start + 1] == b"&":
            decoded = _html.unescape(low[start:end].decode(errors="surrogatepass"))
            if decoded == "\n":
                return end
            if decoded.startswith("\n"):
                raise _Unfollowed  # an encoded newline and more: not worth following
        return start

    def doctype(self, match: re.Match[bytes]) -> None:
        self.mode = _BEFORE_HTML
        found = _DOCTYPE.fullmatch(self.low, match.start(), match.end())
        if found is None:
            self.quirks = None
            return
        name, public, system = found[1], found[2] or found[3] or b"", found[4] or found[5] or found[6] or found[7]
        system = system or b""
        self.quirks = name != b"html" or bool(
            (public and (public in _QUIRKS_PUBLIC or public.startswith(_QUIRKS_PUBLIC_PREFIXES)))
            or system == _QUIRKS_SYSTEM
            or (public and not system and public.startswith(_QUIRKS_WITHOUT_SYSTEM))
        )

    # The stack of open elements.

    def push(self, key: bytes, number: int = 0, foreign: int = 0) -> None:
        self.keys.append(key)
        self.key_codes += self.codes.get(key) or self.code(key)
        if key == b"p":
            self.open_p += 1
        self.ids.append(number)
        self.cats.append(_CATEGORIES.get(key, foreign))
        if number:
            self.open.add(number)

    def pop(self) -> None:
        if self.keys.pop() == b"p":
            self.open_p -= 1
        self.cats.pop()
        del self.key_codes[-4:]
        number = self.ids.pop()
        if number:
            self.open.discard(number)

    def pop_to(self, index: int) -> None:
        """Pops the element at `index` and all above it."""
        self.open.difference_update(self.ids[index:])
        if self.open_p:
            self.open_p -= self.keys[index:].count(b"p")
        del self.keys[index:], self.ids[index:], self.cats[index:], self.key_codes[4 * index :]

    def remove(self, index: int) -> None:
        self.open.discard(self.ids[index])
        if self.keys[index] == b"p":
            self.open_p -= 1
        del self.keys[index], self.ids[index], self.cats[index], self.key_codes[4 * index : 4 * index + 4]

    def find(self, key: bytes, above: int = -1) -> int:
        """The index of the topmost `key` above index `above`, or -1."""
        found = self.key_codes.rfind(self.code(key), 4 * above + 4)
        return found >> 2 if found >= 0 else -1

    def topmost(self, category: int, start: int = 0) -> int:
        return self.cats.translate(_IN[category]).rfind(1, start)

    def in_scope(self, wanted: bytes | frozenset[bytes], category: int = _SCOPE) -> int:
        """The index of the topmost element named `wanted` (or one of them), if no element of `category` is above it;
        else -1."""
        keys, cats = self.keys, self.cats
        one = isinstance(wanted, bytes)
        for index in range(len(keys) - 1, max(len(keys) - 5, -1), -1):  # mostly decided near the top
            if keys[index] == wanted if one else keys[index] in wanted:
                return index
            if cats[index] & category:
                return -1
        boundary = self.topmost(category) - 1
        return self.find(wanted, boundary) if isinstance(wanted, bytes) else max(self.find(k, boundary) for k in wanted)

    def implied_end_tags(self, keep: bytes = b"", implied: frozenset[bytes] = _IMPLIED) -> None:
        keys = self.keys
        while keys[-1] in implied and keys[-1] != keep:
            self.pop()

    def pop_through(self, key: bytes, keep: bytes = b"") -> None:
        """Generates implied end tags but for `keep`, then pops up to the topmost `key`."""
        self.implied_end_tags(keep)
        self.pop_to(self.find(key))

    def close_p(self) -> None:
        if self.open_p and self.in_scope(b"p", _BUTTON) >= 0:
            self.pop_through(b"p", b"p")

    def clear_to(self, contexts: frozenset[bytes]) -> None:
        while self.keys[-1] not in contexts:
            self.pop()

    # The list of active formatting elements.

    def code(self, key: object) -> bytes:
        """The code of an element name (or of a name and attributes), in `key_codes` and the formatting list."""
        found = self.codes.get(key)
        if found is None:
            found = self.codes[key] = _code(len(self.codes) + 1)
        return found

    def numbered(self, name: bytes, start: int = 0, end: int = 0, kind: bytes = b"") -> int:
        number = self.next_id
        self.next_id += 1
        self.formatting[number] = (name, start, end, kind)
        return number

    def list_append(self, number: int) -> None:
        self.active.append(number)
        if number:
            self.active_names += self.code(self.formatting[number][0])
            self.active_kinds += self.formatting[number][3]
        else:
            self.active_names += _MARKER_CODE
            self.active_kinds += _MARKER_CODE
            self.markers += 1

    def list_insert(self, index: int, number: int) -> None:
        self.active.insert(index, number)
        self.active_names[4 * index : 4 * index] = self.code(self.formatting[number][0])
        self.active_kinds[4 * index : 4 * index] = self.formatting[number][3]

    def list_delete(self, index: int) -> None:
        if self.active[index] == _MARKER:
            self.markers -= 1
        del self.active[index]
        del self.active_names[4 * index : 4 * index + 4], self.active_kinds[4 * index : 4 * index + 4]

    def list_remove(self, number: int) -> None:
        if number in self.active:
            self.list_delete(self.active.index(number))

    def after_marker(self) -> int:
        """Where the entries after the last marker start, in the code arrays."""
        return self.active_names.rfind(_MARKER_CODE) + 4 if self.markers else 0

    def last_listed(self, name: bytes) -> int:
        """The index of the last entry after the last marker that is a `name` element, or -1."""
        found = self.active_names.rfind(self.code(name), self.after_marker())
        return found // 4 if found >= 0 else -1

    def reconstruct(self) -> None:
        active, opened = self.active, self.open
        last = active[-1]
        if last == _MARKER or last in opened:
            return
        first = len(active) - 1
        while first:
            first -= 1
            if active[first] == _MARKER or active[first] in opened:
                first += 1
                break
        for index in range(first, len(active)):
            active[index] = self.numbered(*self.formatting[active[index]])  # its codes stay
            self.push(self.formatting[active[index]][0], active[index])

    def clear_to_marker(self) -> None:
        marker = 0
        if self.markers:
            marker = self.active_names.rfind(_MARKER_CODE)
            self.markers -= 1
        del self.active[marker // 4 :], self.active_names[marker:], self.active_kinds[marker:]

    def push_formatting(self, name: bytes) -> None:
        """Inserts a formatting element and lists it, dropping the earliest of three alike after the last marker."""
        match = self.token
        assert match is not None
        start, end = match.end(2), match.end() - 1  # where its attributes are written
        code = kind = self.codes.get(name) or self.code(name)
        # An element without attributes is of the kind its name codes; no two <a> are listed after a marker, so
        # theirs never matter either.
        if name != b"a" and self.data[start:end].strip(b"\t\n\f\r /"):
            kind = self.code((name, _attribute_set(self.data[start:end])))
        number = self.numbered(name, start, end, kind)
        self.keys.append(name)
        self.key_codes += code
        self.ids.append(number)
        self.cats.append(0)
        self.open.add(number)
        if len(self.active) >= 3 and self.active_names.count(code, after := self.after_marker()) >= 3:
            unsure = self.code((name, None))
            if kind == unsure or self.active_kinds.count(unsure, after):
                raise _Unfollowed  # alike or not once character references are read: not worth following
            if self.active_kinds.count(kind, after) >= 3:
                self.list_delete(self.active_kinds.find(kind, after) // 4)
        self.active.append(number)
        self.active_names += code
        self.active_kinds += kind

    def adoption_agency(self, subject: bytes) -> bool:
        """lexbor's adoption agency algorithm, on the stack; True when "any other end tag" is to run instead."""
        keys, ids, active = self.keys, self.ids, self.active
        if keys[-1] == subject and (not ids[-1] or active[-1:] == ids[-1:]):
            # unlisted: popped; or the last listed, where the algorithm comes to popping it and unlisting it
            if ids[-1]:
                self.list_delete(len(active) - 1)
            self.pop()
            return False
        if keys[-1] == subject and ids[-1] not in active:
            self.pop()
            return False
        for _ in range(8):
            position = self.last_listed(subject)
            if position < 0:
                return True
            element = active[position]
            if element not in self.open:
                self.list_delete(position)
                return False
            at = ids.index(element)
            if self.topmost(_SCOPE) > at:
                return False
            furthest = self.cats.translate(_IN[_SPECIAL]).find(1, at + 1)
            if furthest < 0:
                self.pop_to(at)
                self.list_delete(position)
                return False
            self.adopt(element, position, furthest)
        return False

    def adopt(self, element: int, position: int, furthest: int) -> None:
        """Steps 12-20 of the adoption agency: what happens to the stack and the list."""
        ids, active, formatting = self.ids, self.active, self.formatting
        bookmark, node, inner, last_is_furthest = position, furthest, 0, True
        while True:
            inner += 1
            node -= 1
            entry = ids[node]
            if entry == element:
                break
            listed = active.index(entry) if entry and entry in active else -1
            if inner > 3 and listed >= 0:
                self.list_delete(listed)
                listed = -1
            if listed < 0:
                self.remove(node)
                furthest -= 1
                continue
            clone = self.numbered(*formatting[entry])
            active[listed] = ids[node] = clone  # its codes stay: the same name and attributes
            self.open.discard(entry)
            self.open.add(clone)
            if last_is_furthest:
                bookmark = listed + 1
            last_is_furthest = False
        clone = self.numbered(*formatting[element])
        if position < len(active):  # by the index found before the loop above, as lexbor does
            self.list_delete(position)
        self.list_insert(min(bookmark, len(active)), clone)
        self.remove(ids.index(element))
        name = formatting[element][0]
        self.keys.insert(furthest, name)
        self.key_codes[4 * furthest : 4 * furthest] = self.code(name)
        ids.insert(furthest, clone)
        self.cats.insert(furthest, _CATEGORIES.get(name, 0))
        self.open.add(clone)

    # Tree construction: the dispatcher and foreign content.

    def dispatch(self, end: bool, name: bytes) -> bool:
        keys = self.keys
        if self.cats and self.cats[-1] & _FOREIGN:
            current = keys[-1]
            if end or not (
                (current in _MATHML_TEXT and name not in (b"mglyph", b"malignmark"))
                or (current == b"m annotation-xml" and name == b"svg")
                or current in _HTML_INTEGRATION
            ):
                return self.foreign(end, name)
        return _MODES[self.mode](self, end, name)

    def foreign(self, end: bool, name: bytes) -> bool:
        keys = self.keys
        if not end and (name in _BREAKOUT or (name == b"font" and self.has_attribute(b"color", b"face", b"size"))):
            self.break_out()
            return _MODES[self.mode](self, end, name)
        if not end:
            key = keys[-1][:2].lower() + name  # in the namespace of the current node
            if key == b"m annotation-xml":
                encoding = self.attribute(b"encoding")
                if encoding is not None and encoding.lower() in (b"text/html", b"application/xhtml+xml"):
                    key = b"M annotation-xml"
            self.push(key, 0, _FOREIGN)
            if self.closing_slash():
                self.pop()
            return True
        if name == b"script" and keys[-1] == b"s script":
            self.pop()
            return True
        if name in (b"p", b"br"):
            self.break_out()
            return _MODES[self.mode](self, end, name)
        index = len(keys) - 1
        while index:
            if keys[index][2:] == name:
                self.pop_to(index)
                return True
            index -= 1
            if not self.cats[index] & _FOREIGN:
                break
        return _MODES[self.mode](self, end, name)

    def break_out(self) -> None:
        keys = self.keys
        while self.cats[-1] & _FOREIGN and keys[-1] not in _TAKES_HTML:
            self.pop()

    def closing_slash(self) -> bool:
        rest = self.rest()
        return bool(rest[2])

    def rest(self) -> re.Match[bytes]:
        """The current tag's attributes (group 1) and self-closing flag (group 2)."""
        match = self.token
        assert match is not None
        rest = _TAG_REST.match(self.low, match.end(2))
        assert rest is not None
        return rest

    def has_attribute(self, *wanted: bytes) -> bool:
        rest = self.rest()
        return any(found[1] in wanted for found in _ATTRIBUTE.finditer(self.low, rest.start(1), rest.end(1)))

    def attribute(self, wanted: bytes) -> bytes | None:
        """The value of the current tag's first attribute named `wanted`, or None."""
        rest = self.rest()
        for found in _ATTRIBUTE.finditer(self.low, rest.start(1), rest.end(1)):
            if found[1] == wanted:
                value = _unquote(found[2])
                if b"&" in value or b"\0" in value or b"\r" in value:
                    raise _Unfollowed  # character references: not worth following
                return value
        return None

    def reset_mode(self) -> None:
        index = self.topmost(_RESETS_MODE)
        key = self.keys[index]
        if key in (b"td", b"th"):
            self.mode = _IN_CELL
        elif key in (b"tbody", b"tfoot", b"thead"):
            self.mode = _IN_TABLE_BODY
        elif key == b"template":
            self.mode = self.templates[-1]
        elif key == b"html":
            self.mode = _AFTER_HEAD if self.head_seen else _BEFORE_HEAD
        elif key == b"frameset":
            raise _Unfollowed
        else:
            modes = {b"tr": _IN_ROW, b"caption": _IN_CAPTION, b"colgroup": _IN_COLUMN_GROUP, b"table": _IN_TABLE}
            self.mode = _IN_HEAD if key == b"head" else modes.get(key, _IN_BODY)

    # The insertion modes before the body.

    def initial(self, end: bool, name: bytes) -> bool:
        self.mode = _BEFORE_HTML
        return False

    def before_html(self, end: bool, name: bytes) -> bool:
        if end and name not in (b"head", b"body", b"html", b"br"):
            return True
        self.push(b"html")
        self.mode = _BEFORE_HEAD
        return not end and name == b"html"

    def before_head(self, end: bool, name: bytes) -> bool:
        if (not end and name == b"html") or (end and name not in (b"head", b"body", b"html", b"br")):
            return True
        self.push(b"head")
        self.head_seen = True
        self.mode = _IN_HEAD
        return not end and name == b"head"

    def in_head(self, end: bool, name: bytes) -> bool:
        if not end and name in _HEADISH | {b"html", b"head", b"noscript"}:
            return self.in_head_start(name)
        if end and name == b"head":
            self.pop()
            self.mode = _AFTER_HEAD
            return True
        if end and name == b"template":
            self.template_end(name)
            return True
        if end and name not in (b"body", b"html", b"br"):
            return True
        self.pop()
        self.mode = _AFTER_HEAD
        return False

    def in_head_start(self, name: bytes) -> bool:
        if name in (b"title", b"style", b"noframes", b"script"):
            self.push(name)
            self.raw = name
        elif name == b"noscript":  # scripting is off: its content is markup
            self.push(name)
            self.mode = _IN_HEAD_NOSCRIPT
        elif name == b"template":
            self.push(name)
            self.list_append(_MARKER)
            self.mode = _IN_TEMPLATE
            self.templates.append(_IN_TEMPLATE)
        return True

    def in_head_noscript(self, end: bool, name: bytes) -> bool:
        if not end and name in (b"basefont", b"bgsound", b"link", b"meta", b"noframes", b"style"):
            return self.in_head_start(name)
        if (not end and name in (b"html", b"head", b"noscript")) or (end and name not in (b"noscript", b"br")):
            return True
        self.pop()
        self.mode = _IN_HEAD
        return end and name == b"noscript"

    def after_head(self, end: bool, name: bytes) -> bool:
        if not end and name in (b"html", b"head"):
            return True
        if not end and name == b"body":
            self.push(b"body")
            self.mode = _IN_BODY
            return True
        if not end and name == b"frameset":
            raise _Unfollowed
        if not end and name in _HEADISH:
            at = len(self.keys)
            self.push(b"head")  # the head element, back on the stack for this token
            self.in_head_start(name)
            self.remove(at)
            return True
        if end and name == b"template":
            return self.in_head(end, name)
        if end and name not in (b"body", b"html", b"br"):
            return True
        self.push(b"body")
        self.mode = _IN_BODY
        return False

    # "In body".

    def in_body(self, end: bool, name: bytes) -> bool:
        if end:
            _BODY_END.get(name, _Replay.any_other_end)(self, name)
            return True
        special = _BODY_SPECIAL.get(name)
        if special is not None:
            return special(self, name)
        self.body_start(name, _BODY_START.get(name, _OTHER_START))
        return True

    def body_start(self, name: bytes, flags: int) -> None:
        if flags & _CLOSE_P:
            self.close_p()
        if flags & _RECONSTRUCT and self.active:
            self.reconstruct()
        if flags & _LISTED:
            self.push_formatting(name)
        elif flags & _INSERT:
            self.push(name)
        if flags & _MARKER_AFTER:
            self.list_append(_MARKER)
        if flags & _RAW:
            self.raw = name
        if flags & _NEWLINE:
            self.newline = True

    def heading(self, name: bytes) -> bool:
        self.close_p()
        if self.keys[-1] in _HEADINGS:
            self.pop()
        self.push(name)
        return True

    def list_item(self, name: bytes) -> bool:
        index = self.in_scope(b"li" if name == b"li" else _DD_DT, _STOPS_LIST_ITEMS)
        if index >= 0:
            found = self.keys[index]
            self.pop_through(found, found)
        self.close_p()
        self.push(name)
        return True

    def form_start(self, name: bytes) -> bool:
        in_template = self.find(b"template") >= 0
        if self.form and not in_template:
            return True
        self.close_p()
        number = self.numbered(name)
        self.push(name, number)
        if not in_template:
            self.form = number
        return True

    def button(self, name: bytes) -> bool:
        if self.in_scope(b"button") >= 0:
            self.pop_through(b"button")
        self.body_start(name, _OTHER_START)
        return True

    def anchor(self, name: bytes) -> bool:
        index = self.last_listed(b"a")
        if index >= 0:
            entry = self.active[index]
            self.adoption_agency(b"a")
            self.list_remove(entry)
            if entry in self.open:
                self.remove(self.ids.index(entry))
        self.body_start(name, _RECONSTRUCT | _LISTED)
        return True

    def nobr(self, name: bytes) -> bool:
        if self.active:
            self.reconstruct()
        if self.in_scope(b"nobr") >= 0:
            if self.adoption_agency(b"nobr"):
                self.any_other_end(b"nobr")
            if self.active:
                self.reconstruct()
        self.push_formatting(name)
        return True

    def table(self, name: bytes) -> bool:
        if self.quirks is None and self.in_scope(b"p", _BUTTON) >= 0:
            raise _Unfollowed  # quirks mode would keep the p open
        if not self.quirks:
            self.close_p()
        self.push(name)
        self.mode = _IN_TABLE
        return True

    def input(self, name: bytes) -> bool:
        index = self.in_scope(b"select")
        if index >= 0:
            self.pop_to(index)
        if self.active:
            self.reconstruct()
        return True

    def hr(self, name: bytes) -> bool:
        self.close_p()
        if self.in_scope(b"select") >= 0:
            self.implied_end_tags()
        return True

    def select(self, name: bytes) -> bool:
        index = self.in_scope(b"select")
        if index >= 0:
            self.pop_to(index)
        else:
            self.body_start(name, _OTHER_START)
        return True

    def option(self, name: bytes) -> bool:
        if self.in_scope(b"select") >= 0:
            self.implied_end_tags(b"optgroup" if name == b"option" else b"")
        elif self.keys[-1] == b"option":
            self.pop()
        self.body_start(name, _OTHER_START)
        return True

    def ruby(self, name: bytes) -> bool:
        if self.in_scope(b"ruby") >= 0:
            self.implied_end_tags(b"rtc" if name in (b"rp", b"rt") else b"")
        self.push(name)
        return True

    def foreign_root(self, name: bytes) -> bool:
        if self.active:
            self.reconstruct()
        self.push((b"m " if name == b"math" else b"s ") + name, 0, _FOREIGN)
        if self.closing_slash():
            self.pop()
        return True

    def frameset(self, name: bytes) -> bool:
        if len(self.keys) > 1 and self.keys[1] == b"body":
            raise _Unfollowed
        return True

    def block_end(self, name: bytes) -> None:
        if self.in_scope(name) >= 0:
            self.pop_through(name)

    def formatting_end(self, name: bytes) -> None:
        if self.adoption_agency(name):
            self.any_other_end(name)

    def p_end(self, name: bytes) -> None:
        if self.in_scope(name, _BUTTON) >= 0:
            self.pop_through(name, name)

    def li_end(self, name: bytes) -> None:
        if self.in_scope(name, _LIST) >= 0:
            self.pop_through(name, name)

    def dd_dt_end(self, name: bytes) -> None:
        if self.in_scope(name) >= 0:
            self.pop_through(name, name)

    def heading_end(self, name: bytes) -> None:
        if self.in_scope(_HEADING_NAMES) >= 0:
            self.implied_end_tags()
            self.pop_to(max(self.find(heading) for heading in _HEADINGS))

    def form_end(self, name: bytes) -> None:
        if self.find(b"template") >= 0:
            if self.in_scope(name) >= 0:
                self.pop_through(name)
            return
        element, self.form = self.form, 0
        if element in self.open and self.topmost(_SCOPE) < self.ids.index(element):
            self.implied_end_tags()
            self.remove(self.ids.index(element))  # only the form: what was opened inside it stays open

    def marker_end(self, name: bytes) -> None:
        if self.in_scope(name) >= 0:
            self.pop_through(name)
            self.clear_to_marker()

    def br_end(self, name: bytes) -> None:
        if self.active:
            self.reconstruct()

    def template_end(self, name: bytes) -> None:
        if self.find(b"template") < 0:
            return
        self.implied_end_tags(implied=_THOROUGHLY_IMPLIED)
        self.pop_to(self.find(b"template"))
        self.clear_to_marker()
        self.templates.pop()
        self.reset_mode()

    def ignore(self, name: bytes) -> None:
        pass

    def any_other_end(self, name: bytes) -> None:
        index = self.find(name, self.topmost(_SPECIAL) - 1)
        if index >= 0:
            self.pop_through(name, name)

    # Tables and templates.

    def in_table(self, end: bool, name: bytes) -> bool:
        if end:
            if name == b"table":
                index = self.in_scope(name, _TABLE)
                if index >= 0:
                    self.pop_to(index)
                    self.reset_mode()
            elif name == b"template":
                self.template_end(name)
            elif name not in _IGNORED_IN_TABLE:
                self.in_body(end, name)
            return True
        if name in _TABLE_START:
            return self.in_table_start(name)
        self.in_body(end, name)  # lexbor ignores what "in body" answers here: an <image> is lost
        return True

    def in_table_start(self, name: bytes) -> bool:
        if name in (b"style", b"script", b"template"):
            return self.in_head_start(name)
        if name == b"table":
            index = self.in_scope(name, _TABLE)
            if index >= 0:
                self.pop_to(index)
                self.reset_mode()
            return index < 0
        if name == b"input":
            value = self.attribute(b"type")
            if value is None or value.lower() != b"hidden":
                self.in_body(False, name)
            return True
        if name == b"form":
            if not self.form and self.find(b"template") < 0:
                self.form = self.numbered(name)  # inserted and popped at once
            return True
        if name == b"image":
            return True
        self.clear_to(_TABLE_CONTEXT)
        if name == b"caption":
            self.list_append(_MARKER)
            self.push(name)
            self.mode = _IN_CAPTION
            return True
        if name in (b"colgroup", b"col"):
            self.push(b"colgroup")
            self.mode = _IN_COLUMN_GROUP
            return name == b"colgroup"
        self.push(name if name in (b"tbody", b"tfoot", b"thead") else b"tbody")
        self.mode = _IN_TABLE_BODY
        return name in (b"tbody", b"tfoot", b"thead")

    def in_table_body(self, end: bool, name: bytes) -> bool:
        if not end and name in (b"tr", b"th", b"td"):
            self.clear_to(_TABLE_BODY_CONTEXT)
            self.push(b"tr")
            self.mode = _IN_ROW
            return name == b"tr"
        if end and name in (b"tbody", b"tfoot", b"thead"):
            if self.in_scope(name, _TABLE) >= 0:
                self.close_table_part(_TABLE_BODY_CONTEXT, _IN_TABLE)
            return True
        if (not end and name in (b"caption", b"col", b"colgroup", b"tbody", b"tfoot", b"thead")) or (
            end and name == b"table"
        ):
            if self.in_scope(_TABLE_SECTIONS, _TABLE) < 0:
                return True
            self.close_table_part(_TABLE_BODY_CONTEXT, _IN_TABLE)
            return False
        if end and name in _IGNORED_IN_TABLE:
            return True
        return self.in_table(end, name)

    def close_table_part(self, context: frozenset[bytes], mode: int) -> None:
        self.clear_to(context)
        self.pop()
        self.mode = mode

    def in_row(self, end: bool, name: bytes) -> bool:
        if not end and name in (b"th", b"td"):
            self.clear_to(_ROW_CONTEXT)
            self.push(name)
            self.mode = _IN_CELL
            self.list_append(_MARKER)
            return True
        if end and name == b"tr":
            if self.in_scope(b"tr", _TABLE) >= 0:
                self.close_table_part(_ROW_CONTEXT, _IN_TABLE_BODY)
            return True
        closes = (not end and name in _CELL_SWITCH) or (end and name == b"table")
        if closes or (end and name in (b"tbody", b"tfoot", b"thead")):
            if (end and not closes and self.in_scope(name, _TABLE) < 0) or self.in_scope(b"tr", _TABLE) < 0:
                return True
            self.close_table_part(_ROW_CONTEXT, _IN_TABLE_BODY)
            return False
        if end and name in _IGNORED_IN_TABLE:
            return True
        return self.in_table(end, name)

    def in_cell(self, end: bool, name: bytes) -> bool:
        if end and name in (b"td", b"th"):
            if self.in_scope(name, _TABLE) >= 0:
                self.close_cell(name)
            return True
        if end and name in (b"body", b"caption", b"col", b"colgroup", b"html"):
            return True
        if (end and name in (b"table", b"tbody", b"tfoot", b"thead", b"tr")) or (not end and name in _CELL_SWITCH):
            if (self.in_scope(name, _TABLE) if end else self.in_scope(_CELLS, _TABLE)) < 0:
                return True
            self.close_cell(b"")
            return False
        return self.in_body(end, name)

    def close_cell(self, name: bytes) -> None:
        self.implied_end_tags()
        self.pop_to(self.find(name) if name else max(self.find(b"td"), self.find(b"th")))
        self.clear_to_marker()
        self.mode = _IN_ROW

    def in_caption(self, end: bool, name: bytes) -> bool:
        if (end and name in (b"caption", b"table")) or (not end and name in _CELL_SWITCH):
            if self.in_scope(b"caption", _TABLE) < 0:
                return True
            self.pop_through(b"caption")
            self.clear_to_marker()
            self.mode = _IN_TABLE
            return end and name == b"caption"
        if end and name in _IGNORED_IN_TABLE:
            return True
        return self.in_body(end, name)

    def in_column_group(self, end: bool, name: bytes) -> bool:
        if name == b"template":
            return self.in_head(end, name)
        if (not end and name in (b"html", b"col")) or (end and name == b"col"):
            return True
        if self.keys[-1] != b"colgroup":
            return True
        self.pop()
        self.mode = _IN_TABLE
        return end and name == b"colgroup"

    def in_template(self, end: bool, name: bytes) -> bool:
        if end:
            return self.in_head(end, name) if name == b"template" else True
        if name in _HEADISH:
            return self.in_head_start(name)
        if name in (b"caption", b"colgroup", b"tbody", b"tfoot", b"thead"):
            mode = _IN_TABLE
        else:
            modes = {b"col": _IN_COLUMN_GROUP, b"tr": _IN_TABLE_BODY, b"td": _IN_ROW, b"th": _IN_ROW}
            mode = modes.get(name, _IN_BODY)
        self.templates[-1] = self.mode = mode
        return False


# The insertion modes by number, each saying whether it used the token up (else it is reprocessed), and "in body"
# by tag name.
_MODES: list[Callable[[_Replay, bool, bytes], bool]] = [
    _Replay.initial, _Replay.before_html, _Replay.before_head, _Replay.in_head, _Replay.in_head_noscript,
    _Replay.after_head, _Replay.in_body, _Replay.in_table, _Replay.in_caption, _Replay.in_column_group,
    _Replay.in_table_body, _Replay.in_row, _Replay.in_cell, _Replay.in_template,
]  # fmt: skip
_BODY_SPECIAL: dict[bytes, Callable[[_Replay, bytes], bool]] = dict.fromkeys(_HEADISH, _Replay.in_head_start)
for _listed, _handler in [
    ("h1 h2 h3 h4 h5 h6", _Replay.heading),
    ("li dd dt", _Replay.list_item),
    ("form", _Replay.form_start),
    ("button", _Replay.button),
    ("a", _Replay.anchor),
    ("nobr", _Replay.nobr),
    ("table", _Replay.table),
    ("input", _Replay.input),
    ("hr", _Replay.hr),
    ("select", _Replay.select),
    ("option optgroup", _Replay.option),
    ("rb rtc rp rt", _Replay.ruby),
    ("math svg", _Replay.foreign_root),
    ("frameset", _Replay.frameset),
]:
    _BODY_SPECIAL.update(dict.fromkeys(_words(_listed), _handler))
_BODY_END: dict[bytes, Callable[[_Replay, bytes], None]] = dict.fromkeys(_BLOCK_END, _Replay.block_end)
for _listed, _end_handler in [
    ("a b big code em font i nobr s small strike strong tt u", _Replay.formatting_end),
    ("p", _Replay.p_end),
    ("li", _Replay.li_end),
    ("dd dt", _Replay.dd_dt_end),
    ("h1 h2 h3 h4 h5 h6", _Replay.heading_end),
    ("form", _Replay.form_end),
    ("applet marquee object", _Replay.marker_end),
    ("br", _Replay.br_end),
    ("template", _Replay.template_end),
    ("body html", _Replay.ignore),
]:
    _BODY_END.update(dict.fromkeys(_words(_listed), _end_handler))


def _non_space(chars: bytes) -> bool:
    """Whether text holds more than whitespace, once its character references are read."""
    stripped = chars.translate(None, _SPACES)
    if b"&" not in stripped:
        return bool(stripped)
    return bool(_html.unescape(chars.decode(errors="surrogatepass")).strip("\t\n\f\r "))


def _attribute_set(written: bytes) -> frozenset[tuple[bytes, bytes | None]] | None:
    """A formatting element's attributes as lexbor compares them (as many, each one found), or None where character
    references or a repeated name would decide. A value left out or empty and unquoted is none, which lexbor tells
    from a quoted empty one."""
    if b"&" in written or b"\0" in written or b"\r" in written:
        return None
    found = [(match[1].lower(), _unquote(match[2]) if match[2] else None) for match in _ATTRIBUTE.finditer(written)]
    pairs = frozenset(found)
    return pairs if len({name for name, _ in found}) == len(found) else None


def _unquote(value: bytes | None) -> bytes:
    if not value:
        return b""
    if value[:1] in (b'"', b"'"):
        return value[1:-1] if len(value) > 1 and value[-1:] == value[:1] else value[1:]
    return value
