"""The module hierarchy as an indented tree of inclusive median times (data/rollup.py's
roll-up), with the Python outside the graph as the root's last child; served as
``Profile.tree`` through views/report.py."""

from __future__ import annotations

from ..data import rollup
from ..data.outside_graph import tree_rows
from ..data.units import format_ns, format_pct
from ..errors import whole_number


def module_tree(profile, max_depth: int | None = None) -> str:
    """The module hierarchy as an indented tree: per module its median inclusive time (median
    over runs of the sum of its nodes) and percent of the root's; for training steps also its
    backward's median inclusive time and the backward/forward ratio.

    Example:
        >>> print(module_tree(prof, max_depth=1))  # doctest: +SKIP
        ResNet         1.21 ms  100.0%
        ├─ conv1       95.1 µs    7.9%
        └─ layer1       402 µs   33.2%
    """
    max_depth = whole_number("max_depth", max_depth, minimum=1, none=True)
    paths = [str(p) for p in profile.nodes["module_path"]]
    medians = rollup.inclusive_medians(profile.samples, paths, max_depth)
    types = dict(zip(paths, profile.nodes["module_type"].astype(str)))
    children: dict[str, list[str]] = {}
    for path in list(medians)[1:]:
        children.setdefault(rollup.cut(path, rollup.module_depth(path) - 1), []).append(path)
    root = str(profile.meta.get("model") or types.get("", "model"))
    rows = [(root, "")] + _tree_rows("", children, types, "")
    lines = [(label, medians[path]) for label, path in rows]
    outside = tree_rows(profile)  # the Python outside the graph: the root's last child
    text = _render_rows(_with_sibling_below(lines) + outside if outside else lines, medians[""])
    if profile.backward_samples is None:
        return text
    backward = rollup.inclusive_medians(profile.backward_samples, paths, max_depth)
    return "\n".join(f"{line}  backward {_with_ratio(backward.get(path, 0.0), medians[path])}"
                     for line, (_, path) in zip(text.splitlines(), rows))


def _with_sibling_below(lines: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Tree lines whose root's last child gets a sibling after it (its branch and the
    lines under it continue)."""
    last = max((i for i, (label, _) in enumerate(lines) if label.startswith("└─")), default=None)
    if last is None:
        return lines
    return (lines[:last] + [("├─" + lines[last][0][2:], lines[last][1])]
            + [("│" + label[1:], value) for label, value in lines[last + 1:]])


def _with_ratio(backward: float, forward: float) -> str:
    """"1.2 ms (2.1x)": a backward median and its ratio to the forward's."""
    ratio = f"{backward / forward:.1f}x" if forward else "-"
    return f"{format_ns(backward):>9} ({ratio})"


def _tree_rows(parent: str, children: dict, types: dict, prefix: str) -> list[tuple[str, str]]:
    """(label, module path) of each module under `parent`, depth first."""
    rows = []
    kids = children.get(parent, [])
    for i, path in enumerate(kids):
        last = i == len(kids) - 1
        name = path.rpartition(".")[2]
        label = f"{name} ({types[path]})" if path in types else name
        rows.append((f"{prefix}{'└─' if last else '├─'} {label}", path))
        rows += _tree_rows(path, children, types, prefix + ("   " if last else "│  "))
    return rows


def _render_rows(rows: list[tuple[str, float]], root_median: float) -> str:
    times = [format_ns(value) for _, value in rows]
    pcts = [format_pct(100.0 * value / root_median if root_median else 0.0) for _, value in rows]
    label_width = max(len(label) for label, _ in rows)
    time_width, pct_width = max(map(len, times)), max(map(len, pcts))
    return "\n".join(f"{label.ljust(label_width)}  {t.rjust(time_width)}  {p.rjust(pct_width)}"
                     for (label, _), t, p in zip(rows, times, pcts))
