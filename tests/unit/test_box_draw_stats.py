"""The box draw is unbiased over a table of very unequal weights (decisions §10): a
chi-square test of 100,000 seeded draws against the table's odds, within the 99.9 %
bound.

The space is T = 1,431,655,766, the smallest above 2^32 / 3: only two multiples of T fit
below 2^32, so about a third of all words are rejected and the draws go through the
rejection path often (a whole rejected block too, now and then). The entries hold about
0.05 %, 1 %, 10 % and 88.95 % of the tickets; each expects at least 50 draws, so the
chi-square approximation holds. Seeded: the server seed is a hash of a fixed text, the
nonces 0..99,999, so the run is the same every time (its statistic is printed).
"""

from __future__ import annotations

import hashlib
from collections import Counter

from domain.boxes import BoxEntry, BoxVersion
from domain.fairness import draw_trace

DRAWS = 100_000
SPACE = 1_431_655_766
WEIGHTS = [715_828, 14_316_558, 143_165_577]
WEIGHTS.append(SPACE - sum(WEIGHTS))
# the chi-square distribution's 99.9th percentile for 3 degrees of freedom (4 entries)
CRITICAL_999_DF3 = 16.266


def test_draws_over_very_unequal_weights_pass_a_chi_square_test() -> None:
    version = BoxVersion(
        box_id=1,
        box_version_id=1,
        price_minor=100,
        entries=tuple(BoxEntry(item_id=i + 1, weight=w) for i, w in enumerate(WEIGHTS)),
    )
    assert version.total_tickets == SPACE
    server_seed = hashlib.sha256(b"box draw chi-square").hexdigest()
    counts: Counter[int] = Counter()
    rejected = whole_blocks = 0
    for nonce in range(DRAWS):
        trace = draw_trace(server_seed, "chi-square", nonce, SPACE)
        counts[version.index_for_ticket(trace.ticket)] += 1
        rejected += trace.rejected_words > 0
        whole_blocks += trace.cursor > 0
    expected = [DRAWS * w / SPACE for w in WEIGHTS]
    statistic = sum((counts[i] - e) ** 2 / e for i, e in enumerate(expected))
    print(f"chi-square {statistic:.3f} (bound {CRITICAL_999_DF3}), counts {sorted(counts.items())}")
    assert min(expected) >= 50
    assert statistic < CRITICAL_999_DF3
    # the first word was rejected in about a third of the draws (1 - 2T / 2^32 = 0.3333)
    assert 0.32 < rejected / DRAWS < 0.35
    assert whole_blocks > 0  # (1/3)^8 of the draws: about 15
