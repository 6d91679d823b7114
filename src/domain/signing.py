"""The HMAC envelope (interface 5.1), both directions, in one place.

Canonical string: ``timestamp\\nMETHOD\\npath\\nsha256hex(body)``; the signature is the
lowercase hex HMAC-SHA256 of it keyed with the secret. Inbound calls carry X-Key-Id
(a keyring per operator); outbound calls (wallet, webhooks) use the operator's single
outbound secret and omit X-Key-Id.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

MAX_SKEW_SECONDS = 300
_TIMESTAMP = re.compile(r"-?[0-9]{1,15}")  # ASCII digits only; anything else cannot verify
HEADER_KEY_ID = "X-Key-Id"
HEADER_TIMESTAMP = "X-Timestamp"
HEADER_SIGNATURE = "X-Signature"


def body_hash(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def canonical_string(timestamp: str, method: str, path: str, body: bytes) -> str:
    return f"{timestamp}\n{method.upper()}\n{path}\n{body_hash(body)}"


def sign(secret: str, timestamp: str, method: str, path: str, body: bytes) -> str:
    message = canonical_string(timestamp, method, path, body).encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def outbound_headers(secret: str, now: int, method: str, path: str, body: bytes) -> dict[str, str]:
    """Headers for a service-to-operator call (no X-Key-Id: one outbound secret)."""
    timestamp = str(now)
    return {
        HEADER_TIMESTAMP: timestamp,
        HEADER_SIGNATURE: sign(secret, timestamp, method, path, body),
    }


class AuthFailure(Enum):
    MISSING_HEADERS = "MISSING_HEADERS"
    INVALID_SIGNATURE = "INVALID_SIGNATURE"
    TIMESTAMP_SKEW = "TIMESTAMP_SKEW"


@dataclass(frozen=True, slots=True)
class SigningKey:
    key_id: str
    operator_id: str
    secret: str
    revoked: bool = False


def verify_timestamp(timestamp: str, now: int) -> AuthFailure | None:
    """None when the timestamp is an integer within ±300 s of now."""
    if not _TIMESTAMP.fullmatch(timestamp):
        return AuthFailure.INVALID_SIGNATURE
    if abs(int(timestamp) - now) > MAX_SKEW_SECONDS:
        return AuthFailure.TIMESTAMP_SKEW
    return None


def signature_matches(
    secret: str, timestamp: str, method: str, path: str, body: bytes, signature: str
) -> bool:
    expected = sign(secret, timestamp, method, path, body)
    return hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace"))


def verify_inbound(
    keyring: Mapping[str, SigningKey],
    key_id: str | None,
    timestamp: str | None,
    signature: str | None,
    method: str,
    path: str,
    body: bytes,
    now: int,
) -> SigningKey | AuthFailure:
    """Authenticate an operator-to-service call; the key on success, else why not.

    Unknown key, revoked key and mismatch are all INVALID_SIGNATURE (interface 5.2),
    and all three compute one HMAC so that timing does not tell them apart.
    """
    if not key_id or not timestamp or not signature:
        return AuthFailure.MISSING_HEADERS
    skew = verify_timestamp(timestamp, now)
    if skew is not None:
        return skew
    key = keyring.get(key_id)
    secret = key.secret if key is not None else "\x00unknown-key"
    matches = signature_matches(secret, timestamp, method, path, body, signature)
    if key is None or key.revoked or not matches:
        return AuthFailure.INVALID_SIGNATURE
    return key


def verify_outbound(
    secret: str,
    timestamp: str | None,
    signature: str | None,
    method: str,
    path: str,
    body: bytes,
    now: int,
) -> AuthFailure | None:
    """Check a service-to-operator call as an operator would; None when valid."""
    if not timestamp or not signature:
        return AuthFailure.MISSING_HEADERS
    skew = verify_timestamp(timestamp, now)
    if skew is not None:
        return skew
    if not signature_matches(secret, timestamp, method, path, body, signature):
        return AuthFailure.INVALID_SIGNATURE
    return None
