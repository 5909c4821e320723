"""Make pyfxprof's user-facing outputs from a small model and screenshot them in headless
Chromium, to look at before calling a view done:

    python scripts/screenshots.py OUT_DIR

Writes OUT_DIR/{flame.svg, report.html, notebook.ipynb, notebook.html, trace.json} and one PNG
per page under OUT_DIR/shots/ (with scripts/screenshots.sh). Needs chromium (Debian package)
and, for the notebook, nbconvert with a python3 kernel.
"""

import subprocess
import sys
from pathlib import Path

import nbformat
import torch
from nbconvert.preprocessors import CoalesceStreamsPreprocessor, ExecutePreprocessor
from nbconvert import HTMLExporter

import pyfxprof

ROOT = Path(__file__).resolve().parents[1]
CELLS = [
    "import torch, pyfxprof\n"
    "model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), torch.nn.BatchNorm2d(16),\n"
    "                            torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(16 * 30 * 30, 10))\n"
    "model.eval(); x = torch.randn(8, 3, 32, 32)\n"
    "prof = pyfxprof.profile(model, (x,), runs=30, warmup=5, name='small CNN')\n"
    "prof",
    "prof.plot(top=5)",
    "fused = pyfxprof.profile(pyfxprof.fuse_conv_bn(model), (x,), runs=30, warmup=5, name='fused')\n"
    "d = pyfxprof.diff(prof, fused, labels=('eager', 'fused'))\n"
    "d",
    "from pyfxprof.views.diff_plots import visualize_duration_diff\n"
    "visualize_duration_diff(d.changes(), top=6)",
    "prof.advise()",
]


def notebook(out_dir: Path) -> Path:
    """Execute the demo notebook and convert it to HTML; returns the HTML path."""
    book = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    ExecutePreprocessor(timeout=900, kernel_name="python3").preprocess(
        book, {"metadata": {"path": str(ROOT)}})
    book, _ = CoalesceStreamsPreprocessor().preprocess(book, {})  # \r as Jupyter shows it
    nbformat.write(book, out_dir / "notebook.ipynb")
    body, _ = HTMLExporter().from_notebook_node(book)
    (out_dir / "notebook.html").write_text(body)
    return out_dir / "notebook.html"


def main(out_dir: str) -> int:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3), torch.nn.BatchNorm2d(16),
                                torch.nn.ReLU(), torch.nn.Conv2d(16, 16, 3), torch.nn.ReLU())
    prof = pyfxprof.profile(model, (torch.randn(8, 3, 32, 32),), runs=20, warmup=3,
                            name="small CNN")
    prof.export_flamegraph(out / "flame.svg")
    prof.export_html(out / "report.html")
    prof.export_chrome_trace(out / "trace.json")
    pages = [out / "flame.svg", out / "report.html", notebook(out)]
    subprocess.run([str(ROOT / "scripts" / "screenshots.sh"), str(out / "shots"),
                    *map(str, pages)], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "screenshots"))
