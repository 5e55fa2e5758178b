"""`switchboard token` signs with the server's key or refuses: never a new key that the server would not know, nor a
token already expired."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from server.settings import load_settings
from server.tokens import TokenVerifier, ensure_signing_key

SWITCHBOARD = str(Path(sys.executable).with_name("switchboard"))


def _token(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SWITCHBOARD, "token", "--user", "alice", *args],
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin", **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )


def test_without_a_signing_key_it_refuses_and_says_why(tmp_path: Path) -> None:
    done = _token(tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "no signing key at var/signing-key.pem" in done.stderr and "--var-dir" in done.stderr
    assert list(tmp_path.iterdir()) == []  # nothing created: no var dir, no key


@pytest.mark.parametrize("how", ["--var-dir", "SWITCHBOARD_VAR_DIR"])
async def test_the_server_var_dir_is_named_by_flag_or_setting(tmp_path: Path, how: str) -> None:
    var_dir = tmp_path / "served"
    settings = load_settings({"SWITCHBOARD_VAR_DIR": str(var_dir)})
    ensure_signing_key(settings)  # what the server did on its first start
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if how == "--var-dir":
        done = _token(elsewhere, "--var-dir", str(var_dir))
    else:
        done = _token(elsewhere, env={"SWITCHBOARD_VAR_DIR": str(var_dir)})
    assert done.returncode == 0, done.stderr
    claims = await TokenVerifier(settings).verify(done.stdout.strip())  # the server accepts it
    assert claims.user_id == "alice"
    assert list(elsewhere.iterdir()) == []


def test_with_an_identity_provider_it_refuses(tmp_path: Path) -> None:
    done = _token(tmp_path, env={"SWITCHBOARD_JWKS_URL": "http://127.0.0.1:9/jwks"})
    assert done.returncode == 2
    assert "SWITCHBOARD_JWKS_URL" in done.stderr


@pytest.mark.parametrize("ttl", ["-100", "0"])
def test_a_lifetime_below_one_second_is_an_argument_error(tmp_path: Path, ttl: str) -> None:
    """A token that expired before it was minted is refused by every server: no useless credential, exit 2."""
    settings = load_settings({"SWITCHBOARD_VAR_DIR": str(tmp_path / "var")})
    ensure_signing_key(settings)  # with the server's key, only the lifetime stands between the call and a token
    done = _token(tmp_path, "--ttl", ttl, "--var-dir", str(settings.var_dir))
    assert done.returncode == 2, done.stdout
    assert done.stdout == ""
    assert "--ttl" in done.stderr
