"""The memory timeline of the analysis run (profile_memory=True): live bytes through the nodes,
with each node's peak, as a plot (.png/.svg/.pdf), JSON or a self-contained HTML page — the
counterpart of torch.profiler's export_memory_timeline."""

from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path

import numpy as np

from ..data.files import PathLike, open_output
from ..data.profile import Profile
from ..errors import PyfxprofError
from .figures import matplotlib_figure, save_figure

DEVICES = ("cpu", "cuda")


def memory_timeline(profile: Profile, device: str = "cpu") -> list[dict]:
    """Per node in execution order: name, bytes allocated / freed inside it, live bytes at its
    start and end and the highest live bytes inside it (all above the analysis run's start).

    >>> memory_timeline(prof)[0]  # doctest: +SKIP
    {'name': 'conv1', 'alloc_bytes': 262144, 'freed_bytes': 0, 'live_start_bytes': 0, ...}
    """
    if device not in DEVICES:
        raise PyfxprofError(f"device must be one of {list(DEVICES)}, got {device!r}")
    nodes = profile.nodes
    if f"{device}_live_bytes" not in nodes:
        raise PyfxprofError(f"this profile has no {device} memory figures: profile it with "
                            "pyfxprof.profile(model, inputs, profile_memory=True)")
    column = lambda figure: nodes[f"{device}_{figure}_bytes"].to_numpy(np.int64)  # noqa: E731
    alloc, freed, peak, live = column("alloc"), column("freed"), column("peak"), column("live")
    start = live - alloc + freed
    return [{"name": str(name), "alloc_bytes": int(a), "freed_bytes": int(f),
             "live_start_bytes": int(s), "live_end_bytes": int(e), "peak_bytes": int(s + p)}
            for name, a, f, s, e, p in zip(nodes["name"], alloc, freed, start, live, peak)]


def export_memory_timeline(profile: Profile, path: PathLike, device: str = "cpu") -> None:
    """Write the timeline: .json (memory_timeline's rows), .html (plot and table in one page)
    or an image (.png, .svg, .pdf).

    >>> export_memory_timeline(prof, "memory.html")  # doctest: +SKIP
    """
    rows = memory_timeline(profile, device)
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        _write_text(path, json.dumps({"device": device, "nodes": rows}, indent=1))
        return
    figure = _figure(profile, rows, device)
    if suffix != ".html":
        save_figure(figure, path)
        return
    png = io.BytesIO()
    figure.savefig(png, format="png", dpi=100)
    cells = "".join(f"<tr><td>{html.escape(r['name'])}</td><td>{r['alloc_bytes']}</td>"
                    f"<td>{r['freed_bytes']}</td><td>{r['peak_bytes']}</td>"
                    f"<td>{r['live_end_bytes']}</td></tr>" for r in rows)
    _write_text(
        path, "<!doctype html><meta charset='utf-8'><title>pyfxprof memory timeline</title>"
        f"<img src='data:image/png;base64,{base64.b64encode(png.getvalue()).decode()}'>"
        "<table><tr><th>node</th><th>allocated (B)</th><th>freed (B)</th><th>peak live (B)</th>"
        f"<th>live at end (B)</th></tr>{cells}</table>")


def _write_text(path, text: str) -> None:
    """``text`` written safely (files.open_output): a directory, a missing folder or a
    read-only target is a one-line PyfxprofError naming ``path``."""
    with open_output(path) as stream:
        stream.write(text)


def _figure(profile: Profile, rows: list[dict], device: str):
    """Live bytes (MiB) per node as steps, each node's peak as a dot."""
    Figure, FigureCanvasAgg = matplotlib_figure()
    figure = Figure(figsize=(10.0, 4.0), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    positions = np.arange(len(rows))
    mib = lambda key: np.array([r[key] for r in rows]) / 2**20  # noqa: E731
    axes.step(positions, mib("live_end_bytes"), where="post", label="live after the node")
    axes.plot(positions, mib("peak_bytes"), ".", label="peak inside the node")
    axes.set_xlabel("node (execution order)")
    axes.set_ylabel(f"{device} MiB above the run's start")
    axes.set_title(f"{profile.meta.get('model', '?')}: memory of the analysis run ({device})")
    axes.legend()
    axes.grid(alpha=0.3)
    return figure
