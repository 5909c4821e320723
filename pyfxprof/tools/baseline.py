"""The FX profiling tutorial's time.time() interpreter, kept verbatim in spirit as the baseline
that `pyfxprof overhead` and the benchmarks compare against. Not used for pyfxprof's own timing."""

from __future__ import annotations

import statistics
import time
from typing import Any

import torch
import torch.fx as fx


class TimeTimeInterpreter(fx.Interpreter):
    """The tutorial's `ProfilingInterpreter`: `time.time()` around every node's `run_node`.

    Example:
        >>> interp = TimeTimeInterpreter(torch.nn.Sequential(torch.nn.ReLU()))
        >>> _ = interp.run(torch.zeros(2))
        >>> [n.name for n in interp.runtimes_sec]
        ['input_1', '_0', 'output']
    """

    def __init__(self, mod: torch.nn.Module) -> None:
        gm = mod if isinstance(mod, fx.GraphModule) else fx.symbolic_trace(mod)
        super().__init__(gm)
        self.total_runtime_sec: list[float] = []
        self.runtimes_sec: dict[fx.Node, list[float]] = {}

    def run(self, *args: Any, initial_env: dict | None = None,
            enable_io_processing: bool = True) -> Any:
        t_start = time.time()
        return_val = super().run(*args, initial_env=initial_env,
                                 enable_io_processing=enable_io_processing)
        t_end = time.time()
        self.total_runtime_sec.append(t_end - t_start)
        return return_val

    def run_node(self, n: fx.Node) -> Any:
        t_start = time.time()
        return_val = super().run_node(n)
        t_end = time.time()
        self.runtimes_sec.setdefault(n, []).append(t_end - t_start)
        return return_val

    def mean_node_seconds(self) -> dict[str, float]:
        """Mean seconds per node name (the tutorial's 'Average runtime')."""
        return {n.name: statistics.mean(v) for n, v in self.runtimes_sec.items()}
