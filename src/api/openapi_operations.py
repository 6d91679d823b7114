"""Each operation of the platform API in the OpenAPI document: its summary, description and
the error codes it can answer (``api.openapi_guide`` turns codes into documented statuses).

Keyed by method and path below ``/api/s2s`` or ``/api/play``: one entry serves both APIs
where they share the route. The codes the envelope adds (signature, session, rate limit,
body size, store) are added by ``openapi_guide.errors_of`` from the API the route is on.
"""

from __future__ import annotations

from typing import Any

from application.inventory.items import MAX_ITEMS_PER_ACTION

WALLET_CODE = "any other wallet code"  # the wallet's own refusal code, echoed

S2S_CODES = ["MISSING_HEADERS", "INVALID_SIGNATURE", "TIMESTAMP_SKEW", "PAYLOAD_TOO_LARGE"]
PLAYER_CODES = ["SESSION_INVALID"]
# Every guarded request is counted (429), and may meet an unavailable store (the
# session, the rate limits when counted in the store, the route's own reads and writes).
GUARDED_CODES = ["RATE_LIMITED", "SERVICE_UNAVAILABLE"]
WALLET_REFUSALS = ["INSUFFICIENT_FUNDS", "PLAYER_BLOCKED", WALLET_CODE]
PLAY_CODES = ["OVERLOADED", "IDEMPOTENCY_CONFLICT", "OUTCOME_UNKNOWN"]  # either mode

# --- operations ----------------------------------------------------------------------------

S2S_WHO = "The player is named by `playerExternalId`."
PLAYER_WHO = "The player is the session's."
PLAY_WORDS = (
    "Idempotent by `clientActionId`: a copy (same body) answers the original answer byte "
    "for byte and does nothing again, also when copies race. On a 503 other than "
    "`OUTCOME_UNKNOWN` nothing happened; on `OUTCOME_UNKNOWN` send the same request again "
    "to learn the outcome."
)


def _op(
    summary: str, description: str, codes: list[str], *, s2s_only: bool = False
) -> dict[str, Any]:
    return {"summary": summary, "description": description, "codes": codes, "s2s_only": s2s_only}


OPERATIONS: dict[str, dict[str, Any]] = {
    "GET /health": _op(
        "Health check",
        "Answers when the platform is up and its store reachable. A signed request with no "
        "body: the simplest call to test your signing with.",
        [],
        s2s_only=True,
    ),
    "POST /launches": _op(
        "Launch the game for a player",
        "Mints a single-use launch token for one of your players and the game page's URL "
        "carrying it. Open `launchUrl` in the player's browser (or an iframe); the page "
        "redeems the token at `POST /api/play/session/init`. For the Upgrader `gameKey` is "
        "`upgrader` and `target` is `{}`; for the box game `gameKey` is `boxes` and `target` "
        'is `{"boxId": <integer>}`, a box with an offered version.',
        ["VALIDATION_ERROR", "LAUNCH_TARGET_INVALID", "GAME_DISABLED", "BOX_NOT_FOUND"],
        s2s_only=True,
    ),
    "POST /session/init": _op(
        "Open a player session",
        "Redeems a launch token (once) for a session token, the bearer of every other "
        "`/api/play/*` call, and answers what the game shows first: the player, the "
        "game (the Upgrader's configuration, or the launched box's offered version and "
        "`maxBoxesPerRound`) and the balance (read from your wallet, at most 1 s). No "
        "signature and no bearer: the launch token is the credential. CORS-open.",
        [
            "VALIDATION_ERROR",
            "PAYLOAD_TOO_LARGE",
            "LAUNCH_TOKEN_INVALID",
            "GAME_DISABLED",
            "BOX_NOT_FOUND",
        ],
    ),
    "POST /session/logout": _op(
        "End the session",
        "Ends the bearer's session; its token is refused from now on.",
        [],
    ),
    "GET /balance": _op(
        "The player's balance",
        "The session player's casino balance, read from the operator's wallet now "
        "(`wallet.balance`): in the base currency, or in `currency` when it is one of the "
        "operator's currencies. 503 `WALLET_UNAVAILABLE` when the wallet does not answer in "
        "time or answers out of contract.",
        ["VALIDATION_ERROR", "UNSUPPORTED_CURRENCY", "WALLET_UNAVAILABLE"],
    ),
    "GET /upgrader/prizes": _op(
        "Prizes for a wager and chance (balance mode)",
        "The target band for the wager and chance and the catalogue items in it, highest "
        "value first: the candidates for `targetItemId` of a play. Read-only, answered from "
        "memory. A chance that is not a preset is a `VALIDATION_ERROR` here (a play answers "
        "`UPGRADER_CHANCE_INVALID`).",
        [
            "VALIDATION_ERROR",
            "GAME_DISABLED",
            "UPGRADER_MODE_DISABLED",
            "UNSUPPORTED_CURRENCY",
            "UPGRADER_WAGER_OUT_OF_RANGE",
        ],
    ),
    "POST /upgrader/play": _op(
        "Play one round (balance mode)",
        "Debits the wager from the player's casino balance (`wallet.debit`), rolls, and on a "
        "win grants the target item to the inventory. Checks run before anything is "
        "recorded or debited. A refused debit voids the round (nothing moved): the answer "
        "is the wallet's code with the voided round and `balanceAfterMinor`. An uncertain "
        "debit is rolled back: 503 `WALLET_UNAVAILABLE`. " + PLAY_WORDS,
        [
            "VALIDATION_ERROR",
            "GAME_DISABLED",
            "UPGRADER_MODE_DISABLED",
            "UNSUPPORTED_CURRENCY",
            "UPGRADER_CHANCE_INVALID",
            "UPGRADER_WAGER_OUT_OF_RANGE",
            "UPGRADER_PRIZE_OUT_OF_RANGE",
            *WALLET_REFUSALS,
            "WALLET_UNAVAILABLE",
            *PLAY_CODES,
            "ACTION_IN_PROGRESS",  # the play's intent committed late (README, 503s)
        ],
    ),
    "GET /upgrader/prizes-by-items": _op(
        "Prizes for a stake of items (items mode)",
        "The prizes answer for a stake of the player's unresolved items: `wagerMinor` is "
        "their counted value (the Credits part of what cashing them back would pay now), "
        "listed in `stake`. `stakeItemIds` repeats (`?stakeItemIds=1&stakeItemIds=2`; "
        f"`stakeItemIds[]` is accepted too), at most {MAX_ITEMS_PER_ACTION} ids.",
        [
            "VALIDATION_ERROR",
            "GAME_DISABLED",
            "UPGRADER_MODE_DISABLED",
            "UNSUPPORTED_CURRENCY",
            "UPGRADER_ITEM_NOT_OWNED",
            "UPGRADER_WAGER_OUT_OF_RANGE",
        ],
    ),
    "POST /upgrader/play-with-items": _op(
        "Play one round with items (items mode)",
        "Stakes the named items (consumed win or lose) and plays one round; on a win the "
        "target item is granted. No wallet call: `balanceAfterMinor` is always null. Stake, "
        "round and prize are one commit. " + PLAY_WORDS,
        [
            "VALIDATION_ERROR",
            "GAME_DISABLED",
            "UPGRADER_MODE_DISABLED",
            "UNSUPPORTED_CURRENCY",
            "UPGRADER_CHANCE_INVALID",
            "UPGRADER_ITEM_NOT_OWNED",
            "UPGRADER_WAGER_OUT_OF_RANGE",
            "UPGRADER_PRIZE_OUT_OF_RANGE",
            *PLAY_CODES,
        ],
    ),
    "GET /rounds": _op(
        "The player's rounds",
        "The player's rounds, newest first, a page at a time: pass `nextCursor` as `cursor` "
        "for the next page. Settled and voided rounds; a voided one carries only `publicId` "
        "and `status`.",
        ["VALIDATION_ERROR"],
    ),
    "GET /rounds/{public_id}": _op(
        "One round",
        "One round of this operator by its `publicId`.",
        ["NOT_FOUND"],
        s2s_only=True,
    ),
    "GET /fairness": _op(
        "The player's seeds",
        "The active seed pair (the server seed's hash, the client seed, the next nonce) and "
        "the revealed pairs, whose server seeds let anyone re-check every round they rolled "
        "(`upgrader verify`, or the game's own verifier).",
        [],
    ),
    "POST /fairness/rotate": _op(
        "Rotate the seed pair",
        "Reveals the active server seed and starts a new pair, with `clientSeed` or a "
        "random one. With `clientActionId` a copy answers the original rotation and rotates "
        "nothing.",
        ["VALIDATION_ERROR", "IDEMPOTENCY_CONFLICT"],
    ),
    "GET /inventory": _op(
        "The player's items",
        "The player's items, newest first, with today's cash-back estimate and its "
        "Uncredited breakdown; `state` filters. `held` is true while a cash-back credit is "
        "being confirmed with the wallet.",
        ["VALIDATION_ERROR"],
    ),
    "POST /cashout": _op(
        "Cash back items",
        "Credits the items' Credits value, repriced now, to the player's casino balance "
        "(`wallet.credit`). The items are held and the request recorded before the credit. "
        "A refusal releases them and answers the wallet's code with `balanceAfterMinor`; an "
        "uncertain credit keeps them held and is re-sent with the same key until the wallet "
        "answers (503 `OUTCOME_UNKNOWN`: money may have moved). " + PLAY_WORDS,
        [
            "VALIDATION_ERROR",
            "UNSUPPORTED_CURRENCY",
            "ITEM_NOT_AVAILABLE",
            "ITEM_NOT_CASHABLE",
            *WALLET_REFUSALS,
            "WALLET_UNAVAILABLE",
            "IDEMPOTENCY_CONFLICT",
            "ACTION_IN_PROGRESS",
            "OUTCOME_UNKNOWN",
        ],
    ),
    "POST /shipping": _op(
        "Ship items",
        "Records a shipping request for fulfillable unresolved items, with your address "
        "fields as given; the items become `shipping_requested` (and `shipped` when "
        "fulfilment runs `upgrader shipping shipped`). One commit. " + PLAY_WORDS,
        [
            "VALIDATION_ERROR",
            "ITEM_NOT_AVAILABLE",
            "ITEM_NOT_SHIPPABLE",
            "IDEMPOTENCY_CONFLICT",
            "ACTION_IN_PROGRESS",
            "OUTCOME_UNKNOWN",
        ],
        s2s_only=True,
    ),
    "GET /boxes": _op(
        "The box catalogue",
        "Each box's offered version (its active version with the highest id) with its "
        "committed odds table, priced in `currency` (default: the base currency). S2S: the "
        "key needs catalogue access, whatever the operator's games. Player: the operator "
        "must have the box game enabled.",
        ["VALIDATION_ERROR", "UNSUPPORTED_CURRENCY"],
    ),
    "GET /boxes/{box_id}/versions/{box_version_id}": _op(
        "One box version",
        "One box version by its ids, inactive ones included (a version never changes).",
        ["VALIDATION_ERROR", "UNSUPPORTED_CURRENCY", "NOT_FOUND", "BOX_NOT_FOUND"],
    ),
    "POST /purchase": _op(
        "Buy and open boxes",
        "Debits `count` x the price of one box (each box's price repriced into `currency` "
        "and rounded half-even once, then multiplied) from the player's casino balance "
        "(`wallet.debit`, reason `boxes.purchase`), draws one ticket per box with "
        "consecutive nonces of the player's seed pair and grants the item each ticket "
        "names (`wonItems`, `facts.reels`), all in one commit. Checks, in order: the body "
        "(`count` 1 to the operator's maxBoxesPerRound), the action (a copy answers the "
        "original), the game, the currency, the box version (404 `BOX_NOT_FOUND`; 409 "
        "`BOX_VERSION_CHANGED` with `currentBoxVersionId` when it is not the offered one; "
        "422 `BOX_UNAVAILABLE`), then the wallet. A refused debit voids the round "
        "(nothing moved): the wallet's code with the voided round and "
        "`balanceAfterMinor`. An uncertain debit is rolled back: 503 "
        "`WALLET_UNAVAILABLE`. " + PLAY_WORDS,
        [
            "VALIDATION_ERROR",
            "GAME_DISABLED",
            "UNSUPPORTED_CURRENCY",
            "BOX_NOT_FOUND",
            "BOX_VERSION_CHANGED",
            "BOX_UNAVAILABLE",
            *WALLET_REFUSALS,
            "WALLET_UNAVAILABLE",
            *PLAY_CODES,
            "ACTION_IN_PROGRESS",
        ],
        s2s_only=True,
    ),
}
OPERATIONS["POST /rounds/open"] = {
    **OPERATIONS["POST /purchase"],
    "summary": "Open boxes",
    "s2s_only": False,
}
# Per API: S2S box routes need catalogue access, the player's need the box game.
API_CODES = {
    ("s2s", "GET /fairness"): ["VALIDATION_ERROR"],  # playerExternalId
    ("s2s", "GET /boxes"): ["CATALOG_ACCESS_DENIED"],
    ("s2s", "GET /boxes/{box_id}/versions/{box_version_id}"): ["CATALOG_ACCESS_DENIED"],
    ("play", "GET /boxes"): ["GAME_DISABLED"],
    ("play", "GET /boxes/{box_id}/versions/{box_version_id}"): ["GAME_DISABLED"],
}
# Routes whose body the guard does not read, or without the guards' envelope.
NO_ENVELOPE = {"POST /session/init"}
