"""Run benchmarks: `python -m bench` (all) or `python -m bench <name> [...]`.

Each benchmark is a module `bench/<name>.py` with `async def main() -> None` that prints its figures and the ratio
to a baseline measured in the same run (absolute numbers vary by machine; ratios are what to compare).
"""

from __future__ import annotations

import asyncio
import importlib
import pkgutil
import sys
from pathlib import Path


def _names() -> list[str]:
    here = Path(__file__).parent
    return sorted(
        m.name for m in pkgutil.iter_modules([str(here)]) if not m.name.startswith("_") and m.name != "common"
    )


def main(argv: list[str]) -> int:
    names = argv or _names()
    unknown = set(names) - set(_names())
    if unknown:
        print(f"unknown benchmark(s): {sorted(unknown)}; available: {_names()}", file=sys.stderr)
        return 2
    for name in names:
        print(f"== bench {name}")
        asyncio.run(importlib.import_module(f"bench.{name}").main())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
