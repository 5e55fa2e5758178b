"""The package's build (pyproject.toml holds its metadata), plus the modules compiled to C when SWITCHBOARD_COMPILE=1.

Compiled with mypyc (part of mypy): the rate limiter's per-call path, listed in pyproject.toml under
[tool.switchboard] compiled. The gateway runs it on every limited call, and compiled it costs about a third of the
machine instructions it costs interpreted (docs/limits.md). Without the variable the build is pure Python, and the
package behaves the same: `make` compiles them in place for development and tests (docs/development.md, "Compiled
modules").

`compiled_sources` is the one reader of that list (the Makefile and tests/conftest.py import it), so importing this
file builds nothing: setuptools runs it as __main__.
"""

import os
import tomllib
from pathlib import Path

ROOT = Path(__file__).parent


def compiled_sources(root: Path = ROOT) -> list[str]:
    """What pyproject.toml lists under [tool.switchboard] compiled, as paths from the repository's root."""
    with (root / "pyproject.toml").open("rb") as f:
        sources: list[str] = tomllib.load(f)["tool"]["switchboard"]["compiled"]
    return sources


if __name__ == "__main__":
    from setuptools import setup

    if os.environ.get("SWITCHBOARD_COMPILE") == "1":
        from mypyc.build import mypycify

        # The runtime they share goes inside a package (server/compiled__mypyc.*.so), so it imports from any directory.
        setup(ext_modules=mypycify(compiled_sources(), group_name="server.compiled"))
    else:
        setup()
