#!/usr/bin/env bash
# Until the first release, the schema is one initial revision regenerated from server/store/models.py.
# After a release, add new revisions with `alembic revision --autogenerate` instead.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -f server/store/migrations/versions/0001_initial_schema.py
.venv/bin/python - "$tmp/m.db" <<'PY'
import sys
from alembic import command
from server.store.migrate import alembic_config
command.revision(alembic_config(f"sqlite+aiosqlite:///{sys.argv[1]}"), message="initial schema", autogenerate=True, rev_id="0001")
PY
sed -i 's/[[:space:]]*$//' server/store/migrations/versions/0001_initial_schema.py
