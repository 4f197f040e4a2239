"""How numbers are written (graphs.numbers): one style for counts and costs, and seconds in
s, ms, µs or ns."""

from __future__ import annotations

import pytest

from graphs.numbers import amount, duration, number


@pytest.mark.parametrize(("seconds", "text"), [
    (6.541e-4, "654.1 µs"), (0.0123, "12.3 ms"), (2, "2 s"), (1.5, "1.5 s"),
    (40389.25, "40,389.25 s"), (1.23e-8, "12.3 ns"), (4.76e-8, "47.6 ns"),
    (0.99996, "1 s"), (-3e-3, "-3 ms"), (0, "0 s"), (None, "-"), (1e-12, "0.001 ns"),
])
def test_duration(seconds, text):
    assert duration(seconds) == text


def test_amount_follows_the_profile_units():
    assert amount(6.541e-4, "seconds") == "654.1 µs"
    assert amount(40389.25, "abstract") == number(40389.25) == "40,389.25"
