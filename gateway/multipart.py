"""Malformed multipart/form-data bodies as 400s naming the problem, for every surface that reads one.

aiohttp parses each part's header lines with its HTTP header parser, which raises its HTTP errors: `InvalidHeader`
for a line without a colon or a value with a NUL or another control character, `LineTooLong` for a line over
`MAX_HEADER_LINE` bytes, `BadHttpMessage` for too many lines; a body that does not follow its boundary raises
ValueError. Escaping the handler, each was a 500. `form_errors` turns them into `InvalidArgument` on the form's
file field; the messages never quote the client's bytes (they may be anything, credentials included).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from aiohttp.http_exceptions import BadHttpMessage, InvalidHeader, LineTooLong
from aiohttp.web_protocol import RequestPayloadError

from server.errors import InvalidArgument

__all__ = ["MAX_HEADER_LINE", "form_errors"]

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
        raise InvalidArgument("We could not decode the request body as its Content-Encoding says.") from None
    except (ValueError, AssertionError):
        raise InvalidArgument(
            "Malformed multipart body: no boundary, or parts not delimited by the declared boundary.", field=field
        ) from None


def _header_problem(header: str) -> str:
    if "\x00" in header:
        return "a part header (its filename?) contains a NUL byte"
    if ":" not in header:
        return "a part header line has no colon or an invalid name (headers are 'Name: value')"
    return "a part header has an invalid name or a control character in its value"
