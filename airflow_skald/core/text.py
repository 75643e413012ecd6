"""Exact numbers as people wrote them; data values as ranks where no value may be named."""

from __future__ import annotations

from fractions import Fraction


def decimal_text(value: Fraction) -> str:
    """An exact fraction as the decimal the user wrote (1/100 -> "0.01"); a fraction without a
    finite decimal (never from a decimal input) as "p/q"."""
    value = Fraction(value)
    den, twos, fives = value.denominator, 0, 0
    while den % 2 == 0:
        den, twos = den // 2, twos + 1
    while den % 5 == 0:
        den, fives = den // 5, fives + 1
    if den != 1:
        return str(value)
    digits = max(twos, fives)
    scaled = value * 10**digits
    text = str(abs(scaled.numerator)).rjust(digits + 1, "0")
    sign = "-" if value < 0 else ""
    return sign + (text[:-digits] + "." + text[-digits:] if digits else text)


def rank_names(n: int) -> list[str]:
    """``["value #01", "value #02", ...]``: ranks zero-padded to one width, so their text
    order (a JSON writer's sort_keys, a report's table) is the rank order."""
    width = max(2, len(str(n)))
    return [f"value #{r + 1:0{width}d}" for r in range(n)]
