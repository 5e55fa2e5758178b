"""Error mapping: domain errors keep their message and code; anything else is only a correlation id."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.request import RequestContext

from gen.platform.tenants.v1.group_service_pb2 import DESCRIPTOR
from server.errors import AlreadyExists, InvalidArgument, NotFound, PermissionDenied
from server.interceptors import ErrorInterceptor


def _ctx() -> RequestContext[Any, Any]:
    from connectrpc._headers import Headers  # the server builds contexts the same way

    method = next(iter(DESCRIPTOR.services_by_name["GroupService"].methods))
    info = type("M", (), {"service_name": "platform.tenants.v1.GroupService", "name": method.name})()
    return RequestContext(method=info, http_method="POST", request_headers=Headers())  # type: ignore[arg-type]


async def _raise(exc: Exception) -> ConnectError:
    async def call_next(request: Any, ctx: Any) -> Any:
        raise exc

    with pytest.raises(ConnectError) as err:
        await ErrorInterceptor().intercept_unary(call_next, object(), _ctx())
    return err.value


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (InvalidArgument("name is required", field="name"), Code.INVALID_ARGUMENT),
        (NotFound("group 'g' not found"), Code.NOT_FOUND),
        (AlreadyExists("dup"), Code.ALREADY_EXISTS),
        (PermissionDenied("no"), Code.PERMISSION_DENIED),
    ],
)
async def test_domain_errors_keep_code_and_message(error: Exception, code: Code) -> None:
    mapped = await _raise(error)
    assert mapped.code == code
    assert mapped.message == str(error)


async def test_unexpected_errors_become_internal_with_a_logged_correlation_id(caplog: pytest.LogCaptureFixture) -> None:
    secret = "postgresql://admin:hunter2@db/prod"
    with caplog.at_level(logging.ERROR, logger="switchboard.rpc"):
        mapped = await _raise(RuntimeError(f"connection to {secret} failed"))
    assert mapped.code == Code.INTERNAL
    assert "hunter2" not in mapped.message and "RuntimeError" not in mapped.message
    correlation_id = mapped.message.rsplit(" ", 1)[-1].rstrip(")")
    assert len(correlation_id) == 16
    assert any(correlation_id in r.getMessage() for r in caplog.records)
