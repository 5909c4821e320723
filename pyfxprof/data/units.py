"""Human-readable formatting of durations (int64 ns internally) and percentages.

Units change only here, at the edge: everything else in pyfxprof works in nanoseconds.
"""

from __future__ import annotations

import math

MISSING = "-"
_UNITS = (("ns", 1.0), ("µs", 1e3), ("ms", 1e6), ("s", 1e9))


def _as_float(value) -> float | None:
    """``value`` as a float, or None when it is missing (None or NaN)."""
    if value is None:
        return None
    number = float(value)
    return None if math.isnan(number) else number


def _significant(value: float, precision: int) -> str:
    """``value`` (>= 0) with ``precision`` significant digits, keeping trailing zeros."""
    if value >= 10**precision:
        return f"{value:.0f}"
    return f"{value:#.{precision}g}".rstrip(".")


def _checked(value, precision, minimum_precision: int) -> float | None:
    """`value` as a float (None when missing), after checking `precision`."""
    if not isinstance(precision, int) or precision < minimum_precision:
        raise ValueError(f"precision must be an int >= {minimum_precision}, got {precision!r}")
    return _as_float(value)


def format_ns(ns, precision: int = 3) -> str:
    """Format a duration in nanoseconds with an automatic unit (ns, µs, ms, s).

    Nanoseconds are shown as whole numbers (the clock's resolution); larger units with
    ``precision`` significant digits (integer digits are never dropped). A value that
    would round up to 1000 moves to the next unit. NaN or None gives "-".

    >>> format_ns(950), format_ns(1234), format_ns(2_500_000), format_ns(-1234)
    ('950 ns', '1.23 µs', '2.50 ms', '-1.23 µs')
    >>> format_ns(999.7), format_ns(0), format_ns(float("nan"))
    ('1.00 µs', '0 ns', '-')
    """
    number = _checked(ns, precision, minimum_precision=1)
    if number is None:
        return MISSING
    if math.isinf(number):
        return "inf" if number > 0 else "-inf"
    magnitude = abs(number)
    for unit, scale in _UNITS:
        scaled = magnitude / scale
        text = f"{scaled:.0f}" if unit == "ns" else _significant(scaled, precision)
        if float(text) < 1000 or unit == "s":
            break
    sign = "-" if number < 0 and float(text) != 0 else ""
    return f"{sign}{text} {unit}"


def format_pct(pct, precision: int = 1) -> str:
    """Format a percentage given in percent (0..100, not a fraction).

    >>> format_pct(12.345), format_pct(100), format_pct(float("nan"))
    ('12.3%', '100.0%', '-')
    """
    number = _checked(pct, precision, minimum_precision=0)
    if number is None:
        return MISSING
    text = f"{number:.{precision}f}"
    if float(text) == 0:
        text = text.lstrip("-")
    return f"{text}%"
