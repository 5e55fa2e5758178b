"""Field validation shared by every use case, so each rule is written once and names its field."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from server.errors import InvalidArgument

__all__ = [
    "MAX_DESCRIPTION",
    "MAX_DISPLAY_NAME",
    "MAX_EMAIL",
    "MAX_FILTER_IDS",
    "MAX_NAME",
    "MAX_PROVIDER_MODEL_ID",
    "MAX_QUERY_PREFIX",
    "MAX_URL",
    "MAX_USER_ID",
    "is_utf8",
    "limit_ids",
    "limit_text",
    "require_header_secret",
    "require_http_url",
    "require_name",
    "require_nonempty",
    "require_user_id",
    "validate_header_text",
    "validate_public_model_id",
    "validate_resource_name",
]

# Length limits of free-text fields, in characters (documented in docs/robustness.md). Every create and update path
# checks its fields against these, so no field stores a megabyte of text.
MAX_NAME = 128  # human-chosen names: API keys, service accounts, groups
MAX_DISPLAY_NAME = 256
MAX_DESCRIPTION = 1024
MAX_PROVIDER_MODEL_ID = 256  # a provider's or a deployment's served model id
MAX_API_VERSION = 64
MAX_URL = 2048
# What an HTTP header value may not hold: any control character but tab, C1 (U+0080-U+009F) as much as C0 and DEL.
# aiohttp refuses to write C0 line breaks; U+0085 (NEL) is one to Unicode-aware readers (str.splitlines among them).
HEADER_VALUE_FORBIDDEN = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")
MAX_QUERY_PREFIX = 1024
_LATIN_1 = re.compile(r"[\x00-\xff]*")
MAX_USER_ID = 128  # an identity provider's subject, as the tables keep it
MAX_EMAIL = 254  # RFC 5321's longest path, less its angle brackets

_RESOURCE_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
_PUBLIC_MODEL_ID = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._/-]{0,126}[A-Za-z0-9])$")


def is_utf8(text: str) -> bool:
    """Whether `text` encodes as UTF-8: not when it holds a lone surrogate, which json.loads keeps from a "\\ud800"
    escape and aiohttp makes of a multipart header's undecodable bytes (surrogateescape). Nothing downstream encodes
    one (the tokenizer, either database's driver, aiohttp's form writer): each was a 500."""
    if text.isascii():
        return True
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def validate_header_text(value: str | None, *, what: str, field: str, max_length: int | None = None) -> None:
    """Header text as a client sends it (a multipart part's Content-Type, a JSON upload's `content_type`; None: none
    sent): no control character but tab (aiohttp refuses one in a form it writes for an
    upstream; PostgreSQL refuses NUL in text) and nothing that is not UTF-8 (aiohttp keeps a header's undecodable
    bytes as lone surrogates, which neither that form nor a database's driver can encode): each was a 500. Stored,
    it is at most `max_length` characters. `what` names it in a refusal ("a.txt: its content type")."""
    text = value or ""
    if max_length is not None and len(text) > max_length:
        raise InvalidArgument(f"{what} is longer than {max_length} characters", field=field)
    if HEADER_VALUE_FORBIDDEN.search(text):
        raise InvalidArgument(f"{what} contains a control character (such as NUL or a line break)", field=field)
    if not is_utf8(text):
        raise InvalidArgument(f"{what} is not UTF-8 text", field=field)


MAX_HEADER_SECRET = 8192  # what upstream servers take in one header line (aiohttp's and most others' limit)


def require_header_secret(value: str, field: str) -> str:
    """A credential sent in a request header (a provider's API key): one with a control character but tab, a
    character past Latin-1 (the outbound client writes headers as Latin-1) or longer than a header line may be was
    stored, then failed every call that sent it rather than the request that gave it. Never echoed: it is a secret."""
    if len(value) > MAX_HEADER_SECRET or HEADER_VALUE_FORBIDDEN.search(value) or not _LATIN_1.fullmatch(value):
        raise InvalidArgument(
            f"{field} must be at most {MAX_HEADER_SECRET} characters of header text (no line breaks or other control "
            "characters, nothing past Latin-1)",
            field=field,
        )
    return value


def require_nonempty(value: str, field: str) -> str:
    if not value or not value.strip():
        raise InvalidArgument(f"{field} is required", field=field)
    return value


MAX_FILTER_IDS = 1000  # ids one read may filter by: each is a bind parameter, which databases bound (a 500 or 503)


def limit_ids(values: tuple[object, ...], field: str, max_len: int = MAX_FILTER_IDS) -> None:
    """A list of ids a request filters by, bounded before any database sees it."""
    if len(values) > max_len:
        raise InvalidArgument(f"{field} may name at most {max_len} values", field=field)


def require_user_id(value: str, field: str = "user_id") -> str:
    require_nonempty(value, field)
    return limit_text(value, field, MAX_USER_ID)


def limit_text(value: str, field: str, max_len: int) -> str:
    """An optional free-text field: may be empty, never longer than `max_len`."""
    if len(value) > max_len:
        raise InvalidArgument(f"{field} must be at most {max_len} characters", field=field)
    return value


def require_name(value: str, field: str, *, max_len: int = MAX_NAME) -> str:
    """A human-chosen name: non-blank, at most `max_len` characters, no control characters."""
    require_nonempty(value, field)
    if len(value) > max_len:
        raise InvalidArgument(f"{field} must be at most {max_len} characters", field=field)
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise InvalidArgument(f"{field} must not contain control characters", field=field)
    return value.strip()


def validate_public_model_id(value: str, field: str = "public_model_id") -> str:
    """2 to 128 characters, starts and ends alphanumeric, inner characters from [A-Za-z0-9._/-]."""
    require_nonempty(value, field)
    if not _PUBLIC_MODEL_ID.fullmatch(value):
        raise InvalidArgument(
            f"{field} must be 2 to 128 characters, start and end with a letter or digit, "
            "and contain only letters, digits and . _ / -",
            field=field,
        )
    return value


def validate_resource_name(value: str, field: str = "name") -> str:
    """Resource names are DNS labels: 1 to 63 lowercase letters, digits and '-', alphanumeric at both ends."""
    require_nonempty(value, field)
    if not _RESOURCE_NAME.fullmatch(value):
        raise InvalidArgument(
            f"{field} must be 1 to 63 lowercase letters, digits or '-', starting and ending with a letter or digit",
            field=field,
        )
    return value


def require_http_url(value: str, field: str) -> str:
    limit_text(value or "", field, MAX_URL)
    try:  # urllib raises on an unclosed IPv6 bracket or a port out of range (`http://[::1`, `http://h:99999`)
        parsed = urlsplit(value or "")
        port = parsed.port
        valid = (
            parsed.scheme in ("http", "https")
            and bool(parsed.hostname)
            and (port is None or port > 0)  # port 0 is no address to connect to
            and not any(c.isspace() or not c.isprintable() for c in value)  # `http://a b/` parsed, unreachably
        )
    except ValueError:
        valid = False
    if not valid:
        raise InvalidArgument(f"{field} must be an http(s) URL", field=field)
    if parsed.username is not None or parsed.password is not None:
        # A URL is returned on reads and logged; a credential belongs in the write-only fields made for it.
        raise InvalidArgument(
            f"{field} must not hold credentials (user:password@): give them in the fields for secrets", field=field
        )
    return value.rstrip("/")
