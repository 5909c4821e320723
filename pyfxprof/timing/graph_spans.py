"""Models run as several graphs (Dynamo's graph breaks, torch.compile'd graphs): the time between
graphs, stamped at each graph's start and end, and the executor of a call Dynamo split (a graph
run several times per call, a graph break inside a loop, timed at each run and summed)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .native import _C
from ..capture.dynamo_frame import DynamoFrame
from ..capture.inputs import BoundInputs
from ..capture.tracing import timed_nodes
from ..errors import PyfxprofError
from .calibration import Calibration, calibrate_timed_calls
from .durations import RunTimings
from .instrument import instrument
from .run_table import RunTable

if TYPE_CHECKING:
    from .device_events import DeviceEvents


class GraphSpans:
    """Each graph call of a run stamped at its start and end; a run's time between graphs
    (capture/node_table.BETWEEN_GRAPHS) is the sum of the gaps from one graph's end to the
    next one's start. A run must call the graphs in `order` (default: each once, in turn).

    Example:
        >>> spans = GraphSpans(2)
        >>> first, second = spans.wrap(0, abs), spans.wrap(1, abs)
        >>> spans.begin_run(); _ = first(-1); _ = second(-2); spans.end_run()
        >>> one_run = RunTimings(np.zeros((1, 0)), np.zeros(1), np.zeros(1), 0)
        >>> spans.attach(one_run).between_graphs.shape
        (1,)
    """

    def __init__(self, graphs: int, order: list[int] | None = None) -> None:
        self.graphs = graphs
        self.order = list(range(graphs)) if order is None else list(order)
        self._stamps: list[int] = []   # graph, start, end per graph call of the open run
        self._between: list[int] = []  # per ended run
        self._spans: list[int] = []    # per ended run: first graph's start to last one's end

    def wrap(self, graph: int, run: Callable[[Any], Any]) -> Callable[[Any], Any]:
        """`run` (a graph taking one argument) stamped as graph number `graph`."""
        stamps, now = self._stamps, _C.now_ns

        def stamped(value: Any) -> Any:
            stamps.append(graph)
            stamps.append(now())
            output = run(value)
            stamps.append(now())
            return output
        return stamped

    def begin_run(self) -> None:
        """Forget the stamps of a run that did not end."""
        self._stamps.clear()

    def end_run(self, strict: bool = True) -> None:
        """Keep the run's time between graphs; when its graphs did not run in `order`
        (guards that sent a call to code Dynamo had not compiled, a recompile, a loop that
        ran another number of times), a one-line PyfxprofError, or with `strict` False a
        run that attach() leaves out (its nodes were not all timed either)."""
        stamps = self._stamps
        order = stamps[0::3]
        if order != self.order:
            stamps.clear()
            if not strict:
                self._between.append(-1)
                self._spans.append(-1)
                return
            raise PyfxprofError(f"the call ran its {self.graphs} graphs in the order {order} "
                                f"instead of {self.order} as when captured (a loop that ran "
                                "another number of times, or inputs Dynamo's code was not "
                                "made for); use capture='hooks'")
        self._between.append(sum(stamps[k + 1] - stamps[k - 1] for k in range(3, len(stamps), 3)))
        self._spans.append(stamps[-1] - stamps[1])
        stamps.clear()

    def reset(self) -> None:
        """Forget every run so far (e.g. after warm-up)."""
        self._stamps.clear()
        self._between.clear()
        self._spans.clear()

    def attach(self, timings: RunTimings, span_totals: bool = False) -> RunTimings:
        """`timings` with each ended run's time between graphs (several graphs only: taken
        out of its time between nodes) and, with `span_totals`, run totals from the first
        graph's start to the last graph's end; what was stamped is forgotten here. A
        one-line PyfxprofError when the runs ended are not the complete runs of `timings`
        (every graph of an ended run ran, so every node was timed)."""
        between = np.asarray(self._between, dtype=np.int64)
        spans = np.asarray(self._spans, dtype=np.int64)
        self._between, self._spans = [], []
        between, spans = between[between >= 0], spans[between >= 0]
        if len(between) != len(timings.run_totals):
            raise PyfxprofError(f"{len(between)} runs stamped between graphs for "
                                f"{len(timings.run_totals)} complete runs")
        if span_totals:
            timings.run_totals = spans
        if self.graphs > 1:
            timings.between_graphs = between
            if timings.between_nodes is not None:
                timings.between_nodes = timings.between_nodes - between
        return timings


class SpannedExecutor:
    """What the executors of several graphs share (GraphsExecutor, timing.compiled's
    CompiledExecutor): one RunTable (`table`) for every graph's timed calls and the stamps
    between graphs (`spans`); host times only.

    Example:
        >>> executor = SpannedExecutor()
        >>> executor.table, executor.spans = RunTable(2), GraphSpans(2)
        >>> executor.reset(3); executor.failed_node(["a", "b"]), executor.device_samples()
        ('a', None)
    """

    device: DeviceEvents | None = None
    table: RunTable
    spans: GraphSpans

    def failed_node(self, names: list[str]) -> str | None:
        """The name of the node (kernel) the last run raised in (None: after the last one)."""
        return self.table.failed_node(names)

    def reset(self, runs: int = 0) -> None:
        """Forget every run so far and make room for `runs` more."""
        self.table.clear()
        self.table.reserve(runs)
        self.spans.reset()

    def device_samples(self) -> np.ndarray | None:
        """Host times only (None)."""
        return None


class GraphsExecutor(SpannedExecutor):
    """Runs a call Dynamo split into several graphs: Dynamo's own code (a DynamoFrame) makes
    the call, each graph's nodes timed by the codegen instrumentation into one table, the
    time between graphs stamped (GraphSpans). A graph the call runs several times (a graph
    break inside a loop: `frame.order`) is instrumented once per run of it, each into
    columns of its own, and its nodes' times are summed per call (`calls`: how many times
    each node runs in a call). A run's total is its graphs' span, from the first one's start
    to the last one's end: as with one graph, the Python before the first graph and after
    the last is not in it. Follows timing.executors.Executor; host times only.

    Example:
        >>> import torch
        >>> from pyfxprof.capture.dynamo_frame import graphs_capture
        >>> class Broken(torch.nn.Module):
        ...     def forward(self, x):
        ...         x = x + 1
        ...         torch._dynamo.graph_break()
        ...         return x * 2
        >>> x = torch.ones(2)
        >>> executor = GraphsExecutor(graphs_capture(Broken(), BoundInputs((x,)), "function"), {})
        >>> with executor:  # runs only inside (afterwards the graphs are let go)
        ...     _ = executor.run((x,))
        >>> timings = executor.timings()
        >>> timings.intervals.shape, timings.between_graphs.shape, executor.calls.tolist()
        ((1, 2), (1,), [1, 1])
    """

    mode = "codegen"

    def __init__(self, frame: DynamoFrame, kwargs: dict, strict: bool = True) -> None:
        self.frame, self.kwargs, self.strict = frame, kwargs, strict
        #: Whether leaving the `with` block lets go of the graphs (False: the capture cache,
        #: run/capture_cache.py, keeps this executor for later profiles).
        self.releases = True
        order = list(frame.order) or list(range(len(frame.graphs)))
        sizes = [len(timed_nodes(gm.graph)) for gm in frame.graphs]
        firsts = np.cumsum([0] + sizes)
        #: The node each column of the table times: the graphs' runs in call order.
        self._node_of_column = np.concatenate(
            [np.arange(firsts[g], firsts[g + 1]) for g in order]).astype(np.intp)
        self.calls = np.bincount(self._node_of_column, minlength=int(firsts[-1]))
        self.calls_per_run = len(self._node_of_column)
        self.table = RunTable(self.calls_per_run)
        self.spans = GraphSpans(len(sizes), order)
        runs: list[list] = [[] for _ in sizes]
        column = 0
        for graph in order:
            runs[graph].append(instrument(frame.graphs[graph], self.table.native,
                                          first_column=column).forward)
            column += sizes[graph]
        self._seen = [0] * len(sizes)
        for graph, forwards in enumerate(runs):
            frame.run_graph_with(self.spans.wrap(graph, self._runner(graph, forwards)), graph)
        self.calibration: Calibration = calibrate_timed_calls()

    def _runner(self, graph: int, forwards: list) -> Callable[[tuple], Any]:
        """Graph `graph`'s flat inputs to its instrumented forward for this run of it in the
        call (the k-th run of a graph times into the k-th block of its columns)."""
        if len(forwards) == 1:
            [forward] = forwards
            return lambda flat: forward(*flat)
        seen = self._seen

        def nth(flat: tuple) -> Any:
            k = seen[graph]
            seen[graph] = k + 1
            return forwards[min(k, len(forwards) - 1)](*flat)
        return nth

    def __enter__(self) -> "GraphsExecutor":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.table.abandon()
        if self.releases:  # Dynamo's cache outlives the profile: it keeps no graph
            self.frame.release()

    def run(self, args: tuple) -> Any:
        return self.call(BoundInputs(args, self.kwargs))

    def call(self, bound: BoundInputs) -> Any:
        """One timed call of the model on `bound` (the call bound to its forward). A call
        whose graphs did not run in the captured order is a one-line PyfxprofError, or with
        `strict` False a run left out of the timings (GraphSpans.end_run)."""
        self.table.begin()
        self.spans.begin_run()
        self._seen[:] = [0] * len(self._seen)
        try:
            output = self.frame.call(bound)
            self.spans.end_run(self.strict)
        except BaseException:
            self.table.abandon()
            raise
        self.table.end()
        return output

    def timings(self) -> RunTimings:
        timings = self.calibration.correct(self.spans.attach(self.table.take(),
                                                             span_totals=True),
                                           self.calls_per_run)
        if len(self._node_of_column) != len(self.calls):  # a graph runs several times
            summed = np.zeros((len(timings.intervals), len(self.calls)), dtype=np.int64)
            np.add.at(summed, (slice(None), self._node_of_column), timings.intervals)
            timings.intervals = summed
        return timings
