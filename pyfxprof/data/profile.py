"""The Profile: plain data (nodes table, raw int64 ns samples, run totals, metadata) that
imports no view or analysis; what renders, analyses or saves it is served by the stages above
through the package root's ``_METHODS`` (docs/architecture.md). Columns and units:
docs/profile.md.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .. import served_methods
from ..errors import ArgumentError, PyfxprofError
from .run_noise import check_run_noise, noise_frame, preempted_mask
from ..stats.node_statistics import (STAT_COLUMNS, backward_statistics, node_statistics,
                                     summary_of_totals)
from .units import format_ns

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any, NoReturn

    from matplotlib.figure import Figure

    from .advice import Advice
    from .files import PathLike
    from .key_averages import KeyAverages
    from .latency import LatencySummary
    from .replay_result import ReplayResult
    from .warmup import WarmupReport

#: Identity columns every ``nodes`` frame has, in order.
NODE_COLUMNS = ("index", "name", "op", "target", "module_path", "module_type", "module_stack")
#: Prefix of the device-time statistics columns (present only with ``device_samples``).
DEVICE_PREFIX = "device_"
#: Prefix of the backward-time statistics columns (present only with ``backward_samples``).
BACKWARD_PREFIX = "backward_"


def _int_array(value, name: str, ndim: int) -> np.ndarray:
    """``value`` as an int64 array of ``ndim`` dimensions, or a ValueError naming ``name``."""
    array = np.asarray(value)
    if array.ndim != ndim:
        raise ArgumentError(f"{name} must be {ndim}-D, got shape {array.shape}")
    if array.dtype.kind not in "iu":
        raise ArgumentError(f"{name} must hold integer ns (int64), got dtype {array.dtype}")
    return array.astype(np.int64, copy=False)


def _check_nodes(nodes: pd.DataFrame) -> pd.DataFrame:
    """Validated copy of ``nodes`` with a fresh RangeIndex (row i <-> samples column i)."""
    if not isinstance(nodes, pd.DataFrame):
        raise ArgumentError(f"nodes must be a pandas DataFrame, got {type(nodes).__name__}")
    missing = [c for c in NODE_COLUMNS if c not in nodes.columns]
    if missing:
        raise ArgumentError(f"nodes is missing columns {missing}; required: {list(NODE_COLUMNS)}")
    reserved = [c for c in nodes.columns
                if c in STAT_COLUMNS or c == "cum_pct"
                or str(c).startswith((DEVICE_PREFIX, BACKWARD_PREFIX))]
    if reserved:
        raise ArgumentError(f"nodes columns {reserved} clash with statistics column names")
    index = nodes["index"].to_numpy()
    if index.dtype.kind not in "iu" or not np.array_equal(index, np.arange(len(nodes))):
        raise ArgumentError("nodes['index'] must be the integers 0..n-1 in execution order")
    return nodes.reset_index(drop=True)


def _values_equal(a: Any, b: Any) -> bool:
    """Equality for object cells and metadata: NaN equals NaN, pd.NA equals pd.NA, arrays
    compare elementwise, dicts, lists and tuples item by item."""
    if a is pd.NA or b is pd.NA:
        return a is b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_values_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(map(_values_equal, a, b)))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        # numpy's ArrayLike leaves out dicts; beside an array one compares unequal
        return np.array_equal(a, b)  # pyright: ignore[reportArgumentType]
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def _frames_equal(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    """Same columns and values; object/str columns compare by value whatever their dtype."""
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return False
    for column in a.columns:
        left, right = a[column], b[column]
        if pd.api.types.is_numeric_dtype(left) and pd.api.types.is_numeric_dtype(right):
            if left.dtype != right.dtype or not left.equals(right):
                return False
        elif not all(map(_values_equal, left.tolist(), right.tolist())):
            return False
    return True


def _arrays_equal(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.dtype == b.dtype and np.array_equal(a, b)


@served_methods
class Profile:
    """Timings of every graph node of a model over several runs, as plain data.

    The methods that render, export, save, advise or replay (``table``, ``export``, ``save``,
    ...) are served by the modules that build on it: declared in the block below.

    Args:
        nodes: one row per timed node in execution order with the columns NODE_COLUMNS
            (``index`` 0..n-1, ``name``, ``op``, ``target``, ``module_path``, ``module_type``,
            ``module_stack``) plus optional extra columns (e.g. ``input_shapes``, ``flops``)
            carried through untouched.
        samples: int64 (runs, n_nodes), host ns per node per run, overhead already subtracted.
        run_totals: int64 (runs,), end-to-end host ns per run.
        meta: run metadata (model, device, runs, warmup, mode, capture_mode, overhead_ns,
            coverage, dropped_records, clock, versions, cpu, threads, timestamp); all optional.
        device_samples: int64 (runs, n_nodes) device ns per node per run, or None.
        run_starts: int64 (runs,) profiler-clock ns at which each run started, or None
            (used to place runs on a timeline in traces; see docs/profile.md).
        run_noise: int64 (runs, 4) per-run context switches and CPU/wall ns of the profiling
            thread (columns run_noise.NOISE_COLUMNS), or None; see docs/latency.md.
        backward_samples: int64 (runs, n_nodes) host ns of each node's backward per run
            (training steps, ``profile(backward=True)``), or None.

    >>> nodes = pd.DataFrame({"index": [0, 1], "name": ["conv", "relu"],
    ...     "op": ["call_module", "call_function"], "target": ["conv", "torch.relu"],
    ...     "module_path": ["conv", ""], "module_type": ["Conv2d", "Net"],
    ...     "module_stack": [("conv",), ()]})
    >>> prof = Profile(nodes, np.array([[900, 100], [1100, 100]]), np.array([1000, 1200]),
    ...                {"model": "net"})
    >>> prof.n_runs, prof.n_nodes, prof.stats()["median"].tolist()
    (2, 2, [1000.0, 100.0])
    """

    if TYPE_CHECKING:  # served through the package root's _METHODS; tests/test_typing.py
        # checks each declaration against the serving function's signature
        def table(self, sort_by: str | None = None, top: int | None = None,
                  columns: list[str] | None = None, group_by: str | None = None,
                  depth: int | None = None, width: int | str | None = "auto",
                  row_limit: int | None = None) -> str: ...
        def tree(self, max_depth: int | None = None) -> str: ...
        def _repr_html_(self) -> str: ...
        def export(self, path: PathLike, format: str | None = None, **options: Any) -> None: ...
        def export_html(self, path: PathLike, top: int = 50, metric: str = "median") -> None: ...
        def export_chrome_trace(self, path: PathLike, runs: Iterable[int] | None = None,
                                max_runs: int | None = 100, rank: int = 0, world_size: int = 1,
                                *, use_python_export: bool = False) -> None: ...
        def export_stacks(self, path: PathLike, metric: str = "median",
                          by: str = "module") -> None: ...
        def export_flamegraph(self, path: PathLike, metric: str = "median",
                              title: str | None = None, by: str = "module") -> None: ...
        def export_speedscope(self, path: PathLike, run: int | None = None,
                              metric: str = "median") -> None: ...
        def key_averages(self, group_by_input_shape: bool = False,
                         group_by_stack_n: int = 0) -> KeyAverages: ...
        def events(self) -> KeyAverages: ...
        def export_memory_timeline(self, path: PathLike, device: str = "cpu") -> None: ...
        def plot(self, path: PathLike | None = None, top: int = 20,
                 kind: str = "nodes") -> Figure: ...
        def plot_latency(self, path: PathLike | None = None) -> Figure: ...
        def plot_tail(self, path: PathLike | None = None, quantile: float = 0.99,
                      top: int = 15) -> Figure: ...
        def advise(self, rules: Iterable[str] | None = None) -> Advice: ...
        def roofline(self, group_by: str | None = None, depth: int = 1,
                     peaks: dict | None = None) -> pd.DataFrame: ...
        def replay(self, node: str, model: Any = None,
                   variants: Sequence[str] | str | None = None, budget: float = 2.0,
                   cache: str = "warm", shapes: int | None = 16) -> ReplayResult: ...
        def replay_script(self, node: str, model: Any = None,
                          shape: int | str | None = None) -> str: ...
        def save(self, path: PathLike) -> None: ...
        def python_outside(self, top: int | None = None) -> pd.DataFrame: ...

    def __init__(self, nodes: pd.DataFrame, samples: np.ndarray, run_totals: np.ndarray,
                 meta: dict | None = None, device_samples: np.ndarray | None = None,
                 run_starts: np.ndarray | None = None, run_noise: np.ndarray | None = None,
                 backward_samples: np.ndarray | None = None):
        self.nodes = _check_nodes(nodes)
        self.samples = _int_array(samples, "samples", 2)
        if self.samples.shape[1] != len(self.nodes):
            raise ArgumentError(f"samples has {self.samples.shape[1]} node columns but nodes "
                             f"has {len(self.nodes)} rows")
        self.run_totals = _int_array(run_totals, "run_totals", 1)
        if self.run_totals.shape[0] != self.samples.shape[0]:
            raise ArgumentError(f"run_totals has {self.run_totals.shape[0]} runs but samples "
                             f"has {self.samples.shape[0]}")
        self.device_samples = None
        if device_samples is not None:
            self.device_samples = _int_array(device_samples, "device_samples", 2)
            if self.device_samples.shape != self.samples.shape:
                raise ArgumentError(f"device_samples shape {self.device_samples.shape} differs "
                                 f"from samples shape {self.samples.shape}")
        self.backward_samples = None
        if backward_samples is not None:
            self.backward_samples = _int_array(backward_samples, "backward_samples", 2)
            if self.backward_samples.shape != self.samples.shape:
                raise ArgumentError(f"backward_samples shape {self.backward_samples.shape} "
                                    f"differs from samples shape {self.samples.shape}")
        self.run_starts = None
        if run_starts is not None:
            self.run_starts = _int_array(run_starts, "run_starts", 1)
            if self.run_starts.shape[0] != self.samples.shape[0]:
                raise ArgumentError(f"run_starts has {self.run_starts.shape[0]} runs but samples "
                                 f"has {self.samples.shape[0]}")
        self.run_noise = None if run_noise is None else check_run_noise(run_noise, self.n_runs)
        if meta is not None and not isinstance(meta, dict):
            raise ArgumentError(f"meta must be a dict, got {type(meta).__name__}")
        self.meta = dict(meta or {})

    @property
    def n_runs(self) -> int:
        """Number of timed runs (rows of ``samples``)."""
        return self.samples.shape[0]

    @property
    def n_nodes(self) -> int:
        """Number of timed nodes (columns of ``samples``)."""
        return self.samples.shape[1]

    @property
    def step_num(self) -> int:
        """torch.profiler's ``step_num`` as an on_trace_ready handler reads it: the Profiler's
        step when this Profile's window was delivered (0 for a Profile not made by a loop)."""
        return int((self.meta.get("loop") or {}).get("step_num", 0))

    def run_steps(self) -> np.ndarray:
        """The loop step each run (model call) was made in, as torch numbers its
        ``ProfilerStep#N``; the run's index for a Profile not made by a loop.

        >>> Profile(pd.DataFrame({c: [] for c in NODE_COLUMNS}).astype({"index": int}),
        ...         np.zeros((3, 0), np.int64), np.zeros(3, np.int64)).run_steps().tolist()
        [0, 1, 2]
        """
        loop = self.meta.get("loop") or {}
        starts = loop.get("step_starts_ns")
        if not starts or self.run_starts is None:
            return np.arange(self.n_runs)
        index = np.searchsorted(np.asarray(starts, np.int64), self.run_starts, side="right") - 1
        return int(loop["steps"][0]) + np.clip(index, 0, None)

    def stats(self) -> pd.DataFrame:
        """Identity columns (NODE_COLUMNS) followed by host statistics (STAT_COLUMNS), in ns."""
        return pd.concat([self.nodes[list(NODE_COLUMNS)], node_statistics(self.samples)], axis=1)

    def to_dataframe(self) -> pd.DataFrame:
        """One row per node, in execution order (a fresh copy; safe to modify).

        Columns (all times in ns, float; documented in docs/profile.md):
          index (int), name, op, target, module_path, module_type, module_stack (tuple of str);
          count (runs, int), total (sum over runs), mean, median, min, max,
          std (sample std, NaN for < 2 runs), p10, p90, p99, iqr (p75 - p25),
          pct_total (percent of the sum of all node totals);
          device_<stat> for each statistic above computed on ``device_samples`` (only when
          present; device_pct_total is percent of device time);
          backward_<stat> likewise on ``backward_samples`` (training steps only), then
          backward_ratio (backward_median / median; NaN where the median is 0);
          then the extra columns of ``nodes`` unchanged.

        >>> nodes = pd.DataFrame({"index": [0], "name": ["x"], "op": ["call_function"],
        ...     "target": ["add"], "module_path": [""], "module_type": ["M"],
        ...     "module_stack": [()], "flops": [12]})
        >>> df = Profile(nodes, np.array([[5]]), np.array([5])).to_dataframe()
        >>> list(df.columns)[6:9], list(df.columns)[-1], float(df["total"][0])
        (['module_stack', 'count', 'total'], 'flops', 5.0)
        """
        parts = [self.stats()]
        if self.device_samples is not None:
            parts.append(node_statistics(self.device_samples).add_prefix(DEVICE_PREFIX))
        if self.backward_samples is not None:
            parts.append(backward_statistics(self.samples, self.backward_samples))
        extra = [c for c in self.nodes.columns if c not in NODE_COLUMNS]
        parts.append(self.nodes[extra])
        return pd.concat(parts, axis=1)

    # ---- latency, tail, noise and warm-up (docs/latency.md) ----------------------------------

    def latency(self, exclude_preempted: bool = False) -> LatencySummary:
        """The run-total distribution: n, mean, p50, p90, p99, p99.9, max (int ns), a 95% CI on
        p99, preempted runs, and warnings when too few runs support a quantile.

        >>> prof.latency().p99  # doctest: +SKIP
        1893021
        """
        from .latency import latency_summary
        chosen = self.without_preempted() if exclude_preempted else self
        preempted = None if self.run_noise is None else int(preempted_mask(self.run_noise).sum())
        return latency_summary(chosen.run_totals, preempted, self.n_runs - chosen.n_runs)

    def tail(self, quantile: float = 0.99, sort_by: str = "excess",
             exclude_preempted: bool = False) -> pd.DataFrame:
        """Which nodes make the slow runs slow: per node (plus a "(between nodes)" row) the
        median, the median over the runs at or above ``quantile`` of the totals (``tail``),
        ``excess`` = tail - median (ns), ``share`` of the summed excess and ``var_share`` of
        the variance of the total; sorted by ``sort_by`` ("excess" or "var_share").

        >>> prof.tail(0.9).head(3)  # doctest: +SKIP
        """
        from .tail import tail_attribution
        chosen = self.without_preempted() if exclude_preempted else self
        return tail_attribution(chosen.nodes["name"].tolist(), chosen.samples,
                                chosen.run_totals, quantile, sort_by)

    def noise(self) -> pd.DataFrame | None:
        """Per-run context switches, CPU and wall ns, stolen_ns and preempted; None when not
        measured (see run_noise.noise_frame)."""
        return None if self.run_noise is None else noise_frame(self.run_noise)

    def without_preempted(self) -> "Profile":
        """A copy without the runs during which the profiling thread was preempted (itself
        when nothing was measured or nothing preempted); ``meta["excluded_runs"]`` counts them."""
        if self.run_noise is None or not preempted_mask(self.run_noise).any():
            return self
        return self.select_runs(~preempted_mask(self.run_noise))

    def select_runs(self, keep: Sequence[bool] | np.ndarray) -> "Profile":
        """A copy holding only the runs where the boolean mask ``keep`` is true.

        >>> prof.select_runs(prof.run_totals < 2_000_000).n_runs  # doctest: +SKIP
        48
        """
        mask = np.asarray(keep, dtype=bool)
        if mask.shape != (self.n_runs,):
            raise ArgumentError(f"keep must be a boolean mask of {self.n_runs} runs")
        meta = dict(self.meta, runs=int(mask.sum()),
                    excluded_runs=int(self.meta.get("excluded_runs", 0)) + int((~mask).sum()))
        pick = lambda array: None if array is None else array[mask]  # noqa: E731
        return Profile(self.nodes, self.samples[mask], self.run_totals[mask], meta,
                       pick(self.device_samples), pick(self.run_starts), pick(self.run_noise),
                       pick(self.backward_samples))

    def warmup(self) -> WarmupReport:
        """Warm-up of the run totals: timed runs still warming up, the warm-up this model
        needs, drift (see warmup.warmup_report); preempted runs are left out of the detection.

        >>> print(prof.warmup())  # doctest: +SKIP
        warm-up: the first 3 timed runs are slower (together 4.20 ms above steady 1.21 ms); ...
        """
        from .warmup import warmup_report
        preempted = None if self.run_noise is None else preempted_mask(self.run_noise)
        walls = None if self.run_noise is None else self.run_noise[:, 3]
        return warmup_report(self.run_totals, self.meta.get("warmup"),
                             self.meta.get("warmup_totals_ns"), preempted, walls)

    def node_warmup(self) -> pd.DataFrame:
        """Nodes whose first timed runs are slower (first-call costs); see warmup.node_warmup."""
        from .warmup import node_warmup
        preempted = None if self.run_noise is None else preempted_mask(self.run_noise)
        return node_warmup(self.nodes["name"].tolist(), self.samples, preempted)

    def __enter__(self) -> NoReturn:
        raise PyfxprofError("a Profile is a finished result, not a context manager: call "
                            "prof = pyfxprof.profile(model, inputs), or profile a loop with "
                            "`with pyfxprof.Profiler(model, schedule=...) as p:`")

    def __exit__(self, *exc_info) -> None:  # never reached: __enter__ refuses
        return None

    def __repr__(self) -> str:
        median = summary_of_totals(self.run_totals)["median"]
        return (f"<Profile {self.meta.get('model', '?')} on {self.meta.get('device', '?')}: "
                f"{self.n_nodes} nodes x {self.n_runs} runs, median total {format_ns(median)}>")

    def __eq__(self, other) -> bool:
        if not isinstance(other, Profile):
            return NotImplemented
        return (_frames_equal(self.nodes, other.nodes)
                and _arrays_equal(self.samples, other.samples)
                and _arrays_equal(self.run_totals, other.run_totals)
                and _arrays_equal(self.device_samples, other.device_samples)
                and _arrays_equal(self.run_starts, other.run_starts)
                and _arrays_equal(self.run_noise, other.run_noise)
                and _arrays_equal(self.backward_samples, other.backward_samples)
                and _values_equal(self.meta, other.meta))

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value
