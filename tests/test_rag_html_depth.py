"""The HTML depth guard (server.domain.rag_html) against what lexbor builds.

The exact depths below are lexbor's own stack of open elements, read from its parser state after every token (a
ctypes harness kept out of the suite, as it reads lexbor's private structs); the other tests compare with the tree
selectolax gives back, which can run up to two levels deeper than the stack ever was (an element inserted and popped
within one token, as a void or self-closing one, or the adoption agency moving a subtree under a new element).
"""

from __future__ import annotations

import random

import pytest
from selectolax.lexbor import LexborHTMLParser

from server.domain.rag_html import MAX_HTML_DEPTH, html_depth
from server.domain.rag_parsing import parse_file
from server.errors import InvalidArgument

LIMIT = 1 << 20


def tree_depth(html: str) -> int:
    """How deep lexbor's tree is, counting <html> as 1 (as its stack of open elements does)."""
    root = LexborHTMLParser(html).root
    assert root is not None
    deepest, todo = 0, [(root, 1)]
    while todo:
        node, depth = todo.pop()
        deepest = max(deepest, depth)
        child = node.child
        while child is not None:
            if child.tag not in ("-text", "_comment"):
                todo.append((child, depth + 1))
            child = child.next
    return deepest


DIVS = "<div>" * 1500


# Each of these nests past the limit in lexbor, and each was accepted by the earlier pre-scan, which counted tags and
# read raw text, comments and end tags otherwise than the tokenizer and tree builder do.
@pytest.mark.parametrize(
    "html",
    [
        # foreign content: <script> and <style> are markup there, and a <div> leaves the <svg> to nest in the body
        pytest.param("<svg><script>" + DIVS, id="script-in-svg"),
        pytest.param("<math><style>" + DIVS, id="style-in-math"),
        pytest.param("<svg><![CDATA[ > <script> ]]>" + DIVS + "</script>", id="cdata-in-svg-hides-a-script-tag"),
        # RCDATA and raw text: what looks like a comment or a script inside them is text
        *[
            pytest.param(f"<{name}><!--</{name}>" + DIVS + "-->", id=f"comment-opener-in-{name}")
            for name in ["textarea", "title", "xmp", "iframe", "noembed", "noframes"]
        ],
        pytest.param("<title><script></title>" + DIVS + "</script>", id="script-tag-in-title"),
        # script data: `<!--<script>` double-escapes, so the first </script> does not end the script, the second does
        pytest.param("<script><!--<script></script> <!-- </script>" + DIVS + "-->", id="double-escaped-script"),
        # \v is no HTML whitespace: `<script\v>` is a custom element and `<p\v>` no p
        pytest.param("<script\v>" + DIVS + "</script>", id="vertical-tab-after-script"),
        pytest.param("<p\v>" * 1500, id="vertical-tab-after-p"),
        # end tags lexbor ignores: one that would cross a special element such as a div closes nothing
        pytest.param("<div></span>" * 1500, id="stray-end-tags"),
        # elements whose end tag is optional still nest in one another
        pytest.param("<li><dd>" * 800, id="li-and-dd"),
        pytest.param("<optgroup>" * 1500, id="optgroup-outside-select"),
        pytest.param("<option><span>" * 700, id="option-in-span"),
        pytest.param("<li><ul>" * 700, id="li-in-ul"),
        pytest.param("<table><td>" * 300, id="implied-tbody-and-tr"),
    ],
)
def test_nesting_the_earlier_pre_scan_missed_is_refused(html: str) -> None:
    assert tree_depth(html) > MAX_HTML_DEPTH
    assert html_depth(html) > MAX_HTML_DEPTH
    with pytest.raises(InvalidArgument, match="nests elements deeper than 1000"):
        parse_file("deep.html", None, html.encode(), max_bytes=LIMIT)


@pytest.mark.parametrize(
    ("html", "depth"),
    [
        ("<div>" * 5, 7),  # html and body, then the divs
        ("<p>a<p>b<p>c", 3),
        ("<ul><li>a<li>b<li>c</ul>", 4),
        ("<div></span>" * 5, 7),
        ("<li><dd>" * 4, 10),
        ("<optgroup>" * 5, 7),
        ("<select><optgroup><option><option><optgroup><option>", 5),
        ("<table><td>" * 3, 14),
        ("<table><tr><td>a<td>b<tr><td>c</table>" * 3, 6),
        ("<svg><script>" + "<div>" * 5, 7),
        ("<svg><path/><path/><g><path/></g></svg>" * 3, 4),
        ("<math><mi><div><div>", 6),
        ("<svg><foreignObject><div><script><div></script>", 6),
        ("<textarea><!--</textarea>" + "<div>" * 5 + "-->", 7),
        ("<script><!--<script></script> <!-- </script>" + "<div>" * 5 + "-->", 7),
        ("<p\v>" * 5, 7),
        ("<b><p></b>x" * 3, 4),  # the adoption agency algorithm
        ("<p><b><i></p>x<p>y", 5),  # formatting elements reconstructed
        ("<a><div><a>x</a></div></a>" * 2, 4),
        ("<font size=2>" * 8 + "<p>x</p><p>y", 11),  # at most three alike are reconstructed
        ("<p><b a=1 b=2><b a=1 b=2><b a=1 b=2><b b=2 a='1'></p><div><div><div>x", 8),  # alike as lexbor compares
        ("<p><b c><b c><b c><b c=''></p><div><div><div>x", 9),  # no value is not an empty one
        ("<template><td><template><tr>", 6),
        ("<table><caption><table><caption>x", 6),
        ("<!DOCTYPE html><p><table><p>", 4),  # a table closes the p...
        ("<p><table><p>", 5),  # ...but not in quirks mode
        ("<pre>\n<b></p>x", 4),
    ],
)
def test_depth_is_lexbors_stack_depth(html: str, depth: int) -> None:
    assert html_depth(html, stop_above=None) == depth


def _random_document(rnd: random.Random) -> str:
    names = [
        "html",
        "head",
        "body",
        "div",
        "span",
        "p",
        "a",
        "b",
        "i",
        "em",
        "font",
        "nobr",
        "li",
        "ul",
        "ol",
        "dl",
        "dd",
        "dt",
        "table",
        "tbody",
        "tr",
        "td",
        "th",
        "caption",
        "colgroup",
        "col",
        "form",
        "button",
        "select",
        "option",
        "optgroup",
        "h1",
        "pre",
        "textarea",
        "title",
        "script",
        "style",
        "xmp",
        "iframe",
        "noscript",
        "template",
        "object",
        "svg",
        "math",
        "mi",
        "mtext",
        "annotation-xml",
        "foreignobject",
        "desc",
        "g",
        "custom-el",
        "image",
        "img",
        "br",
        "hr",
        "input",
        "ruby",
        "rt",
        "section",
    ]
    attributes = ["", "", " id=x", ' title="<div>"', " size=2", " color=red", " encoding=text/html", " type=hidden"]
    extras = ["<![CDATA[<div>]]>", "<script><!--<script></script>-->x</script>", "<textarea><!--</textarea>",
              "<!--<div>-->", "<p\v>", "x", " ", "&#32;", "\0"]  # fmt: skip
    parts, opened = [], []
    for _ in range(rnd.randint(10, 200)):
        roll, name = rnd.random(), rnd.choice(names)
        if roll < 0.45:
            opened.append(name)
            parts.append(f"<{name}{rnd.choice(attributes)}{'/' if rnd.random() < 0.05 else ''}>")
        elif roll < 0.75 and opened:
            parts.append(f"</{opened.pop(rnd.randrange(len(opened)) if roll > 0.65 else -1)}>")
        elif roll < 0.85:
            parts.append(f"</{name}>")
        else:
            parts.append(rnd.choice(extras))
    return "".join(parts)


@pytest.mark.parametrize("seed", range(40))
def test_random_documents_are_no_deeper_than_counted(seed: int) -> None:
    """Tag soup of misnested, stray and foreign tags: lexbor's tree is never more than two levels deeper than the
    depth counted (see the module docstring), and stopping early changes nothing below the limit."""
    rnd = random.Random(seed)
    for _ in range(10):
        html = _random_document(rnd)
        depth = html_depth(html, stop_above=None)
        assert depth + 2 >= tree_depth(html), html
        stop = rnd.randrange(1, depth + 2)
        assert (html_depth(html, stop_above=stop) > stop) == (depth > stop), html


REAL_SHAPES = {
    "unclosed-paragraphs-and-items": "<ul>" + "<li><p>item<br><img src=x>" * 5_000 + "</ul>",
    "unclosed-cells-and-rows": "<table>" + "<tr><td>a<td>b<th>c" * 3_000 + "</table>",
    "nested-tables-closed": ("<table><tr><td>" * 8 + "x" + "</td></tr></table>" * 8) * 300,
    "unclosed-font-in-every-cell": "<table>" + "<tr><td><font size=2>a<td><font size=2>b" * 2_000 + "</table>",
    "unclosed-font-in-every-paragraph": "<p><font face=arial>text" * 3_000,
    "misnested-formatting": "<p><b>bold <i>both</b> italic</i></p>" * 3_000,
    "formatting-across-blocks": "<b><p>one</b><p>two</p>" * 3_000,
    "inline-svg-icons": "<a href=x><svg viewBox='0 0 9 9'><path d='M0 0L9 9'/><circle r=1 /></svg>go</a>" * 3_000,
    "math": "<math><mi>x</mi><mo>=</mo><mfrac><mn>1</mn><mn>2</mn></mfrac></math>" * 3_000,
    "options": "<select>" + "<option>choice" * 5_000 + "</select>",
    "definition-lists": "<dl>" + "<dt>term<dd>definition" * 5_000 + "</dl>",
    "templates": "<template><div><slot></slot></div></template><p>x</p>" * 3_000,
    "stray-end-tags": "<div>text</span></b></p></div>" * 3_000,
    "scripts-and-comments": "<script>if (a<b) document.write('<div>')</script><!-- <div> --><p>x</p>" * 3_000,
    "preformatted": "<pre>\n<code>x = 1</code>\n</pre>" * 3_000,
    "textareas": "<b><p></b><textarea>\n<div>x</textarea>" * 3_000,
}


@pytest.mark.parametrize("name", sorted(REAL_SHAPES))
def test_long_documents_of_ordinary_shapes_are_accepted(name: str) -> None:
    """Sloppy but ordinary HTML, repeated thousands of times, is as shallow to the guard as it is to lexbor."""
    html = "<!DOCTYPE html><html><body>" + REAL_SHAPES[name] + "</body></html>"
    assert html_depth(html) == html_depth(html, stop_above=None) <= tree_depth(html) + 2 < 50
    assert parse_file("page.html", None, html.encode(), max_bytes=8 * LIMIT).blocks


def test_a_frameset_is_bounded_by_its_tags() -> None:
    """Framesets are not followed: what follows one is bounded by its tag count, which only over-counts."""
    frames = "<frameset cols='50%,50%'>" + "<frame src=a.html>" * 10 + "</frameset>"
    assert tree_depth(frames) <= html_depth(frames) < 100
    with pytest.raises(InvalidArgument, match="nests elements deeper than 1000"):
        parse_file("frames.html", None, (frames + "<p>x" * 300).encode(), max_bytes=LIMIT)
