"""The contract's schema as protobuf-py descriptors (the ones reflection serves), for tests that walk it.

They are built from the very files the Google runtime loaded (server.app.reflection_descriptors), so a test that
reads names, presence or idempotency here reads what the server serves.
"""

from __future__ import annotations

from typing import Any

from protobuf import DescMessage, DescService

from server.app import ServiceApp, generated_services, reflection_descriptors

__all__ = ["all_messages", "only_request_fields", "service_desc"]


def service_desc(service: ServiceApp) -> DescService:
    return reflection_descriptors([service.descriptor])[0]


def all_messages() -> dict[str, DescMessage]:
    """Every message of every service's files and their imports, nested ones included, by full name."""
    found: dict[str, DescMessage] = {}

    def walk(messages: list[DescMessage] | tuple[DescMessage, ...]) -> None:
        for message in messages:
            found[message.type_name] = message
            walk(message.nested_messages)

    seen: set[str] = set()

    def visit(file: object) -> None:
        name = file.name  # type: ignore[attr-defined]
        if name in seen:
            return
        seen.add(name)
        walk(file.messages)  # type: ignore[attr-defined]
        for dependency in file.dependencies:  # type: ignore[attr-defined]
            visit(dependency)

    for service in reflection_descriptors([s.descriptor for s in generated_services()]):
        visit(service.file)
    return found


def only_request_fields(operation: str, body: dict[str, Any]) -> dict[str, Any]:
    """`body` without the keys `operation`'s request ("pkg.Service/Method") lacks, for tests that build one body of
    context (a tenant, a group, a member) for several methods: the server refuses unknown fields."""
    service, method = operation.split("/")
    for found in generated_services():
        if found.full_name == service:
            request = found.descriptor.methods_by_name[method].input_type
            names = {f.json_name for f in request.fields} | {f.name for f in request.fields}
            return {k: v for k, v in body.items() if k in names}
    raise KeyError(operation)
