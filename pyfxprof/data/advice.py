"""Advice as plain data: a Suggestion (what to change, why, what it may save) and Advice (the
suggestions, most urgent first). The advisor (analyses/) makes them; views/ render them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .. import served_methods
from ..errors import ArgumentError

#: Severities, most urgent first; advice is sorted in this order.
SEVERITIES = ("high", "medium", "low", "info")


@dataclass
class Suggestion:
    """One piece of advice: what to change, why (evidence) and what it may save.

    ``severity`` is one of SEVERITIES; ``evidence`` lines cite node names and times;
    ``expected_saving_ns`` is None when the rule cannot estimate it; ``nodes`` names the nodes.

    Example:
        >>> Suggestion("mine", "low", "Try X", ["relu_3 1.20 ms"], "do X", 600.0).nodes
        []
    """

    rule: str
    severity: str
    title: str
    evidence: list[str]
    action: str
    expected_saving_ns: float | None = None
    nodes: list[str] = field(default_factory=list)

    def __post_init__(self):
        if self.severity not in SEVERITIES:
            raise ArgumentError(f"severity must be one of {SEVERITIES}, got {self.severity!r}")


@served_methods
class Advice(list):
    """Suggestions, most urgent first; ``str()`` is a numbered report. ``total_ns`` is the
    median end-to-end run the percentages refer to; ``subject`` names the model and device.

    Example:
        >>> advice = Advice([Suggestion("r", "info", "Look here", ["a: 5 µs"], "read it")],
        ...                 total_ns=10_000.0, subject="net on cpu")
        >>> print(advice)
        Advice for net on cpu: 1 suggestion (median run 10.0 µs; percentages are shares of it)
        <BLANKLINE>
        1. [info] Look here  (rule: r)
           evidence:
             - a: 5 µs
           action: read it
           expected saving: not estimated
    """

    def __init__(self, suggestions=(), total_ns: float = math.nan, subject: str = "the model"):
        super().__init__(suggestions)
        self.total_ns = total_ns
        self.subject = subject

    if TYPE_CHECKING:  # served (package root's _METHODS); tests/test_typing.py checks them
        def __str__(self) -> str: ...
        def _repr_html_(self) -> str: ...
