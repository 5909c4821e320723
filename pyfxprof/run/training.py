"""Training steps in `profile(backward=True)`: the default loss, the user's gradients kept aside,
and an executor running forward, loss and backward with the backward timed per forward node."""

from __future__ import annotations

import copy
from typing import Any, Callable

import numpy as np
import pandas as pd
import torch

from ..capture.inputs import split_inputs
from ..capture.outputs import flatten
from ..data.outside_graph import blank_cell
from ..data.rungs import HOOKS, WHOLE
from ..data.profile import Profile
from ..data.validate import run_coverage
from ..errors import ArgumentError, PyfxprofError, first_line
from ..timing.aot_backward import AotStep
from ..timing.backward import (EXTRA_ROWS, BackwardMarks, WrappingExecutor, aot_refusal,
                               autograd_nodes, calibrate_backward_hook, row_of_positions)
from ..timing.durations import RunTimings


def default_loss(output: Any) -> torch.Tensor:
    """The loss of a model's output: the output itself when a scalar, else its ``loss``
    (attribute or key, as Hugging Face models return it with ``labels``), else the first
    element of a tuple or list, else ``output.float().sum()``.

    Example:
        >>> default_loss(torch.ones(2, 3)).item(), default_loss((torch.tensor(2.0), 1)).item()
        (6.0, 2.0)
    """
    loss = getattr(output, "loss", None)
    if loss is None and isinstance(output, dict):
        loss = output.get("loss")
    if loss is None and isinstance(output, (tuple, list)) and output:
        loss = output[0]
    loss = output if loss is None else loss
    if not isinstance(loss, torch.Tensor):
        raise PyfxprofError(f"cannot find a loss in the model's output ({type(output).__name__}); "
                            "pass loss_fn=lambda output: ... returning a tensor")
    return loss if loss.dim() == 0 else loss.float().sum()


def graph_loss(prepared, model: torch.nn.Module, example_inputs: Any,
               loss_fn: Callable) -> Callable:
    """`loss_fn` of what the captured graph returns. An FX graph returns the model's own
    output; a Dynamo graph returns a flat tuple, so the model's output is rebuilt from it:
    each tensor of the model's output (one eager call, on copies) is matched to the graph
    output equal to it, both run from the same random seed (dropout in train mode).

    Example:
        >>> from pyfxprof.capture.ladder import prepare
        >>> m = torch.nn.Linear(2, 2)
        >>> graph_loss(prepare(m, (torch.ones(1, 2),)), m, (torch.ones(1, 2),), sum) is sum
        True
    """
    if prepared.captured.graph_inputs is None:
        return loss_fn
    args, kwargs = copy.deepcopy(split_inputs(example_inputs))
    with torch.random.fork_rng():
        torch.manual_seed(0)
        leaves, rebuild = flatten(model(*args, **kwargs))
        torch.manual_seed(0)
        flat = list(prepared.captured.graph_module(*prepared.args))
    picks = [next((k for k, out in enumerate(flat) if _same_tensor(leaf, out)), None)
             for leaf in leaves]
    constants = [leaf.detach() if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]

    def loss_of_graph_outputs(outputs):
        return loss_fn(rebuild([constants[j] if k is None else outputs[k]
                                for j, k in enumerate(picks)]))
    return loss_of_graph_outputs


#: Why a capture without a graph cannot time a backward, by capture mode.
_NO_GRAPH = {
    HOOKS: "backward=True needs a graph capture (fx or dynamo); this model was only captured "
             "with module hooks: see the capture notes",
    WHOLE: "backward=True needs a graph capture (fx or dynamo), and capture='whole' times "
             "the model as one node without one; use capture='auto', 'fx' or 'dynamo'"}


def _reported(loss_fn: Callable) -> Callable:
    """``loss_fn``, an exception inside it raised as a one-line PyfxprofError saying so."""
    def reported_loss_fn(output: Any) -> Any:
        try:
            return loss_fn(output)
        except PyfxprofError:
            raise
        except Exception as error:  # noqa: BLE001 - the user's code: named, in one line
            raise PyfxprofError(f"loss_fn raised {type(error).__name__}: "
                                f"{first_line(error, empty='(no message)')}") from error
    return reported_loss_fn


def _computed_from(loss: torch.Tensor, output: Any) -> bool:
    """Whether autograd reaches, from ``loss``, a tensor of ``output`` (or ``output`` holds no
    tensor with an autograd node to reach)."""
    targets = {leaf.grad_fn for leaf in flatten(output)[0]
               if isinstance(leaf, torch.Tensor) and leaf.grad_fn is not None}
    return not targets or any(node in targets for node in autograd_nodes(loss.grad_fn))


def _same_tensor(a: Any, b: Any) -> bool:
    return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
            and a.dtype == b.dtype and bool(torch.equal(a, b)))


class TrainingExecutor(WrappingExecutor):
    """Wraps a graph executor: each run is forward (timed by `inner`), the loss and the
    backward (timed per autograd node and joined to the forward node that created it).
    Inside `with`, the parameters' ``.grad`` are set aside and every run's gradients are
    dropped; on exit the user's own ``.grad`` tensors are put back.

    Example:
        >>> from pyfxprof.capture.ladder import prepare
        >>> from pyfxprof.timing.executors import CodegenExecutor
        >>> model = torch.nn.Linear(2, 2)
        >>> prepared = prepare(model, (torch.ones(1, 2),))
        >>> inner = CodegenExecutor(prepared.captured.graph_module, len(prepared.frame))
        >>> executor = TrainingExecutor(inner, prepared, model)
        >>> with executor:
        ...     _ = executor.run((torch.ones(1, 2),))
        >>> executor.timings().intervals.shape, model.weight.grad is None
        ((1, 6), True)
    """

    def __init__(self, inner, prepared, model: torch.nn.Module,
                 loss_fn: Callable | None = None, example_inputs: Any = ()) -> None:
        gm, args = prepared.captured.graph_module, prepared.args
        if gm is None:
            raise PyfxprofError(_NO_GRAPH.get(prepared.captured.mode, _NO_GRAPH[HOOKS]))
        if loss_fn is not None and not callable(loss_fn):
            raise ArgumentError(f"loss_fn must be a function of the model's output returning "
                                f"a scalar tensor, got {type(loss_fn).__name__}")
        self.inner, self.model, self.given_loss_fn = inner, model, loss_fn is not None
        self.loss_fn = graph_loss(prepared, model, example_inputs,
                                  _reported(loss_fn) if loss_fn else default_loss)
        self.n_nodes = inner.calls_per_run
        self.aot, self.marks = None, None
        self.mechanism = aot_refusal(gm, args, self._checked_loss, inner.device is not None)
        if self.mechanism is None:
            self.aot, self.mechanism = _aot_step(gm, args, self.n_nodes, inner.mode)
        if self.aot is None:
            rows = row_of_positions(gm, args, self._checked_loss, self.n_nodes)
            self.marks = BackwardMarks(rows, self.n_nodes, calibrate_backward_hook())
        self._user_grads: list = []
        self._backward: np.ndarray | None = None

    def _checked_loss(self, output: Any) -> torch.Tensor:
        loss = self.loss_fn(output)
        if not self.given_loss_fn and isinstance(loss, torch.Tensor) and not loss.requires_grad:
            raise PyfxprofError("backward=True needs an output that requires grad, and no "
                                "parameter of this model (nor any input) requires grad: there "
                                "is no backward to time")
        if not isinstance(loss, torch.Tensor) or loss.dim() or not loss.requires_grad:
            raise PyfxprofError("loss_fn must return a scalar tensor that requires grad (a "
                                "parameter or input of the model requiring grad); got "
                                f"{type(loss).__name__}")
        if not _computed_from(loss, output):
            raise PyfxprofError("loss_fn returned a tensor not computed from the model's output "
                                "(its backward would reach no node of the model); return a "
                                "loss of the output it is given")
        return loss

    def __enter__(self) -> "TrainingExecutor":
        self._user_grads = [(p, p.grad) for p in self.model.parameters()]
        for parameter, _ in self._user_grads:
            parameter.grad = None
        return super().__enter__()

    def __exit__(self, *exc_info: Any) -> None:
        super().__exit__(*exc_info)
        for parameter, grad in self._user_grads:
            parameter.grad = grad

    def run(self, args: tuple) -> Any:
        try:
            if self.aot is not None:
                return self.aot.step(args, self.loss_fn)
            return self._hook_marks().step(lambda: self.inner.run(args), self.loss_fn)
        finally:
            for parameter, _ in self._user_grads:
                parameter.grad = None

    def reset(self, runs: int = 0) -> None:
        if self.aot is not None:
            self.aot.reset(runs)
            return
        self.inner.reset(runs)
        self._hook_marks().collect()

    def failed_node(self, names: list[str]) -> str | None:
        """The name of the node the last run raised in (None: after the last node)."""
        return (self.aot.failed_node(names) if self.aot is not None
                else self.inner.failed_node(names))

    def backward_meta(self) -> dict:
        """How the backward was timed: ``backward_mechanism`` ("aot", or why the pre-hooks
        were used), the per-node cost taken off (``backward_overhead_ns``),
        where each step's backward began (``backward_starts_ns``, from the step's start: the
        backward graph's start, or the first autograd node's pre-hook) and the rows in the
        order it ran them (``backward_order``), for the trace's backward track."""
        if self.aot is None:
            marks = self._hook_marks()
            return {"backward_mechanism": self.mechanism,
                    "backward_overhead_ns": marks.calibration.overhead_ns,
                    "backward_starts_ns": self._backward_starts.tolist(),
                    "backward_order": marks.order}
        starts = self.aot.backward_starts
        assert starts is not None, "backward_meta() after timings()"
        return {"backward_mechanism": self.mechanism,
                "backward_overhead_ns": self.aot.overhead_ns(),
                "backward_starts_ns": starts.tolist(),
                "backward_order": self.aot.backward_order()}

    def timings(self) -> RunTimings:
        """Forward columns, then the loss and zero forward time for the backward-only rows;
        run totals cover the whole step. backward_samples() holds the backward."""
        if self.aot is not None:
            timings = self.aot.durations()
            self._backward = self.aot.backward_samples
            return timings
        forward = self.inner.timings()
        marks = self._hook_marks()
        loss, backward, totals = marks.durations(marks.collect())
        if len(loss) != forward.intervals.shape[0]:
            raise PyfxprofError(f"{forward.intervals.shape[0]} forward runs but {len(loss)} "
                                "complete backward runs were recorded; profile again")
        extra = np.zeros((len(loss), len(EXTRA_ROWS)), np.int64)
        extra[:, 0] = loss
        self._backward = backward
        self._backward_starts = np.array(marks.first_node_ns) - forward.run_starts
        return RunTimings(np.hstack([forward.intervals, extra]),
                          forward.run_totals + loss + totals, forward.run_starts,
                          forward.incomplete_runs)

    def _hook_marks(self) -> BackwardMarks:
        """The pre-hooks' marks, which time the backward when no AotStep does (__init__)."""
        assert self.marks is not None, "an AotStep times this backward"
        return self.marks

    def backward_samples(self) -> np.ndarray | None:
        """Backward ns (runs, nodes + 3) of the runs timings() handed over."""
        return self._backward

    def device_samples(self) -> np.ndarray | None:
        """The inner executor's device ns, with zeros for the rows it does not time."""
        device = self.inner.device_samples()
        if device is None:
            return None
        return np.hstack([device, np.zeros((device.shape[0], len(EXTRA_ROWS)), np.int64)])


def _aot_step(gm, args: tuple, n_nodes: int, mode: str) -> tuple[AotStep | None, str]:
    """(the AotStep of the graph, "aot"), or (None, why AOTAutograd could not trace it)."""
    try:
        return AotStep(gm, args, n_nodes, mode), "aot"
    except Exception as error:  # noqa: BLE001 - any tracing failure falls back to pre-hooks
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
        return None, f"pre-hooks: AOTAutograd could not trace the graph ({first_line[:200]})"


def training_frame(frame: pd.DataFrame, model: torch.nn.Module) -> pd.DataFrame:
    """The nodes table plus the rows of timing.backward.EXTRA_ROWS (ops "loss", "backward").

    Example:
        >>> f = pd.DataFrame({"index": [0], "name": ["x"], "op": ["call_function"],
        ...     "target": ["add"], "module_path": [""], "module_type": ["M"], "module_stack": [()]})
        >>> training_frame(f, torch.nn.ReLU())["name"].tolist()
        ['x', '(loss)', '(accumulate grad)', '(autograd engine)']
    """
    return extra_rows(frame, model, EXTRA_ROWS, ["loss", "backward", "backward"],
                      ["loss_fn", "AccumulateGrad", "autograd engine"])


def extra_rows(frame: pd.DataFrame, model: torch.nn.Module, names, ops, targets
               ) -> pd.DataFrame:
    """`frame` plus one row per name (at the root module; other columns blank)."""
    extra = pd.DataFrame({
        "index": range(len(frame), len(frame) + len(names)), "name": list(names),
        "op": list(ops), "target": list(targets), "module_path": "",
        "module_type": type(model).__name__, "module_stack": [()] * len(names)})
    for column, values in frame.items():
        if column not in extra.columns:
            extra[column] = [blank_cell(values)] * len(names)
    return pd.concat([frame, extra[frame.columns]], ignore_index=True)


def with_backward(profile: Profile, executor: TrainingExecutor,
                  model: torch.nn.Module) -> Profile:
    """`profile` (built on training_frame) with the executor's backward samples, the
    coverage of forward plus backward over whole steps and the train flag in its metadata.

    Example:
        >>> prof = pyfxprof.profile(torch.nn.Linear(2, 2), (torch.ones(1, 2),), runs=2,
        ...                         warmup=0, backward=True)  # doctest: +SKIP
    """
    samples = executor.backward_samples()
    assert samples is not None, "with_backward() after the executor's timings()"
    backward = samples[:profile.n_runs]
    meta: dict[str, Any] = dict(
        profile.meta, grad=True, training=model.training,
        coverage=run_coverage(profile.samples + backward, profile.run_totals),
        **executor.backward_meta())
    if "backward_starts_ns" in meta:
        meta["backward_starts_ns"] = meta["backward_starts_ns"][:profile.n_runs]
    return Profile(profile.nodes, profile.samples, profile.run_totals, meta,
                   profile.device_samples, profile.run_starts, profile.run_noise,
                   backward_samples=backward)
