# Type stub of the native extension pyfxprof._C (csrc/python_module.cpp and the files it binds);
# tests/test_native_stub.py checks its names and parameters against the built module.
# Python code reaches the extension through pyfxprof.timing.native only.

from typing import Any, Callable, Sequence

#: Size of one record in bytes (csrc/record.h).
RECORD_BYTES: int
#: Record kinds (csrc/record.h).
KIND_MARK: int
KIND_RANGE_BEGIN: int
KIND_RANGE_END: int
KIND_RUN_BEGIN: int
KIND_RUN_END: int

class CudaError(RuntimeError):
    """A CUDA call failed while recording or resolving events."""

class CudaUnavailable(RuntimeError):
    """No usable CUDA runtime (the message says why)."""

# ---- the hot path: one clock read and one lock-free record ----------------------------------
def mark(id: int) -> None:
    """Record a node-boundary timestamp tagged `id` (0 <= id < 2**32)."""

def mark_cuda(id: int) -> None:
    """mark(id), then record the next pool CUDA event on the stream set by cuda_set_stream()."""

def mark_kind(id: int, kind: int) -> None:
    """Record a timestamp with an explicit kind (ranges, run boundaries)."""

def now_ns() -> int:
    """Current time in ns on the profiler's clock."""

def thread_number() -> int:
    """The calling thread's record thread number."""

# ---- the record buffer --------------------------------------------------------------------
def drain() -> dict[str, Any]:
    """Every record so far as numpy arrays (timestamp_ns, id, thread, kind) and 'dropped'."""

def buffer_stats() -> dict[str, int]:
    """Capacity, chunking, pending and dropped counts."""

def configure_buffer(capacity_records: int, chunk_records: int = 65536) -> None:
    """Discard all records and set the cap (a power of two, at most 2**40)."""

def clock_info() -> dict[str, Any]:
    """Clock name ('tsc' or 'steady_clock'), tsc_hz, resolution_ns, read_cost_ns, reason."""

# ---- per-node timed calls into a runs x nodes table ----------------------------------------
class SampleTable:
    """Runs x nodes table of node durations (ns), written by TimedCalls.timed."""

    def __init__(self, nodes: int, spare: int = 0) -> None: ...
    @property
    def nodes(self) -> int: ...
    @property
    def rows(self) -> int: ...
    @property
    def stray_calls(self) -> int:
        """Timed calls not stored: outside a run, or from another thread."""
    def reserve(self, runs: int) -> None: ...
    def set_ranges(self, names: list[str] | None) -> None:
        """An NVTX range named names[k] around each timed call of column k (None: none)."""
    def begin_run(self) -> None: ...
    def end_run(self) -> bool: ...
    def abandon_run(self) -> None: ...
    def clear(self) -> None: ...
    def take(self) -> dict[str, Any]:
        """samples (rows x nodes int64), begin_ns, end_ns, first_call_ns, last_call_end_ns."""

class TimedCalls:
    """The timed calls of one instrumented graph, one entry per SampleTable column."""

    def __len__(self) -> int: ...
    def set(self, node: int, target: Any, method: bool = False, cuda_event_id: int = -1,
            cuda_event_after: bool = False, path: tuple[str, ...] | None = None) -> None: ...
    def target(self, node: int) -> Any: ...
    @property
    def timed(self) -> Callable[..., Any]:
        """timed(node, *args, **kwargs), the builtin instrumented nodes call."""

def timed_calls(table: SampleTable) -> TimedCalls: ...

#: Whether _C was built with the NVTX v3 headers, and the folder that held them ("" if not).
nvtx_built: bool
nvtx_include_dir: str

class TimedRun:
    """One run of an instrumented graph as one SampleTable row: run(args) calls the graph's
    forward(*args) between the table's begin_run and end_run (unended when it raises)."""

    def __call__(self, args: Sequence[Any], /) -> Any: ...

def timed_run(table: SampleTable, forward: Callable[..., Any],
              busy_error: type[BaseException]) -> TimedRun: ...

class HotForward:
    """A profiled model's forward while a Profiler block is open: a call of `thread` whose
    args_key names an entry (group, run, training, index, guards) of `armed`, with the
    model's training flag equal to `training` and `guards` None or Dynamo's guards
    (check, frame_locals) holding for the call, is run(args) and one row of its LoggedCalls;
    a call of `passing` is own(*args, **kwargs), counted in `calls`; any other call is
    general(*args, **kwargs)."""

    @property
    def general(self) -> Callable[..., Any] | None: ...
    @general.setter
    def general(self, value: Callable[..., Any] | None) -> None: ...
    @property
    def thread(self) -> int: ...
    @thread.setter
    def thread(self, value: int) -> None: ...
    @property
    def own(self) -> Callable[..., Any] | None: ...
    @own.setter
    def own(self, value: Callable[..., Any] | None) -> None: ...
    @property
    def passing(self) -> int: ...
    @passing.setter
    def passing(self, value: int) -> None: ...
    @property
    def calls(self) -> int: ...
    @calls.setter
    def calls(self, value: int) -> None: ...
    @property
    def first_call(self) -> int: ...
    @first_call.setter
    def first_call(self, value: int) -> None: ...
    @property
    def own_ns_after(self) -> int: ...
    @own_ns_after.setter
    def own_ns_after(self, value: int) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

def hot_forward(armed: dict[Any, tuple[Any, Callable[[tuple], Any], bool, int,
                                      tuple[Callable[[dict[str, Any]], bool],
                                            dict[str, Any]] | None]], module: Any,
                tensor_type: type, log: LoggedCalls, args_key: Callable[[tuple], Any],
                on_failure: Callable[[Any, Exception], Any]) -> HotForward: ...

class LoggedCalls:
    """The Profiler loop's log of recorded calls: the newest `capacity` rows of 6 ints
    (start, end, group, own_ns, call, first), written by HotForward and the Python path."""

    def append(self, start: int, end: int, group: int, own_ns: int, call: int,
               first: int, /) -> None: ...
    def rows(self) -> bytes: ...
    def __len__(self) -> int: ...

def logged_calls(capacity: int, /) -> LoggedCalls: ...

# ---- CUDA events (the runtime loaded with dlopen) ------------------------------------------
def cuda_available() -> bool: ...
def cuda_load(path: str | None = None, pool_size: int = 256) -> str: ...
def cuda_unload() -> None: ...
def cuda_status() -> dict[str, Any]: ...
def cuda_record(id: int, stream: int = 0) -> None: ...
def cuda_set_stream(stream: int) -> None: ...
def cuda_resolve() -> dict[str, Any]: ...
def cuda_discard() -> None: ...

# ---- for benchmarks and tests ---------------------------------------------------------------
def _noop(id: int) -> None: ...
def _mark_pybind11(id: int) -> None: ...
def _busy_loop(iterations: int) -> None: ...
def _spin_ns(duration_ns: int) -> int: ...
