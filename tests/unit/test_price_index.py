"""The price index answers exactly like the reference prize selection."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from domain.catalog import CatalogItem
from domain.money import Currency
from domain.upgrader_rules import Band, PriceIndex, select_prizes

EUR = Currency(code="EUR", rate=Fraction(1), exponent=2)
USD = Currency(code="USD", rate=Fraction(108, 100), exponent=2)
JPY = Currency(code="JPY", rate=Fraction(1625, 10), exponent=0)

items = st.builds(
    CatalogItem,
    item_id=st.integers(1, 60),
    names=st.sampled_from([(("en", "x"),), (("en", "x"), ("de", "y")), (("fr", "z"),)]),
    value_minor=st.integers(0, 5000),
    image_url=st.none(),
    active=st.booleans(),
    fulfillable=st.booleans(),
    cashback_bps=st.none(),
    collectible=st.just(False),
)


@given(
    catalog=st.lists(items, max_size=40, unique_by=lambda item: item.item_id),
    currency=st.sampled_from([EUR, USD, JPY]),
    lower=st.integers(0, 600_000),
    width=st.integers(0, 600_000),
    limit=st.integers(0, 30),
)
def test_the_index_selects_what_the_reference_selects(
    catalog, currency, lower, width, limit
) -> None:
    band = Band(lower_minor=lower, upper_minor=lower + width)
    index = PriceIndex(catalog, EUR, currency)
    assert index.select(band, "en", limit) == select_prizes(
        catalog, band, EUR, currency, "en", limit
    )


def test_ties_are_broken_by_item_id_ascending_under_the_limit() -> None:
    catalog = [
        CatalogItem(i, (("en", f"i{i}"),), 100, None, True, True, None, False) for i in (5, 3, 9, 1)
    ]
    index = PriceIndex(catalog, EUR, EUR)
    assert [p.item_id for p in index.select(Band(100, 100), None, 3)] == [1, 3, 5]


@given(
    catalog=st.lists(items, max_size=40, unique_by=lambda item: item.item_id),
    currency=st.sampled_from([EUR, USD, JPY]),
    asks=st.lists(
        st.tuples(
            st.integers(0, 600_000),
            st.integers(0, 600_000),
            st.sampled_from(["en", "EN", "de", "de_AT", "fr", " Fr ", "pt", "", None]),
            st.integers(0, 30),
        ),
        min_size=1,
        max_size=12,
    ),
)
def test_one_index_answers_many_asks_in_many_locales_like_the_reference(
    catalog, currency, asks
) -> None:
    """The index keeps the prizes of no locale and of the catalogue's own locales once
    built; later asks, in any locale string, still answer like the reference, and a
    locale the catalogue does not name ("pt", "de_AT", "") is never kept."""
    index = PriceIndex(catalog, EUR, currency)
    for lower, width, locale, limit in asks:
        band = Band(lower_minor=lower, upper_minor=lower + width)
        assert index.select(band, locale, limit) == select_prizes(
            catalog, band, EUR, currency, locale, limit
        )
    named = {loc for item in catalog for loc, _ in item.names}
    assert set(index._prizes) <= named | {None}
