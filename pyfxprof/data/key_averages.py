"""torch.profiler's vocabulary on a Profile, as data: key_averages() rows per op kind and
events() rows per call (times in µs on the rows, as torch's); views/key_averages.py renders
their table(). See docs/torch_profiler.md for the mapping of torch.profiler calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .. import served_methods
from ..errors import ArgumentError, PyfxprofError
from . import rollup
from .op_names import aten_of_operator
from .rungs import INDUCTOR

#: Memory columns of the nodes frame (from the analysis run with profile_memory=True).
CPU_MEMORY, DEVICE_MEMORY = "cpu_alloc_bytes", "cuda_alloc_bytes"


@dataclass
class KeyAverage:
    """One row of key_averages(): an op kind (and input shapes / source frames when grouped).
    Times in µs summed over every call (torch's units), memory in bytes over one run."""

    key: str
    count: int = 0
    cpu_time_total: float = 0.0
    self_cpu_time_total: float = 0.0
    device_time_total: float = 0.0
    self_device_time_total: float = 0.0
    cpu_memory_usage: int = 0
    self_cpu_memory_usage: int = 0
    device_memory_usage: int = 0
    self_device_memory_usage: int = 0
    input_shapes: str = ""
    stack: list[str] = field(default_factory=list)
    node: str = ""  # events() only: the node, the run and the loop step of this one call
    run: int = -1
    step: int = -1

    @property
    def cpu_time(self) -> float:
        """Average CPU µs per call."""
        return self.cpu_time_total / max(self.count, 1)

    @property
    def device_time(self) -> float:
        """Average device µs per call."""
        return self.device_time_total / max(self.count, 1)

    cuda_time = device_time
    cuda_time_total = property(lambda self: self.device_time_total)
    self_cuda_time_total = property(lambda self: self.self_device_time_total)
    cuda_memory_usage = property(lambda self: self.device_memory_usage)
    self_cuda_memory_usage = property(lambda self: self.self_device_memory_usage)


@served_methods
class KeyAverages(list):
    """The rows of key_averages(), a list of KeyAverage; ``table()`` (torch's layout) is served
    from views/key_averages.py."""

    def __init__(self, rows, has_device: bool, has_memory: bool, has_device_memory: bool,
                 grouped_shapes: bool, stack_n: int) -> None:
        super().__init__(rows)
        self.has_device, self.has_memory = has_device, has_memory
        self.has_device_memory = has_device_memory
        self.grouped_shapes, self.stack_n = grouped_shapes, stack_n

    if TYPE_CHECKING:  # served through the package root's _METHODS (views/key_averages.py)
        def table(self, sort_by: str | None = None, row_limit: int = 100,
                  max_src_column_width: int = 75, max_name_column_width: int = 55,
                  max_shapes_column_width: int = 80, header: str | None = None,
                  top_level_events_only: bool = False) -> str: ...


#: Why a profile has no input shapes, by capture mode.
_NO_SHAPES = {
    INDUCTOR: "group_by_input_shape needs input shapes: a compiled profile's rows are "
                "Inductor kernels, which record none; profile the eager model for them",
    None: "group_by_input_shape needs input shapes: this profile has none (a loaded trace or "
          "an older profile); profile the model with pyfxprof.profile for them"}


def key_averages(profile, group_by_input_shape: bool = False,
                 group_by_stack_n: int = 0) -> KeyAverages:
    """Rows per op kind (module type for module calls, the aten op for a Python operator on a
    tensor, target otherwise: op_kinds), as torch.profiler's key_averages(); "self" excludes
    module calls nested inside (module-hooks captures).

    Example:
        >>> rows = prof.key_averages()  # doctest: +SKIP
        >>> rows[0].key, rows[0].count, rows[0].self_cpu_time_total  # doctest: +SKIP
        ('Conv2d', 1000, 51234.5)
    """
    if isinstance(group_by_stack_n, bool) or not isinstance(group_by_stack_n, int):
        raise ArgumentError(f"group_by_stack_n must be an int (0: no stacks), got "
                            f"{group_by_stack_n!r}")
    nodes = profile.nodes
    if group_by_input_shape and "input_shapes" not in nodes:
        raise PyfxprofError(_NO_SHAPES.get(profile.meta.get("capture_mode"), _NO_SHAPES[None]))
    parents = rollup.parent_nodes(nodes)
    per_node = _per_node(profile, parents)
    stacks = [list(_stack(nodes, k, group_by_stack_n)) for k in range(len(nodes))]
    rows: dict[tuple, KeyAverage] = {}
    for k, kind in enumerate(op_kinds(nodes)):
        shapes = str(nodes["input_shapes"][k]) if group_by_input_shape else ""
        key = (kind, shapes, tuple(stacks[k]))
        row = rows.setdefault(key, KeyAverage(kind, input_shapes=shapes, stack=stacks[k]))
        row.count += profile.n_runs
        for name, values in per_node.items():
            setattr(row, name, getattr(row, name) + values[k])
    return KeyAverages(rows.values(), profile.device_samples is not None,
                       CPU_MEMORY in nodes, DEVICE_MEMORY in nodes, group_by_input_shape,
                       group_by_stack_n)


def events(profile) -> KeyAverages:
    """torch.profiler's events(): one row per node call (node x run), its ``key`` the op kind,
    ``node``, ``run`` and loop ``step`` named, times in µs, memory the node's (measured once,
    in the analysis run).

    Example:
        >>> [(e.key, e.node, e.step) for e in prof.events()][:1]  # doctest: +SKIP
        [('Conv2d', 'conv1', 0)]
    """
    nodes, parents = profile.nodes, rollup.parent_nodes(profile.nodes)
    per_call = {}
    for name, samples in _time_samples(profile).items():
        per_call[f"{name}_time_total"] = samples / 1e3
        per_call[f"self_{name}_time_total"] = rollup.self_values(samples, parents) / 1e3
    memory = _memory(profile, parents)
    kinds, names, steps = op_kinds(nodes), nodes["name"].tolist(), profile.run_steps()
    rows = []
    for run in range(profile.n_runs):
        for k, kind in enumerate(kinds):
            row = KeyAverage(kind, count=1, node=str(names[k]), run=run, step=int(steps[run]))
            for attribute, values in per_call.items():
                setattr(row, attribute, float(values[run, k]))
            for attribute, figures in memory.items():
                setattr(row, attribute, figures[k])
            rows.append(row)
    return KeyAverages(rows, profile.device_samples is not None, CPU_MEMORY in nodes,
                       DEVICE_MEMORY in nodes, False, 0)


def op_kinds(nodes) -> list[str]:
    """The row name of each node: its op kind (data.rollup.op_kind_keys), a Python operator on
    a tensor named by the aten op torch.profiler shows for it (``out += x``: aten::add_).

    Example:
        >>> import pandas as pd
        >>> op_kinds(pd.DataFrame({"op": ["call_module", "call_function", "call_function"],
        ...     "target": ["fc", "_operator.iadd", "_operator.add"],
        ...     "module_type": ["Linear", "Net", "Net"],
        ...     "input_shapes": ["([2, 4] float32)", "([2, 4] float32, [2, 4] float32)",
        ...                      "(int, int)"]}))
        ['Linear', 'aten::add_', '_operator.add']
    """
    kinds = rollup.op_kind_keys(nodes)
    if "input_shapes" not in nodes:
        return kinds
    return [aten_of_operator(kind, str(shapes)) or kind if op == "call_function" else kind
            for kind, op, shapes in zip(kinds, nodes["op"], nodes["input_shapes"])]


def _time_samples(profile) -> dict[str, np.ndarray]:
    """Host ("cpu") and, when measured, device ns per run and node."""
    if profile.device_samples is None:
        return {"cpu": profile.samples}
    return {"cpu": profile.samples, "device": profile.device_samples}


def _per_node(profile, parents: np.ndarray) -> dict[str, list]:
    """Row attributes per node: µs over all runs (total and self), memory bytes net of frees."""
    per_node = {}
    for name, samples in _time_samples(profile).items():
        total = samples.sum(axis=0)
        per_node[f"{name}_time_total"] = (total / 1e3).tolist()
        per_node[f"self_{name}_time_total"] = (rollup.self_values(total, parents) / 1e3).tolist()
    return {**per_node, **_memory(profile, parents)}


def _memory(profile, parents: np.ndarray) -> dict[str, list]:
    """Memory attributes per node (bytes allocated minus freed, and self), when measured."""
    per_node = {}
    for name, prefix in (("cpu", "cpu"), ("device", "cuda")):
        if f"{prefix}_alloc_bytes" in profile.nodes:
            net = (profile.nodes[f"{prefix}_alloc_bytes"].to_numpy(np.int64)
                   - profile.nodes[f"{prefix}_freed_bytes"].to_numpy(np.int64))
            per_node[f"{name}_memory_usage"] = net.tolist()
            per_node[f"self_{name}_memory_usage"] = rollup.self_values(net, parents).tolist()
    return per_node


def _stack(nodes, k: int, n: int) -> tuple[str, ...]:
    """The innermost ``n`` source frames of node k, innermost first (torch's order)."""
    if n <= 0 or "source_stack" not in nodes:
        return ()
    frames = nodes["source_stack"][k]
    return tuple(reversed(tuple(frames or ())))[:n]
