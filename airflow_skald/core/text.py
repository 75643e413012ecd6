"""Exact numbers as people wrote them; data values as ranks where no value may be named; text and
counts for HTML (the report's and a transformation's report section)."""

from __future__ import annotations

import html
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


def esc(x: object) -> str:
    """`x` as HTML text."""
    return html.escape(str(x))


def fmt_int(x: object) -> str:
    """A count with thousands separators; anything else as HTML text."""
    return f"{x:,}" if isinstance(x, int) and not isinstance(x, bool) else esc(x)


def fmt_num(x: object, digits: int = 4) -> str:
    """A float to `digits` significant digits (separators from a million), a count as
    `fmt_int`."""
    if isinstance(x, float):
        return f"{x:.{digits}g}" if abs(x) < 1e6 else f"{x:,.0f}"
    return fmt_int(x)
