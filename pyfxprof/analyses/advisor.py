"""Optimisation advice drawn from a Profile: rules that read the timings and propose changes.

A rule is a function ``rule(profile, context) -> list[Suggestion]`` registered under a name
with ``@register_rule("name")``. ``advise`` runs the rules and sorts what they found by
severity, then by expected saving. Every suggestion cites the nodes and times it rests on;
percentages are shares of the median end-to-end run. See docs/advisor.md.
Example: ``print(advise(prof))``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from ..data.profile import Profile
from ..errors import ArgumentError
from . import advisor_rules, backward_rules, compiled_rules, outside_rules  # noqa: F401
from ..data.advice import SEVERITIES, Advice, Suggestion
from .advice import RULES, Context, build_context, register_rule, unregister_rule

__all__ = ["Advice", "Context", "RULES", "SEVERITIES", "Suggestion", "advise", "build_context",
           "register_rule", "unregister_rule"]


def advise(profile: Profile, rules: Iterable[str] | None = None) -> Advice:
    """Run the advisor ``rules`` (names; default all registered) on ``profile``.

    Returns an Advice sorted by severity (high, medium, low, info), then by expected saving
    (largest first; unestimated last), then rule order.

    Example:
        >>> print(advise(pyfxprof.profile(model, (x,), runs=30)))   # doctest: +SKIP
        >>> advise(prof, rules=["hotspots"])[0].nodes               # doctest: +SKIP
        ['layer4_0_conv2', 'layer4_1_conv1', ...]
    """
    if not (rules is None or isinstance(rules, (str, list, tuple, set, frozenset))):
        raise ArgumentError(f"rules must be None, a rule name or a list of them, got {rules!r}")
    names = list(RULES) if rules is None else [rules] if isinstance(rules, str) else list(rules)
    unknown = [n for n in names if n not in RULES]
    if unknown:
        raise ArgumentError(f"unknown advisor rules {unknown}; registered: {', '.join(RULES)}")
    subject = f"{profile.meta.get('model', 'the model')} on {profile.meta.get('device', '?')}"
    if profile.n_runs == 0 or profile.n_nodes == 0:
        return Advice([], math.nan, subject)
    context = build_context(profile)
    found = []
    for name in names:
        for item in RULES[name](profile, context):
            if not isinstance(item, Suggestion):
                raise ArgumentError(f"advisor rule {name!r} returned a {type(item).__name__}; "
                                "rules must return a list of Suggestion")
            found.append(item)
    found.sort(key=lambda s: (SEVERITIES.index(s.severity), -(s.expected_saving_ns or 0.0)))
    return Advice(found, context.total_ns, subject)
