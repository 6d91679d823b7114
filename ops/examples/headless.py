"""The headless flow of interface 5.4, end to end, as an operator backend would run it.

1. mint a launch token with a SIGNED ``POST /api/s2s/launches`` (the operator asserts the
   player is theirs; this is the only step that needs the secret);
2. exchange it at ``POST /api/play/session/init`` (no key) for a session token;
3. drive the player API with ``Authorization: Bearer``: prizes, one play, the round
   history, and a seed rotation that reveals the server seed so the roll is re-computed
   here (decisions 3, ``hmac_sha256_v1``); then log out.

Standard library only, so it can be copied. The key and its secret are read from the
platform's TOML config (``--config``), never from the command line. Against ``make run``::

    python ops/examples/headless.py --config ops/demo/config.toml --player player-1
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import json
import sys
import time
import tomllib
import urllib.error
import urllib.request
import uuid
from typing import Any
from urllib.parse import urlencode


class ApiError(Exception):
    def __init__(self, step: str, status: int, body: Any) -> None:
        error = body.get("error", {}) if isinstance(body, dict) else {}
        self.code = error.get("code", f"HTTP_{status}")
        super().__init__(f"{step}: {status} {self.code}: {error.get('message', body)}")


def sign(secret: str, timestamp: str, method: str, path: str, body: bytes) -> str:
    """Interface 5.1: hex HMAC-SHA256 over ``timestamp\\nMETHOD\\npath\\nsha256hex(body)``."""
    canonical = f"{timestamp}\n{method}\n{path}\n{hashlib.sha256(body).hexdigest()}"
    return hmac.new(secret.encode(), canonical.encode(), hashlib.sha256).hexdigest()


def roll(server_seed: str, client_seed: str, nonce: int) -> int:
    """Decisions 3: the first big-endian u32 word below 4294960000, modulo 10000."""
    cursor = 0
    while True:
        message = f"{client_seed}:{nonce}:{cursor}".encode()
        digest = hmac.new(server_seed.encode(), message, hashlib.sha256).digest()
        for offset in range(0, 32, 4):
            word = int.from_bytes(digest[offset : offset + 4], "big")
            if word < 4_294_960_000:
                return word % 10_000
        cursor += 1


class Platform:
    def __init__(self, base_url: str, key_id: str, secret: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.key_id = key_id
        self._secret = secret
        self.session_token: str | None = None

    def _send(self, step: str, method: str, path: str, body: bytes, headers: dict) -> Any:
        request = urllib.request.Request(  # noqa: S310 (the platform's own http(s) URL)
            self.base_url + path, data=body or None, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
                answer = json.load(response)
                print(f"  {method} {path.split('?')[0]} -> {response.status}")
                return answer
        except urllib.error.HTTPError as exc:
            try:
                detail = json.load(exc)
            except ValueError:
                detail = exc.reason
            raise ApiError(step, exc.code, detail) from None

    def s2s(self, step: str, method: str, path: str, payload: Any = None) -> Any:
        body = b"" if payload is None else json.dumps(payload).encode()
        timestamp = str(int(time.time()))
        headers = {
            "X-Key-Id": self.key_id,
            "X-Timestamp": timestamp,
            "X-Signature": sign(self._secret, timestamp, method, path, body),
            "Content-Type": "application/json",
        }
        return self._send(step, method, path, body, headers)

    def play(self, step: str, method: str, path: str, payload: Any = None) -> Any:
        body = b"" if payload is None else json.dumps(payload).encode()
        headers = {"Content-Type": "application/json"}
        if self.session_token:
            headers["Authorization"] = f"Bearer {self.session_token}"
        return self._send(step, method, path, body, headers)


def money(minor: int, currency: str, exponent: int = 2) -> str:
    text = str(abs(minor)).rjust(exponent + 1, "0")
    major = f"{text[:-exponent]}.{text[-exponent:]}" if exponent else text
    return f"{'-' if minor < 0 else ''}{major} {currency}"


def run(platform: Platform, player: str, wager_minor: int | None) -> int:
    print(f"1. mint a launch token for {player!r} (signed S2S, key {platform.key_id})")
    launch = platform.s2s(
        "launch",
        "POST",
        "/api/s2s/launches",
        {"playerExternalId": player, "gameKey": "upgrader", "target": {}},
    )
    print(f"   launch token valid until {launch['expiresAt']} (single use)")

    print("2. exchange it for a session (no key)")
    session = platform.play(
        "session", "POST", "/api/play/session/init", {"launchToken": launch["launchToken"]}
    )
    platform.session_token = session["sessionToken"]
    config = session["game"]["config"]
    currency = config["currency"]
    print(
        f"   session for {session['player']['playerExternalId']} of operator "
        f"{session['player']['operatorId']}; idle expiry {session['idleExpirySeconds']} s; "
        f"chances {config['chancePresetsBps']} (default {config['defaultChanceBps']})"
    )
    balance = session.get("balance")
    if balance is None:
        print("   casino balance: the wallet did not answer in time")
    else:
        print(f"   casino balance {money(balance['balanceMinor'], balance['currency'])}")

    chance = config["defaultChanceBps"]
    wager = wager_minor or max(config["minWagerMinor"], 1000)
    print(f"3. prizes for a wager of {money(wager, currency)} at {chance / 100:g}%")
    quote = platform.play(
        "prizes",
        "GET",
        "/api/play/upgrader/prizes?" + urlencode({"wagerMinor": wager, "chanceBps": chance}),
    )
    band = quote["targetBand"]
    print(
        f"   band {money(band['lowerMinor'], currency)} .. {money(band['upperMinor'], currency)}"
        f", {len(quote['prizes'])} prizes"
    )
    if not quote["prizes"]:
        print("   no prize in this band: try another --wager-minor")
        return 1
    target = quote["prizes"][0]
    print(f"   aiming at {target['name']} ({money(target['valueMinor'], currency)})")

    action = str(uuid.uuid4())
    print(f"4. play (clientActionId {action}; a retry with the same id never debits twice)")
    answer = platform.play(
        "play",
        "POST",
        "/api/play/upgrader/play",
        {
            "clientActionId": action,
            "wagerMinor": wager,
            "chanceBps": chance,
            "targetItemId": target["itemId"],
        },
    )
    round_ = answer["round"]
    outcome = "WON " + target["name"] if round_["isWin"] else "missed"
    print(
        f"   round {round_['publicId']}: rolled {round_['rolledBps']} vs chance "
        f"{round_['chanceBps']}: {outcome}; balance after "
        f"{money(answer['balanceAfterMinor'], round_['currency'])}"
    )

    print("5. round history")
    page = platform.play("rounds", "GET", "/api/play/rounds?limit=5")
    for item in page["rounds"]:
        result = ("win" if item.get("isWin") else "miss") if item["status"] == "settled" else "-"
        print(f"   {item['publicId']}  {item['status']:8} {result}")

    print("6. rotate the seeds and verify the round here")
    rotation = {"clientActionId": str(uuid.uuid4())}  # a re-sent rotation rotates once
    rotated = platform.play("rotate", "POST", "/api/play/fairness/rotate", rotation)
    server_seed = rotated["previous"]["serverSeed"]
    fairness = round_["fairness"]
    hash_ok = hashlib.sha256(server_seed.encode()).hexdigest() == fairness["serverSeedHash"]
    recomputed = roll(server_seed, fairness["clientSeed"], fairness["nonce"])
    verified = hash_ok and recomputed == round_["rolledBps"]
    print(
        f"   server seed hash {'matches' if hash_ok else 'DOES NOT match'}; recomputed roll "
        f"{recomputed}: {'verified' if verified else 'NOT verified'}"
    )

    platform.play("logout", "POST", "/api/play/session/logout")
    print("7. logged out")
    return 0 if verified else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="ops/demo/config.toml", help="the platform's config")
    parser.add_argument("--platform-url", default=None, help="default: the config's base_url")
    parser.add_argument("--operator", default=None, help="operator id (default: the first)")
    parser.add_argument("--player", default="player-1")
    parser.add_argument("--wager-minor", type=int, default=None)
    args = parser.parse_args(argv)

    with open(args.config, "rb") as handle:
        raw = tomllib.load(handle)
    operator = next(o for o in raw["operators"] if args.operator in (None, o["id"]))
    key = next(k for k in operator["keys"] if not k.get("revoked", False))
    base_url = args.platform_url or raw.get("service", {}).get("base_url", "http://127.0.0.1:8000")
    print(f"platform {base_url}, operator {operator['id']}")
    platform = Platform(base_url, key["key_id"], key["secret"])
    try:
        return run(platform, args.player, args.wager_minor)
    except ApiError as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return 1
    except urllib.error.URLError as exc:
        print(f"cannot reach {base_url}: {exc.reason}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
