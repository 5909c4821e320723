"""Profile every torchvision classification model and a few detection/segmentation models.

Usage: python benchmarks/sweep_torchvision.py [--size 64] [--runs 3] [--warmup 1] [--threads 1]
       [--models resnet18 ssdlite320_mobilenet_v3_large ...] [--skip-extra]

Every model is built with weights=None and profiled with capture="auto" on a 1x3xSxS input
(a list of one 3xSxS image for detection models, which resize it inside). A model that
refuses the small input (ViTs, MaxViT, Inception v3) is retried at 224. Prints a markdown
table on stdout, one row per model as soon as it is done (progress and failures go to
stderr): model, input size, capture mode, nodes, coverage, median total of a run, model
FLOPs, and the wall time the whole profile() took.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import warnings
from pathlib import Path

import torch
import torchvision
from torchvision.models import detection, segmentation

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyfxprof  # noqa: E402
from machine import describe_machine  # noqa: E402
from pyfxprof.errors import PyfxprofError  # noqa: E402
from pyfxprof.data.units import format_flops  # noqa: E402
from pyfxprof.stats.node_statistics import summary_of_totals  # noqa: E402
from pyfxprof.data.units import format_ns, format_pct  # noqa: E402

#: Detection and segmentation builders: (module, name, takes a list of images).
EXTRA_MODELS = (
    (detection, "fasterrcnn_mobilenet_v3_large_320_fpn", True),
    (detection, "ssdlite320_mobilenet_v3_large", True),
    (detection, "retinanet_resnet50_fpn", True),
    (detection, "fcos_resnet50_fpn", True),
    (detection, "maskrcnn_resnet50_fpn", True),
    (segmentation, "lraspp_mobilenet_v3_large", False),
    (segmentation, "deeplabv3_mobilenet_v3_large", False),
    (segmentation, "fcn_resnet50", False),
)
FALLBACK_SIZE = 224
HEADER = ("| model | input | capture mode | nodes | coverage | total median | FLOPs | "
          "profile wall time |\n|---|---|---|---|---|---|---|---|")


def _inputs(size: int, as_list: bool) -> tuple:
    image = torch.rand(3, size, size, generator=torch.Generator().manual_seed(0))
    return ([image],) if as_list else (image[None],)


def _input_text(model: torch.nn.Module, size: int) -> str:
    """'SxS', and the size detection models resize images to inside (their FLOPs follow it)."""
    inner = getattr(getattr(model, "transform", None), "min_size", None)
    return f"{size}x{size}" + (f" (resized to {inner[0]})" if inner else "")


def _profile(model: torch.nn.Module, name: str, size: int, as_list: bool, args) -> str:
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the capture mode and notes are in the row
        prof = pyfxprof.profile(model, _inputs(size, as_list), runs=args.runs,
                                warmup=args.warmup, name=name, progress=False)
    wall = time.perf_counter() - started
    median = summary_of_totals(prof.run_totals)["median"]
    return (f"| {name} | {_input_text(model, size)} | {prof.meta['capture_mode']} | "
            f"{prof.n_nodes} | "
            f"{format_pct(100 * prof.meta['coverage'])} | {format_ns(median)} | "
            f"{format_flops(prof.meta.get('flops'))} | {wall:.1f} s |")


def sweep_one(module, name: str, as_list: bool, args) -> str:
    """One table row; a model that fails at every size gives a row saying why."""
    kwargs = {"weights": None}
    if module is not torchvision.models:
        kwargs["weights_backbone"] = None
    model = getattr(module, name)(**kwargs)
    error = None
    for size in dict.fromkeys((args.size, FALLBACK_SIZE)):
        try:
            return _profile(model, name, size, as_list, args)
        except PyfxprofError as failure:
            error = failure
            print(f"{name} at {size}x{size}: {failure}", file=sys.stderr)
    return f"| {name} | - | failed: {str(error)[:80]} | - | - | - | - | - |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--models", nargs="*", help="only these (names as in torchvision)")
    parser.add_argument("--skip-extra", action="store_true",
                        help="classification models only")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    todo = [(torchvision.models, name, False)
            for name in torchvision.models.list_models(module=torchvision.models)]
    todo += [] if args.skip_extra else list(EXTRA_MODELS)
    if args.models:
        todo = [entry for entry in todo if entry[1] in args.models]
    print(describe_machine(), end="\n\n")
    print(HEADER, flush=True)
    started = time.perf_counter()
    for module, name, as_list in todo:
        print(f"{name} ...", file=sys.stderr, flush=True)
        print(sweep_one(module, name, as_list, args), flush=True)
        gc.collect()
    print(f"\n{len(todo)} models in {time.perf_counter() - started:.0f} s, "
          f"{args.threads} thread(s), runs={args.runs}, warmup={args.warmup}", flush=True)


if __name__ == "__main__":
    main()
