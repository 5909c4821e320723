"""Each call of the model while a Profiler block is open (the loop's hot path): routed to
its call group (input signature; call_groups.py), captured on first sight or taken from the
capture cache, and run by the group's instrumented capture with one log entry per recorded
call. loop/profiler.py's Profiler holds the state these methods read (the block, the schedule's
current action, the open window)."""

from __future__ import annotations

import inspect
import threading
import time
from threading import get_ident
import warnings
from dataclasses import replace
from typing import Any, Callable, overload

import torch
from torch.compiler import is_compiling

from ..timing.native import _C
from ..capture.exported import is_exported
from ..capture.inductor import is_compiled
from ..capture.inputs import Binder, BoundInputs
from ..capture.model_state import forked_rng
from ..data.rungs import INDUCTOR
from ..capture.tracing import CaptureFallbackWarning
from ..data.op_names import range_names
from ..errors import PyfxprofError
from ..timing.failures import node_kind, note_failure
from ..timing.nvtx import name_ranges
from .call_groups import (MAX_CALL_GROUPS, CallGroup, analysis_copy, args_key, capture_group,
                          live_group, next_variant, signature_key, too_many_groups_warning)
from ..run.arguments import CaptureOptions, TimingOptions
from ..run.capture_cache import CAPTURES
from .compiled_groups import compiled_group
from .training_calls import wrap_for_backward
from .schedule import ProfilerAction
from .window import Window


#: The most calls of a group per window that run the model's own forward, timed, each beside
#: a graph run on copies of its inputs: the first, and the next after a preempted one.
OWN_CALL_RUNS = 3


#: Why a call of a recording step from another thread than the first caller's is not timed.
OTHER_THREAD = ("a call from another thread than the block's first caller's (only that "
                "thread is profiled)")


class _KeptInHotForward:
    """A Profiler attribute kept in its HotForward (`_calls` is its `calls`), which the hot
    path reads and writes in C."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.field = name.lstrip("_")

    @overload
    def __get__(self, routing: None, owner: type | None = None) -> _KeptInHotForward: ...
    @overload
    def __get__(self, routing: CallRouting, owner: type | None = None) -> int: ...

    def __get__(self, routing: CallRouting | None, owner: type | None = None
                ) -> _KeptInHotForward | int:
        return self if routing is None else getattr(routing._hot, self.field)

    def __set__(self, routing: CallRouting, value: int) -> None:
        setattr(routing._hot, self.field, value)


class CallRouting:
    """The Profiler's handling of one call of the model (its base class; the state is the
    Profiler's, set in Profiler.__init__)."""

    module: torch.nn.Module
    name: str
    step_num: int
    current_action: ProfilerAction
    _groups: dict[tuple, CallGroup]
    _direct: dict[tuple, CallGroup]
    _armed: dict[tuple, tuple]  # args_key -> (group, its run, training flag, index, guard)
    _traceable: bool
    _uncaptured: dict[tuple, str]  # signatures no group serves, and why
    _recent: dict[tuple, tuple]  # signature -> the key of the variant that took its last call
    _window: Window | None
    _open: bool
    _busy: threading.Lock
    _holder: int | None
    _thread: int | None
    _warmup_calls: int
    _untimed: dict[str, int]  # why calls were not timed per node: the number of such calls
    _own_ns: dict[int, list]  # per group: the model's own forward timed beside, on copies (ns)
    _warned: set[str]
    _log: Any  # _C.LoggedCalls: one row (start, end, group, own ns, call, first) per recorded call
    _binder: Binder | None
    _hot: Any  # _C.HotForward: the model's forward while open, the hot path in C
    # the Profiler's time after the last logged call's end
    _own_ns_after: _KeptInHotForward = _KeptInHotForward()
    # calls of the model seen while open (numbers the logged ones)
    _calls: _KeptInHotForward = _KeptInHotForward()
    # the number of the block's first call
    _first_call: _KeptInHotForward = _KeptInHotForward()
    _backward: bool
    _capture: CaptureOptions  # the Profiler's option groups (run/arguments.py)
    _timing: TimingOptions
    _recording: bool

    def _forward(self, forward: Callable, args: tuple, kwargs: dict) -> Any:
        """The model's ``forward`` while the block is open, for every call the hot path does
        not take (see model_patch.ForwardPatch; the hot path is `_hot`, in C: a recorded
        call of the profiled thread, positional arguments only, of an armed group, which
        skips the lock, the binding and this Python)."""
        if not self._open or (self._traceable and is_compiling()):
            return forward(*args, **kwargs)  # (compiling: Dynamo was loaded after start())
        thread = get_ident()
        if self._holder == thread:  # a call nested in the call being handled
            return forward(*args, **kwargs)
        with self._busy:  # calls from several threads run one at a time (hooks are global)
            self._holder = thread
            self._sync_hot()
            try:
                if self._thread not in (None, thread):  # the first caller's thread is profiled
                    if self._recording:
                        self._not_timed(OTHER_THREAD)
                    return forward(*args, **kwargs)
                self._thread = thread
                self._calls += 1
                if self.current_action == ProfilerAction.NONE and self._groups:
                    return forward(*args, **kwargs)  # NONE steps capture only the first call
                return self._profiled_call(forward, args, kwargs, _C.now_ns())
            finally:
                self._holder = None
                self._sync_hot()

    def _sync_hot(self) -> None:
        """Let the hot path take the profiled thread's calls while no call is being handled
        here (its nested calls run the model itself): in a recording step, its armed groups'
        calls; in a NONE step once a group is captured, every call, run as the model's own
        (as `_forward` runs it, counted, without its Python)."""
        idle = self._open and self._holder is None and self._thread or 0
        self._hot.thread = idle if self._recording else 0
        self._hot.passing = idle if (self.current_action == ProfilerAction.NONE
                                     and self._groups) else 0

    def _profiled_call(self, forward: Callable, args: tuple, kwargs: dict, entered: int) -> Any:
        """One call of the model: itself in NONE steps, else its group's instrumented capture
        (captured first when its signature is new); `entered`: when the Profiler took it."""
        action = self.current_action
        made = _Made()
        group, bound = self._group_for(args, kwargs, forward, made)
        if made.done:  # the call itself made its group's capture
            return self._captured_call(group, made, args, kwargs, entered)
        if group is None or bound is None or action == ProfilerAction.NONE:
            if action != ProfilerAction.NONE:
                self._not_timed(made.why or "its signature was not captured")
            return forward(*args, **kwargs)
        inputs = bound if group.graph_takes_bound else group.inputs(args, kwargs, bound)
        if action == ProfilerAction.WARMUP:
            self._warmup_calls += 1
            return self._run(group, inputs)
        window = self._window
        assert window is not None, "a recording step without its window"
        if group.index not in window.first_calls:
            window.note_call(group, self.module, args, kwargs)
            window.own_left[group.index] = int(self._times_own_call(group))
        if window.own_left[group.index]:
            window.own_left[group.index] -= 1
            return self._own_call_beside(group, forward, args, kwargs, inputs, entered)
        self._arm(group, args, kwargs, inputs)
        return self._recorded(group, inputs, entered)

    def _times_own_call(self, group: CallGroup) -> bool:
        """Whether the group's first call in a window runs the model's own forward beside
        the graph: only where a second run on copies cannot change the model or any other
        object (eval mode, no backward timed, a Dynamo capture whose code, by Dynamo's own
        record, changes nothing but the call's arguments: CallGroup.pure)."""
        return not (self.module.training or self._backward or group.hooks
                    or group.capture.mode == INDUCTOR) and group.pure

    def _captured_call(self, group: CallGroup | None, made: _Made, args: tuple, kwargs: dict,
                       entered: int) -> Any:
        """A call that made its group's capture (Dynamo ran it as torch.compile would): its
        output goes back as it is. In a recording step its nodes are timed by the group's
        instrumented graph run alone on the copy of the graph's inputs taken as the call's
        graph started (tensor operations on copies, the random state forked: nothing the
        caller sees); a call of several graphs, or timed with its backward, is counted as
        not timed."""
        action = self.current_action
        with_backward = self._backward and torch.is_grad_enabled()
        claim = getattr(group.executor, "claim", None) if group is not None else None
        if with_backward and claim is not None and made.alone is not None:
            claim(made.alone)  # (now: not in the next call's data loading)
        if action == ProfilerAction.WARMUP and group is not None:
            self._warmup_calls += 1
        if action not in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            return made.output
        if group is None or made.alone is None or with_backward or self._window is None:
            self._not_timed(made.why or "the call captured its group with several graphs "
                            "or timed with its backward (its own run is not instrumented)")
            return made.output
        if group.index not in self._window.first_calls:
            self._window.note_call(group, self.module, args, kwargs)
            self._window.own_left[group.index] = 0
        flat = made.alone
        group.note(flat)  # (its run goes to the executor, not through the graph's relay)
        with forked_rng(self.module):
            self._recorded(group, BoundInputs(flat), entered,
                           lambda _inputs: group.executor.run(flat))
        return made.output

    def _not_timed(self, why: str, calls: int = 1, window: Window | None = None) -> None:
        """Count `calls` calls of a recording step that were not timed per node, and why
        (in `window`, default the open one)."""
        self._untimed[why] = self._untimed.get(why, 0) + calls
        window = window or self._window
        if window is not None:
            window.untimed[why] = window.untimed.get(why, 0) + calls

    def _own_call_beside(self, group: CallGroup, forward: Callable, args: tuple,
                         kwargs: dict, inputs: BoundInputs, entered: int) -> Any:
        """The group's first call in the window (or a next one, _note_own_call): the call
        itself runs the model's own forward, timed (the user's program, the Python around
        the ops included; the Profiler's own time for the gap accounting), then the graph
        runs on copies of the call's inputs made before it (recorded: the call's node rows
        and log entry). The own forward runs first, after what the caller did, as without
        the Profiler (after the graph's run on the same inputs it ran 10-20% faster, on warm
        caches). The caller's stateful arguments are fed once, to their own forward, whose
        output the caller gets."""
        try:
            copies = BoundInputs(*analysis_copy((inputs.args, inputs.kwargs)))
        except PyfxprofError:
            return self._recorded(group, inputs, entered)
        start, cpu = _C.now_ns(), time.thread_time_ns()
        output = forward(*args, **kwargs)
        elapsed, on_cpu = _C.now_ns() - start, time.thread_time_ns() - cpu
        self._note_own_call(group.index, elapsed, elapsed - on_cpu <= elapsed // 4)
        with forked_rng(self.module):  # (the graph's random ops draw as they would)
            self._recorded(group, copies, entered)
        return output

    def _note_own_call(self, group: int, elapsed: int, on_cpu: bool) -> None:
        """Keep one own-forward time per group and window: the first call that ran on the
        CPU for at least 3/4 of its time; after a preempted one the group's next call is
        timed too, up to OWN_CALL_RUNS calls, then the least preempted is kept."""
        window, times = self._window, self._own_ns.setdefault(group, [])
        assert window is not None, "a recording step without its window"
        tries = window.own_times.setdefault(group, [])
        tries.append(elapsed)
        if len(tries) == 1:
            times.append(elapsed)
        times[-1] = window.own_ns[group] = elapsed if on_cpu else min(tries)
        if not on_cpu and len(tries) < OWN_CALL_RUNS:
            window.own_left[group] = 1

    def _arm(self, group: CallGroup, args: tuple, kwargs: dict, inputs: BoundInputs) -> None:
        """Let the hot path take the group's later calls in this window (armed groups are
        forgotten when a window opens or closes): a group whose graph takes such a call as
        it is (see _take_as_given), or a Dynamo group of one graph taking calls of positional
        arguments bound as given (`inputs`: the call bound), with its guards, which the hot
        path checks on each call (DynamoFrame.positional)."""
        if kwargs:
            return
        key = args_key(args)
        if self._direct.get(key) is group:
            self._armed[key] = (group, group.executor.run, group.training, group.index, None)
            return
        frame = group.capture.frame
        hot = (frame.positional() if frame is not None and not group.graphs
               and inputs.args is args and not inputs.kwargs else None)
        if hot is not None:
            run, guards = hot
            self._armed[key] = (group, run, group.training, group.index, guards)

    def _recorded(self, group: CallGroup, inputs: BoundInputs, entered: int,
                  run: Callable[[BoundInputs], Any] | None = None) -> Any:
        """A recorded call of the group's instrumented capture on `inputs` (the Python path;
        the hot path's recorded calls are _C.HotForward's, which logs them alike) and its log
        entry: when the run began and ended, its group, the Profiler's own time since the
        previous entry (from `entered`, when the Profiler took the call, and after the
        previous run), its number, whether it is the block's first. `run`: what runs the
        call (default: the group's capture)."""
        start = _C.now_ns()
        try:
            output = (run or group.run)(inputs)
        except Exception as error:
            self._note_failed_call(group, error)
            raise
        end = _C.now_ns()
        self._log.append(start, end, group.index, start - entered + self._own_ns_after,
                         self._calls, self._calls == self._first_call)
        self._own_ns_after = _C.now_ns() - end
        return output

    def _run(self, group: CallGroup, inputs: BoundInputs) -> Any:
        """One unrecorded call (warm-up) of the group's instrumented capture on `inputs`."""
        try:
            return group.run(inputs)
        except Exception as error:
            self._note_failed_call(group, error)
            raise

    def _note_failed_call(self, group: CallGroup, error: Exception) -> None:
        """The model's own exception goes to the caller unchanged (type and object), with a
        note naming the call, step and node; the failed call's records are drained (runs
        before it stay in the window). pyfxprof's own errors pass as they are."""
        if isinstance(error, PyfxprofError):
            return
        if self._window is not None:
            self._window.failed[group.index] = self._window.failed.get(group.index, 0) + 1
        node = group.executor.failed_node(group.frame["name"].tolist())
        call = f"call {self._calls - self._first_call + 1} of {self.name} " \
               f"(step {self.step_num}, {self.current_action.name.lower()})"
        note_failure(error, node, call, node_kind(group.frame, node))

    def _group_for(self, args: tuple, kwargs: dict, forward: Callable,
                   made: _Made | None = None) -> tuple[CallGroup | None, BoundInputs | None]:
        """(the call group of these arguments; the call bound to the model's forward). A call
        its group's Dynamo guards refuse goes to the next variant of the signature. A new
        signature (or variant) is captured by the call itself (`made` then holds its output,
        see _captured; without `made` nothing is captured). No group: the call runs the
        model itself, unprofiled (the reason in `made.why`, warned once per signature)."""
        if not kwargs:  # a graph taking the call as it is
            group = self._direct.get(args_key(args))
            if group is not None:
                return group, BoundInputs(args, kwargs)
        try:
            bound = self._bound(args, kwargs)
        except PyfxprofError:  # not a valid call: the model raises its own error
            return None, None
        base = signature_key(bound)
        group = self._groups.get(base)
        if group is not None and group.graph_run:
            self._take_as_given(group, args, kwargs, bound)
            return group, bound
        group, key, refused = self._variant_for(base, bound)
        if made is not None and key in self._uncaptured:
            made.why = self._uncaptured[key]
        if group is not None or key in self._uncaptured or made is None:
            return group, bound
        if len(self._groups) >= MAX_CALL_GROUPS:
            if "groups" not in self._warned:
                self._warned.add("groups")
                too_many_groups_warning(self.name)
            made.why = f"more than {MAX_CALL_GROUPS} input signatures"
            return None, bound
        refusal = None if refused is None else refused.capture.frame.refusal(bound)
        group = self._captured(args, kwargs, bound, key, forward, refusal, made)
        if group is None:
            self._uncaptured[key] = made.why
            warnings.warn(f"pyfxprof: calls of {self.name} with this input signature run "
                          f"the model itself, unprofiled: {made.why}",
                          CaptureFallbackWarning, stacklevel=5)
            return None, bound
        self._groups[key], self._recent[base] = group, key  # its next call checks it first
        if self._backward:
            wrap_for_backward(group, self._open)
        self._take_as_given(group, args, kwargs, bound)
        return group, bound

    def _variant_for(self, key: tuple, bound: BoundInputs
                     ) -> tuple[CallGroup | None, tuple, CallGroup | None]:
        """(the variant of signature `key` whose Dynamo guards accept the call, or None; its
        key, or the next free variant's; the last variant that refused it, or None). The
        variant that took the signature's last call is tried first, as Dynamo tries its cache
        entries most recent first: a decode loop whose calls all go to a later variant checks
        one set of guards per call, not every variant's before it."""
        base, recent = key, self._recent.get(key)
        first = None if recent is None else self._groups.get(recent)
        if recent is not None and first is not None and first.accepts(bound):
            return first, recent, None
        group, refused = self._groups.get(key), None
        while group is not None and (group is first or not group.accepts(bound)):
            refused, key = group, next_variant(key)
            group = self._groups.get(key)
        if group is not None:
            self._recent[base] = key
        return group, key, refused

    def _take_as_given(self, group: CallGroup, args: tuple, kwargs: dict,
                       bound: BoundInputs) -> None:
        """Remember a group whose graph takes the call as it is (positional arguments, bound
        to themselves): its later calls of this args_key skip the binding."""
        if (group.graph_run and group.graph_takes_bound and bound.args is args and not kwargs
                and len(self._direct) < MAX_CALL_GROUPS):
            self._direct[args_key(args)] = group

    def _captured(self, args: tuple, kwargs: dict, bound: BoundInputs, key: tuple,
                  forward: Callable, refusal: str | None, made: _Made) -> CallGroup | None:
        """The call group of signature `key`: taken from the process's capture cache
        (run/capture_cache.py) when this model was captured for it before, with the same
        tracer and analysis options and autograd mode, and Dynamo's guards accept the call;
        else captured by the call itself, as torch.compile captures a call (call_groups.
        live_group: `made` gets the call's output, and in a recording step copies of its
        inputs made before it). A torch.compile'd model is captured on copies (its own
        guards serve its calls). `refusal`: the Dynamo guard that refused the call."""
        started = time.perf_counter_ns()
        options = self._capture
        cache_key = ("loop", key, tuple(options.leaf_modules), tuple(options.autowrap_functions),
                     repr(options.concrete_args), options.profile_memory,
                     options.library_frames, self._timing.device_events,
                     torch.is_grad_enabled(), torch.is_inference_mode_enabled())
        group = CAPTURES.lookup(self.module, cache_key)
        if group is not None and group.accepts(bound):
            name_ranges(group.executor, range_names(group.frame) if self._timing.nvtx else None,
                        strict=False)
            return replace(group, index=len(self._groups), cached=True,
                           capture_ns=time.perf_counter_ns() - started)
        if is_compiled(self.module):  # (Dynamo's guards check the compiled model's calls)
            try:
                group = compiled_group(self.module, args, kwargs, key, len(self._groups),
                                       refusal)
            except PyfxprofError as error:
                made.why = str(error)
                return None
        elif is_exported(self.module):  # its graph is the program, its input checks its
            try:                          # guards: no Python state to guard (the ladder's
                group = capture_group(    # exported rung, on copies)
                    self.module, args, kwargs, key, len(self._groups), forward, refusal,
                    self._capture, self._timing.device_events)
            except PyfxprofError as error:
                made.why = str(error)
                return None
        else:
            made.done = True
            made.output, group, made.why, made.alone = live_group(
                self.module, args, kwargs, bound, key, len(self._groups), forward, refusal,
                self._capture, self._timing.device_events)
            if group is None:
                return None
        name_ranges(group.executor, range_names(group.frame) if self._timing.nvtx else None,
                    strict=False)
        CAPTURES.keep(self.module, cache_key, group)
        return group

    def _bound(self, args: tuple, kwargs: dict) -> BoundInputs:
        """The call's inputs bound to the model's forward (as given when it has no signature
        Python can read)."""
        if self._binder is None:
            return BoundInputs(args, kwargs)
        return self._binder(args, kwargs)


class _Made:
    """A call that made its group's capture: its output, the flat inputs of its one graph
    run copied as it started (None: several runs), and why no group serves the signature
    (empty: one does)."""

    def __init__(self) -> None:
        self.done = False
        self.output: Any = None
        self.alone: tuple | None = None
        self.why = ""


def binder_of(model: torch.nn.Module) -> Binder | None:
    """The binder of calls to the model's ``forward`` (None: a builtin or extension forward,
    whose calls are bound as given).

    Example:
        >>> binder_of(torch.nn.ReLU())((torch.ones(1),), {}).args[0].tolist()
        [1.0]
    """
    try:
        return Binder(inspect.signature(model.forward))
    except (TypeError, ValueError):  # a builtin or extension forward
        return None
