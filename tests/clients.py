"""Three independent clients behind one interface, so each behaviour is asserted through all of them.

- ConnectJsonCaller: plain HTTP, Connect JSON (POST, or GET for NO_SIDE_EFFECTS methods).
- GrpcioCaller: the canonical gRPC implementation through our generated grpcio stubs.
- BufCurlCaller: `buf curl` over gRPC, using the server's reflection (no local schema).

Every call returns `Result(code, body)`: code is the Connect code name ("ok", "permission_denied", ...), body is the
response (or error) as JSON.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import aiohttp
from google.protobuf import json_format

__all__ = ["CALLERS", "BufCurlCaller", "Caller", "ConnectJsonCaller", "GrpcioCaller", "Result", "http_json"]

_BUF = shutil.which("buf") or str(Path(sys.executable).parent / "buf")


@dataclass
class Result:
    code: str
    body: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.code == "ok"

    @property
    def message(self) -> str:
        return str(self.body.get("message", ""))


class Caller(Protocol):
    name: str

    async def call(
        self,
        method: str,
        body: dict[str, Any] | None = None,
        *,
        token: str | None = None,
        tenant: str | None = None,
        get: bool = False,
    ) -> Result: ...


def _headers(token: str | None, tenant: str | None) -> dict[str, str]:
    headers: dict[str, str] = {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if tenant:
        headers["X-Platform-Tenant-Id"] = tenant
    return headers


async def http_json(
    verb: str, url: str, *, body: Any = None, headers: dict[str, str] | None = None, params: Any = None
) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.request(verb, url, json=body, headers=headers, params=params) as resp,
    ):
        text = await resp.text()
        try:
            return resp.status, json.loads(text) if text else {}
        except json.JSONDecodeError:
            return resp.status, {"raw": text}


class ConnectJsonCaller:
    """`method` is the full path without the leading slash: "platform.tenants.v1.GroupService/CreateGroup"."""

    name = "connect-json"

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    async def call(
        self,
        method: str,
        body: dict[str, Any] | None = None,
        *,
        token: str | None = None,
        tenant: str | None = None,
        get: bool = False,
    ) -> Result:
        url = f"{self.base_url}/{method}"
        headers = _headers(token, tenant)
        if get:
            params = {"encoding": "json", "message": json.dumps(body or {})}
            status, payload = await http_json("GET", url, headers=headers, params=params)
        else:
            status, payload = await http_json("POST", url, body=body or {}, headers=headers)
        if status == 200:
            return Result("ok", payload)
        return Result(str(payload.get("code", f"http_{status}")), payload)


def _grpc_module(service: str) -> tuple[Any, Any]:
    """(pb2_grpc module, connect module) for "platform.tenants.v1.GroupService"."""
    from server.app import generated_services

    for svc in generated_services():
        if svc.full_name == service:
            grpc_module = importlib.import_module(svc.module.__name__.removesuffix("_connect") + "_pb2_grpc")
            return grpc_module, svc.module
    raise KeyError(service)


class GrpcioCaller:
    name = "grpcio"

    def __init__(self, base_url: str) -> None:
        self.target = base_url.removeprefix("http://")

    async def call(
        self,
        method: str,
        body: dict[str, Any] | None = None,
        *,
        token: str | None = None,
        tenant: str | None = None,
        get: bool = False,
    ) -> Result:
        import grpc

        service, rpc = method.split("/")
        grpc_module, connect_module = _grpc_module(service)
        request = json_format.ParseDict(body or {}, getattr(connect_module, f"{rpc}Request")())
        metadata = [(k.lower(), v) for k, v in _headers(token, tenant).items()]
        async with grpc.aio.insecure_channel(self.target) as channel:
            stub = getattr(grpc_module, f"{service.rsplit('.', 1)[1]}Stub")(channel)
            try:
                response = await getattr(stub, rpc)(request, metadata=metadata, timeout=30)
            except grpc.aio.AioRpcError as exc:
                return Result(exc.code().name.lower(), {"code": exc.code().name.lower(), "message": exc.details()})
        return Result("ok", json_format.MessageToDict(response))


class BufCurlCaller:
    name = "buf-curl"

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    async def call(
        self,
        method: str,
        body: dict[str, Any] | None = None,
        *,
        token: str | None = None,
        tenant: str | None = None,
        get: bool = False,
    ) -> Result:
        args = [_BUF, "curl", "--protocol", "grpc", "--http2-prior-knowledge", "-d", json.dumps(body or {})]
        for key, value in _headers(token, tenant).items():
            args += ["-H", f"{key}: {value}"]
        args.append(f"{self.base_url}/{method}")
        proc = await asyncio.create_subprocess_exec(
            *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        out, err = await proc.communicate()
        if proc.returncode == 0:
            return Result("ok", json.loads(out or b"{}"))
        try:
            payload = json.loads(err)
        except json.JSONDecodeError:
            return Result("buf_curl_failed", {"message": err.decode(errors="replace")})
        return Result(str(payload.get("code", "unknown")), payload)


CALLERS: dict[str, type[ConnectJsonCaller] | type[GrpcioCaller] | type[BufCurlCaller]] = {
    c.name: c for c in (ConnectJsonCaller, GrpcioCaller, BufCurlCaller)
}
