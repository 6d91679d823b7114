"""What the wallet client accepts as a balance from a wallet answer (decisions 4)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from application.wallet.client import INT64_MAX, plausible_balance


@pytest.mark.parametrize("value", [0, 1, 640, 2**53 + 1, 2**63 - 1])
def test_an_integer_in_0_to_int64_max_is_a_balance(value: int) -> None:
    assert plausible_balance(value) == value
    assert plausible_balance(msgspec.json.decode(str(value).encode())) == value


@pytest.mark.parametrize(
    "raw",
    [b"-1", b"-5", b"9223372036854775808", b"1180591620717411303424", b"-9223372036854775809"],
)
def test_a_negative_or_beyond_int64_integer_is_not(raw: bytes) -> None:
    assert plausible_balance(msgspec.json.decode(raw)) is None


@pytest.mark.parametrize("value", [640.0, 1e3, "640", True, False, None, [640], {"a": 1}])
def test_anything_but_a_json_integer_is_not(value: Any) -> None:
    assert plausible_balance(value) is None


def test_int64_max_is_two_to_the_63_minus_one() -> None:
    assert INT64_MAX == 9_223_372_036_854_775_807
