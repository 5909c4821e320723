"""profile()'s timed runs: the warm-up runs (a count, or "auto": until settled), the timed runs
(each run's noise read around it, each made inside the user's own call: run/user_call.py),
the plain call timed after them, and training steps in place of forward runs when
backward=True (run/training.py, loaded only then)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import pandas as pd

from ..capture.placement import device_of
from ..data.rungs import RUNG
from ..stats.warmup import settled
from ..errors import PyfxprofError
from ..timing.durations import RunTimings
from ..timing.failures import node_kind, run_failure
from ..timing.recorder import RECORDER
from ..timing.run_table import check_fits_in_memory
from .alone import Alone, alone_rows, asked_rows, timed_alone
from .first_touch import faults_per_run
from .noise import RunMeter
from .progress import Progress
from .run_counters import core_wait_ns, counted_per_run
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
    records the buffer dropped meanwhile, the device samples (None: host timing only), the
    nodes timed alone after the runs (None: not asked, or not for this profile) and the
    process counters per timed run (timed_runs: meta's ``faults_per_run`` and
    ``core_wait_ns_per_run``)."""

    timings: RunTimings
    run_noise: np.ndarray | None
    warmup_totals: list
    warmup: int
    executor: Any
    call: UserCall | None
    dropped_records: int
    device_samples: np.ndarray | None
    alone: Alone | None = None
    counters: dict[str, float | None] | None = None


def measured(executor: Any, drops_before: int, prepared: Prepared, given: Arguments,
             clock: StepClock) -> Measured:
    """The runs of `executor` as `given` asks (runs, warmup, progress; training steps when
    backward), made inside the user's own call and with it timed after them (run.user_call;
    not for
    training steps, nor for module-hooks and whole captures, whose runs are the user's call
    itself, its hooks firing); the records dropped since `drops_before` (RECORDER.start());
    then the nodes of the top rows timed alone (timing.alone: run.alone; not for training
    steps, nor inside pyfxprof.compare's blocks)."""
    model, example_inputs = given.model, given.example_inputs
    rows = alone_rows(given.timing.alone) if user_call_timed() and not given.backward else False
    if isinstance(rows, tuple):
        asked_rows(prepared.frame, rows)  # a name that is not there: said before any run
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
    measured_runs, run_noise, warmup_totals, warmup, device_samples, counters = timings
    alone = None
    if rows:
        spent = sum(clock.seconds.values())
        with clock.step("alone"):
            alone = timed_alone(prepared.frame, measured_runs.intervals,
                                measured_runs.run_totals, model, rows, spent)
    return Measured(measured_runs, run_noise, warmup_totals, warmup, running, call,
                    RECORDER.dropped_total - drops_before, device_samples, alone, counters)


def run_once(executor: Any, args: tuple, run: str, frame: pd.DataFrame,
             runner: Callable[[tuple], Any] | None = None) -> None:
    """One run (`runner(args)`, default the executor's ``run``); an exception from the model
    becomes one line naming the run and the node (an interrupt passes through, the
    executor's records drained)."""
    try:
        (runner or executor.run)(args)
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
            meter: RunMeter, runner: Callable[[tuple], Any] | None = None) -> int:
    """The untimed warm-up runs (`runner`, as run_once): `warmup` of them, or with "auto"
    until they have settled (stats.warmup.settled on their wall times), at most
    AUTO_WARMUP_MAX; returns how many ran. The meter is read after each run."""
    auto = warmup == "auto"
    most = AUTO_WARMUP_MAX if auto else int(warmup)
    walls: list[int] = []
    for done in range(1, most + 1):
        started = time.perf_counter_ns()
        run_once(executor, args, f"warm-up run {done} of {'at most ' if auto else ''}{most}",
                 frame, runner)
        walls.append(time.perf_counter_ns() - started)
        meter.read()
        if auto and settled(walls):
            return done
    return most


def _time_the_call(executor: Any, args: tuple, runs: int, call: UserCall,
                   clock: StepClock) -> None:
    """After the runs (their timings taken): the user's call profiled and timed plainly
    (UserCall.after_runs), its graph runs' node timings dropped; wall time in `clock`."""
    with clock.step("user_call"):
        executor.reset(runs + 1)  # room for the breakdown's and the level's graph runs
        call.after_runs(lambda: executor.run(args), runs, args)
        executor.reset()  # their node timings are not the table's
    clock.moved("user_call", "call_timed", (sum(call.walls_ns) + sum(call.paired_ns)) / 1e9)


def timed_runs(executor: Any, args: tuple, runs: int, warmup: int | str, progress: bool,
               frame: pd.DataFrame, call: UserCall | None = None,
               clock: StepClock | None = None
               ) -> tuple[RunTimings, np.ndarray | None, list[int | None], int,
                          np.ndarray | None, dict[str, float | None]]:
    """The timings, the per-run noise (run.noise), the warm-up runs' wall ns (None for
    those preempted), their number (`warmup`: a count or "auto": warm_up), the
    executor's device samples (None: host timing only), both read before the user's call
    is timed (its run resets the executor); the nodes
    `frame` names a node that raises. `call`: the user's own call, inside which every run
    (warm-up ones too) is made (UserCall.around_runs: a run's call and its nodes are one
    invocation), then profiled by function and timed plainly after the runs
    (UserCall.after_runs). `clock` gets the wall time of the warm-up, the timed runs, the
    call's preparation and the call's timing. First, a one-line error when `runs` rows
    cannot fit in memory (timing.run_table; the executor's reset checks its exact need);
    last, the process counters per timed run, two reads each around the runs:
    ``faults_per_run``, its minor page faults (run.first_touch.faults_per_run), and
    ``core_wait_ns_per_run``, how long its threads waited for a core
    (run.run_counters.core_wait_ns); None where unreadable."""
    check_fits_in_memory(runs, len(frame))
    clock = clock or StepClock()
    meter = RunMeter()
    runner = None if call is None else call.around_runs(executor.run)
    started = time.perf_counter()
    meter.read()
    warmup = warm_up(executor, args, warmup, frame, meter, runner)
    clock.add("warmup", time.perf_counter() - started)
    per_run = (time.perf_counter() - started) / warmup if warmup else 0.0
    warmup_noise = meter.between_reads()
    meter.clear()
    executor.reset(runs)
    if call is not None and call.around is not None:
        call.around.walls_ns.clear()  # the warm-up runs' calls
    bar = Progress(runs, "profiling", per_run * runs if progress else 0.0)
    with (clock.step("timed_runs"), faults_per_run(runs) as faults,
          counted_per_run(core_wait_ns, runs) as waits):
        meter.read()
        for done in range(1, runs + 1):
            run_once(executor, args, f"timed run {done} of {runs}", frame, runner)
            meter.read()
            bar.update(done)
        bar.close()
    run_noise = meter.between_reads()
    warmup_totals = [] if warmup_noise is None else [  # None: a preempted warm-up run
        None if switches else wall for switches, wall in warmup_noise[:, [0, 3]].tolist()]
    timings, device_samples = executor.timings(), executor.device_samples()
    if call is not None:
        _time_the_call(executor, args, runs, call, clock)
    counters = {"faults_per_run": faults.per_run, "core_wait_ns_per_run": waits.per_run}
    return timings, run_noise, warmup_totals, warmup, device_samples, counters
