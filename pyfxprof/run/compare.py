"""`pyfxprof.compare`: interleaved A/B in one process. Both models are captured and
instrumented once; their timed runs alternate in blocks, in a random order per pair of blocks,
on the same inputs and threads, so drift hits both sides alike; the two Profiles carry their
blocks (meta["ab"]) and diff pairs them (stats/row_verdicts.py). See docs/ab.md.

Example:
    >>> d = compare(model, faster_model, (x,))        # doctest: +SKIP
    >>> print(d.table(top=10)); d.totals()["change"]  # doctest: +SKIP
"""

from __future__ import annotations

import inspect
import keyword
import random
import time
import uuid
from typing import Any, Callable

import numpy as np
import torch
from torch.utils._pytree import tree_flatten

from ..analyses.diff import ProfileDiff
from ..capture.inputs import copied_inputs
from ..capture.model_state import dtype_name, evaluation_mode
from ..data.outside_graph import graph_only
from ..data.profile import Profile
from ..data.sessions import stacked_runs
from ..errors import ArgumentError, PyfxprofError, first_line, margin, whole_number
from .capture_cache import CAPTURES
from .model_copies import copies_of_sides
from .arguments import CAPTURE, TIMING, CaptureOptions, TimingOptions, option_groups
from .progress import Progress
from .runner import profile
from .user_call import graph_runs_only
from ..stats.confidence import FALSE_DISCOVERY_RATE

#: compare()'s default max_blocks, in blocks: up to this many times ``blocks`` are timed
#: until the whole model's interval is within the precision (docs/ab.md).
MORE_BLOCKS = 3

#: compare()'s own arguments that profile() options must not repeat.
_OWN = ("runs", "warmup", "name", "progress")
#: profile()'s named keywords (grad, compile, ...) that compare() passes on as they are.
_PROFILE_KEYWORDS = [name for name, parameter in inspect.signature(profile).parameters.items()
                     if parameter.kind is parameter.KEYWORD_ONLY]


class CallableModel(torch.nn.Module):
    """A plain function, lambda or op as a model: ``forward`` calls it, so profile() traces
    through it like any forward (a function FX cannot trace falls down the capture ladder).

    >>> CallableModel(torch.add)(torch.ones(2), torch.ones(2))
    tensor([2., 2.])
    """

    def __init__(self, fn: Callable) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


def _named_forward(fn: Callable) -> Callable | None:
    """A ``forward(self, a, b)`` calling ``self.fn(a, b)`` with `fn`'s own parameter names
    (torch.fx traces a forward by its parameters, not through ``*args``), or None when `fn`
    has no plain positional signature (a builtin op, defaults, ``*args``).

    >>> _named_forward(lambda x, y: x).__code__.co_varnames[:3]
    ('self', 'x', 'y')
    """
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    names = [p.name for p in parameters]
    if not names or any(p.kind is not p.POSITIONAL_OR_KEYWORD or p.default is not p.empty
                        or not p.name.isidentifier() or keyword.iskeyword(p.name)
                        or p.name in ("self", "fn") for p in parameters):
        return None
    namespace: dict = {}
    exec(f"def forward(self, {', '.join(names)}):\n"  # noqa: S102 - names checked above
         f"    return self.fn({', '.join(names)})\n", namespace)
    return namespace["forward"]


def _callable_model(fn: Callable) -> CallableModel:
    """A CallableModel of `fn`, of a subclass whose forward has `fn`'s parameters if it can."""
    forward = _named_forward(fn)
    if forward is None:
        return CallableModel(fn)
    return type("CallableModel", (CallableModel,), {"forward": forward})(fn)


def as_model(candidate: Any, side: str) -> torch.nn.Module:
    """An nn.Module as it is; any other callable wrapped in a CallableModel; else one line.

    >>> type(as_model(lambda x: x, "control")).__name__
    'CallableModel'
    """
    if isinstance(candidate, torch.nn.Module):
        return candidate
    if callable(candidate):
        return _callable_model(candidate)
    raise ArgumentError(f"{side} must be a torch.nn.Module or a callable, got "
                        f"{type(candidate).__name__}")


def compare(control: Any, test: Any, example_inputs: Any = (), *, blocks: int = 20,
            runs_per_block: int = 3, warmup: int = 10, min_change: float = 0.02,
            alpha: float = FALSE_DISCOVERY_RATE, labels=("control", "test"),
            check_outputs: bool = True, copies: int | None = None, seed: int | None = None,
            max_blocks: int | None = None, precision: float | None = None, progress: bool = True,
            capture_options: CaptureOptions | None = CAPTURE,
            timing_options: TimingOptions | None = TIMING, **profile_options) -> ProfileDiff:
    """Time `control` and `test` (modules or callables) interleaved on the same inputs and
    return their ProfileDiff: per node and module the ratio test / control with a 95%
    Hodges–Lehmann interval over blocks, a test of each row against the blocks' common shift
    and the nodes' spread at its duration (docs/ab.md), Benjamini–Hochberg
    control of the false discovery rate ``alpha`` across rows, and a verdict against the
    margin ``min_change``: slower, faster, same within ±margin, or unresolved.

    blocks, runs_per_block, warmup: timed blocks per side (>= 6 for an interval), runs in
    each, untimed runs of each side first; max_blocks, precision: more blocks, half as many
    at a time, until the whole model's interval is within ± ``precision`` (a rule on its
    width alone); check_outputs, copies, seed, and profile()'s options (its option groups,
    their fields as keywords; grad=, compile=, backward=) for both sides: docs/ab.md.

    >>> d = compare(torch.nn.ReLU(), lambda x: x.clamp(min=0), (torch.randn(64),),
    ...             blocks=6, runs_per_block=1, warmup=1, max_blocks=6, progress=False)
    >>> d.design.kind, d.control.n_runs
    ('paired', 6)
    """
    blocks, min_change = whole_number("blocks", blocks, minimum=2), margin("min_change", min_change)
    max_blocks = MORE_BLOCKS * blocks if max_blocks is None else max_blocks
    precision = min_change / 2 if precision is None else precision
    _check(blocks, runs_per_block, warmup, profile_options, copies, max_blocks, precision)
    profile_options = _grouped_options(profile_options, capture_options, timing_options)
    models = (as_model(control, "control"), as_model(test, "test"))
    if check_outputs:
        check_same_outputs(*models, example_inputs)
    names = [_name(given, model) for given, model in zip((control, test), models)]
    sides = copies_of_sides(list(models), copies)
    with CAPTURES.room_for(2 * len(sides[0])):  # each copy's capture kept for all its blocks
        per_run = _warmed(sides, names, example_inputs, warmup, profile_options)
        timed = _Blocks(sides, names, example_inputs, runs_per_block, profile_options,
                        random.Random(seed))
        bar = Progress(2 * blocks, "comparing",
                       per_run * 2 * blocks * (runs_per_block + 1) if progress else 0.0)
        timed.run(blocks, bar)
        result = timed.until_precise(blocks, max_blocks, precision, bar, labels, min_change,
                                     alpha)
    bar.close()
    return result


def _grouped_options(options: dict, capture_options: CaptureOptions | None,
                     timing_options: TimingOptions | None) -> dict:
    """profile()'s keywords for compare()'s `options`: its option groups (the groups given,
    with the keywords of their fields and torch.profiler's set: run/arguments.py) and the
    rest as given (profile() checks them)."""
    own = {key: value for key, value in options.items() if key in _PROFILE_KEYWORDS}
    capture, timing = option_groups({key: value for key, value in options.items()
                                     if key not in own}, capture_options, timing_options,
                                    taker="pyfxprof.compare()", stacklevel=4)
    return dict(own, capture_options=capture, timing_options=timing)


def _warmed(sides: list, names: list, example_inputs: Any, warmup: int,
            profile_options: dict) -> float:
    """Capture, instrument and warm each copy of both sides once (profile()'s capture
    cache keeps them); the seconds one run took on average, for the progress bar."""
    started, runs = time.perf_counter(), 0
    for copies_of_side, name in zip(sides, names):
        for model in copies_of_side:
            with graph_runs_only():  # as the blocks will run (no user call, no alone step)
                profile(model, example_inputs, runs=1, warmup=warmup, name=name,
                        progress=False, **profile_options)
            runs += warmup + 1
    return (time.perf_counter() - started) / runs


def _half_width(result: ProfileDiff) -> float:
    """Half the width of the whole model's 95% interval (a fraction; inf without one)."""
    totals = result.totals()
    half = (totals["ci_high"] - totals["ci_low"]) / 2.0
    return half if np.isfinite(half) else np.inf


class _Blocks:
    """The timed blocks of both sides so far: each block pair runs the two sides in a
    random order, balanced within each batch of blocks added (_block_order)."""

    def __init__(self, sides: list, names: list, example_inputs: Any, runs_per_block: int,
                 profile_options: dict, rng: random.Random) -> None:
        self.sides, self.names, self.inputs = sides, names, example_inputs
        self.runs, self.options, self.rng = runs_per_block, profile_options, rng
        self.order: list[tuple[int, int]] = []
        self.found: tuple[list, list] = ([], [])
        self.pair = uuid.uuid4().hex

    def run(self, count: int, bar: Progress | None) -> None:
        """Time `count` more blocks of each side."""
        copies = len(self.sides[0])
        for first_second in _block_order(count, self.rng):
            block = len(self.order)
            for side in first_second:
                with graph_runs_only():  # the analysis is of the graph's rows (merged_blocks)
                    self.found[side].append(profile(
                        self.sides[side][block % copies], self.inputs, runs=self.runs,
                        warmup=1, name=self.names[side], progress=False, **self.options))
            self.order.append(first_second)
            if bar is not None:
                bar.update(2 * len(self.order))

    def until_precise(self, blocks: int, max_blocks: int, precision: float, bar: Progress,
                      labels, min_change: float, alpha: float) -> ProfileDiff:
        """The blocks' diff after adding blocks, half of ``blocks`` at a time, until the
        whole model's interval is within ±precision or max_blocks are timed."""
        result = self.diff(labels, min_change, alpha)
        while len(self.order) < max_blocks and _half_width(result) > precision:
            more = min(max(2, blocks // 2), max_blocks - len(self.order))
            bar.grow(2 * (len(self.order) + more))
            self.run(more, bar)
            result = self.diff(labels, min_change, alpha)
        return result

    def diff(self, labels, min_change: float, alpha: float) -> ProfileDiff:
        """The ProfileDiff of the blocks so far."""
        copies = len(self.sides[0])
        copy_of_block = [block % copies for block in range(len(self.order))]
        merged = [merged_blocks(self.found[side], self.pair,
                                [tuple(s).index(side) for s in self.order], copy_of_block)
                  for side in (0, 1)]
        return ProfileDiff(merged[0], merged[1], labels, min_change, alpha)


def merged_blocks(block_profiles: list[Profile], pair: str, positions: list[int],
                  copy_of_block: list[int] | None = None) -> Profile:
    """One Profile of a side's blocks, meta["ab"] naming the pair, each run's block, the
    side's position (0 first, 1 second) in each block pair and the copy each block ran; the
    graph's rows and runs (data.outside_graph.graph_only: a block's few user calls resolve
    the outside-the-graph row in some blocks only).

    >>> import pandas as pd
    >>> nodes = pd.DataFrame({"index": [0], "name": ["a"], "op": ["call_function"],
    ...     "target": ["f"], "module_path": [""], "module_type": ["M"], "module_stack": [()]})
    >>> one = Profile(nodes, np.array([[5], [6]]), np.array([7, 8]), {"runs": 2})
    >>> merged = merged_blocks([one, one], "p", [0, 1])
    >>> merged.meta["ab"]["blocks"], merged.meta["runs"]
    ([0, 0, 1, 1], 4)
    """
    block_profiles = [graph_only(p) for p in block_profiles]  # the row is there in some only
    first = block_profiles[0]
    meta: dict[str, Any] = dict(first.meta, runs=sum(p.n_runs for p in block_profiles))
    meta["ab"] = {"pair": pair, "blocks": [b for b, p in enumerate(block_profiles)
                                           for _ in range(p.n_runs)],
                  "runs_per_block": first.n_runs, "positions": list(positions),
                  "copies": list(copy_of_block or [0] * len(block_profiles))}
    return stacked_runs(block_profiles, meta)


def _block_order(blocks: int, rng: random.Random) -> list[tuple[int, int]]:
    """Which side runs first in each block pair: a random half control first, the other
    half test first (balanced), from an own generator.

    >>> sorted(_block_order(4, random.Random(0)))
    [(0, 1), (0, 1), (1, 0), (1, 0)]
    """
    firsts = [0] * (blocks // 2) + [1] * (blocks - blocks // 2)
    rng.shuffle(firsts)
    return [(first, 1 - first) for first in firsts]


def output_signature(model: torch.nn.Module, example_inputs: Any, side: str) -> list:
    """The (shape, dtype) of each tensor the model returns, from one untimed call in eval
    mode under inference_mode on a copy of the inputs; a raising model is one line."""
    bound = copied_inputs(model, example_inputs)
    try:
        with evaluation_mode(model), torch.inference_mode():
            output = model(*bound.args, **bound.kwargs)
    except Exception as error:  # noqa: BLE001 - the user's model or function
        raise PyfxprofError(f"{side} raised on the example inputs: {type(error).__name__}: "
                            f"{first_line(error)}; check that it takes these inputs") from None
    leaves, _ = tree_flatten(output)
    return [(tuple(leaf.shape), dtype_name(leaf.dtype))
            for leaf in leaves if isinstance(leaf, torch.Tensor)]


def check_same_outputs(control: torch.nn.Module, test: torch.nn.Module,
                       example_inputs: Any) -> None:
    """One line when the two models' outputs differ in shape or dtype.

    >>> check_same_outputs(torch.nn.Linear(4, 2), torch.nn.Linear(4, 3), (torch.ones(1, 4),))
    Traceback (most recent call last):
    ...
    pyfxprof.errors.PyfxprofError: the models' outputs differ: control returns [(1, 2) float32], test returns [(1, 3) float32]; compare models that compute the same thing, or pass check_outputs=False (CLI: --no-check-outputs) to time them anyway
    """
    signatures = [output_signature(model, example_inputs, side)
                  for model, side in ((control, "control"), (test, "test"))]
    if signatures[0] != signatures[1]:
        shown = ["[" + ", ".join(f"{shape} {dtype}" for shape, dtype in s) + "]"
                 for s in signatures]
        raise PyfxprofError(f"the models' outputs differ: control returns {shown[0]}, test "
                            f"returns {shown[1]}; compare models that compute the same thing, "
                            "or pass check_outputs=False (CLI: --no-check-outputs) to time "
                            "them anyway")


def _name(given: Any, model: torch.nn.Module) -> str:
    """The name shown for a side: a wrapped function's name, else the module's class."""
    if isinstance(model, CallableModel):
        return getattr(given, "__qualname__", None) or type(given).__name__
    return type(model).__name__


def _check(blocks: int, runs_per_block: int, warmup: int, options: dict,
           copies: int | None = None, max_blocks: int = 2, precision: float = 0.01) -> None:
    for name, value, least in (("blocks", blocks, 2), ("runs_per_block", runs_per_block, 1),
                               ("warmup", warmup, 0), ("max_blocks", max_blocks, blocks),
                               ("copies", 1 if copies is None else copies, 1)):
        whole_number(name, value, minimum=least)
    if isinstance(precision, bool) or not isinstance(precision, (int, float)) \
            or not precision >= 0:
        raise ArgumentError(f"precision must be a fraction >= 0 (0.01 = ±1%), got {precision!r}")
    repeated = sorted(set(options) & set(_OWN))
    if repeated:
        raise ArgumentError(f"compare() times blocks * runs_per_block runs per side: use "
                            f"blocks=, runs_per_block=, warmup=, labels= instead of {repeated}")
