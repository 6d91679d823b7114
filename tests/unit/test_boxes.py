"""Box versions as committed odds tables (decisions §10), domain level: no I/O."""

from __future__ import annotations

import hashlib

import pytest

from domain.boxes import BoxCatalog, BoxEntry, BoxVersion, TicketRange, odds_hash, odds_json
from domain.catalog import CatalogItem
from domain.fairness import draw


def item(item_id: int, value: int, cashback: int | None = 9000, **flags: bool) -> CatalogItem:
    return CatalogItem(
        item_id=item_id,
        names=(("en", f"Item {item_id}"),),
        value_minor=value,
        image_url=None,
        active=flags.get("active", True),
        fulfillable=flags.get("fulfillable", True),
        cashback_bps=cashback,
        collectible=False,
    )


def version(
    box_id: int, box_version_id: int, price: int, *table: tuple[int, int], active: bool = True
) -> BoxVersion:
    entries = tuple(BoxEntry(item_id, weight) for item_id, weight in table)
    return BoxVersion(box_id, box_version_id, price, entries, active=active)


CATALOG = {
    101: item(101, 1500),
    102: item(102, 120),
    103: item(103, 250, cashback=8000),
    104: item(104, 900, cashback=None),  # not cashable: pays back 0
    105: item(105, 700, active=False),
    106: item(106, 800, fulfillable=False),
}


def test_odds_hash_is_sha256_of_the_compact_json_in_table_order() -> None:
    box = version(1, 2, 500, (101, 10), (102, 60), (103, 30))
    text = '{"boxId":1,"boxVersionId":2,"priceMinor":500,"items":[[101,10],[102,60],[103,30]]}'
    assert odds_json(1, 2, 500, box.entries) == text
    assert box.odds_hash == hashlib.sha256(text.encode()).hexdigest()
    assert box.odds_hash == odds_hash(1, 2, 500, box.entries)
    # table order is part of the commitment; so are the price and the version id
    reordered = version(1, 2, 500, (102, 60), (101, 10), (103, 30))
    assert reordered.odds_hash != box.odds_hash
    assert version(1, 2, 501, *((e.item_id, e.weight) for e in box.entries)).odds_hash != (
        box.odds_hash
    )
    assert version(1, 3, 500, (101, 10), (102, 60), (103, 30)).odds_hash != box.odds_hash
    # what may change (active, name, image) is not part of it
    assert version(1, 2, 500, (101, 10), (102, 60), (103, 30), active=False).odds_hash == (
        box.odds_hash
    )


def test_the_readme_example() -> None:
    """README, Boxes: the demo's retired Starter box (checked with sha256sum)."""
    starter = version(1, 1, 500, (101, 10), (102, 60), (103, 30))
    assert starter.odds_hash == "5056c07714e5978c38a9d9f7ec359130bff0322505eb31069d8679275066d53f"


def test_ticket_ranges_and_probabilities() -> None:
    box = version(1, 1, 500, (101, 3), (102, 1), (103, 6))
    assert box.total_tickets == 10
    assert box.ranges() == [
        TicketRange(101, 3, 0, 2, 3000),
        TicketRange(102, 1, 3, 3, 1000),
        TicketRange(103, 6, 4, 9, 6000),
    ]
    thirds = version(2, 1, 100, (101, 1), (102, 1), (103, 1))
    assert [r.probability_bps for r in thirds.ranges()] == [3333, 3333, 3333]  # floored
    big = version(3, 1, 100, (101, 1), (102, 2**31 - 1))
    assert big.total_tickets == 2**31
    assert big.ranges() == [
        TicketRange(101, 1, 0, 0, 0),  # floor(10000 / 2^31) = 0
        TicketRange(102, 2**31 - 1, 1, 2**31 - 1, 9999),
    ]


def test_the_item_for_a_ticket_is_the_one_whose_range_holds_it() -> None:
    box = version(1, 1, 500, (101, 3), (102, 1), (103, 6))
    expected = [101, 101, 101, 102, 103, 103, 103, 103, 103, 103]
    assert [box.entry_for_ticket(t).item_id for t in range(10)] == expected
    for bad in (-1, 10, True, 1.0):
        with pytest.raises(ValueError):
            box.entry_for_ticket(bad)  # type: ignore[arg-type]


def test_rtp_is_the_floor_of_the_cash_back_value_per_ticket_over_the_price() -> None:
    box = version(1, 1, 500, (101, 10), (102, 60), (103, 30))
    # 10 x 1500 x 0.9 + 60 x 120 x 0.9 + 30 x 250 x 0.8 = 13500 + 6480 + 6000 = 25980 over
    # 100 tickets: 259.8 paid back per 500 paid: 5196 bps
    assert box.rtp_bps(CATALOG) == 5196
    # 1 x 1500 x 0.9 + 2 x 900 x 0 = 1350 over 3 tickets = 450 per 700: 6428.57... -> 6428
    assert version(2, 1, 700, (101, 1), (104, 2)).rtp_bps(CATALOG) == 6428
    assert version(3, 1, 1, (104, 5)).rtp_bps(CATALOG) == 0


def test_availability_follows_the_catalogue() -> None:
    assert version(1, 1, 500, (101, 1), (104, 1)).available(CATALOG)
    assert not version(1, 2, 500, (101, 1), (105, 1)).available(CATALOG)  # inactive item
    assert not version(1, 3, 500, (106, 1), (101, 1)).available(CATALOG)  # not fulfillable
    assert not version(1, 4, 500, (999, 1)).available(CATALOG)  # no longer in the catalogue


def test_the_offered_version_is_the_active_one_with_the_highest_id() -> None:
    catalog = BoxCatalog(
        [
            version(1, 1, 500, (101, 1)),
            version(1, 3, 500, (101, 1)),
            version(1, 7, 500, (101, 1), active=False),
            version(2, 4, 500, (101, 1), active=False),
            version(3, 2, 500, (101, 1)),
        ]
    )
    assert catalog.offered(1) == version(1, 3, 500, (101, 1))
    assert catalog.offered(2) is None  # no active version: not offered at all
    assert [v.key for v in catalog.offered_versions()] == [(1, 3), (3, 2)]
    assert catalog.version(2, 4) is not None and catalog.version(2, 4).active is False
    assert catalog.version(1, 2) is None
    with pytest.raises(ValueError, match="twice"):
        BoxCatalog([version(1, 1, 500, (101, 1)), version(1, 1, 600, (102, 1))])


@pytest.mark.parametrize(
    ("price", "table", "message"),
    [
        (500, (), "at least one item"),
        (500, ((101, 0),), "weights"),
        (0, ((101, 1),), "price"),
        (500, ((101, 2**31), (102, 1)), "above 2\\^31"),
    ],
)
def test_a_malformed_version_is_refused(price: int, table: tuple, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        version(1, 1, price, *table)


def test_draws_follow_very_unequal_weights_chi_square() -> None:
    """100,000 seeded draws of a 1 : 10 : 100 : 10000 : 9889 table: the chi-square
    statistic (4 degrees of freedom) stays below 18.467, its 99.9 % quantile. The
    smallest cell expects 5 draws, the usual least for the chi-square approximation."""
    box = version(1, 1, 100, (101, 1), (102, 10), (103, 100), (104, 10000), (106, 9889))
    assert box.total_tickets == 20000
    seed, client, draws = hashlib.sha256(b"chi-square").hexdigest(), "chi-square", 100_000
    counts = dict.fromkeys((101, 102, 103, 104, 106), 0)
    for nonce in range(draws):
        counts[box.entry_for_ticket(draw(seed, client, nonce, box.total_tickets)).item_id] += 1
    expected = {e.item_id: draws * e.weight / box.total_tickets for e in box.entries}
    assert expected == {101: 5, 102: 50, 103: 500, 104: 50000, 106: 49445}
    chi_square = sum((counts[k] - expected[k]) ** 2 / expected[k] for k in counts)
    assert sum(counts.values()) == draws
    assert chi_square < 18.467, (counts, chi_square)
    assert counts[101] >= 1  # the rarest item does come up
