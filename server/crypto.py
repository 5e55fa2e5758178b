"""Secrets at rest: provider API keys and other outbound credentials are encrypted with Fernet, and so are captured
request and response bodies (server.capture), as bytes.

The key comes from SWITCHBOARD_ENCRYPTION_KEY, or is generated once into var/encryption.key (0600, written
atomically: see server.varfiles) for the embedded default. Every replica must share it. Decrypted values are for
outbound calls only, never for responses or logs.
"""

from __future__ import annotations

from cryptography.fernet import Fernet

from server.settings import Settings
from server.varfiles import create_once

__all__ = ["SecretBox"]


def _key(settings: Settings) -> bytes:
    if settings.encryption_key:
        return settings.encryption_key.reveal().encode()
    return create_once(settings.encryption_key_path, Fernet.generate_key).strip()


class SecretBox:
    def __init__(self, settings: Settings) -> None:
        self._fernet = Fernet(_key(settings))

    def seal(self, secret: str) -> bytes:
        return self._fernet.encrypt(secret.encode())

    def open(self, sealed: bytes) -> str:
        return self._fernet.decrypt(sealed).decode()

    def seal_bytes(self, data: bytes) -> bytes:
        return self._fernet.encrypt(data)

    def open_bytes(self, sealed: bytes) -> bytes:
        return self._fernet.decrypt(sealed)

    def __repr__(self) -> str:
        return "SecretBox(***)"
