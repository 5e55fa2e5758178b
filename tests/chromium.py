"""Debian's chromium for the browser tests (tests/test_browser_cors.py, tests/console/): installed with apt-get
when missing and possible, else the reason the browser tests skip."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["CHROMIUM", "ensure_chromium"]

CHROMIUM = Path("/usr/bin/chromium")


def _run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), env={**os.environ, **env}, capture_output=True, text=True, check=False)


def ensure_chromium() -> str | None:
    """None when chromium is there (installing it if needed), else why it cannot be."""
    if CHROMIUM.exists():
        return None
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        return "chromium is not installed and apt-get (as root) is not available to install it"
    apt = {"DEBIAN_FRONTEND": "noninteractive"}
    install = _run("apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium", env=apt)
    if install.returncode != 0:
        _run("apt-get", "update", "-qq", env=apt)
        install = _run("apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium", env=apt)
    if not CHROMIUM.exists():
        return f"apt-get could not install chromium: {install.stderr.strip()[-300:]}"
    return None
