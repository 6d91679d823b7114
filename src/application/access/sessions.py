"""Launch tokens and player sessions (decisions §7).

A launch token is signed by the service (HMAC with a service secret kept in the
database), carries operator, player, game, target and expiry, and is single use: its
redemption is a row whose primary key is the token id, so a second use is a uniqueness
violation. A session token is 256 random bits; only its SHA-256 is stored.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any

import msgspec

from application.clock import Clock
from application.errors import PlatformError
from application.store.sql import DuplicateRow, SqlDatabase

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS service_secrets (
        name TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS launch_redemptions (
        token_id TEXT PRIMARY KEY, redeemed_at DOUBLE PRECISION NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS player_sessions (
        token_hash TEXT PRIMARY KEY,
        operator_id TEXT NOT NULL,
        player_external_id TEXT NOT NULL,
        game_key TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        last_seen_at DOUBLE PRECISION NOT NULL,
        revoked INTEGER NOT NULL DEFAULT 0)""",
]


class LaunchClaims(msgspec.Struct, frozen=True):
    jti: str
    operator_id: str
    player_external_id: str
    game_key: str
    target: dict[str, Any]
    expires_at: int


@dataclass(frozen=True)
class PlayerSession:
    operator_id: str
    player_external_id: str
    game_key: str


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def launch_token_invalid() -> PlatformError:
    return PlatformError("LAUNCH_TOKEN_INVALID", "launch token is invalid, expired or used")


def session_invalid() -> PlatformError:
    return PlatformError("SESSION_INVALID", "session token is missing, expired or revoked")


class Sessions:
    def __init__(self, db: SqlDatabase, clock: Clock, idle_seconds: int, launch_ttl: int) -> None:
        self.db = db
        self.clock = clock
        self.idle_seconds = idle_seconds
        self.launch_ttl = launch_ttl
        self._secret = self._service_secret()

    def _service_secret(self) -> bytes:
        candidate = secrets.token_hex(32)
        with self.db.transaction() as cur:
            cur.execute(
                "INSERT INTO service_secrets (name, value) VALUES (?, ?) "
                "ON CONFLICT (name) DO NOTHING",
                ("launch_token_key", candidate),
            )
            cur.execute("SELECT value FROM service_secrets WHERE name = ?", ("launch_token_key",))
            return bytes.fromhex(cur.fetchone()[0])

    def mint_launch_token(
        self, operator_id: str, player: str, game_key: str, target: dict[str, Any]
    ) -> tuple[str, int]:
        expires_at = int(self.clock.now()) + self.launch_ttl
        claims = LaunchClaims(
            secrets.token_hex(16), operator_id, player, game_key, target, expires_at
        )
        payload = _b64(msgspec.json.encode(claims))
        mac = hmac.new(self._secret, payload.encode(), hashlib.sha256).digest()
        return f"{payload}.{_b64(mac)}", expires_at

    def redeem_launch_token(self, token: str) -> LaunchClaims:
        claims = self._verified_claims(token)
        now = self.clock.now()
        if claims is None or now > claims.expires_at:
            raise launch_token_invalid()
        try:
            with self.db.transaction() as cur:
                cur.execute(
                    "INSERT INTO launch_redemptions (token_id, redeemed_at) VALUES (?, ?)",
                    (claims.jti, now),
                )
        except DuplicateRow:
            raise launch_token_invalid() from None
        return claims

    def peek_launch_token(self, token: str) -> LaunchClaims | None:
        """The token's claims when its signature verifies (not redeemed, expiry unchecked)."""
        return self._verified_claims(token)

    def _verified_claims(self, token: str) -> LaunchClaims | None:
        payload, _, mac = token.partition(".")
        try:
            expected = hmac.new(self._secret, payload.encode(), hashlib.sha256).digest()
            if not hmac.compare_digest(expected, _unb64(mac)):
                return None
            return msgspec.json.decode(_unb64(payload), type=LaunchClaims)
        except (ValueError, msgspec.DecodeError):
            return None

    def open_session(self, claims: LaunchClaims) -> str:
        token = secrets.token_urlsafe(32)
        now = self.clock.now()
        with self.db.transaction() as cur:
            cur.execute(
                "INSERT INTO player_sessions (token_hash, operator_id, player_external_id, "
                "game_key, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    _hash(token),
                    claims.operator_id,
                    claims.player_external_id,
                    claims.game_key,
                    now,
                    now,
                ),
            )
        return token

    def authenticate(self, token: str | None) -> PlayerSession:
        """The session's player, refreshing its idle timer; SESSION_INVALID otherwise."""
        if not token:
            raise session_invalid()
        now = self.clock.now()
        with self.db.transaction() as cur:
            cur.execute(
                "UPDATE player_sessions SET last_seen_at = ? WHERE token_hash = ? "
                "AND revoked = 0 AND last_seen_at >= ? "
                "RETURNING operator_id, player_external_id, game_key",
                (now, _hash(token), now - self.idle_seconds),
            )
            row = cur.fetchone()
        if row is None:
            raise session_invalid()
        return PlayerSession(row[0], row[1], row[2])

    def logout(self, token: str) -> None:
        with self.db.transaction() as cur:
            cur.execute(
                "UPDATE player_sessions SET revoked = 1 WHERE token_hash = ?", (_hash(token),)
            )


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
