"""Who may use a server: an HMAC challenge-response over a shared key, and TLS.

After the greeting the server sends a random nonce; a client that holds the key answers
HMAC-SHA256(key, "relax-rpc client" + nonce) along with its own nonce, and the server
proves it holds the key too by answering HMAC-SHA256(key, "relax-rpc server" + that
nonce). The key itself never travels, and the comparison is `hmac.compare_digest`.
Without TLS the messages that follow are authenticated only at the start, not encrypted:
--tls-cert/--tls-key (the standard library's ssl) encrypt the whole connection.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import ssl

from ..diagnostics import UserError

NONCE_BYTES = 32
MAX_KEY_BYTES = 4096


def new_nonce() -> str:
    return secrets.token_hex(NONCE_BYTES)


def proof(key: bytes, role: str, nonce: str) -> str:
    """What the side `role` ("client" or "server") answers to the other side's nonce."""
    return hmac.new(key, f"relax-rpc {role}".encode() + nonce.encode(), hashlib.sha256).hexdigest()


def check(key: bytes, role: str, nonce: str, answer) -> bool:
    return isinstance(answer, str) and hmac.compare_digest(proof(key, role, nonce), answer)


def read_key_file(path: str) -> bytes:
    """The shared key in `path`: its bytes, without surrounding whitespace; never empty."""
    try:
        with open(path, "rb") as handle:
            key = handle.read(MAX_KEY_BYTES + 1).strip()
    except FileNotFoundError:
        raise UserError(f"--key-file '{path}': no such file") from None
    except OSError as error:
        raise UserError(f"--key-file '{path}': {error.strerror or error}") from None
    if not key:
        raise UserError(f"--key-file '{path}': the file is empty")
    if len(key) > MAX_KEY_BYTES:
        raise UserError(f"--key-file '{path}': a key has at most {MAX_KEY_BYTES} bytes")
    return key


def as_key(key) -> bytes | None:
    """A key given to the Python API as str or bytes."""
    if key is None or isinstance(key, bytes):
        return key or None
    return str(key).encode() or None


def server_tls(cert: str | None, key: str | None) -> ssl.SSLContext | None:
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise UserError("--tls-cert and --tls-key go together")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as error:
        raise UserError(f"--tls-cert '{cert}' / --tls-key '{key}': {error}") from None
    return context


def client_tls(cert: str | None) -> ssl.SSLContext | None:
    """TLS for a client that trusts the server certificate (or CA) in `cert`."""
    if cert is None:
        return None
    if not os.path.isfile(cert):
        raise UserError(f"--tls-cert '{cert}': no such file")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_verify_locations(cert)
    except (OSError, ssl.SSLError) as error:
        raise UserError(f"--tls-cert '{cert}': {error}") from None
    return context
