"""Malformed multipart/form-data bodies as 400s naming the problem, for every surface that reads one.

aiohttp parses each part's header lines with its HTTP header parser, which raises its HTTP errors: `InvalidHeader`
for a line without a colon or a value with a NUL or another control character, `LineTooLong` for a line over
`MAX_HEADER_LINE` bytes, `BadHttpMessage` for too many lines; a body that does not follow its boundary raises
ValueError. Escaping the handler, each was a 500. `form_errors` turns them into `InvalidArgument` on the form's
file field; the messages never quote the client's bytes (they may be anything, credentials included).

`form_parts` is the one way a form's parts are read, and bounds how many there are: aiohttp's multipart reader costs
more per part the more parts a body has (5,000 empty parts took 0.37 s, 40,000 took 12.4 s), all of it on the event
loop, so a 5 MB form of 100,000 empty fields held a gateway worker until its supervisor killed it. Each caller gives
the most parts its form legitimately has; one more is a 400. A part that is itself a multipart body (the obsolete
multipart/mixed way of sending several files) is refused: aiohttp reads its inner parts, unbounded, to skip it.

What the header parser lets through is checked where a part is read:
- `part_names`: a part's name and filename. A Content-Disposition that aiohttp cannot parse gives neither (the part
  then went unnamed, and the request failed later as "no file"), so it is refused as such. RFC 5987's `name*=` and
  `filename*=` percent-decode to any character: a CR, LF or NUL there passed the header parser and failed as a 500
  when the transcription form was rebuilt for the upstream (aiohttp refuses control characters in the headers it
  writes), so a name or filename with a control character (tab aside, as aiohttp's writer) is refused here. So is
  one that is not UTF-8: aiohttp keeps a header's undecodable bytes as lone surrogates, which no encoder accepts
  (rebuilding the transcription form raised UnicodeEncodeError, a 500).
- `decoded_text`: a text field's value. aiohttp's `BodyPartReader.text()` raises LookupError for an
  unknown charset and RuntimeError for an unknown Content-Transfer-Encoding (both 500s); its UnicodeDecodeError, a
  ValueError, was answered as a body not delimited by its boundary. Each is now a 400 on the field, saying which.
"""

from __future__ import annotations

import codecs
import contextlib
from collections.abc import AsyncIterator, Iterator

from aiohttp import BodyPartReader, hdrs, web
from aiohttp.http_exceptions import BadHttpMessage, InvalidHeader, LineTooLong
from aiohttp.multipart import content_disposition_filename, parse_content_disposition
from aiohttp.web_protocol import RequestPayloadError

from gateway.middleware import undecodable_body
from server.domain.validation import HEADER_VALUE_FORBIDDEN, is_utf8, validate_header_text
from server.errors import InvalidArgument

__all__ = ["MAX_HEADER_LINE", "decoded_text", "form_errors", "form_parts", "part_names"]

MAX_HEADER_LINE = 8190  # aiohttp's max_field_size for part headers


@contextlib.contextmanager
def form_errors(field: str = "file") -> Iterator[None]:
    """Around `request.multipart()` and the reads of its parts."""
    try:
        yield
    except LineTooLong:
        raise InvalidArgument(
            f"Malformed multipart body: a part header line is longer than {MAX_HEADER_LINE} bytes.", field=field
        ) from None
    except InvalidHeader as exc:
        raise InvalidArgument(f"Malformed multipart body: {_header_problem(exc.hdr)}.", field=field) from None
    except BadHttpMessage:
        raise InvalidArgument(
            "Malformed multipart body: a part has too many header lines or repeats a single-valued one.", field=field
        ) from None
    except RequestPayloadError:
        raise undecodable_body() from None
    except (ValueError, AssertionError):
        raise InvalidArgument(
            "Malformed multipart body: no boundary, or parts not delimited by the declared boundary.", field=field
        ) from None


async def form_parts(request: web.Request, max_parts: int, field: str = "file") -> AsyncIterator[BodyPartReader]:
    """The parts of the request's multipart body, at most `max_parts` of them (see above); iterate inside
    `form_errors(field)`, which also names `field` on these refusals."""
    reader = await request.multipart()
    count = 0
    while (part := await reader.next()) is not None:
        count += 1
        if count > max_parts:
            raise InvalidArgument(
                f"The form has more than {max_parts} parts (fields and files), more than this endpoint takes.",
                field=field,
            )
        if not isinstance(part, BodyPartReader):
            raise InvalidArgument("Nested multipart bodies are not supported.", field=field)
        yield part


def _header_problem(header: str) -> str:
    if "\x00" in header:
        return "a part header (its filename?) contains a NUL byte"
    if ":" not in header:
        return "a part header line has no colon or an invalid name (headers are 'Name: value')"
    return "a part header has an invalid name or a control character in its value"


def part_names(part: BodyPartReader, field: str = "file") -> tuple[str | None, str | None]:
    """The part's (name, filename) from its Content-Disposition; a 400 on `field` if unusable (see above)."""
    header = part.headers.get(hdrs.CONTENT_DISPOSITION)
    disposition, params = parse_content_disposition(header)
    if header is not None and disposition is None:
        raise InvalidArgument(
            "Malformed multipart body: a part's Content-Disposition header could not be parsed"
            ' (expected: form-data; name="..."; filename="...").',
            field=field,
        )
    name = content_disposition_filename(params, "name")
    filename = content_disposition_filename(params, "filename")
    for what, value in (("name", name), ("filename", filename)):
        if value is None:
            continue
        if HEADER_VALUE_FORBIDDEN.search(value):
            raise InvalidArgument(
                f"Malformed multipart body: a part's {what} contains a control character (such as NUL or a line"
                " break).",
                field=field,
            )
        if not is_utf8(value):
            raise InvalidArgument(f"Malformed multipart body: a part's {what} is not UTF-8 text.", field=field)
    return name, filename


def part_content_type(part: BodyPartReader, field: str = "file") -> str | None:
    """The part's Content-Type, if it sent one; a 400 on `field` when it is not header text, as a RAG upload's content
    type is judged (a form sent on with it cannot be encoded: it was a 500)."""
    value = part.headers.get(hdrs.CONTENT_TYPE)
    validate_header_text(value, what="Malformed multipart body: a part's Content-Type", field=field)
    return value


def decoded_text(part: BodyPartReader, data: bytes, field: str) -> str:
    """The text of a part whose raw bytes are `data` (read with `read_chunk` by a caller that bounds them: a whole
    part is never read unbounded), decoded by its Content-Transfer-Encoding and charset (UTF-8 unless it says
    otherwise)."""
    try:
        data = bytes(part.decode(data))
    except RuntimeError:  # aiohttp's "unknown content transfer encoding"
        raise InvalidArgument(
            f"{field}: its part has an unsupported Content-Transfer-Encoding (send it as 8bit, binary, base64 or"
            " quoted-printable, or without one).",
            field=field,
        ) from None
    except ValueError:  # binascii.Error: not base64
        raise InvalidArgument(
            f"{field}: its part does not decode as its Content-Transfer-Encoding says.", field=field
        ) from None
    charset = part.get_charset(default="utf-8")
    try:
        text = data.decode(charset)
    except LookupError:  # also a codec that is not a text encoding ("hex", "rot13")
        raise InvalidArgument(
            f"{field}: its part declares a charset that is not a known text encoding (send UTF-8).", field=field
        ) from None
    except ValueError:  # UnicodeDecodeError, or another UnicodeError from a codec such as idna
        if codecs.lookup(charset).name == "utf-8":
            raise InvalidArgument(f"{field} is not UTF-8 text.", field=field) from None
        raise InvalidArgument(f"{field} is not text in the charset its part declares.", field=field) from None
    if not is_utf8(text):
        raise InvalidArgument(f"{field} is not text in the charset its part declares.", field=field)
    return text
