"""Kernel call sites of Inductor's generated wrapper and their provenance: each call Inductor
marks with a provenance handle, the Dynamo source nodes it covers (Inductor's kernel -> post-grad
-> pre-grad node mapping), their module paths, aten ops and source lines."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

import pandas as pd
import torch.fx as fx

from .dynamo import module_path
from .inductor import CompiledGraph
from .kernel_work import kernel_work, owned_nodes
from .node_table import COLUMNS

#: The comment Inductor writes before each kernel call when provenance tracking is on.
HANDLE = re.compile(r"^\s*# \[Provenance debug handles\] (?P<handle>\S+:\d+)\s*$")
#: A call statement: `[lhs = ]callee(` with the callee a dotted name.
CALL = re.compile(r"^(?P<head>\s*(?:[\w, ]+ = )?)(?P<callee>[A-Za-z_][\w.]*)\((?P<rest>.*)$")
#: A stack trace's frame line.
FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')
#: Module path pieces Dynamo writes: L['self'] roots, ._modules['x'], ['x'] and [0] items.
#: Op column of the kernel rows, by the callee's first name.
KERNEL_OPS = {"extern_kernels": "extern_kernel", "aten": "fallback_op", "torch": "fallback_op"}


@dataclass
class CallSite:
    """One kernel call of a graph's wrapper: its line in the wrapper source (0-based), the
    callee expression, and Inductor's handle ("name:id")."""

    line: int
    callee: str
    handle: str


def call_sites(source: str) -> list[CallSite]:
    """The kernel calls of a wrapper source, in order: each statement right after a
    provenance handle comment that calls a dotted name.

    Example:
        >>> src = "    # [Provenance debug handles] cpp_fused_relu_0:1\\n    cpp_fused_relu_0(buf0)"
        >>> call_sites(src)
        [CallSite(line=1, callee='cpp_fused_relu_0', handle='cpp_fused_relu_0:1')]
    """
    lines, sites = source.splitlines(), []
    for number, text in enumerate(lines):
        found = HANDLE.match(text)
        if not found or number + 1 >= len(lines):
            continue
        call = CALL.match(lines[number + 1])
        if call:
            sites.append(CallSite(number + 1, call["callee"], found["handle"]))
    return sites


def _node_stack(node: fx.Node) -> list[tuple[str, str]]:
    """[(module path, type name)] of a Dynamo node, outermost first (root entries dropped)."""
    entries = []
    for value in (node.meta.get("nn_module_stack") or {}).values():
        path = module_path(str(value[0])) if isinstance(value, tuple) else ""
        if path:
            entries.append((path, getattr(value[1], "__name__", str(value[1]))))
    return entries


def _source_line(node: fx.Node) -> str | None:
    """"file.py:line" of the innermost frame of the node's stack trace, where known."""
    frames = FRAME.findall(node.meta.get("stack_trace") or "")
    if not frames:
        return None
    file, line = frames[-1]
    return f"{os.path.basename(file)}:{line}"


def _common_stack(stacks: list[list[tuple[str, str]]]) -> list[tuple[str, str]]:
    """The longest stack prefix all `stacks` share."""
    if not stacks:
        return []
    common = stacks[0]
    for stack in stacks[1:]:
        size = 0
        while size < min(len(common), len(stack)) and common[size] == stack[size]:
            size += 1
        common = common[:size]
    return common


def _sources(graph: CompiledGraph, handle: str, mapping: dict) -> list[fx.Node]:
    """The Dynamo nodes a kernel covers, in graph order."""
    post = mapping.get("cppCodeToPost", {}).get(handle, [])
    pre_names = {pre for name in post for pre in mapping.get("postToPre", {}).get(name, [])}
    return [n for n in graph.dynamo_gm.graph.nodes if n.name in pre_names]


def _aten_ops(graph: CompiledGraph, handle: str, mapping: dict) -> tuple[str, ...]:
    """The aten ops (overload packets) of the post-grad nodes a kernel covers."""
    post = set(mapping.get("cppCodeToPost", {}).get(handle, []))
    ops = [str(getattr(n.target, "_overloadpacket", n.target))
           for n in graph.aten_gm.graph.nodes if n.name in post and n.op == "call_function"]
    return tuple(dict.fromkeys(ops))


def kernel_row(graph: CompiledGraph, site: CallSite, mapping: dict, root_type: str) -> dict:
    """The nodes-table row of one kernel call: identity plus provenance columns
    (source_nodes; source_modules, the module path of each source node; aten_ops;
    source_lines; graph, the compiled graph's number) and the roofline's (capture.kernel_work:
    its FLOPs and its own inputs' and outputs' bytes, from the post-grad nodes it covers)."""
    sources = _sources(graph, site.handle, mapping)
    stacks = [_node_stack(n) for n in sources]
    common = _common_stack(stacks)
    modules = [s[-1][0] if s else "" for s in stacks]
    lines = [line for line in map(_source_line, sources) if line]
    return {"name": site.handle.rsplit(":", 1)[0], "target": site.callee,
            "op": KERNEL_OPS.get(site.callee.split(".")[0], "fused_kernel"),
            "module_path": common[-1][0] if common else "",
            "module_type": common[-1][1] if common else root_type,
            "module_stack": tuple(path for path, _ in common),
            "inputs": (), "communication": False,
            "source_nodes": tuple(n.name for n in sources),
            "source_modules": tuple(modules),
            "aten_ops": _aten_ops(graph, site.handle, mapping),
            "source_lines": tuple(dict.fromkeys(lines)), "graph": graph.index,
            **kernel_work(graph.aten_gm, owned_nodes(mapping.get("cppCodeToPost", {}),
                                                     site.handle))}


def provenance_mapping(graph: CompiledGraph) -> dict:
    """Inductor's kernel/post-grad/pre-grad mapping of a compiled graph ({} when absent)."""
    text = getattr(graph.output, "inductor_provenance_mapping_str", None)
    return json.loads(text) if text else {}


def kernels_frame(rows: list[dict]) -> pd.DataFrame:
    """The nodes table of a compiled profile: `rows` (kernel_row's, and whole-graph rows) in
    order, indexed, names made unique ("mm", "mm#2"); the counts of kernel_work 0 where a
    row has none (``in_bytes`` stays missing: work unknown, no roofline bound).

    Example:
        >>> frame = kernels_frame([{"name": "mm", "flops": 8, "in_bytes": 4}, {"name": "mm"}])
        >>> frame["name"].tolist(), frame["flops"].tolist(), frame["in_bytes"].isna().tolist()
        (['mm', 'mm#2'], [8, 0], [False, True])
    """
    seen: dict[str, int] = {}
    for index, row in enumerate(rows):
        seen[row["name"]] = seen.get(row["name"], 0) + 1
        if seen[row["name"]] > 1:
            row["name"] = f"{row['name']}#{seen[row['name']]}"
        row["index"] = index
    frame = pd.DataFrame(rows)
    for column in ("flops", "vector_flops", "param_bytes", "out_bytes"):
        if column in frame:
            frame[column] = frame[column].fillna(0).astype("int64")
    for column in ("dtype", "unknown_ops"):
        if column in frame:
            frame[column] = frame[column].fillna("")
    # (pandas-stubs type a frame indexed by a list of labels as a frame or a Series)
    return frame[[c for c in COLUMNS if c in frame]  # pyright: ignore[reportReturnType]
                 + [c for c in frame if c not in COLUMNS]]
