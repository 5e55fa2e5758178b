"""Run benchmarks: `python -m bench` (all) or `python -m bench <name> [...]`.

Each benchmark is a module `bench/<name>.py` with `async def main() -> None` that prints its figures and the ratio
to a baseline measured in the same run (absolute numbers vary by machine; ratios are what to compare).
"""

from __future__ import annotations

import argparse
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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Run benchmarks; each prints its figures and the ratio to a baseline measured in the same run.",
    )
    parser.add_argument(
        "names", nargs="*", metavar="NAME", help=f"benchmarks to run (default: all): {', '.join(_names())}"
    )
    return parser


def main(argv: list[str]) -> int:
    parser = _parser()
    names = parser.parse_args(argv).names or _names()
    unknown = set(names) - set(_names())
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}; available: {', '.join(_names())}")
    for name in names:
        print(f"== bench {name}")
        asyncio.run(importlib.import_module(f"bench.{name}").main())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
