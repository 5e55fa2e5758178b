"""The Helm chart and the Containerfile (deploy/helm/switchboard, Containerfile), checked as `make package-check` does:
rendered by the real Helm binary, validated against the Kubernetes schemas and the ServiceMonitor CRD, linted by
hadolint. Each check is also shown to fail on a broken input, so a green run means something.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tools import package_check as pc

CI = pc.CHART / "ci"
FULL = CI / "full-values.yaml"
MINIMAL = CI / "minimal-values.yaml"


@pytest.fixture(scope="module")
def full() -> list[dict[str, Any]]:
    return pc.render([FULL])


@pytest.fixture(scope="module")
def minimal() -> list[dict[str, Any]]:
    return pc.render([MINIMAL])


def _one(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [doc for doc in docs if doc["kind"] == kind and doc["metadata"]["name"] == name]
    return found


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {item["name"]: item.get("value", item.get("valueFrom")) for item in container["env"]}


def test_the_packaging_passes_every_check() -> None:
    assert pc.check_containerfile() == []
    assert pc.check_chart() == []


def test_each_role_is_its_own_deployment_with_service_probes_and_budget(full: list[dict[str, Any]]) -> None:
    for component, port in (("management", 8080), ("gateway", 8081)):
        deployment = _one(full, "Deployment", f"sb-switchboard-{component}")
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        assert container["args"] == ["serve", "--role", component, "--no-migrate"]
        assert container["ports"] == [{"name": "http", "containerPort": port, "protocol": "TCP"}]
        assert container["livenessProbe"]["httpGet"] == {"path": "/livez", "port": "http"}
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
        assert "replicas" not in deployment["spec"]  # the HPA owns the count (autoscaling on in full-values)
        service = _one(full, "Service", f"sb-switchboard-{component}")
        assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
        hpa = _one(full, "HorizontalPodAutoscaler", f"sb-switchboard-{component}")
        assert hpa["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
        pdb = _one(full, "PodDisruptionBudget", f"sb-switchboard-{component}")
        assert pdb["spec"]["selector"] == deployment["spec"]["selector"]
    gateway = _one(full, "Deployment", "sb-switchboard-gateway")["spec"]["template"]["spec"]["containers"][0]
    assert _env(gateway)["SWITCHBOARD_GATEWAY_WORKERS"] == "2"  # never the node's core count


def test_credentials_come_from_existing_secrets_only(full: list[dict[str, Any]]) -> None:
    assert not [doc for doc in full if doc["kind"] == "Secret"]
    deployment = _one(full, "Deployment", "sb-switchboard-gateway")
    env = _env(deployment["spec"]["template"]["spec"]["containers"][0])
    assert env["SWITCHBOARD_DATABASE_URL"] == {"secretKeyRef": {"name": "switchboard-db", "key": "database-url"}}
    assert env["SWITCHBOARD_REDIS_URL"] == {"secretKeyRef": {"name": "switchboard-redis", "key": "redis-url"}}
    assert env["SWITCHBOARD_ENCRYPTION_KEY"] == {"secretKeyRef": {"name": "switchboard-keys", "key": "encryption-key"}}
    assert env["SWITCHBOARD_METRICS_TOKEN"] == {"secretKeyRef": {"name": "switchboard-metrics", "key": "metrics-token"}}
    # The embedded identity's key is mounted from its Secret into the var dir, the same for every replica.
    pod = deployment["spec"]["template"]["spec"]
    mounts = {m["name"]: m for m in pod["containers"][0]["volumeMounts"]}
    assert mounts["signing-key"]["mountPath"] == "/var/lib/switchboard/signing-key.pem"
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["signing-key"]["secret"]["secretName"] == "switchboard-keys"


def test_minimal_install_without_redis_metrics_auth_or_service_monitor(minimal: list[dict[str, Any]]) -> None:
    kinds = sorted(doc["kind"] for doc in minimal)
    assert "ServiceMonitor" not in kinds and "HorizontalPodAutoscaler" not in kinds
    deployment = _one(minimal, "Deployment", "sb-switchboard-management")
    assert deployment["spec"]["replicas"] == 2
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    env = _env(container)
    assert "SWITCHBOARD_REDIS_URL" not in env and "SWITCHBOARD_METRICS_TOKEN" not in env
    assert env["SWITCHBOARD_JWKS_URL"] == "https://login.example.com/.well-known/jwks.json"
    assert "signing-key" not in {m["name"] for m in container["volumeMounts"]}
    assert container["image"] == "switchboard:0.1.0"  # the chart's appVersion


def test_the_metering_journal_is_in_the_var_dir_or_on_the_volume_given(
    full: list[dict[str, Any]], minimal: list[dict[str, Any]]
) -> None:
    """By default in the pod's var emptyDir (server.metering_journal's default directory); with
    meteringJournal.volume, on that volume, which the journal directory setting points to."""
    for component in ("management", "gateway"):
        pod = _one(minimal, "Deployment", f"sb-switchboard-{component}")["spec"]["template"]["spec"]
        assert "SWITCHBOARD_METERING_JOURNAL_DIR" not in _env(pod["containers"][0])
        assert {v["name"]: v for v in pod["volumes"]}["var"] == {"name": "var", "emptyDir": {}}
        pod = _one(full, "Deployment", f"sb-switchboard-{component}")["spec"]["template"]["spec"]
        container = pod["containers"][0]
        assert _env(container)["SWITCHBOARD_METERING_JOURNAL_DIR"] == "/var/lib/switchboard-journal"
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        assert mounts["metering-journal"] == "/var/lib/switchboard-journal"
        volume = {v["name"]: v for v in pod["volumes"]}["metering-journal"]
        assert volume["hostPath"] == {"path": "/var/lib/switchboard-journal", "type": "Directory"}


def test_migrations_run_as_a_hook_before_install_and_upgrade(full: list[dict[str, Any]]) -> None:
    (job,) = [doc for doc in full if doc["kind"] == "Job"]
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["migrate"]
    assert container["image"] == "registry.example.com/platform/switchboard@sha256:" + "0" * 64
    # A pre-install hook runs before the chart's ServiceAccount exists: it must not name it.
    assert "serviceAccountName" not in job["spec"]["template"]["spec"]


def test_service_monitor_scrapes_metrics_of_both_services_with_the_token(full: list[dict[str, Any]]) -> None:
    (monitor,) = [doc for doc in full if doc["kind"] == "ServiceMonitor"]
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == "http" and endpoint["path"] == "/metrics"
    assert endpoint["authorization"]["credentials"] == {"name": "switchboard-metrics", "key": "metrics-token"}
    services = [doc for doc in full if doc["kind"] == "Service"]
    selector = monitor["spec"]["selector"]
    for service in services:
        labels = service["metadata"]["labels"]
        assert all(labels[key] == value for key, value in selector["matchLabels"].items())
        assert labels["app.kubernetes.io/component"] in selector["matchExpressions"][0]["values"]


@pytest.mark.parametrize(
    ("sets", "named"),
    [
        (["encryption.existingSecret=k", "identity.jwksUrl=https://idp.example/jwks"], "database.existingSecret"),
        (["database.existingSecret=db", "identity.jwksUrl=https://idp.example/jwks"], "encryption.existingSecret"),
        (["database.existingSecret=db", "encryption.existingSecret=k"], "identity.signingKey.existingSecret"),
        (
            [
                "database.existingSecret=db",
                "encryption.existingSecret=k",
                "identity.jwksUrl=https://i.example/j",
                "serviceMonitor.enabled=true",
                "metrics.enabled=false",
            ],
            "serviceMonitor.enabled needs metrics.enabled",
        ),
    ],
)
def test_rendering_refuses_missing_secrets_naming_the_value(sets: list[str], named: str) -> None:
    with pytest.raises(pc.RenderError, match=named.replace(".", r"\.")):
        pc.render(sets=sets)


def test_kubernetes_validation_rejects_a_wrong_type_and_an_unknown_field(full: list[dict[str, Any]]) -> None:
    deployment = copy.deepcopy(_one(full, "Deployment", "sb-switchboard-gateway"))
    deployment["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "8081"
    assert any("containerPort" in error or "8081" in error for error in pc.validate_kubernetes([deployment]))
    service = copy.deepcopy(_one(full, "Service", "sb-switchboard-gateway"))
    service["spec"]["portz"] = []
    assert pc.validate_kubernetes([service])
    hpa = copy.deepcopy(_one(full, "HorizontalPodAutoscaler", "sb-switchboard-gateway"))
    hpa["apiVersion"] = "autoscaling/v2beta1"  # removed in Kubernetes 1.25
    assert any("no autoscaling/v2beta1" in error for error in pc.validate_kubernetes([hpa]))


def test_service_monitor_validation_uses_the_crd_schema(full: list[dict[str, Any]]) -> None:
    (monitor,) = [copy.deepcopy(doc) for doc in full if doc["kind"] == "ServiceMonitor"]
    assert pc.validate_monitors([monitor]) == []
    monitor["spec"]["endpoints"][0]["interval"] = "every minute"
    errors = pc.validate_monitors([monitor])
    assert len(errors) == 1 and "interval" in errors[0]


def test_chart_rules_catch_a_root_pod_an_inlined_secret_and_a_wrong_probe(full: list[dict[str, Any]]) -> None:
    docs = copy.deepcopy(full)
    deployment = _one(docs, "Deployment", "sb-switchboard-management")
    pod = deployment["spec"]["template"]["spec"]
    pod["securityContext"]["runAsUser"] = 0
    container = pod["containers"][0]
    container["env"] = [e for e in container["env"] if e["name"] != "SWITCHBOARD_DATABASE_URL"]
    container["env"].append({"name": "SWITCHBOARD_DATABASE_URL", "value": "postgresql://u:p@db/s"})
    container["readinessProbe"]["httpGet"]["path"] = "/healthz"
    container["image"] = "switchboard:latest"
    errors = pc.check_rules(docs)
    assert any("non-root" in e for e in errors)
    assert any("SWITCHBOARD_DATABASE_URL is inlined" in e for e in errors)
    assert any("/readyz" in e for e in errors)
    assert any("not pinned" in e for e in errors)
    assert pc.check_rules(full) == []


def test_hadolint_catches_an_unpinned_base_and_root_user(tmp_path: Path) -> None:
    bad = tmp_path / "Containerfile"
    bad.write_text(
        "FROM python:latest\nRUN apt-get update && apt-get install -y curl\nRUN pip install switchboard==0.1.0\n"
    )
    errors = pc.check_containerfile(bad)
    assert any("DL3007" in e for e in errors)  # :latest
    assert any("DL3008" in e for e in errors)  # unpinned apt packages
    assert any("DL3042" in e for e in errors)  # pip's cache kept in the image


def test_the_image_is_non_root_multi_stage_and_copies_only_the_venv() -> None:
    text = pc.CONTAINERFILE.read_text()
    stages = [line for line in text.splitlines() if line.startswith("FROM ")]
    assert stages == ["FROM ${BASE} AS builder", "FROM ${BASE}"]
    runtime = text.split("FROM ${BASE}\n", 1)[1]
    assert "USER 10001:10001" in runtime
    assert "pip install" not in runtime and "apt-get" not in runtime  # nothing is installed at run time
    copies = [line for line in runtime.splitlines() if line.startswith("COPY")]
    assert copies == ["COPY --from=builder /opt/switchboard /opt/switchboard"]


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ("gateway.worker=3", "additional properties 'worker' not allowed"),  # a misspelt value is not ignored
        ("gateway.workers=0", "/gateway/workers"),
        ("image.digest=latest", "/image/digest"),
        ("logLevel=verbose", "/logLevel"),
    ],
)
def test_values_schema_refuses_misspelt_and_invalid_values(setting: str, named: str) -> None:
    base = ["database.existingSecret=db", "encryption.existingSecret=k", "identity.jwksUrl=https://i.example/j"]
    with pytest.raises(pc.RenderError, match=named):
        pc.render(sets=[*base, setting])
