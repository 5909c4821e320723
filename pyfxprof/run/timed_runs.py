"""profile()'s timed runs: the warm-up runs (a count, or "auto": until settled), the timed runs
(each run's noise read around it), the user's own call timed between them (run/user_call.py),
and training steps in place of forward runs when backward=True (run/training.py, loaded only
then)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..capture.placement import device_of
from ..data.rungs import RUNG
from ..stats.warmup import settled
from ..errors import PyfxprofError
from ..timing.durations import RunTimings
from ..timing.failures import node_kind, run_failure
from ..timing.recorder import RECORDER
from .noise import RunMeter
from .progress import Progress
from .user_call import UserCall, user_call_timed
from .wall_clock import StepClock

if TYPE_CHECKING:
    from ..capture.ladder import Prepared
    from .arguments import Arguments

#: warmup="auto": untimed runs until they have settled (stats.warmup.settled, on their wall
#: times), at least stats.warmup.MIN_RUNS of them and at most this many (the fixed default
#: before "auto"; docs/profile.md, "Warm-up").
AUTO_WARMUP_MAX = 10


@dataclass
class Measured:
    """What profile()'s runs measured: the timings, the per-run noise (run.noise), the warm-up
    runs' wall ns (None for those preempted), how many warm-up runs ran, the executor that ran
    them (a training one for backward=True), the user's call (None when not timed apart), the
    records the buffer dropped meanwhile and the device samples (None: host timing only)."""

    timings: RunTimings
    run_noise: np.ndarray | None
    warmup_totals: list
    warmup: int
    executor: Any
    call: UserCall | None
    dropped_records: int
    device_samples: np.ndarray | None


def measured(executor: Any, drops_before: int, prepared: Prepared, given: Arguments,
             clock: StepClock) -> Measured:
    """The runs of `executor` as `given` asks (runs, warmup, progress; training steps when
    backward), with the user's own call (run.user_call) timed between the runs (not for
    training steps, nor for module-hooks and whole captures, whose runs are the user's call
    itself, its hooks firing); the records dropped since `drops_before` (RECORDER.start())."""
    model, example_inputs = given.model, given.example_inputs
    own_run = given.backward or RUNG[prepared.captured.mode].own_call  # the model's own call
    call = None if own_run or not user_call_timed() else UserCall(
        model, example_inputs, device_of(model, prepared.args),
        (prepared.captured.graph_module, prepared.args))
    if given.backward:
        from .training import TrainingExecutor  # late: loads AOTAutograd
        executor = TrainingExecutor(executor, prepared, model, given.loss_fn, example_inputs)
    with executor as running:
        timings = timed_runs(running, prepared.args, given.runs, given.warmup, given.progress,
                             prepared.frame, call, clock)
    return Measured(*timings, running, call, RECORDER.dropped_total - drops_before,
                    running.device_samples())


def run_once(executor: Any, args: tuple, run: str, frame: pd.DataFrame) -> None:
    """One run; an exception from the model becomes one line naming the run and the node (an
    interrupt passes through, the executor's records drained)."""
    try:
        executor.run(args)
    except PyfxprofError:
        raise
    except Exception as error:  # the user's model: report it, leave the recorder clean
        node = executor.failed_node(frame["name"].tolist())
        executor.reset()  # the failed run's marks (a training step's too) drained
        raise run_failure(node, run, error, node_kind(frame, node)) from error
    except BaseException:  # an interrupt: the run's marks drained, none left for the next one
        executor.reset()
        raise


def warm_up(executor: Any, args: tuple, warmup: int | str, frame: pd.DataFrame,
            meter: RunMeter) -> int:
    """The untimed warm-up runs: `warmup` of them, or with "auto" until they have settled
    (stats.warmup.settled on their wall times), at most AUTO_WARMUP_MAX; returns how many ran.
    The meter is read after each run."""
    auto = warmup == "auto"
    most = AUTO_WARMUP_MAX if auto else int(warmup)
    walls: list[int] = []
    for done in range(1, most + 1):
        started = time.perf_counter_ns()
        run_once(executor, args, f"warm-up run {done} of {'at most ' if auto else ''}{most}",
                 frame)
        walls.append(time.perf_counter_ns() - started)
        meter.read()
        if auto and settled(walls):
            return done
    return most


def timed_runs(executor: Any, args: tuple, runs: int, warmup: int | str, progress: bool,
               frame: pd.DataFrame, call: UserCall | None = None,
               clock: StepClock | None = None
               ) -> tuple[RunTimings, np.ndarray | None, list[int | None], int]:
    """The timings, the per-run noise (run.noise), the warm-up runs' wall ns (None for
    those preempted) and their number (`warmup`: a count or "auto": warm_up); the nodes
    `frame` names a node that raises. `call`: the user's own call, timed after each timed
    run (outside its noise reads) and profiled by function after the warm-up (after the runs
    without warm-up runs: run.user_call). `clock` gets the wall time of the warm-up, the
    call's preparation, the timed runs and the call's timing."""
    clock = clock or StepClock()
    meter = RunMeter()
    started = time.perf_counter()
    meter.read()
    warmup = warm_up(executor, args, warmup, frame, meter)
    clock.add("warmup", time.perf_counter() - started)
    per_run = (time.perf_counter() - started) / warmup if warmup else 0.0
    warmup_noise = meter.between_reads()
    if call is not None:
        with clock.step("user_call"):
            call.before_runs(lambda: executor.run(args), warmup)
    meter.clear()
    executor.reset(runs)
    bar = Progress(runs, "profiling", per_run * runs if progress else 0.0)
    with clock.step("timed_runs"):
        meter.read()
        for done in range(1, runs + 1):
            run_once(executor, args, f"timed run {done} of {runs}", frame)
            meter.read()
            if call is not None and call.interleaved:  # its interval is left out of the noise
                call.time_once()
                meter.read()
            bar.update(done)
        bar.close()
    run_noise = meter.between_reads()
    if call is not None and call.interleaved and run_noise is not None:
        run_noise = run_noise[0::2]
    warmup_totals = [] if warmup_noise is None else [  # None: a preempted warm-up run
        None if switches else wall for switches, wall in warmup_noise[:, [0, 3]].tolist()]
    timings = executor.timings()
    if call is not None:
        with clock.step("user_call"):
            call.after_runs(runs)
        clock.moved("timed_runs" if call.interleaved else "user_call", "call_timed",
                    sum(call.walls_ns) / 1e9)  # timed work of its own (run.wall_clock)
    return timings, run_noise, warmup_totals, warmup
