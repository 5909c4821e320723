import math

import numpy as np
import pytest
from hypothesis import given, strategies as st

from pyfxprof.data.units import format_flops, format_ns, format_pct, elide, format_si, time_unit


@pytest.mark.parametrize("ns, text", [
    (0, "0 ns"),
    (1, "1 ns"),
    (950, "950 ns"),
    (999, "999 ns"),
    (999.4, "999 ns"),
    (999.6, "1.00 µs"),  # would round to "1000 ns": moves to the next unit
    (1000, "1.00 µs"),
    (1234, "1.23 µs"),
    (12_345, "12.3 µs"),
    (123_456, "123 µs"),
    (9_996, "10.0 µs"),  # rounding up keeps 3 significant digits
    (999_996, "1.00 ms"),
    (2_500_000, "2.50 ms"),
    (41_234_567, "41.2 ms"),
    (1_000_000_000, "1.00 s"),
    (3_600_000_000_000, "3600 s"),  # seconds are the largest unit
])
def test_format_ns_auto_units(ns, text):
    assert format_ns(ns) == text


def test_format_ns_negative_uses_unit_of_magnitude():
    assert format_ns(-1234) == "-1.23 µs"
    assert format_ns(-950) == "-950 ns"
    assert format_ns(-2_500_000) == "-2.50 ms"


def test_format_ns_negative_rounding_to_zero_has_no_sign():
    assert format_ns(-0.4) == "0 ns"


def test_format_ns_missing_values():
    assert format_ns(float("nan")) == "-"
    assert format_ns(np.nan) == "-"
    assert format_ns(None) == "-"


def test_format_ns_infinities():
    assert format_ns(math.inf) == "inf"
    assert format_ns(-math.inf) == "-inf"


def test_format_ns_accepts_numpy_scalars():
    assert format_ns(np.int64(1234)) == "1.23 µs"
    assert format_ns(np.float32(2_500_000)) == "2.50 ms"


def test_format_ns_precision_is_significant_digits():
    assert format_ns(1234, precision=2) == "1.2 µs"
    assert format_ns(1234, precision=4) == "1.234 µs"
    assert format_ns(1234, precision=1) == "1 µs"
    # integer digits are never dropped (no "1e+02")
    assert format_ns(123_456, precision=1) == "123 µs"
    # nanoseconds are whole numbers whatever the precision
    assert format_ns(52.4, precision=5) == "52 ns"


@pytest.mark.parametrize("bad", [0, -1, 2.5, "3"])
def test_format_ns_rejects_bad_precision(bad):
    with pytest.raises(ValueError, match="precision"):
        format_ns(1, precision=bad)


@pytest.mark.parametrize("pct, text", [
    (12.345, "12.3%"),
    (100, "100.0%"),
    (0, "0.0%"),
    (0.04, "0.0%"),
    (-0.04, "0.0%"),  # no "-0.0%"
    (-3.21, "-3.2%"),
    (float("nan"), "-"),
    (None, "-"),
])
def test_format_pct(pct, text):
    assert format_pct(pct) == text


def test_format_pct_precision():
    assert format_pct(23.456, 0) == "23%"
    assert format_pct(23.456, 2) == "23.46%"
    with pytest.raises(ValueError, match="precision"):
        format_pct(1.0, -1)


def test_flop_and_si_formatting():
    assert format_flops(1_820_000_000) == "1.82 GFLOP"
    assert format_flops(999) == "999 FLOP" and format_flops(None) == "-"
    assert format_flops(3.2e13, "FLOP/s") == "32.0 TFLOP/s"
    assert format_si(12_345) == "12.3k" and format_si(math.nan) == "-"


@pytest.mark.parametrize("exponent", np.linspace(-1, 12, 53))
def test_time_unit_reads_between_1_and_1000_and_agrees_with_format_ns(exponent):
    ns = 10.0**exponent
    unit, scale = time_unit(ns)
    if unit == "ns":
        assert scale == 1.0 and ns < 1000
    elif unit == "s":
        assert ns / scale >= 1
    else:
        assert 1 <= ns / scale < 1000
        assert format_ns(ns).endswith(f" {unit}") or float(format_ns(ns).split()[0]) >= 999.5


@pytest.mark.parametrize("missing", [0.0, float("nan"), -5.0])
def test_time_unit_of_nothing_is_ns(missing):
    assert time_unit(missing) == ("ns", 1.0)


@given(st.text(max_size=60), st.integers(min_value=0, max_value=70), st.booleans())
def test_elide_fits_the_width_and_keeps_what_it_says(text, width, keep_tail):
    out = elide(text, width, keep_tail=keep_tail)
    if len(text) <= width:
        assert out == text
        return
    assert len(out) == width
    if width >= 1:
        kept = out[1:] if keep_tail else out[:-1]
        assert out[0 if keep_tail else -1] == "…"
        assert (text.endswith(kept) if keep_tail else text.startswith(kept))


@pytest.mark.parametrize("text, width, keep_tail, expected", [
    ("layer1.0.conv1", 8, False, "layer1.…"),
    ("layer1.0.conv1", 8, True, "…0.conv1"),
    ("abc", 1, True, "…"),
    ("abc", 3, True, "abc"),
])
def test_elide_examples(text, width, keep_tail, expected):
    assert elide(text, width, keep_tail) == expected
