"""Flame graphs by module hierarchy: folded stacks (flamegraph.pl, speedscope) and a built-in SVG.

Each node is one stack ``root;<module_stack...>;<node name>`` weighted by a per-node
statistic of its host samples, in integer ns. A module's width in the flame graph is the sum
of the weights of the nodes under it (for ``median`` this is a sum of medians, not the
median of per-run sums). Frames keep execution order (first appearance) left to right.
"""

from __future__ import annotations

import html
import zlib

import numpy as np

from ..data.persist import open_output
from ..data.profile import Profile
from ..data.stats import node_statistics
from ..data.units import format_ns

METRICS = ("median", "mean", "total", "min", "max")
ROOT = "root"
#: SVG geometry in px.
WIDTH, FRAME_HEIGHT, PAD, HEADER, FONT_SIZE = 1200, 16, 10, 52, 12
_CHAR_WIDTH = 0.59 * FONT_SIZE


def _frame(text: str) -> str:
    """A frame name safe for the folded format (no ';' separators, no line breaks)."""
    return str(text).replace(";", ":").replace("\n", " ").replace("\r", " ")


def stack_weights(profile: Profile, metric: str = "median") -> list[tuple[list[str], int]]:
    """Per node, in execution order: (frames root..node name, weight in integer ns).

    >>> stack_weights(prof)[0]  # doctest: +SKIP
    (['root', 'layer1', 'layer1.0', 'layer1.0.conv1', 'layer1_0_conv1'], 41250)
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {list(METRICS)}, got {metric!r}")
    values = node_statistics(profile.samples)[metric].to_numpy(dtype=np.float64)
    weights = np.rint(np.nan_to_num(values, nan=0.0)).astype(np.int64).tolist()
    stacks = [[ROOT] + [_frame(m) for m in modules] + [_frame(name)]
              for modules, name in zip(profile.nodes["module_stack"], profile.nodes["name"])]
    return list(zip(stacks, weights))


def folded_stacks(profile: Profile, metric: str = "median") -> list[str]:
    """One folded line per node: ``root;mod;mod.sub;node <weight ns>``.

    >>> folded_stacks(prof)[:1]  # doctest: +SKIP
    ['root;layer1;layer1.0;layer1.0.conv1;layer1_0_conv1 41250']
    """
    return [f"{';'.join(frames)} {weight}" for frames, weight in stack_weights(profile, metric)]


def export_stacks(profile: Profile, path, metric: str = "median") -> None:
    """Write folded stacks (one line per node, weights in ns of ``metric``) to ``path``.

    ``metric``: median | mean | total | min | max. Read by ``flamegraph.pl stacks.txt >
    fg.svg`` and by https://www.speedscope.app.

    >>> export_stacks(prof, "stacks.txt", metric="total")  # doctest: +SKIP
    """
    lines = folded_stacks(profile, metric)
    with open_output(path) as stream:
        stream.write("".join(line + "\n" for line in lines))


def _tree(stacks: list[tuple[list[str], int]]) -> dict:
    """Merge stacks into a tree of {"name", "weight" (inclusive), "children" (ordered dict)}."""
    root = {"name": ROOT, "weight": 0, "children": {}}
    for frames, weight in stacks:
        node = root
        node["weight"] += weight
        for name in frames[1:]:
            node = node["children"].setdefault(name, {"name": name, "weight": 0, "children": {}})
            node["weight"] += weight
    return root


def _layout(root: dict) -> list[tuple[int, int, dict]]:
    """(depth, weight offset from the left, tree node) for every frame, parents first."""
    frames, pending = [], [(0, 0, root)]
    while pending:
        depth, offset, node = pending.pop()
        frames.append((depth, offset, node))
        child_offset = offset
        children = []
        for child in node["children"].values():
            children.append((depth + 1, child_offset, child))
            child_offset += child["weight"]
        pending.extend(reversed(children))
    return frames


def _color(name: str) -> str:
    """A deterministic warm colour (flamegraph.pl's "hot" palette) from the frame name."""
    v = zlib.crc32(name.encode("utf-8"))
    return f"rgb({205 + v % 50},{(v >> 8) % 230},{(v >> 16) % 55})"


def _label(name: str, width: float) -> str:
    """The frame name cut to fit ``width`` px ('..' marks a cut), or '' when too narrow."""
    fits = int((width - 6) / _CHAR_WIDTH)
    if fits < 3:
        return ""
    return name if len(name) <= fits else name[:fits - 2] + ".."


def _short_name(name: str) -> str:
    """A frame's visible name: the last part of a module path, with its parent when that part is
    an index ('layer1.0.conv1' -> 'conv1', 'layer1.0' -> 'layer1.0'). Tooltips keep the path.

    >>> _short_name("layer1.0.conv1"), _short_name("layer1.0"), _short_name("conv1")
    ('conv1', 'layer1.0', 'conv1')
    """
    parts = name.split(".")
    keep = 2 if len(parts) > 1 and parts[-1].isdigit() else 1
    return ".".join(parts[-keep:])


def _frame_svg(name: str, weight: int, total: int, x: float, y: float, width: float) -> str:
    pct = 100.0 * weight / total if total else 0.0
    tip = html.escape(f"{name} ({format_ns(weight)}, {pct:.2f}%)")
    text = html.escape(_label(_short_name(name), width))
    parts = [f"<g><title>{tip}</title>",
             f'<rect x="{x:.2f}" y="{y:.1f}" width="{width:.2f}" height="{FRAME_HEIGHT - 1}" '
             f'fill="{_color(name)}" rx="2"/>']
    if text:
        parts.append(f'<text x="{x + 3:.2f}" y="{y + FRAME_HEIGHT - 4:.1f}">{text}</text>')
    return "".join(parts) + "</g>"


def flamegraph_svg(profile: Profile, metric: str = "median", title: str | None = None) -> str:
    """The flame graph as an SVG document (root at the bottom, widths by inclusive weight)."""
    root = _tree(stack_weights(profile, metric))
    frames = _layout(root)
    depth = max(d for d, _, _ in frames)
    height = HEADER + (depth + 1) * FRAME_HEIGHT + PAD
    scale = (WIDTH - 2 * PAD) / root["weight"] if root["weight"] else 0.0
    title = title or f"pyfxprof flame graph: {profile.meta.get('model', '?')}"
    subtitle = (f"{metric} per node, inclusive by module · total {format_ns(root['weight'])} · "
                f"{profile.n_nodes} nodes · {profile.n_runs} runs")
    lines = [
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>',
        f'<svg version="1.1" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
        f'height="{height}" viewBox="0 0 {WIDTH} {height}" '
        f'font-family="Verdana, sans-serif" font-size="{FONT_SIZE}">',
        '<rect x="0" y="0" width="100%" height="100%" fill="#f8f8f8"/>',
        f'<text x="{WIDTH / 2}" y="24" text-anchor="middle" font-size="17">'
        f"{html.escape(title)}</text>",
        f'<text x="{WIDTH / 2}" y="42" text-anchor="middle" fill="#555">'
        f"{html.escape(subtitle)}</text>",
    ]
    for d, offset, node in frames:
        y = height - PAD - (d + 1) * FRAME_HEIGHT
        lines.append(_frame_svg(node["name"], node["weight"], root["weight"],
                                PAD + offset * scale, y, node["weight"] * scale))
    lines.append("</svg>")
    return "\n".join(lines) + "\n"


def export_flamegraph(profile: Profile, path, metric: str = "median",
                      title: str | None = None) -> None:
    """Write a self-contained SVG flame graph (no Perl needed) of ``profile`` to ``path``.

    One rectangle per module and node, width proportional to its inclusive ``metric`` time;
    labels are cut to fit and every frame has a tooltip with its name, time and percent.

    >>> export_flamegraph(prof, "flame.svg", metric="median", title="ResNet-18")  # doctest: +SKIP
    """
    svg = flamegraph_svg(profile, metric=metric, title=title)
    with open_output(path) as stream:
        stream.write(svg)
