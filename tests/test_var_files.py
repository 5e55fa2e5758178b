"""Key files under the var dir appear whole: a sibling process never reads one half-written (the first start of
several gateway workers used to crash one with "Fernet key must be 32 url-safe base64-encoded bytes")."""

from __future__ import annotations

import multiprocessing
import stat
from multiprocessing.synchronize import Barrier
from pathlib import Path

from cryptography.fernet import Fernet

from server.crypto import SecretBox
from server.settings import load_settings
from server.tokens import TokenVerifier, ensure_signing_key, mint_token
from server.varfiles import create_once, replace


def test_a_file_gets_its_name_only_once_complete(tmp_path: Path) -> None:
    path = tmp_path / "var" / "some.key"

    def make() -> bytes:
        assert not path.exists()  # nothing to read while the content is being made and written
        return b"complete"

    assert create_once(path, make) == b"complete"
    assert create_once(path, lambda: b"another") == b"complete"  # the first one stays
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["some.key"]  # no temporary file left behind


def test_replace_swaps_the_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "admin-token"
    replace(path, b"old\n")
    replace(path, b"new\n")
    assert path.read_bytes() == b"new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["admin-token"]


def _first_start(var_dir: str, barrier: Barrier, results: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    settings = load_settings({"SWITCHBOARD_VAR_DIR": var_dir})
    barrier.wait()
    try:
        box = SecretBox(settings)
        TokenVerifier(settings)
        results.put((box.open(box.seal("x")), ensure_signing_key(settings)))
    except Exception as exc:
        results.put((f"failed: {exc!r}", b""))


def test_processes_starting_together_share_one_key_and_none_fails(tmp_path: Path) -> None:
    var_dir = tmp_path / "var"
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(8)
    results = context.Queue()
    procs = [context.Process(target=_first_start, args=(str(var_dir), barrier, results)) for _ in range(8)]
    for proc in procs:
        proc.start()
    answers = [results.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(60)
    assert [opened for opened, _ in answers] == ["x"] * 8
    assert len({pem for _, pem in answers}) == 1
    settings = load_settings({"SWITCHBOARD_VAR_DIR": str(var_dir)})
    Fernet(settings.encryption_key_path.read_bytes().strip())  # a valid key
    assert sorted(p.name for p in var_dir.iterdir()) == ["encryption.key", "signing-key.pem"]
    assert mint_token(settings, user_id="alice")
