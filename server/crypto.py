"""Secrets at rest: provider API keys and other outbound credentials are encrypted with Fernet.

Captured request and response bodies (server.capture) are sealed with AES-256-GCM under a key derived from the same
secret (HKDF-SHA256, its own label): Fernet's Python layers cost some forty function calls per seal, a measurable
share of a gateway request when every call is captured; AES-GCM is one call into OpenSSL, authenticated as well.

The key comes from SWITCHBOARD_ENCRYPTION_KEY, or is generated once into var/encryption.key (0600, written
atomically: see server.varfiles) for the embedded default. Every replica must share it. Decrypted values are for
outbound calls only, never for responses or logs.
"""

from __future__ import annotations

import base64
import binascii
import os

from cryptography.fernet import Fernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from server.settings import Settings
from server.varfiles import create_once

__all__ = ["SecretBox"]


def _key(settings: Settings) -> bytes:
    if settings.encryption_key:
        return settings.encryption_key.reveal().encode()
    return create_once(settings.encryption_key_path, Fernet.generate_key).strip()


_BLOB_LABEL = b"switchboard content capture v1"
_NONCE = 12


class SecretBox:
    def __init__(self, settings: Settings) -> None:
        key = _key(settings)
        self._fernet = Fernet(key)
        derive = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_BLOB_LABEL)
        self._blobs = AESGCM(derive.derive(base64.urlsafe_b64decode(key)))

    def seal(self, secret: str) -> bytes:
        return self._fernet.encrypt(secret.encode())

    def open(self, sealed: bytes, *, ttl: int | None = None) -> str:
        """The sealed value; with `ttl`, refused (InvalidToken) once sealed more than `ttl` seconds ago."""
        return self._fernet.decrypt(sealed, ttl=ttl).decode()

    def seal_blob(self, data: bytes) -> str:
        """`data` sealed as ASCII text (base64 of a random nonce and the AES-GCM ciphertext with its tag)."""
        nonce = os.urandom(_NONCE)
        return binascii.b2a_base64(nonce + self._blobs.encrypt(nonce, data, None), newline=False).decode("ascii")

    def open_blob(self, sealed: str) -> bytes:
        """What `seal_blob` sealed; raises cryptography's InvalidTag if it was altered or sealed under another key."""
        raw = base64.b64decode(sealed)
        return self._blobs.decrypt(raw[:_NONCE], raw[_NONCE:], None)

    def __repr__(self) -> str:
        return "SecretBox(***)"
