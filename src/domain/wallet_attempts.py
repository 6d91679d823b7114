"""The attempts of one wallet call: the state machine a round's debit and a cash-back's
credit share (decisions §4, §5).

An action calls the wallet in numbered attempts 1, 2, ..., each with its own idempotency
key (``{publicId}:{attempt}``). An attempt starts ``in_flight``; the wallet's answer (or
its silence) moves it on:

* a **debit** (``DEBIT``): in_flight -> debited | refused | uncertain;
  uncertain -> rolled_back (the reconciler's ``wallet.rollback``). An uncertain debit is
  never settled: the action's retry makes the next attempt instead.
* a **credit** (``CREDIT``): in_flight -> credited | refused | uncertain; uncertain ->
  credited | refused (the same key is re-sent until the wallet answers).

An uncertain attempt may also be marked *escalated* (its rollback gave up) without
changing state. The machine only checks moves (``check_*``) and applies them
(``begin`` / ``move`` / ``escalate``); the aggregate that owns it decides when, records
the event and calls the apply step from the event's method, so replay rebuilds it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

IN_FLIGHT = "in_flight"
UNCERTAIN = "uncertain"
REFUSED = "refused"
ROLLED_BACK = "rolled_back"
DEBITED = "debited"
CREDITED = "credited"


class AttemptStateError(Exception):
    """A move the attempts' state does not allow (a programming or concurrency fault)."""


@dataclass(frozen=True, slots=True)
class AttemptRules:
    """Which states each state may be reached from, for one kind of wallet call."""

    kind: str  # "debit" or "credit": named in the refusals
    reached_from: dict[str, frozenset[str]]


DEBIT = AttemptRules(
    "debit",
    {
        UNCERTAIN: frozenset({IN_FLIGHT}),
        DEBITED: frozenset({IN_FLIGHT}),
        REFUSED: frozenset({IN_FLIGHT}),
        ROLLED_BACK: frozenset({UNCERTAIN}),
    },
)
CREDIT = AttemptRules(
    "credit",
    {
        UNCERTAIN: frozenset({IN_FLIGHT}),
        CREDITED: frozenset({IN_FLIGHT, UNCERTAIN}),
        REFUSED: frozenset({IN_FLIGHT, UNCERTAIN}),
    },
)


@dataclass(slots=True)
class Attempt:
    key: str
    at: float  # when it was started (the grace period counts from here)
    state: str = IN_FLIGHT
    escalated: bool = False
    balance_after_minor: int | None = None  # an accepted debit's balance

    # read by field name as well (``entry["state"]``), as the entries were plain dicts
    def __getitem__(self, name: str) -> object:
        return getattr(self, name)

    def get(self, name: str, default: object = None) -> object:
        return getattr(self, name, default)


class WalletAttempts:
    """Attempt number -> :class:`Attempt`, under one set of :class:`AttemptRules`."""

    __slots__ = ("_attempts", "_error", "rules")

    def __init__(
        self, rules: AttemptRules, error: type[AttemptStateError] = AttemptStateError
    ) -> None:
        self.rules = rules
        self._error = error
        self._attempts: dict[int, Attempt] = {}

    # -- reading ---------------------------------------------------------------------------

    def __bool__(self) -> bool:
        return bool(self._attempts)

    def __len__(self) -> int:
        return len(self._attempts)

    def __getitem__(self, attempt: int) -> Attempt:
        return self._attempts[attempt]

    def __contains__(self, attempt: object) -> bool:
        return attempt in self._attempts

    def get(self, attempt: int, default: object = None) -> Attempt | object:
        return self._attempts.get(attempt, default)

    def items(self) -> Iterator[tuple[int, Attempt]]:
        return iter(self._attempts.items())

    @property
    def last(self) -> int:
        """The number of the latest attempt, 0 when none was made."""
        return max(self._attempts, default=0)

    def state(self, attempt: int) -> str | None:
        entry = self._attempts.get(attempt)
        return None if entry is None else entry.state

    @property
    def in_flight(self) -> int | None:
        """The latest attempt when it is still waiting for the wallet."""
        last = self.last
        return last if last and self._attempts[last].state == IN_FLIGHT else None

    def in_state(self, state: str) -> list[int]:
        return [number for number, entry in self._attempts.items() if entry.state == state]

    @property
    def under_way(self) -> bool:
        """Whether an attempt is in flight or uncertain (its money may be moving)."""
        return any(entry.state in (IN_FLIGHT, UNCERTAIN) for entry in self._attempts.values())

    # -- checks (no change) ------------------------------------------------------------------

    def check_next(self, *, idle: bool) -> int:
        """The number of the next attempt. ``idle`` is the owner's rule for starting one
        (for example: the round is open and no attempt is in flight)."""
        if not idle:
            raise self._error(f"a {self.rules.kind} cannot be attempted now")
        return self.last + 1

    def check_move(self, attempt: int, to: str) -> None:
        """Refuse a move of ``attempt`` to state ``to`` that the rules do not allow."""
        allowed = self.rules.reached_from.get(to, frozenset())
        current = self.state(attempt)
        if current not in allowed:
            raise self._error(
                f"{self.rules.kind} attempt {attempt} cannot become {to} "
                f"from {current or 'not attempted'}"
            )

    def check_escalate(self, attempt: int) -> None:
        if self.state(attempt) != UNCERTAIN:
            raise self._error(f"{self.rules.kind} attempt {attempt} is not uncertain")

    # -- changes (called from event methods only: no checks, replay must not fail) ----------

    def begin(self, attempt: int, key: str, at: float) -> None:
        self._attempts[attempt] = Attempt(key=key, at=at)

    def move(self, attempt: int, to: str, balance_after_minor: int | None = None) -> None:
        entry = self._attempts[attempt]
        entry.state = to
        if to == DEBITED:
            entry.balance_after_minor = balance_after_minor

    def escalate(self, attempt: int) -> None:
        self._attempts[attempt].escalated = True
