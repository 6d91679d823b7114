"""A test-side signer written from interface 5.1, independent of the project's code."""

from __future__ import annotations

import hashlib
import hmac


def signature(secret: str, timestamp: str, method: str, path: str, body: bytes) -> str:
    canonical = "\n".join([timestamp, method.upper(), path, hashlib.sha256(body).hexdigest()])
    return hmac.new(secret.encode(), canonical.encode(), hashlib.sha256).hexdigest()


def signed_headers(
    key_id: str, secret: str, timestamp: int, method: str, path: str, body: bytes = b""
) -> dict[str, str]:
    ts = str(timestamp)
    return {
        "X-Key-Id": key_id,
        "X-Timestamp": ts,
        "X-Signature": signature(secret, ts, method, path, body),
        "Content-Type": "application/json",
    }
