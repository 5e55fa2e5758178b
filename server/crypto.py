"""Secrets at rest: provider API keys and other outbound credentials are encrypted with Fernet.

The key comes from SWITCHBOARD_ENCRYPTION_KEY, or is generated once into var/encryption.key (0600) for the embedded
default. Every replica must share it. Decrypted values are for outbound calls only, never for responses or logs.
"""

from __future__ import annotations

import contextlib
import os

from cryptography.fernet import Fernet

from server.settings import Settings

__all__ = ["SecretBox"]


def _key(settings: Settings) -> bytes:
    if settings.encryption_key:
        return settings.encryption_key.reveal().encode()
    path = settings.encryption_key_path
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # another process won the race; use theirs
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(Fernet.generate_key())
    return path.read_bytes().strip()


class SecretBox:
    def __init__(self, settings: Settings) -> None:
        self._fernet = Fernet(_key(settings))

    def seal(self, secret: str) -> bytes:
        return self._fernet.encrypt(secret.encode())

    def open(self, sealed: bytes) -> str:
        return self._fernet.decrypt(sealed).decode()

    def __repr__(self) -> str:
        return "SecretBox(***)"
