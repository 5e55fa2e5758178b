#!/usr/bin/env bash
# Regenerates the stubs into a scratch tree and compares it with the committed gen/.
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
