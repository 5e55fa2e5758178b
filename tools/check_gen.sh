#!/usr/bin/env bash
# Regenerates the stubs into a scratch tree and compares them with the committed gen/ (Python) and console/src/gen/
# (the web console's Connect-ES code; skipped with a warning when the console's node_modules are not installed).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="$PWD/.venv/bin"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp buf.yaml buf.gen.yaml "$tmp/"
cp -r proto "$tmp/"
mkdir -p "$tmp/tools" && cp -r tools/protogen "$tmp/tools/"
(cd "$tmp" && PATH="$BIN:$PATH" "$BIN/buf" generate && "$BIN/python" tools/protogen/package_imports.py gen gen)
if ! diff -r -q gen "$tmp/gen" -x __pycache__; then
  echo "gen/ is stale: run 'make gen' and commit the result" >&2
  exit 1
fi
echo "gen/ matches proto/"
if [ ! -x console/node_modules/.bin/protoc-gen-es ]; then
  echo "warning: console/node_modules is not installed: console/src/gen/ not checked" >&2
  exit 0
fi
mkdir -p "$tmp/console"
cp console/buf.gen.yaml "$tmp/console/"
ln -s "$PWD/console/node_modules" "$tmp/console/node_modules"
(cd "$tmp" && "$BIN/buf" generate --template console/buf.gen.yaml --exclude-path proto/grpc)
if ! diff -r -q console/src/gen "$tmp/console/src/gen"; then
  echo "console/src/gen/ is stale: run 'make gen' and commit the result" >&2
  exit 1
fi
echo "console/src/gen/ matches proto/"
