"""Nest protoc's Python output under a package: `python tools/protogen/package_imports.py <out> <package>`.

protoc's Python, pyi and grpc_python generators import other generated modules by their proto path
(`from platform.tenants.v1 import user_pb2`). A top-level `platform` package would shadow the standard library's
`platform` module (and `grpc/health` would shadow grpcio), so the code lives under a package of its own (`gen`) and
those absolute imports are rewritten to it. Each directory gets an `__init__.py` so the tree is a regular package.
The connectrpc stubs already import relatively and are left as they are.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")


def package_imports(out: Path, package: str) -> None:
    generated = {".".join(p.relative_to(out).with_suffix("").parts) for p in out.rglob("*_pb2.py")}

    def nest(match: re.Match[str]) -> str:
        module = f"{match['module']}.{match['name']}"
        return f"from {package}.{match['module']} import" if module in generated else match[0]

    # Only imports of modules generated here move (`from grpc._utilities import …` is grpcio's, not ours).
    imports = re.compile(r"^from (?P<module>[\w.]+) import(?= (?P<name>\w+))", re.MULTILINE)
    # The module name protoc passes to its builder, which becomes the messages' __module__.
    module_name = re.compile(r"(BuildTopDescriptorsAndMessages\(DESCRIPTOR, )'(?P<module>[\w.]+)'")
    for path in sorted(out.rglob("*")):
        if path.is_file() and path.name.endswith(_SUFFIXES):
            text = path.read_text()
            fixed = module_name.sub(rf"\1'{package}.\g<module>'", imports.sub(nest, text))
            if fixed != text:
                path.write_text(fixed)
    for directory in [out, *sorted(p for p in out.rglob("*") if p.is_dir() and p.name != "__pycache__")]:
        init = directory / "__init__.py"
        if not init.exists():
            init.write_text("")


if __name__ == "__main__":
    package_imports(Path(sys.argv[1]), sys.argv[2])
