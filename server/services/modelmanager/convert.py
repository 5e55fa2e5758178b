"""platform.modelmanager.v1 messages <-> domain values, nothing else."""

from __future__ import annotations

from typing import Any

from gen.platform.modelmanager.v1 import (
    capabilities_pb2,
    external_model_pb2,
    model_alias_pb2,
    model_deployment_pb2,
    permission_pb2,
    sharing_pb2,
)
from server.domain.external_models import ExternalModel, ExternalModelSpec
from server.domain.model_aliases import Alias, AliasSpec
from server.domain.model_deployments import Deployment, DeploymentSpec
from server.domain.model_registry import Capabilities, capabilities_of
from server.permissions import Permission, Sharing, permission_of
from server.services.tenants.convert import enum, timestamp

__all__ = [
    "alias",
    "alias_spec",
    "capabilities",
    "deployment",
    "deployment_spec",
    "external_model",
    "external_model_spec",
    "external_model_summary",
    "permission",
    "permission_in",
    "sharing",
    "sharing_in",
]


def sharing(value: Sharing) -> sharing_pb2.Sharing:
    return sharing_pb2.Sharing(share_to_all=value.share_to_all, shared_with=list(value.shared_with))


def sharing_in(value: sharing_pb2.Sharing) -> Sharing:
    """An unset sub-message reads as the empty default in Google's runtime (never None): no sharing."""
    return Sharing(value.share_to_all, tuple(value.shared_with))


def capabilities(value: Capabilities) -> capabilities_pb2.ModelCapabilities:
    return capabilities_pb2.ModelCapabilities(
        task_type=enum(capabilities_pb2.TaskType, value.task_type),
        input_modalities=[enum(capabilities_pb2.Modality, m) for m in value.input_modalities],
    )


def capabilities_in(value: capabilities_pb2.ModelCapabilities) -> Capabilities:
    return capabilities_of(int(value.task_type), [int(m) for m in value.input_modalities])


def _capabilities_given(message: Any) -> Capabilities | None:
    """None when the request leaves capabilities out: an update keeps them, a create takes the default."""
    return capabilities_in(message.capabilities) if message.HasField("capabilities") else None


def _optional(message: Any, field: str) -> str | None:
    return getattr(message, field) if message.HasField(field) else None  # type: ignore[no-any-return]


def deployment_spec(value: model_deployment_pb2.ModelDeployment | None) -> DeploymentSpec:
    value = value or model_deployment_pb2.ModelDeployment()
    runtime = value.runtime_info
    max_len = runtime.max_model_len if runtime.HasField("max_model_len") else None
    return DeploymentSpec(
        name=value.name,
        public_model_id=value.public_model_id,
        display_name=value.display_name,
        endpoint_url=value.endpoint_url,
        served_model_id=value.served_model_id,
        capabilities=_capabilities_given(value),
        max_model_len=max_len,
        query_prefix=_optional(value, "query_prefix"),
        sharing=sharing_in(value.sharing),
        model_url=_optional(value, "model_url"),
    )


def deployment(value: Deployment) -> model_deployment_pb2.ModelDeployment:
    return model_deployment_pb2.ModelDeployment(
        name=value.name,
        public_model_id=value.public_model_id,
        display_name=value.display_name,
        endpoint_url=value.endpoint_url,
        served_model_id=value.served_model_id,
        capabilities=capabilities(value.capabilities),
        runtime_info=model_deployment_pb2.ModelRuntimeInfo(max_model_len=value.max_model_len),
        sharing=sharing(value.sharing),
        create_time=timestamp(value.created_at),
        query_prefix=value.query_prefix,
        model_url=value.model_url or None,
    )


def external_model_spec(value: external_model_pb2.ExternalModel | None) -> ExternalModelSpec:
    value = value or external_model_pb2.ExternalModel()
    return ExternalModelSpec(
        name=value.name,
        provider=int(value.provider),
        provider_model_id=value.provider_model_id,
        api_key=value.api_key,
        base_url=value.base_url,
        api_version=value.api_version,
        public_model_id=value.public_model_id,
        display_name=value.display_name,
        capabilities=_capabilities_given(value),
        query_prefix=_optional(value, "query_prefix"),
    )


def external_model(value: ExternalModel) -> external_model_pb2.ExternalModel:
    """The full shape for Get/Create/Update responses, without apiKey (stripped on every read)."""
    return external_model_pb2.ExternalModel(
        name=value.name,
        provider=enum(external_model_pb2.ExternalModelProvider, value.provider),
        provider_model_id=value.provider_model_id,
        base_url=value.base_url,
        api_version=value.api_version,
        sharing=sharing(value.sharing),
        public_model_id=value.public_model_id,
        display_name=value.display_name,
        capabilities=capabilities(value.capabilities),
        query_prefix=value.query_prefix,
    )


def external_model_summary(value: ExternalModel) -> external_model_pb2.ExternalModelSummary:
    """The list shape: no baseUrl, apiVersion or shared-with list."""
    return external_model_pb2.ExternalModelSummary(
        name=value.name,
        display_name=value.display_name,
        public_model_id=value.public_model_id,
        provider_model_id=value.provider_model_id,
        provider=enum(external_model_pb2.ExternalModelProvider, value.provider),
        share_to_all=value.sharing.share_to_all,
        capabilities=capabilities(value.capabilities),
        tenant_id=value.tenant_id or "",
    )


def alias_spec(value: model_alias_pb2.ModelAlias | None) -> AliasSpec:
    value = value or model_alias_pb2.ModelAlias()
    target = value.target_ref
    return AliasSpec(
        public_model_id=value.public_model_id,
        display_name=value.display_name,
        target_kind=int(target.kind),
        target_name=target.name,
        unlisted=value.unlisted,
        sharing=sharing_in(value.sharing) if value.HasField("sharing") else None,
    )


def alias(value: Alias) -> model_alias_pb2.ModelAlias:
    return model_alias_pb2.ModelAlias(
        public_model_id=value.public_model_id,
        display_name=value.display_name,
        target_ref=model_alias_pb2.ModelAliasTargetRef(
            kind=enum(model_alias_pb2.ModelAliasTargetKind, value.target_kind), name=value.target_name
        ),
        unlisted=value.unlisted,
        sharing=sharing(value.sharing),
        target_unresolved=value.target_unresolved,
    )


def permission(value: Permission) -> permission_pb2.DeploymentPermission:
    return permission_pb2.DeploymentPermission(
        subject=permission_pb2.Subject(type=enum(permission_pb2.SubjectType, value.subject_type), id=value.subject_id),
        role=enum(permission_pb2.DeploymentRole, value.role),
    )


def permission_in(subject: permission_pb2.Subject | None, role: int) -> Permission:
    subject = subject or permission_pb2.Subject()
    return permission_of(int(subject.type), subject.id, role)
