"""The checks of ``upgrader wallet-check``, in order (see ``check.py`` for the rules).

Each step records one row: pass, fail (with the reason) or skip, and ends by reading the
test player's balance. A step that finds the wallet took money it should not have gives
it back (a signed rollback); the last step puts the player back where it started.
"""

from __future__ import annotations

import uuid

import aiohttp

from application.wallet.check import (
    FAIL,
    GRACE_SECONDS,
    PASS,
    SKIP,
    CheckResult,
    CheckSettings,
    Exchange,
    WalletCheck,
    balance_value,
    debit_key,
)
from application.wallet.client import INT64_MAX
from application.wallet.contract import BALANCE, CREDIT, DEBIT, ROLLBACK

FORGERIES = (
    ("bad signature", "bad_signature", "signed with another secret"),
    ("missing signature", "missing", "no X-Timestamp, no X-Signature"),
    ("stale timestamp", "stale", "signed 600 s ago"),
    ("tampered body", "tampered", "signed for another amount"),
)
ITEM_ID = 2**52 + 1  # an inventory item id for the cash-back credits (any 52-bit id)


async def run_checks(settings: CheckSettings) -> list[CheckResult]:
    """Every check against ``settings.url``; raises ``Unreachable`` when nothing answers."""
    timeout = aiohttp.ClientTimeout(total=settings.limit_seconds + GRACE_SECONDS)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        check = WalletCheck(settings, session)
        start = await balance_step(check)
        await money_steps(check)
        await refusal_steps(check)
        await forgery_steps(check)
        await restore_step(check, start)
        check.record("timing", *check.timing_reason())
        return check.results


async def balance_step(check: WalletCheck) -> int | None:
    s = check.settings
    exchange = await check.send(BALANCE, {"playerExternalId": s.player, "currency": s.currency})
    fault = check.answer_fault(exchange)
    answer = exchange.json()
    if fault is None and answer["currency"] != s.currency:
        fault = f"currency {answer['currency']!r}, asked for {s.currency!r}"
    check.known = balance_value(answer) if exchange.error is None else None
    check.record("balance", FAIL if fault else PASS, fault or f"{check.known} {s.currency}")
    return check.known


def _credit(check: WalletCheck, amount: int | None = None) -> dict[str, object]:
    key = f"c_{uuid.uuid4().hex}:1"
    return check.money(key, amount, reason="cashout", inventoryItemIds=[ITEM_ID])


async def _accepted(
    check: WalletCheck, name: str, exchange: Exchange, expected: int | None, what: str
) -> None:
    """Record ``name``: accepted, with ``balanceAfterMinor`` and a read at ``expected``."""
    fault = check.accepted_fault(exchange)
    if fault is None and expected is not None:
        after = exchange.json()["balanceAfterMinor"]
        if after != expected:
            fault = f"balanceAfterMinor {after}, expected {expected} ({what})"
    effect = await check.effect_fault(expected, what)
    fault = fault or effect
    check.record(name, FAIL if fault else PASS, fault or f"accepted; balance {expected}")


async def _replayed(check: WalletCheck, name: str, first: Exchange, again: Exchange) -> None:
    """Record ``name``: the same key again got the same answer and moved nothing."""
    expected = check.known
    fault = check.answer_fault(again)
    if fault is None and check.answer_fault(first) is None:
        before, after = first.json(), again.json()
        for key in ("accepted", "balanceAfterMinor", "providerTxnRef", "errorCode"):
            if before.get(key) != after.get(key):
                fault = f"{key} {after.get(key)!r} on replay, {before.get(key)!r} the first time"
                break
    effect = await check.effect_fault(expected, "the replay moved money")
    fault = fault or effect
    check.record(name, FAIL if fault else PASS, fault or "same answer, one effect")


async def money_steps(check: WalletCheck) -> None:
    """A credit, a debit and its rollback, each sent twice with the same key."""
    amount = check.settings.amount
    credit = _credit(check)
    first = await check.send(CREDIT, credit)
    await _accepted(check, "credit", first, check.after(amount), f"after a credit of {amount}")
    await _replayed(check, "credit replay", first, await check.send(CREDIT, credit))

    key = debit_key()
    first = await check.send(DEBIT, check.debit_fields(key))
    await _accepted(check, "debit", first, check.after(-amount), f"after a debit of {amount}")
    again = await check.send(DEBIT, check.debit_fields(key))
    await _replayed(check, "debit replay", first, again)

    first = await check.send(ROLLBACK, check.rollback_fields(key))
    expected = check.after(amount)
    await _accepted(check, "rollback of a debit", first, expected, "the debit given back")
    again = await check.send(ROLLBACK, check.rollback_fields(key))
    await _replayed(check, "rollback replay", first, again)


async def _refused(
    check: WalletCheck, name: str, exchange: Exchange, key: str, amount: int | None = None
) -> None:
    """Record ``name``: a debit refused in contract that moved nothing. A debit accepted
    instead is rolled back, so the next step starts from a known balance."""
    expected = check.known
    fault = check.refused_fault(exchange)
    if check.accepted_fault(exchange) is None:
        await check.send(ROLLBACK, check.rollback_fields(key, amount))
    effect = await check.effect_fault(expected, "a refused debit moved money")
    fault = fault or effect
    code = exchange.json()["errorCode"] if fault is None else None
    check.record(name, FAIL if fault else PASS, fault or f"refused {code}")


async def refusal_steps(check: WalletCheck) -> None:
    """A tombstoned key, too large a debit, a blocked player: each refused, nothing moved."""
    unseen = debit_key()
    expected = check.known
    rollback = await check.send(ROLLBACK, check.rollback_fields(unseen))
    fault = check.accepted_fault(rollback)
    effect = await check.effect_fault(expected, "a rollback of nothing moved money")
    fault = fault or effect
    check.record(
        "rollback of an unseen debit", FAIL if fault else PASS, fault or "accepted, moved nothing"
    )
    late = await check.send(DEBIT, check.debit_fields(unseen))
    await _refused(check, "debit after its rollback", late, unseen)

    if check.known is None or check.known + 1 > INT64_MAX:
        check.record("insufficient funds", SKIP, "no usable balance to exceed")
    else:
        key, amount = debit_key(), check.known + 1
        too_much = await check.send(DEBIT, check.debit_fields(key, amount))
        await _refused(check, "insufficient funds", too_much, key, amount)

    blocked = check.settings.blocked_player
    if blocked is None:
        check.record("blocked player", SKIP, "no --blocked-player named")
        return
    key = debit_key()
    exchange = await check.send(DEBIT, check.debit_fields(key, player=blocked))
    fault = check.refused_fault(exchange)
    if fault is None and exchange.json()["errorCode"] != "PLAYER_BLOCKED":
        fault = f"refused {exchange.json()['errorCode']}, expected PLAYER_BLOCKED"
    if check.accepted_fault(exchange) is None:  # it took the money: give it back
        await check.send(ROLLBACK, {**check.rollback_fields(key), "playerExternalId": blocked})
    check.record("blocked player", FAIL if fault else PASS, fault or "refused PLAYER_BLOCKED")


async def forgery_steps(check: WalletCheck) -> None:
    """Calls the platform would never send: each must be refused and move nothing."""
    for name, forge, how in FORGERIES:
        key, expected = debit_key(), check.known
        exchange = await check.send(DEBIT, check.debit_fields(key), forge=forge)
        fault = check.forged_fault(exchange)
        if check.accepted_fault(exchange) is None:
            await check.send(ROLLBACK, check.rollback_fields(key))  # undo what it took
        effect = await check.effect_fault(expected, "the forged debit moved money")
        fault = fault or effect
        check.record(name, FAIL if fault else PASS, fault or f"HTTP {exchange.status} ({how})")
    s = check.settings
    exchange = await check.send(
        BALANCE, {"playerExternalId": s.player, "currency": s.currency}, forge="bad_signature"
    )
    fault = check.forged_fault(exchange)
    check.record(
        "unsigned balance read",
        FAIL if fault else PASS,
        f"{fault}: it discloses balances" if fault else f"HTTP {exchange.status}",
    )


async def restore_step(check: WalletCheck, start: int | None) -> None:
    """Put the test player back at ``start``: the checks left it ``amount`` higher (or
    wherever a defect left it)."""
    current = check.known
    if start is None or current is None:
        check.record("balance restored", FAIL, "no usable balance to restore (see balance)")
        return
    delta, fault = current - start, None
    if delta > 0:
        exchange = await check.send(DEBIT, check.debit_fields(debit_key(), delta))
        fault = check.accepted_fault(exchange)
    elif delta < 0:
        exchange = await check.send(CREDIT, _credit(check, -delta))
        fault = check.accepted_fault(exchange)
    effect = await check.effect_fault(start, "after restoring")
    fault = fault or effect
    check.record("balance restored", FAIL if fault else PASS, fault or f"back at {start}")
