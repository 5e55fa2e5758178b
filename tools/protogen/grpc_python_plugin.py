"""A buf local plugin for grpcio-tools' grpc_python generator, which grpcio-tools bundles inside its protoc only.

buf hands a plugin a CodeGeneratorRequest; this passes the request's files to `grpc_tools.protoc` as a descriptor
set (so nothing is parsed twice and buf's view of the files is what gets compiled) and answers with what it wrote.
Run it with the Python that has grpcio-tools installed: `local: [python, tools/protogen/grpc_python_plugin.py]`.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from google.protobuf import descriptor_pb2
from google.protobuf.compiler import plugin_pb2
from grpc_tools import protoc


def main() -> int:
    request = plugin_pb2.CodeGeneratorRequest.FromString(sys.stdin.buffer.read())
    response = plugin_pb2.CodeGeneratorResponse(
        supported_features=plugin_pb2.CodeGeneratorResponse.FEATURE_PROTO3_OPTIONAL
    )
    with tempfile.TemporaryDirectory() as tmp:
        descriptors = Path(tmp, "request.binpb")
        descriptors.write_bytes(descriptor_pb2.FileDescriptorSet(file=request.proto_file).SerializeToString())
        out = Path(tmp, "out")
        out.mkdir()
        args = ["protoc", f"--descriptor_set_in={descriptors}", f"--grpc_python_out={out}", *request.file_to_generate]
        if protoc.main(args) != 0:
            response.error = "grpc_tools.protoc failed generating grpc_python stubs"
        else:
            for path in sorted(out.rglob("*.py")):
                response.file.add(name=str(path.relative_to(out)), content=path.read_text())
    sys.stdout.buffer.write(response.SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main())
