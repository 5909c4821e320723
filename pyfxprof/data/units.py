"""Human-readable formatting of durations (int64 ns internally), percentages and counts
(FLOPs, bytes) with SI prefixes, and text cut to a column's width with "…".

Units change only here, at the edge: everything else in pyfxprof works in nanoseconds.
"""

from __future__ import annotations

import math

from ..errors import ArgumentError

MISSING = "-"
_UNITS = (("ns", 1.0), ("µs", 1e3), ("ms", 1e6), ("s", 1e9))
_PREFIXES = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


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
        raise ArgumentError(f"precision must be an int >= {minimum_precision}, got {precision!r}")
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
    text, unit = _in_unit(abs(number), precision)
    sign = "-" if number < 0 and float(text) != 0 else ""
    return f"{sign}{text} {unit}"


def _in_unit(magnitude: float, precision: int) -> tuple[str, str]:
    """``magnitude`` ns as (text, unit) in the first unit where it reads below 1000, else s."""
    for unit, scale in _UNITS[:-1]:
        scaled = magnitude / scale
        text = f"{scaled:.0f}" if unit == "ns" else _significant(scaled, precision)
        if float(text) < 1000:
            return text, unit
    unit, scale = _UNITS[-1]
    return _significant(magnitude / scale, precision), unit


def time_unit(largest: float) -> tuple[str, float]:
    """The largest unit in which ``largest`` ns is at least 1 (ns for 0 or NaN), as (name,
    ns per unit): one scale for a whole axis or column.

    Example:
        >>> time_unit(2_500_000), time_unit(999), time_unit(float("nan"))
        (('ms', 1000000.0), ('ns', 1.0), ('ns', 1.0))
    """
    return next(((u, s) for u, s in reversed(_UNITS) if largest >= s), _UNITS[0])


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


def _scaled(value) -> tuple[str, str] | None:
    """(number with 3 significant digits, SI prefix), or None when missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    number = float(value)
    if math.isinf(number):
        return "inf", ""
    scale, prefix = next(((s, p) for s, p in _PREFIXES if abs(number) >= s), (1.0, ""))
    return (f"{number / scale:#.3g}".rstrip(".") if prefix else f"{number:.0f}"), prefix


def format_si(value) -> str:
    """A count or rate for a table cell: SI prefix, no unit; "-" when missing.

    Example:
        >>> format_si(1_820_000_000), format_si(950), format_si(float("nan"))
        ('1.82G', '950', '-')
    """
    scaled = _scaled(value)
    return MISSING if scaled is None else "".join(scaled)


def format_flops(value, unit: str = "FLOP") -> str:
    """A FLOP count or rate with an SI prefix and 3 significant digits; "-" when missing.

    Example:
        >>> format_flops(1_820_000_000), format_flops(2.5e10, "FLOP/s"), format_flops(0)
        ('1.82 GFLOP', '25.0 GFLOP/s', '0 FLOP')
    """
    scaled = _scaled(value)
    return MISSING if scaled is None else f"{scaled[0]} {scaled[1]}{unit}"


def plural(count: int, noun: str) -> str:
    """``count`` and ``noun``, with an s unless the count is 1.

    >>> plural(1, "run"), plural(3, "node"), plural(0, "slow run")
    ('1 run', '3 nodes', '0 slow runs')
    """
    return f"{count} {noun}{'' if count == 1 else 's'}"


def elide(text: str, width: int, keep_tail: bool = False) -> str:
    """``text`` as it is when it fits ``width`` characters, else cut to ``width`` with "…"
    last, or first when ``keep_tail`` (a name or path, whose end tells most).

    Example:
        >>> elide("abcdef", 4), elide("abcdef", 4, keep_tail=True), elide("abc", 4)
        ('abc…', '…def', 'abc')
    """
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:max(width, 0)]
    return "…" + text[len(text) - width + 1:] if keep_tail else text[:width - 1] + "…"
