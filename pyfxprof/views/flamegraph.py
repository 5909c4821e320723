"""The built-in flame graph: one self-contained, interactive SVG (no Perl, no network).

Frames come from the folded stacks (``views.stacks``): root at the bottom, one row per module
level, widths by inclusive weight; a node that is not a module call is a leaf frame named by its
module and op (``c_fc · addmm``; the tooltip adds the op in full and the node). Click a frame to
zoom into it, "Reset zoom" to go back, "Search" (or Ctrl+F) to highlight frames whose module
path or op matches a regular expression (case-insensitive), with the share they cover; an
invalid expression is reported in the bottom bar. Hovering shows a frame's full name, time and
percent. The height fits the tree's depth.
"""

from __future__ import annotations

import html
import json
import zlib
from importlib import resources

from ..data.files import PathLike, open_output
from ..data.profile import Profile
from ..data.units import format_ns
from .safe_text import xml_text
from .stacks import frame_name, stack_tree, stack_weights, with_functions
from ..data.op_names import op_names

#: SVG geometry in px: width, one frame's height, margins, title block, bottom bar, font.
WIDTH, FRAME_HEIGHT, PAD, HEADER, FOOTER, FONT_SIZE = 1200, 18, 10, 56, 22, 12
_CHAR_WIDTH = 0.59 * FONT_SIZE


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
    v = zlib.crc32(name.encode("utf-8", "surrogatepass"))  # names may hold lone surrogates
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


def _op_short(op: str) -> str:
    """An op without its namespace: 'aten::addmm', 'torch.addmm' -> 'addmm'.

    >>> _op_short("aten::addmm"), _op_short("torch.nn.functional.gelu"), _op_short("Conv2d")
    ('addmm', 'gelu', 'Conv2d')
    """
    return op.rpartition("::")[2].rpartition(".")[2] or op


def _leaf_ops(profile: Profile) -> dict:
    """Leaf frame name (a node that is not its module's call) -> (module path, op)."""
    nodes = profile.nodes
    return {frame_name(name): (str(path), op)
            for name, call, path, op in zip(nodes["name"], nodes["op"], nodes["module_path"],
                                            op_names(nodes)) if call != "call_module"}


def _names(name: str, types: dict, leaf_ops: dict) -> tuple[str, str, str]:
    """(tooltip name, visible label, text that search matches) of one frame."""
    if name in leaf_ops and name not in types:
        path, op = leaf_ops[name]
        short = f"{_short_name(path)} · {_op_short(op)}" if path else op
        return f"{path + ' · ' if path else ''}{op} (node {name})", short, f"{path} {op}"
    kind = types.get(name, "")
    short = _short_name(name)
    if short.isdigit() and kind:  # a container's child ("0") reads better with its type
        short = f"{short} {kind}"
    return f"{name}{f' ({kind})' if kind else ''}", short, f"{name} {kind}"


def _frame_svg(frame: tuple, total: int, scale: float, y: float, names: tuple) -> str:
    depth, offset, node = frame
    name, weight = node["name"], node["weight"]
    x, width = PAD + offset * scale, weight * scale
    pct = 100.0 * weight / total if total else 0.0
    full, short, search = _names(name, *names)
    tip = html.escape(f"{full}: {format_ns(weight)}, {pct:.2f}%")
    color = _color(search)
    attrs = (f'class="frame" data-name="{html.escape(name)}" data-label="{html.escape(short)}" '
             f'data-search="{html.escape(search)}" '
             f'data-x="{offset}" data-w="{weight}" data-d="{depth}" data-fill="{color}"')
    return (f"<g {attrs}><title>{tip}</title>"
            f'<rect x="{x:.2f}" y="{y:.1f}" width="{width:.2f}" height="{FRAME_HEIGHT - 1}" '
            f'fill="{color}" rx="2"/>'
            f'<text x="{x + 3:.2f}" y="{y + FRAME_HEIGHT - 5:.1f}">'
            f"{html.escape(_label(short, width))}</text></g>")


def _controls(height: int, title: str, subtitle: str) -> list[str]:
    """Title, subtitle, the zoom-reset and search buttons, and the bottom details bar."""
    return [
        '<rect x="0" y="0" width="100%" height="100%" fill="#f8f8f8"/>',
        f'<text x="{WIDTH / 2}" y="24" text-anchor="middle" font-size="17">'
        f"{html.escape(title)}</text>",
        f'<text x="{WIDTH / 2}" y="44" text-anchor="middle" fill="#555">'
        f"{html.escape(subtitle)}</text>",
        f'<text data-part="reset" x="{PAD}" y="24" class="button" style="display:none">'
        "Reset zoom</text>",
        f'<text data-part="search" x="{WIDTH - PAD}" y="24" text-anchor="end" class="button">'
        "Search</text>",
        f'<text data-part="details" x="{PAD}" y="{height - 7}"> </text>',
        f'<text data-part="matched" x="{WIDTH - PAD}" y="{height - 7}" text-anchor="end"></text>',
    ]


def flamegraph_svg(profile: Profile, metric: str = "median", title: str | None = None,
                   by: str = "module") -> str:
    """The flame graph as an SVG document (root at the bottom, widths by inclusive weight).

    >>> flamegraph_svg(prof)[:5]  # doctest: +SKIP
    '<?xml'
    """
    root = stack_tree(with_functions(profile, stack_weights(profile, metric, by)))
    frames = _layout(root)
    depth = max(d for d, _, _ in frames)
    height = HEADER + (depth + 1) * FRAME_HEIGHT + FOOTER
    scale = (WIDTH - 2 * PAD) / root["weight"] if root["weight"] else 0.0
    title = title or f"pyfxprof flame graph: {profile.meta.get('model', '?')}"
    subtitle = (f"{metric} per node, inclusive by {by} · total {format_ns(root['weight'])} · "
                f"{profile.n_nodes} nodes · {profile.n_runs} runs · click to zoom")
    geometry = {"width": WIDTH, "pad": PAD, "charWidth": _CHAR_WIDTH, "total": root["weight"]}
    package = __name__.rpartition(".")[0]
    script = resources.files(package).joinpath("flamegraph_script.js").read_text("utf-8")
    lines = [
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>',
        f'<svg version="1.1" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
        f'height="{height}" viewBox="0 0 {WIDTH} {height}" '
        f"data-geometry='{json.dumps(geometry)}' "
        f'font-family="Verdana, sans-serif" font-size="{FONT_SIZE}">',
        "<style>.frame{cursor:pointer}.frame:hover rect{stroke:#000;stroke-width:0.8}"
        ".button{cursor:pointer;fill:#1f5fbf;text-decoration:underline}</style>",
        *_controls(height, title, subtitle),
    ]
    types = dict(zip(profile.nodes["module_path"].astype(str),
                     profile.nodes["module_type"].astype(str)))
    names = (types, _leaf_ops(profile))
    lines += [_frame_svg(frame, root["weight"], scale,
                         height - FOOTER - (frame[0] + 1) * FRAME_HEIGHT, names)
              for frame in frames]
    lines.append(f"<script><![CDATA[\n{script}]]></script>")
    lines.append("</svg>")
    return xml_text("\n".join(lines) + "\n")


def export_flamegraph(profile: Profile, path: PathLike, metric: str = "median",
                      title: str | None = None, by: str = "module") -> None:
    """Write a self-contained, interactive SVG flame graph of ``profile`` to ``path``.

    One rectangle per module and node, width proportional to its inclusive ``metric`` time;
    labels are cut to fit and every frame has a tooltip with its name, time and percent.
    Open it in a browser to zoom (click) and search (Ctrl+F). ``by="source"``: frames are
    the model-code lines that created the nodes instead of modules.

    >>> export_flamegraph(prof, "flame.svg", metric="median", title="ResNet-18")  # doctest: +SKIP
    """
    svg = flamegraph_svg(profile, metric=metric, title=title, by=by)
    with open_output(path) as stream:
        stream.write(svg)
