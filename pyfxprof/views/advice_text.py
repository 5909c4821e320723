"""An Advice as text: the numbered report ``str(advice)`` prints (served as ``Advice.__str__``
through the package root's ``_METHODS``), and each suggestion's expected saving in words.

Example:
    >>> print(prof.advise())   # doctest: +SKIP
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..data.units import format_ns, format_pct, plural
from .safe_text import terminal_text

if TYPE_CHECKING:
    from ..data.advice import Advice, Suggestion


def render_advice(advice: Advice) -> str:
    """The suggestions, most urgent first, numbered, each with its evidence, action and
    expected saving, under a line naming the subject and the median run.

    >>> print(render_advice(prof.advise()))   # doctest: +SKIP
    """
    lines = [f"Advice for {advice.subject}: {plural(len(advice), 'suggestion')} (median run "
             f"{format_ns(advice.total_ns)}; percentages are shares of it)"]
    for number, item in enumerate(advice, 1):
        lines += ["", f"{number}. [{item.severity}] {item.title}  (rule: {item.rule})",
                  "   evidence:"]
        lines += [f"     - {line}" for line in item.evidence]
        lines += [f"   action: {item.action}",
                  f"   expected saving: {saving_text(advice, item)}"]
    return terminal_text("\n".join(lines))


def saving_text(advice: Advice, item: Suggestion) -> str:
    """The expected saving of ``item`` as time and share of the median run.

    >>> saving_text(advice, item)   # doctest: +SKIP
    '2.00 µs (20.0%)'
    """
    if item.expected_saving_ns is None:
        return "not estimated"
    pct = item.expected_saving_ns / advice.total_ns * 100 if advice.total_ns > 0 else math.nan
    return f"{format_ns(item.expected_saving_ns)} ({format_pct(pct)})"
