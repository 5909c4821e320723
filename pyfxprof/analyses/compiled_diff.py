"""Compiled profiles (capture_mode "inductor"): the kernel table with each kernel's provenance,
and the eager-vs-compiled comparison per module path (what compiling saved in each module and
which kernels replaced which ops). See docs/compiled.md.

Example:
    >>> d = pyfxprof.diff(eager_profile, compiled_profile)   # doctest: +SKIP
    >>> print(d.table(top=10))                               # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .. import served_methods
from ..data.profile import Profile
from ..data.rungs import INDUCTOR
from ..data.units import elide, format_ns, format_pct
from ..data.validate import OUTSIDE_KERNELS
from ..errors import PyfxprofError
from ..views.compiled_diff_text import cell

#: The capture mode of a compiled profile.


def is_compiled_profile(profile: Profile) -> bool:
    """True for a profile of a torch.compile'd model (one row per Inductor kernel)."""
    return profile.meta.get("capture_mode") == INDUCTOR


def _medians(profile: Profile) -> np.ndarray:
    return np.median(profile.samples.astype(np.float64), axis=0)


def kernel_frame(profile: Profile) -> pd.DataFrame:
    """One row per kernel call (and the outside row), slowest first: name, kind, median_ns,
    pct (of the median total), modules, source_nodes, aten_ops, source_lines.

    Example:
        >>> kernel_frame(compiled_profile).iloc[0]["name"]     # doctest: +SKIP
        'extern_kernels.convolution#2'
    """
    if not is_compiled_profile(profile):
        raise PyfxprofError("kernel tables need a compiled profile: profile(torch.compile(m), "
                            "...) or profile(m, ..., compile=True)")
    nodes, medians = profile.nodes, _medians(profile)
    total = float(np.median(profile.run_totals))
    frame = pd.DataFrame({
        "name": nodes["name"], "kind": nodes["op"], "median_ns": medians,
        "pct": 100.0 * medians / total if total else np.nan,
        "modules": nodes["source_modules"].map(cell),
        "source_nodes": nodes["source_nodes"].map(cell),
        "aten_ops": nodes["aten_ops"].map(cell), "source_lines": nodes["source_lines"].map(cell)})
    return frame.sort_values("median_ns", ascending=False, kind="stable").reset_index(drop=True)


def kernel_table(profile: Profile, top: int | None = 20) -> str:
    """The kernel table as text: each kernel's median, share and provenance.

    Example:
        >>> print(kernel_table(compiled_profile, top=5))     # doctest: +SKIP
    """
    frame = kernel_frame(profile)
    frame = frame if top is None else frame.head(top)
    shown = pd.DataFrame({"Kernel": [elide(s, 44) for s in frame["name"]],
                          "Kind": frame["kind"], "Median": frame["median_ns"].map(format_ns),
                          "%": frame["pct"].map(format_pct),
                          "Modules": [elide(s, 40) for s in frame["modules"]],
                          "Source nodes": [elide(s, 36) for s in frame["source_nodes"]],
                          "Aten ops": [elide(s, 40) for s in frame["aten_ops"]]})
    coverage = format_pct(100.0 * profile.meta.get("coverage", np.nan))
    known = format_pct(100.0 * provenance_coverage(profile))
    head = (f"kernels of {profile.meta.get('model', 'the model')}: median total "
            f"{format_ns(float(np.median(profile.run_totals)))} · kernels {coverage} of it · "
            f"modules known for {known} of kernel time")
    return head + "\n" + shown.to_string(index=False)


def provenance_coverage(profile: Profile) -> float:
    """Share of the kernels' time whose source modules are known (some source node has a
    module path, the root included).

    Example:
        >>> 0.0 <= provenance_coverage(compiled_profile) <= 1.0   # doctest: +SKIP
        True
    """
    nodes, medians = profile.nodes, _medians(profile)
    kernels = (~nodes["op"].isin(("outside_kernels", "between_graphs"))).to_numpy()
    known = np.array([len(v or ()) > 0 for v in nodes["source_nodes"]], dtype=bool) & kernels
    kernel_time = medians[kernels].sum()
    return float(medians[known].sum() / kernel_time) if kernel_time else float("nan")


def _prefix(path: str, depth: int | None) -> str:
    return path if depth is None else ".".join(path.split(".")[:depth]) if path else ""


def compiled_by_module(profile: Profile, depth: int | None = None) -> pd.DataFrame:
    """Each kernel's median split over the modules of its source nodes (an equal share per
    source node; a kernel without source nodes goes to its own module path): columns module,
    compiled_ns, kernels (names), shared (a kernel there also covers another module)."""
    rows = []
    for name, op, path, modules, median in zip(
            profile.nodes["name"], profile.nodes["op"], profile.nodes["module_path"],
            profile.nodes["source_modules"], _medians(profile)):
        owners = ([OUTSIDE_KERNELS] if op == "outside_kernels" else
                  [name] if op == "between_graphs" else
                  [_prefix(m, depth) for m in (modules or (path,))])
        for owner in owners:
            rows.append((owner, median / len(owners), name, len(set(owners)) > 1))
    frame = pd.DataFrame(rows, columns=["module", "compiled_ns", "kernel", "shared"])
    return frame.groupby("module", sort=False).agg(
        compiled_ns=("compiled_ns", "sum"), kernels=("kernel", lambda k: tuple(dict.fromkeys(k))),
        shared=("shared", "any")).reset_index()


def eager_by_module(profile: Profile, depth: int | None = None) -> pd.DataFrame:
    """Each eager node's median summed per module path (`depth` first parts), plus the time
    outside every node: columns module, eager_ns, ops (node names)."""
    medians = _medians(profile)
    frame = pd.DataFrame({"module": [_prefix(p, depth) for p in profile.nodes["module_path"]],
                          "eager_ns": medians, "op": profile.nodes["name"]})
    grouped = frame.groupby("module", sort=False).agg(
        eager_ns=("eager_ns", "sum"), ops=("op", tuple)).reset_index()
    outside = float(np.median(profile.run_totals - profile.samples.sum(axis=1)))
    outside_row = {"module": OUTSIDE_KERNELS, "eager_ns": max(outside, 0.0), "ops": ()}
    return pd.concat([grouped, pd.DataFrame([outside_row])], ignore_index=True)


#: Eager nodes that run no op of their own (attribute reads): never paired with a source node.
_NO_OP = ("get_attr", "placeholder", "output")


def compiled_by_node(profile: Profile) -> pd.DataFrame:
    """Each kernel's median split evenly over its source nodes, summed per source node (a
    node can feed several kernels): columns module, source_node, compiled_ns, kernels; in
    the order the kernels first cover them."""
    rows = [(module, node, median / len(nodes), name)
            for name, op, nodes, modules, median in zip(
                profile.nodes["name"], profile.nodes["op"], profile.nodes["source_nodes"],
                profile.nodes["source_modules"], _medians(profile))
            if op != "outside_kernels" and nodes
            for node, module in zip(nodes, modules)]
    frame = pd.DataFrame(rows, columns=["module", "source_node", "compiled_ns", "kernel"])
    return frame.groupby(["module", "source_node"], sort=False).agg(
        compiled_ns=("compiled_ns", "sum"),
        kernels=("kernel", lambda k: tuple(dict.fromkeys(k)))).reset_index()


def _pairs(eager_ops: list[tuple[str, str]], sources: list[str]) -> list[tuple[int, int]]:
    """(eager position, source position) pairs of one module: equal names first (Dynamo
    and FX name function calls alike: add, mul_1), then the rest in order (a leaf module's
    call, FX's `block1_conv`, is Dynamo's `conv2d` inside it); attribute reads never pair.

    Example:
        >>> _pairs([("c_conv", "call_module"), ("c_scale", "get_attr"), ("add", "call_function")],
        ...        ["conv2d", "add"])
        [(2, 1), (0, 0)]
    """
    names = {name: k for k, name in enumerate(sources)}
    pairs = [(e, names[name]) for e, (name, _) in enumerate(eager_ops) if name in names]
    taken_e, taken_s = {e for e, _ in pairs}, {s for _, s in pairs}
    rest_e = [e for e, (_, op) in enumerate(eager_ops) if e not in taken_e and op not in _NO_OP]
    rest_s = [s for s in range(len(sources)) if s not in taken_s]
    return pairs + list(zip(rest_e, rest_s))


def op_matches(eager: Profile, compiled: Profile) -> pd.DataFrame:
    """Eager ops against the kernels that replaced them, per module: one row per eager node
    and per compiled source node, paired inside each module (see _pairs): columns module,
    eager_op, eager_ns, source_node, compiled_ns (its share of the kernels covering it),
    saving_ns and kernels. An eager op without a source node ran no kernel of its own in
    the compiled model (a view, a folded constant); a source node without an eager op is
    code the eager capture did not see as a node.

    Example:
        >>> op_matches(eager_profile, compiled_profile).columns.tolist()   # doctest: +SKIP
        ['module', 'eager_op', 'eager_ns', 'source_node', 'compiled_ns', 'saving_ns', 'kernels']
    """
    nodes = compiled_by_node(compiled)
    eager_frame = pd.DataFrame({"module": eager.nodes["module_path"], "name": eager.nodes["name"],
                                "op": eager.nodes["op"], "eager_ns": _medians(eager)})
    rows = []
    for module in dict.fromkeys([*eager_frame["module"], *nodes["module"]]):
        ops = eager_frame[eager_frame["module"] == module]
        found = nodes[nodes["module"] == module]
        pairs = dict(_pairs(list(zip(ops["name"], ops["op"])), found["source_node"].tolist()))
        paired = set(pairs.values())
        for e, (name, ns) in enumerate(zip(ops["name"], ops["eager_ns"])):
            k = pairs.get(e)
            rows.append((module, name, ns, *(("", 0.0, ()) if k is None else (
                found["source_node"].iat[k], found["compiled_ns"].iat[k], found["kernels"].iat[k]))))
        rows += [(module, "", 0.0, node, ns, kernels) for k, (node, ns, kernels) in enumerate(
            zip(found["source_node"], found["compiled_ns"], found["kernels"])) if k not in paired]
    frame = pd.DataFrame(rows, columns=["module", "eager_op", "eager_ns", "source_node",
                                        "compiled_ns", "kernels"])
    frame.insert(5, "saving_ns", frame["eager_ns"] - frame["compiled_ns"])
    return frame


@served_methods
class CompiledDiff:
    """An eager profile against a compiled one of the same model, per module path: eager time,
    compiled time (kernel time split over the modules they cover), saving, and the ops and
    kernels of each module. `frame` holds the numbers; table() prints them. `ops` pairs the
    eager ops with the source nodes of the kernels inside each module (op_matches);
    ops_table() prints it.

    Example:
        >>> d = CompiledDiff(eager_profile, compiled_profile)   # doctest: +SKIP
        >>> d.frame.columns.tolist()                             # doctest: +SKIP
        ['module', 'eager_ns', 'compiled_ns', 'saving_ns', 'saving_pct', 'ops', 'kernels', 'shared']
    """

    if TYPE_CHECKING:  # served through the package root's _METHODS; tests/test_typing.py
        # checks each declaration against the serving function's signature
        def table(self, top: int | None = 20) -> str: ...
        def ops_table(self, module: str | None = None, top: int | None = 20) -> str: ...
        def __repr__(self) -> str: ...

    def __init__(self, eager: Profile, compiled: Profile, labels=("eager", "compiled"),
                 depth: int | None = None) -> None:
        self._check_sides(eager, compiled)
        self.eager, self.compiled, self.labels, self.depth = eager, compiled, labels, depth
        frame = eager_by_module(eager, depth).merge(
            compiled_by_module(compiled, depth), on="module", how="outer", sort=False)
        frame[["eager_ns", "compiled_ns"]] = frame[["eager_ns", "compiled_ns"]].fillna(0.0)
        frame["ops"] = frame["ops"].map(lambda v: v if isinstance(v, tuple) else ())
        frame["kernels"] = frame["kernels"].map(lambda v: v if isinstance(v, tuple) else ())
        frame["shared"] = frame["shared"].fillna(False).astype(bool)
        frame["saving_ns"] = frame["eager_ns"] - frame["compiled_ns"]
        with np.errstate(divide="ignore", invalid="ignore"):
            frame["saving_pct"] = 100.0 * frame["saving_ns"] / frame["eager_ns"]
        self.frame = frame[["module", "eager_ns", "compiled_ns", "saving_ns", "saving_pct",
                            "ops", "kernels", "shared"]].sort_values(
            "saving_ns", ascending=False, kind="stable").reset_index(drop=True)
        self.ops = op_matches(eager, compiled)

    @staticmethod
    def _check_sides(eager: Profile, compiled: Profile, /) -> None:
        if is_compiled_profile(eager) or not is_compiled_profile(compiled):
            raise PyfxprofError("CompiledDiff takes an eager profile first, then a compiled one")

    def totals(self) -> dict:
        """Median run totals of both sides (ns) and the saving."""
        eager = float(np.median(self.eager.run_totals))
        compiled = float(np.median(self.compiled.run_totals))
        return {"eager_ns": eager, "compiled_ns": compiled, "saving_ns": eager - compiled}
