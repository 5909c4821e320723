"""Tests of pyfxprof.views.elide: text cut to a width with "…"."""

import pytest
from hypothesis import given, strategies as st

from pyfxprof.views.elide import elide


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
