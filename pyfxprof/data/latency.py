"""The run-total latency distribution: quantiles, a distribution-free CI on p99, run-count checks.

All times are int ns. Quantiles use numpy's default (linear interpolation between order
statistics). The confidence interval on p99 is stats/order_statistics.py's order-statistic
interval; when no run bounds the quantile from above, the interval's high end is None.
See docs/latency.md.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .. import served_methods
from ..errors import ArgumentError
from ..stats.order_statistics import quantile_interval, runs_needed

#: Quantiles of the summary, as (field name, q).
QUANTILES = (("p50", 0.50), ("p90", 0.90), ("p99", 0.99), ("p99_9", 0.999))


@served_methods
@dataclass
class LatencySummary:
    """The run-total distribution of a Profile (every time is int ns).

    ``p99_ci`` is the 95% order-statistic interval on p99 (an end the runs cannot bound is
    None); ``preempted`` counts preempted runs, see run_noise.preempted_mask (None when not
    measured); ``warnings`` name the quantiles too few runs support. ``str()`` is a small
    table (views.latency_text.render_latency).

    >>> s = latency_summary(np.arange(1, 1001) * 1000)
    >>> s.n, s.p50, s.p99, s.max, s.p99_ci
    (1000, 500500, 990010, 1000000, (983000, 997000))
    >>> s.warnings
    ['p99.9 from 1000 runs is not a p99.9 (needs >= 3688 runs)']
    """

    if TYPE_CHECKING:  # served through the package root's _METHODS; tests/test_typing.py
        # checks each declaration against the serving function's signature
        def __str__(self) -> str: ...

    n: int
    mean: int
    p50: int
    p90: int
    p99: int
    p99_9: int
    max: int
    p99_ci: tuple
    preempted: int | None = None
    excluded: int = 0
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        """The fields as a plain dict."""
        return asdict(self)




def too_few_runs(n: int, quantiles=QUANTILES) -> list[str]:
    """One warning per quantile that ``n`` runs cannot bound from above (see runs_needed).

    >>> too_few_runs(20)
    ['p90 from 20 runs is not a p90 (needs >= 36 runs)', 'p99 from 20 runs is not a p99 (needs >= 368 runs)', 'p99.9 from 20 runs is not a p99.9 (needs >= 3688 runs)']
    """
    found = []
    for name, q in quantiles:
        needed = runs_needed(q)
        if n < needed:
            label = name.replace("_", ".")
            found.append(f"{label} from {n} runs is not a {label} (needs >= {needed} runs)")
    return found


def latency_summary(run_totals, preempted: int | None = None,
                    excluded: int = 0) -> LatencySummary:
    """The LatencySummary of ``run_totals`` (ns); ValueError when there are none.

    >>> str(latency_summary([100, 200, 300])).splitlines()[:3]
    ['runs                 3', 'mean            200 ns', 'p50             200 ns']
    """
    totals = np.asarray(run_totals, dtype=np.int64).ravel()
    if totals.size == 0:
        raise ArgumentError("no runs: a latency summary needs at least one run total")
    values = np.quantile(totals, [q for _, q in QUANTILES])
    quantiles = {name: int(round(v)) for (name, _), v in zip(QUANTILES, values)}
    p99_ci = tuple(None if math.isinf(end) else int(end)  # an end no run bounds: None
                   for end in quantile_interval(totals, 0.99))
    return LatencySummary(n=int(totals.size), mean=int(round(totals.mean())), **quantiles,
                          max=int(totals.max()), p99_ci=p99_ci,
                          preempted=preempted, excluded=excluded,
                          warnings=too_few_runs(int(totals.size)))
