"""The HMAC envelope against vectors computed here from the interface text alone."""

from __future__ import annotations

import hashlib
import hmac

from domain.signing import AuthFailure, SigningKey, sign, verify_inbound, verify_outbound

SECRET = "change-me-inbound"
TIMESTAMP = "1767225600"
PATH = "/api/s2s/launches"
BODY = b'{"playerExternalId":"player-1","gameKey":"upgrader","target":{}}'


def _by_the_book(secret: str, ts: str, method: str, path: str, body: bytes) -> str:
    text = ts + "\n" + method.upper() + "\n" + path + "\n" + hashlib.sha256(body).hexdigest()
    return hmac.new(secret.encode("utf-8"), text.encode("utf-8"), hashlib.sha256).hexdigest()


def test_signature_vector_matches_the_interface_text() -> None:
    expected = _by_the_book(SECRET, TIMESTAMP, "POST", PATH, BODY)
    assert sign(SECRET, TIMESTAMP, "post", PATH, BODY) == expected
    # The same vector, pinned: it is also the worked example in the README.
    assert expected == "72e96aa1d3f3051ea7182b8625e9afa810af11bfb3ffc98e6451af0b29286254"


def test_empty_body_signs_the_hash_of_the_empty_string() -> None:
    empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    text = f"{TIMESTAMP}\nGET\n/api/s2s/health\n{empty}"
    expected = hmac.new(SECRET.encode(), text.encode(), hashlib.sha256).hexdigest()
    assert sign(SECRET, TIMESTAMP, "GET", "/api/s2s/health", b"") == expected


KEYRING = {
    "k1": SigningKey("k1", "op", SECRET),
    "old": SigningKey("old", "op", "old-secret", revoked=True),
}


def _verify(key_id: str, secret: str, ts: int, now: int, body: bytes = BODY) -> object:
    signature = _by_the_book(secret, str(ts), "POST", PATH, body)
    return verify_inbound(KEYRING, key_id, str(ts), signature, "POST", PATH, body, now)


def test_skew_of_300_seconds_is_accepted_on_both_sides() -> None:
    now = 1_800_000_000
    assert _verify("k1", SECRET, now - 300, now) == KEYRING["k1"]
    assert _verify("k1", SECRET, now + 300, now) == KEYRING["k1"]


def test_skew_of_301_seconds_is_refused_on_both_sides() -> None:
    now = 1_800_000_000
    assert _verify("k1", SECRET, now - 301, now) is AuthFailure.TIMESTAMP_SKEW
    assert _verify("k1", SECRET, now + 301, now) is AuthFailure.TIMESTAMP_SKEW


def test_revoked_and_unknown_keys_fail_like_a_mismatch() -> None:
    now = 1_800_000_000
    assert _verify("old", "old-secret", now, now) is AuthFailure.INVALID_SIGNATURE
    assert _verify("nobody", SECRET, now, now) is AuthFailure.INVALID_SIGNATURE
    assert _verify("k1", "wrong", now, now) is AuthFailure.INVALID_SIGNATURE


def test_missing_headers_are_named_as_such() -> None:
    assert (
        verify_inbound(KEYRING, None, "1", "ab", "GET", "/", b"", 1) is AuthFailure.MISSING_HEADERS
    )
    assert (
        verify_inbound(KEYRING, "k1", "", "ab", "GET", "/", b"", 1) is AuthFailure.MISSING_HEADERS
    )


def test_every_changed_body_byte_is_refused() -> None:
    now = 1_800_000_000
    signature = _by_the_book(SECRET, str(now), "POST", PATH, BODY)
    for index in range(len(BODY)):
        changed = bytearray(BODY)
        changed[index] ^= 0x01
        outcome = verify_inbound(
            KEYRING, "k1", str(now), signature, "POST", PATH, bytes(changed), now
        )
        assert outcome is AuthFailure.INVALID_SIGNATURE


def test_outbound_verification_uses_the_single_outbound_secret() -> None:
    now = 1_800_000_000
    signature = _by_the_book("outbound", str(now), "POST", "/wallet", b"{}")
    assert verify_outbound("outbound", str(now), signature, "POST", "/wallet", b"{}", now) is None
    assert (
        verify_outbound("other", str(now), signature, "POST", "/wallet", b"{}", now)
        is AuthFailure.INVALID_SIGNATURE
    )
