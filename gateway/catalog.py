"""What the gateway needs to know about a model: the `Route` to its upstream, and `ModelInfo` for listings.

The registry (`server.domain.model_registry`) owns the tables and the decryption of provider keys; this module only
adapts its answers to the gateway's small, frozen values, so nothing else in the gateway depends on its shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from server.domain.networks import Reach
from server.permissions import ResourceKind, ResourceRef
from server.settings import Secret

__all__ = ["MODALITY_NAMES", "TASK_NAMES", "ModelInfo", "Provider", "Route", "TaskType"]


class Provider(IntEnum):
    """Numbers 1-3 match platform.modelmanager.v1.ExternalModelProvider; IN_CLUSTER is a model deployment."""

    IN_CLUSTER = 0
    VENDOR_A = 1
    VENDOR_B = 2
    CUSTOM_COMPATIBLE = 3


class TaskType(IntEnum):
    """Numbers match platform.modelmanager.v1.TaskType."""

    UNSPECIFIED = 0
    TEXT_GENERATION = 1
    EMBEDDING = 2
    RERANK = 3
    SPEECH_TO_TEXT = 4
    GUARDRAIL = 5


TASK_NAMES = {
    TaskType.UNSPECIFIED: "text-generation",
    TaskType.TEXT_GENERATION: "text-generation",
    TaskType.EMBEDDING: "embedding",
    TaskType.RERANK: "rerank",
    TaskType.SPEECH_TO_TEXT: "speech-to-text",
    TaskType.GUARDRAIL: "guardrail",
}
MODALITY_NAMES = {1: "text", 2: "image", 3: "audio"}


TENANT_MODELS = "tenant-owned"  # the /metrics label of every tenant's own model


@dataclass(frozen=True)
class Route:
    """Where one client-facing model id goes. `api_key` is a `Secret`, so a repr of a Route never shows it."""

    public_model_id: str
    ref: ResourceRef  # the direct target (deployment or external model)
    alias_ref: ResourceRef | None  # the alias the client named, if any
    provider: Provider
    base_url: str
    upstream_model_id: str
    api_key: Secret = field(default_factory=lambda: Secret(""))
    api_version: str = ""
    query_prefix: str | None = None
    task_type: TaskType = TaskType.TEXT_GENERATION
    reach: Reach = Reach.TENANT  # who registered the upstream: decides where the egress guard lets it connect
    uid: str = ""  # the invoked resource's uid: what a RAG pinned its models by (server.domain.resource_pins)
    tenant_owned: bool = False  # a tenant's own external model, not the platform's

    @property
    def metrics_model(self) -> str:
        """The model as /metrics labels it: a platform model by its id; a tenant's models together, under no name of
        theirs (their ids are the tenants' to choose, and /metrics is the operator's, often scraped unauthenticated)."""
        return TENANT_MODELS if self.tenant_owned else self.public_model_id

    @property
    def invoked_ref(self) -> ResourceRef:
        """The resource whose invoke right decides access: the alias when the client named one."""
        return self.alias_ref or self.ref


@dataclass(frozen=True)
class ModelInfo:
    """One entry of /v1/models."""

    public_model_id: str
    ref: ResourceRef
    task_type: TaskType
    input_modalities: tuple[int, ...]
    created: int
    owned_by: str
    unlisted: bool = False

    @property
    def kind(self) -> ResourceKind:
        return self.ref.kind

    def wire(self) -> dict[str, object]:
        # No max_model_len: the spec reports runtime_info.max_model_len through the management API only.
        return {
            "id": self.public_model_id,
            "object": "model",
            "created": self.created,
            "owned_by": self.owned_by,
            "capabilities": {
                "task_type": TASK_NAMES.get(self.task_type, "text-generation"),
                "input_modalities": [MODALITY_NAMES[m] for m in self.input_modalities if m in MODALITY_NAMES]
                or ["text"],
            },
        }
