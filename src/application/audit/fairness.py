"""The auditor's checks of provable fairness: per seed pair the nonces 0, 1, 2, ..., each
matched with one settled round, and the revealed server seed recomputing every roll."""

from __future__ import annotations

from typing import Any

from application.audit.boxes import BoxChecks
from application.audit.replay import _Pair
from application.audit.report import Violation
from domain.fairness import is_valid_server_seed, roll, seed_hash


class FairnessChecks(BoxChecks):
    # -- fairness ---------------------------------------------------------------------------------

    def _pair_scope(self, pair: _Pair) -> bool:
        return self.scope.covers(pair.operator_id, pair.player, None)

    def _pair_started(self, event: Any, position: int) -> None:
        self.pairs[event.originator_id] = _Pair(
            event.operator_id, event.player_external_id, event.server_seed_hash, event.client_seed
        )

    def _nonce_used(self, event: Any, position: int) -> None:
        pair = self.pairs.get(event.originator_id)
        if pair is None:
            self._event("nonce", position, f"event {position} uses a nonce of no seed pair")
            return
        if event.nonce != pair.next_nonce:
            r = self.by_public.get(event.round_public_id)
            message = (
                f"nonce {event.nonce} used where {pair.next_nonce} was next "
                f"(seed pair {pair.server_seed_hash[:16]}...)"
            )
            if r is not None:
                self._round(r, "nonce", message)
            elif self._pair_scope(pair):
                self._event("nonce", position, message)
        pair.next_nonce = event.nonce + 1
        pair.rounds.append((event.round_public_id, event.nonce))

    def _seed_rotated(self, event: Any, position: int) -> None:
        pair = self.pairs.get(event.originator_id)
        if pair is None:
            self._event("seed_hash", position, f"event {position} rotates no seed pair")
            return
        seed = event.server_seed
        valid = is_valid_server_seed(seed) and seed_hash(seed) == pair.server_seed_hash
        if self._pair_scope(pair):
            if not valid or event.server_seed_hash != pair.server_seed_hash:
                self._event(
                    "seed_hash",
                    position,
                    f"the revealed server seed does not hash to the committed "
                    f"{pair.server_seed_hash}",
                )
            if event.client_seed != pair.client_seed:
                self._event("seed_hash", position, "the rotation names another client seed")
            expected_last = pair.next_nonce - 1 if pair.next_nonce else None
            if event.last_nonce != expected_last:
                self._event(
                    "nonce",
                    position,
                    f"the rotation says the last nonce was {event.last_nonce}, "
                    f"the log's NonceUsed events say {expected_last}",
                )
        for public_id, nonce in pair.rounds:
            self._pair_round(pair, public_id, nonce, seed if valid else None, True)
        self.pairs[event.originator_id] = _Pair(
            pair.operator_id,
            pair.player,
            event.next_server_seed_hash,
            event.next_client_seed,
        )

    def _pair_round(
        self, pair: _Pair, public_id: str, nonce: int, seed: str | None, revealed: bool
    ) -> None:
        """One round of a seed pair: matched with its settlement, verified when revealed."""
        r = self.by_public.get(public_id)
        if r is None:
            if self._pair_scope(pair):
                self.report.violations.append(
                    Violation("nonce", "round", public_id, f"nonce {nonce} used by no round")
                )
            return
        if r.box is not None:
            self._box_pair_round(pair, r, nonce, seed, revealed)
            return
        r.nonce_uses += 1
        if r.nonce_uses > 1:
            self._round(r, "nonce", "the round used more than one nonce")
        s = r.settlement
        if s is None:
            self._round(r, "nonce", f"nonce {nonce} used by a round that did not settle")
            return
        if not r.in_scope:
            return
        claimed = (s["server_seed_hash"], s["client_seed"], s["nonce"])
        if claimed != (pair.server_seed_hash, pair.client_seed, nonce):
            self._round(
                r,
                "fairness",
                f"settled with seed hash {s['server_seed_hash'][:16]}..., client seed "
                f"{s['client_seed']!r} and nonce {s['nonce']}, but the seed pair recorded "
                f"{pair.server_seed_hash[:16]}..., {pair.client_seed!r} and nonce {nonce}",
            )
        if not revealed:
            self.report.fairness_committed += 1
            return
        if seed is None:
            return  # the reveal failed: reported on the rotation event
        recomputed = roll(seed, pair.client_seed, nonce)
        if recomputed != s["rolled_bps"]:
            self._round(
                r,
                "roll",
                f"rolled {s['rolled_bps']} recorded, the revealed server seed gives {recomputed}",
            )
        else:
            self.report.fairness_verified += 1
