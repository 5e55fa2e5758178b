#!/usr/bin/env bash
# Build the Containerfile with buildah and smoke-test the image (`make image-check`; not part of `make test`: a
# build takes minutes). Needs root, buildah and mmdebstrap (Debian packages; installed here when missing).
#
# No registry of container images is reachable from these machines, so the Containerfile's public base cannot be
# pulled: a base with the same layout (Debian 12, python3 with venv, CA certificates) is built from Debian's own
# packages with mmdebstrap (libpython too: pyvoy's Envoy embeds Python, as the official image's shared build allows;
# plus this machine's trusted CAs), and passed as BASE. The Containerfile itself is built unchanged.
# `podman run` cannot start containers in this sandbox (crun cannot set RLIMIT_NPROC/NOFILE); `buildah run
# --isolation chroot` can, so the smoke test runs the image's entrypoint that way, as the image's own user.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${IMAGE:-localhost/switchboard:dev}
BASE_IMAGE=${BASE_IMAGE:-localhost/switchboard-base:bookworm}
B=(buildah --storage-driver vfs)

if ! command -v buildah >/dev/null || ! command -v mmdebstrap >/dev/null; then
    apt-get update -qq && apt-get install -y -qq buildah mmdebstrap >/dev/null
fi

if ! "${B[@]}" inspect --type image "$BASE_IMAGE" >/dev/null 2>&1; then
    echo "== building the offline base $BASE_IMAGE from Debian packages"
    work=$(mktemp -d)
    sources=/etc/apt/sources.list.d/debian.sources
    [ -f "$sources" ] || sources=/etc/apt/sources.list
    mmdebstrap --quiet --variant=minbase --include=python3,python3-venv,libpython3.11,ca-certificates bookworm \
        "$work/rootfs.tar" - <"$sources"
    c=$("${B[@]}" from scratch)
    "${B[@]}" add "$c" "$work/rootfs.tar" /
    # The machine's trusted CAs, as a site's own base image carries them: here pip reaches PyPI only through the
    # sandbox's TLS-inspecting egress, which Debian's bundle alone does not trust.
    "${B[@]}" copy "$c" /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
    "${B[@]}" config --env LANG=C.UTF-8 --cmd python3 "$c"
    "${B[@]}" commit --quiet "$c" "$BASE_IMAGE" >/dev/null
    "${B[@]}" rm "$c" >/dev/null
    rm -rf "$work"
fi

echo "== building $IMAGE from Containerfile"
start=$(date +%s)
previous=$("${B[@]}" inspect --type image --format '{{.FromImageID}}' "$IMAGE" 2>/dev/null || true)
"${B[@]}" bud --quiet --isolation chroot --layers=false --build-arg "BASE=$BASE_IMAGE" -f Containerfile -t "$IMAGE" . >/dev/null
# vfs storage keeps a full copy per image: drop the build this one replaces.
current=$("${B[@]}" inspect --type image --format '{{.FromImageID}}' "$IMAGE")
if [ -n "$previous" ] && [ "$previous" != "$current" ]; then "${B[@]}" rmi "$previous" >/dev/null 2>&1 || true; fi
echo "built in $(( $(date +%s) - start )) s; size $("${B[@]}" images --format '{{.Size}}' "$IMAGE")"

c=$("${B[@]}" from --quiet "$IMAGE")
cleanup() { "${B[@]}" rm "$c" >/dev/null 2>&1 || true; }
trap cleanup EXIT
run() { "${B[@]}" run --isolation chroot "$c" -- "$@"; }

echo "== smoke: the image's user, entrypoint and commands"
[ "$(run id -u)" = 10001 ] || { echo "the image does not run as uid 10001"; exit 1; }
run switchboard --help | grep -q "serve" || { echo "switchboard --help failed"; exit 1; }
run sh -c '! command -v gcc cc make git >/dev/null' || { echo "build tools in the runtime image"; exit 1; }
run sh -c '! test -e /opt/switchboard/bin/pip && ! python3 -m pip --version' >/dev/null 2>&1 \
    || { echo "pip is in the runtime image"; exit 1; }
run switchboard migrate | grep -q "database schema is up to date"
run python3 -c 'import sys; from gateway.limits import limiter; from server.store import limit_counters as c
sys.exit(not (limiter.__file__.endswith(".so") and c.__file__.endswith(".so")))' \
    || { echo "the image runs the rate limiter interpreted, not compiled"; exit 1; }

echo "== smoke: serve (both roles) answers /readyz from inside the image"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
gport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
log=$(mktemp)
# Its own session, so that SIGTERM reaches buildah, serve and serve's children as one process group.
setsid "${B[@]}" run --isolation chroot --env "SWITCHBOARD_PORT=$port" --env "SWITCHBOARD_GATEWAY_PORT=$gport" \
    --env SWITCHBOARD_HOST=127.0.0.1 --env SWITCHBOARD_GATEWAY_HOST=127.0.0.1 --env SWITCHBOARD_GATEWAY_WORKERS=1 \
    "$c" -- switchboard serve >"$log" 2>&1 &
serve=$!
ok=""
for _ in $(seq 1 300); do
    if python3 - "$port" "$gport" 2>/dev/null <<'PY'
import sys, urllib.request
for port in sys.argv[1:]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as resp:  # noqa: S310
        assert resp.status == 200
PY
    then ok=1; break; fi
    kill -0 "$serve" 2>/dev/null || break
    sleep 0.2
done
kill -TERM -- "-$serve" 2>/dev/null || true
wait "$serve" || true
if [ -z "$ok" ]; then echo "serve in the image never became ready:"; tail -30 "$log"; exit 1; fi
echo "image smoke test passed ($IMAGE)"
