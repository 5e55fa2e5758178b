#!/usr/bin/env bash
# buf breaking against the previous commit of main; a first commit has nothing to compare with.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="$PWD/.venv/bin"
if git rev-parse --verify -q HEAD~1 >/dev/null && git cat-file -e HEAD~1:buf.yaml 2>/dev/null; then
  "$BIN/buf" breaking --against '.git#ref=HEAD~1'
  echo "buf breaking: no breaking change against HEAD~1"
else
  echo "buf breaking: no previous commit with contracts; skipped"
fi
