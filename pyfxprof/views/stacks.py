"""Folded stacks by module hierarchy (or by source line), for flamegraph.pl, speedscope and
pyfxprof's own SVG.

Each node is one stack ``root;<module_stack...>;<node name>`` weighted by a per-node
statistic of its host samples, in integer **ns** (tell flamegraph.pl so:
``flamegraph.pl --countname ns stacks.txt > flame.svg``). A call_module node is its module's
frame (``root;layer1;layer1.0;layer1.0.conv1``), not a second frame under it. A module's width
is the sum of the weights of the nodes under it (for ``median`` this is a sum of medians, not
the median of per-run sums). Frames keep execution order (first appearance) left to right.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..data.files import PathLike, open_output
from ..data.outside_graph import function_label, outside_column, python_functions
from ..data.profile import Profile
from ..stats.node_statistics import node_statistics
from ..errors import ArgumentError
from .safe_text import terminal_line

METRICS = ("median", "mean", "total", "min", "max")
#: torch.profiler's export_stacks metrics: a node's time summed over the runs (host, device).
TORCH_METRICS = {"self_cpu_time_total": "total", "cpu_time_total": "total",
                 **{f"{p}{d}_time_total": "device_total" for d in ("cuda", "device")
                    for p in ("", "self_")}}
#: What the frames under root are: the module hierarchy, or the model-code source lines.
STACK_KINDS = ("module", "source")
ROOT = "root"


def frame_name(text: str) -> str:
    """A frame name safe for the folded format (no ';' separators, line breaks as spaces,
    other control characters escaped)."""
    return terminal_line(str(text).replace(";", ":").replace("\n", " ").replace("\r", " "))


def stack_weights(profile: Profile, metric: str = "median", by: str = "module"
                  ) -> list[tuple[list[str], int]]:
    """Per node, in execution order: (frames root..node name, weight in integer ns).
    ``by="source"``: the frames are the model-code lines that created the node (capture.source).

    >>> stack_weights(prof)[0]  # doctest: +SKIP
    (['root', 'layer1', 'layer1.0', 'layer1.0.conv1'], 41250)
    """
    if by not in STACK_KINDS:
        raise ArgumentError(f"by must be one of {list(STACK_KINDS)}, got {by!r}")
    weights = np.rint(np.nan_to_num(_metric_values(profile, metric), nan=0.0)).astype(
        np.int64).tolist()
    nodes = profile.nodes
    if by == "source":
        sources = nodes["source_stack"] if "source_stack" in nodes else [()] * len(nodes)
        stacks = [[ROOT] + [frame_name(f) for f in frames] + [frame_name(name)]
                  for frames, name in zip(sources, nodes["name"])]
        return list(zip(stacks, weights))
    stacks = [_stack(tuple(modules), name, op == "call_module" and bool(modules)
                     and modules[-1] == path)
              for modules, name, op, path in zip(nodes["module_stack"], nodes["name"],
                                                 nodes["op"], nodes["module_path"])]
    return list(zip(stacks, weights))


def with_functions(profile: Profile, weighted: list) -> list[tuple[list[str], int]]:
    """`weighted` (stack_weights) with the `(Python outside the graph)` row's weight split
    into one frame under it per Python function that spends it
    (data.outside_graph.python_functions, by share), its rest on the row itself."""
    column = outside_column(profile)
    functions = python_functions(profile)
    if column is None or functions.empty:
        return weighted
    frames, weight = weighted[column]
    parts = [(frames + [frame_name(function_label(row))], int(round(row["share"] * weight)))
             for row in functions.to_dict("records")]
    rest = weight - sum(part for _, part in parts)
    return (weighted[:column] + ([(frames, rest)] if rest > 0 else []) + parts
            + weighted[column + 1:])


def _metric_values(profile: Profile, metric: str) -> np.ndarray:
    """Per-node ns of ``metric`` (METRICS, or a torch.profiler metric of TORCH_METRICS)."""
    metric = TORCH_METRICS.get(metric, metric)
    samples: np.ndarray | None = profile.samples
    if metric == "device_total":  # without device times all zero, as torch.profiler's on CPU
        samples, metric = profile.device_samples, "total"
        if samples is None:
            return np.zeros(profile.n_nodes)
    if metric not in METRICS:
        raise ArgumentError(f"metric must be one of {list(METRICS) + list(TORCH_METRICS)}, "
                            f"got {metric!r}")
    return node_statistics(samples)[metric].to_numpy(dtype=np.float64)


def _stack(modules: tuple, name: str, module_call: bool) -> list[str]:
    """Frames root..leaf; the node's own name is left out when it is its module's call."""
    frames = [ROOT] + [frame_name(m) for m in modules]
    return frames if module_call else frames + [frame_name(name)]


def folded_stacks(profile: Profile, metric: str = "median", by: str = "module") -> list[str]:
    """One folded line per node: ``root;mod;mod.sub;node <weight ns>`` (and one per Python
    function under the `(Python outside the graph)` row).

    >>> folded_stacks(prof)[:1]  # doctest: +SKIP
    ['root;layer1;layer1.0;layer1.0.conv1 41250']
    """
    return [f"{';'.join(frames)} {weight}"
            for frames, weight in with_functions(profile, stack_weights(profile, metric, by))]


def export_stacks(profile: Profile, path: PathLike, metric: str = "median", by: str = "module") -> None:
    """Write folded stacks (one line per node, weights in ns of ``metric``) to ``path``.

    ``metric``: median | mean | total | min | max, or torch.profiler's self_cpu_time_total /
    cpu_time_total (= total) and the CUDA ones (device total). ``by``: "module" (module
    hierarchy) or "source" (model-code lines). Read by ``flamegraph.pl --countname ns
    stacks.txt > fg.svg`` and by https://www.speedscope.app (whose "samples" are ns here).

    >>> export_stacks(prof, "stacks.txt", metric="self_cpu_time_total", by="source")  # doctest: +SKIP
    """
    lines = folded_stacks(profile, metric, by)
    with open_output(path) as stream:
        stream.write("".join(line + "\n" for line in lines))


def stack_tree(stacks: list[tuple[list[str], int]]) -> dict:
    """Merge stacks into a tree of {"name", "weight" (inclusive), "children" (ordered dict)}."""
    root: dict[str, Any] = {"name": ROOT, "weight": 0, "children": {}}
    for frames, weight in stacks:
        node = root
        node["weight"] += weight
        for name in frames[1:]:
            node = node["children"].setdefault(name, {"name": name, "weight": 0, "children": {}})
            node["weight"] += weight
    return root


