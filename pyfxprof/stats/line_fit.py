"""A robust line through a sweep (batch-size scaling): Theil–Sen per part, its fixed and
per-item costs, its r2 and whether a part is overhead-bound at size 1. See docs/latency.md.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import pandas as pd

#: A node is overhead-bound at size 1 when fixed / (fixed + per_item) exceeds this.
OVERHEAD_BOUND_SHARE = 0.5
FIT_COLUMNS = ("fixed_ns", "per_item_ns", "r2", "fixed_share_at_1", "overhead_bound")


def theil_sen(sizes, values) -> tuple[float, float, float]:
    """(intercept, slope, r2) of the Theil–Sen line through (sizes, values).

    >>> theil_sen([1, 2, 4, 8], [300, 400, 600, 1000])
    (200.0, 100.0, 1.0)
    >>> theil_sen([1, 2, 4], [5, 5, 5])[2]
    nan
    """
    x = np.asarray(sizes, dtype=np.float64)
    y = np.asarray(values, dtype=np.float64)
    from scipy import stats as scipy_stats  # late: scipy.stats takes seconds to import
    # scipy builds its result type at run time (_make_tuple_bunch): inferred as tuple[object]
    slope, intercept, _, _ = cast("tuple[float, float, float, float]",
                                  scipy_stats.theilslopes(y, x, method="joint"))
    residual = y - (intercept + slope * x)
    spread = float(((y - y.mean()) ** 2).sum())
    r2 = 1.0 - float((residual ** 2).sum()) / spread if spread > 0 else float("nan")
    return float(intercept), float(slope), r2


def fit_rows(sizes, medians: np.ndarray) -> pd.DataFrame:
    """FIT_COLUMNS for each column of ``medians`` (len(sizes), parts) of ns.

    >>> fit_rows([1, 2, 4], np.array([[210.0, 5.0], [220.0, 9.0], [240.0, 17.0]]))[
    ...     ["fixed_ns", "per_item_ns", "overhead_bound"]].values.tolist()
    [[200.0, 10.0, True], [1.0, 4.0, False]]
    """
    fits = [theil_sen(sizes, medians[:, column]) for column in range(medians.shape[1])]
    fixed, per_item, r2 = (np.array(values) for values in zip(*fits)) if fits else ([], [], [])
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.asarray(fixed) / (np.asarray(fixed) + np.asarray(per_item))
    return pd.DataFrame({"fixed_ns": fixed, "per_item_ns": per_item, "r2": r2,
                         "fixed_share_at_1": share,
                         "overhead_bound": np.asarray(share) > OVERHEAD_BOUND_SHARE})
