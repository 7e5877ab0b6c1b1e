"""Signed .vmx artifacts: Ed25519 keys, the signature section's contents, the trust check.

    relaxld --gen-key key.pem                         key.pem (private, mode 0600) and key.pem.pub
    relaxld m.vmo m.ko --sign key.pem -o m.vmx        (or relaxc --sign key.pem m.relax -o m.vmx)
    relaxrun --trust key.pem.pub m.vmx                refuses unsigned, untrusted or badly signed files
    relax.load("m.vmx", trust=["keys/"])              the same check from Python

A signed .vmx ends with a signature section (vmx.py writes it, format 0.2): the signer's
raw Ed25519 public key (32 bytes), then the signature (64 bytes). What is signed covers
every byte of the file but the signature itself and the header's checksum (the checksum
covers the signature, so the signature cannot cover it; it is a function of the rest):

    message = DOMAIN + SHA-256(file[0:24] + file[56:size - 64])

Hashing first keeps a large artifact from being copied into one message. Ed25519 is
deterministic: a signed artifact is as reproducible as an unsigned one. `cryptography`
is imported only when a key is read or a signature made or checked, so loading with no
trust asked for does not pay for it.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from ...diagnostics import UserError
from ...records import record

DOMAIN = b"relax .vmx signature, ed25519, v1\0"  # keeps these signatures from meaning anything elsewhere
PUBLIC_KEY_SIZE = 32
SIGNATURE_SIZE = 64
PAYLOAD_SIZE = PUBLIC_KEY_SIZE + SIGNATURE_SIZE
KEY_FILE_LIMIT = 64 * 1024  # a PEM Ed25519 key is about 120 bytes; anything far larger is not one
FINGERPRINT_DIGITS = 16     # shown like an abbreviated git hash; the full key is what is compared
KEY_SUFFIXES = (".pub", ".pem")


def fingerprint(public_key: bytes) -> str:
    """`SHA256:` and the first hex digits of the SHA-256 of the raw public key."""
    return "SHA256:" + hashlib.sha256(public_key).hexdigest()[:FINGERPRINT_DIGITS]


def signed_message(prefix: bytes, *body) -> bytes:
    """What the signature signs: `prefix` is the header before the checksum, `body` the
    bytes after it up to the signature, in one or more pieces (buffers: not copied)."""
    digest = hashlib.sha256(prefix)  # as the checksum: one more pass at its (often hardware) speed
    for piece in body:
        digest.update(piece)
    return DOMAIN + digest.digest()


def _crypto():
    try:
        from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        raise UserError("signed artifacts need the 'cryptography' package (pip install cryptography)") from None
    return serialization, ed25519, (InvalidSignature, UnsupportedAlgorithm)


@record
class Signature:
    """The signature section of a read .vmx, with the message it should sign."""

    public_key: bytes
    signature: bytes
    message: bytes

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.public_key)

    def verifies(self) -> bool:
        _, ed25519, (invalid, _) = _crypto()
        try:
            ed25519.Ed25519PublicKey.from_public_bytes(self.public_key).verify(self.signature, self.message)
        except (invalid, ValueError):
            return False
        return True

    def describe(self) -> str:
        """The signer as `relaxas --dump stats` shows it."""
        verdict = "signature valid" if self.verifies() else "bad signature: the file changed after signing"
        return f"ed25519 {self.fingerprint} ({verdict})"


def _read_key_file(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            data = handle.read(KEY_FILE_LIMIT + 1)
    except FileNotFoundError:
        raise UserError(f"{what} '{path}': no such file or directory") from None
    except IsADirectoryError:
        raise UserError(f"{what} '{path}': is a directory") from None
    except OSError as exc:
        raise UserError(f"{what} '{path}': cannot read: {(exc.strerror or str(exc)).lower()}") from None
    if len(data) > KEY_FILE_LIMIT:
        raise UserError(f"{what} '{path}': larger than {KEY_FILE_LIMIT} bytes, not a PEM key")
    return data


@record
class SigningKey:
    """An Ed25519 private key read from a PEM file, ready to sign artifacts."""

    path: str
    private_key: Any  # cryptography's Ed25519PrivateKey
    public_key: bytes

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.public_key)

    def sign(self, message: bytes) -> bytes:
        return self.private_key.sign(message)

    @staticmethod
    def of(private_key, path: str = "<memory>") -> "SigningKey":
        """A cryptography Ed25519PrivateKey as a SigningKey (`path`: where it came from, for messages)."""
        serialization, _, _ = _crypto()
        return SigningKey(path, private_key, _raw_public(private_key.public_key(), serialization))

    @staticmethod
    def read(path: str) -> "SigningKey":
        """The key of a PEM (PKCS#8) file as `openssl genpkey -algorithm ed25519` or `relaxld --gen-key` write it."""
        data = _read_key_file(path, "signing key")
        serialization, ed25519, (_, unsupported) = _crypto()
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except TypeError:
            raise UserError(f"signing key '{path}' is encrypted; sign with an unencrypted key "
                            "(openssl pkey -in KEY -out PLAIN)") from None
        except (ValueError, unsupported):
            raise UserError(f"signing key '{path}': not a private key in PEM (PKCS#8); make one with "
                            "relaxld --gen-key KEY or openssl genpkey -algorithm ed25519 -out KEY") from None
        if not isinstance(key, ed25519.Ed25519PrivateKey):
            raise UserError(f"signing key '{path}': not an ed25519 key (artifacts are signed with ed25519)")
        return SigningKey.of(key, path)


def _raw_public(key, serialization) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def read_public_key(path: str, skip_private: bool = False) -> bytes | None:
    """The raw Ed25519 public key of a PEM file (`openssl pkey -pubout`, or K.pub from relaxld
    --gen-key K); with `skip_private`, None for a private key file."""
    data = _read_key_file(path, "trusted key")
    serialization, ed25519, (_, unsupported) = _crypto()
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, unsupported):
        if b"PRIVATE KEY" in data and skip_private:
            return None
        if b"PRIVATE KEY" in data:
            raise UserError(f"trusted key '{path}' is a private key; trust its public key (K.pub beside a key "
                            "from relaxld --gen-key K, or openssl pkey -in K -pubout)") from None
        raise UserError(f"trusted key '{path}': not a public key in PEM") from None
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise UserError(f"trusted key '{path}': not an ed25519 key (artifacts are signed with ed25519)")
    return _raw_public(key, serialization)


def _public_keys(path: str) -> list[tuple[bytes, str]]:
    """(raw key, file) of the key file `path`, or of the *.pub and *.pem files of the directory
    `path` but its private keys (relaxld --gen-key writes K and K.pub side by side)."""
    if not os.path.isdir(path):
        return [(read_public_key(path), path)]
    files = sorted(os.path.join(path, name) for name in os.listdir(path)
                   if name.endswith(KEY_SUFFIXES) and os.path.isfile(os.path.join(path, name)))
    keys = [(read_public_key(name, skip_private=True), name) for name in files]
    keys = [(key, name) for key, name in keys if key is not None]
    if not keys:
        raise UserError(f"trusted key directory '{path}' holds no public keys (*.pub, *.pem)")
    return keys


@record
class TrustedKeys:
    """The public keys an artifact may be signed with: raw key -> the file it came from."""

    keys: dict

    @staticmethod
    def read(paths) -> "TrustedKeys":
        """From key files and directories of them (their *.pub and *.pem files)."""
        keys: dict[bytes, str] = {}
        for path in paths:
            for key, name in _public_keys(os.fspath(path)):
                keys.setdefault(key, name)
        if not keys:
            raise UserError("no trusted keys given (trust names public key files or directories of them)")
        return TrustedKeys(keys)

    def describe(self, limit: int = 4) -> str:
        names = [f"{fingerprint(key)} ('{path}')" for key, path in self.keys.items()]
        return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit else "")

    def check(self, signature: Signature | None, source: str) -> None:
        """Refuses an artifact unless a trusted key signed exactly these bytes."""
        if signature is None:
            raise UserError(f"'{source}' is unsigned; only artifacts signed by a trusted key are accepted "
                            "(sign it with relaxld --sign KEY or relaxc --sign KEY)")
        if signature.public_key not in self.keys:
            raise UserError(f"'{source}' is signed by an untrusted key {signature.fingerprint} "
                            f"(trusted: {self.describe()})")
        if not signature.verifies():
            raise UserError(f"'{source}' has a bad signature: its bytes are not what key {signature.fingerprint} "
                            "signed (the file was changed after signing)")


def trusted_keys(trust) -> TrustedKeys:
    """`trust` as relax.load takes it: a TrustedKeys, a path, or paths (key files or directories)."""
    if isinstance(trust, TrustedKeys):
        return trust
    if isinstance(trust, (str, os.PathLike)):
        trust = [trust]
    return TrustedKeys.read(list(trust))


def generate_key(path: str) -> SigningKey:
    """Writes a new private key to `path` (PEM PKCS#8, mode 0600) and its public key to `path`.pub."""
    serialization, ed25519, _ = _crypto()
    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    for name in (path, path + ".pub"):
        if os.path.lexists(name):
            raise UserError(f"'{name}' exists; refusing to overwrite a key (remove it, or name another file)")
    _create(path, private, 0o600)
    _create(path + ".pub", public, 0o644)
    return SigningKey.of(key, path)


def _create(path: str, data: bytes, mode: int) -> None:
    # O_EXCL: never through an existing file or link; the mode is set at creation, never widened later.
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError:
        raise UserError(f"'{path}' exists; refusing to overwrite a key") from None
    except OSError as exc:
        raise UserError(f"'{path}': cannot write: {(exc.strerror or str(exc)).lower()}") from None
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)


__all__ = ["Signature", "SigningKey", "TrustedKeys", "fingerprint", "generate_key", "read_public_key",
           "signed_message", "trusted_keys"]
