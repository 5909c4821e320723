"""`pyfxprof profile [MODEL]`: profile a model and print its per-node table."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from ...errors import PyfxprofError, first_line
from ...run.distributed import DEFAULT_TIMEOUT
from ...run.runner import CHOICES, profile
from ...run.timed_runs import AUTO_WARMUP_MAX
from ...run.wall_clock import format_timings, process_age_s
from .arg_types import node_names, positive_int, warmup_count
from .latency_args import add_latency_arguments, chosen_runs, print_latency
from .arg_types import device_name
from .compile_args import add_compile_arguments, compile_option, print_compiled
from .defaults import defaults_of
from .model_args import add_model_arguments, model_and_inputs
from .roofline_args import add_roofline_argument, print_roofline_table, with_peaks
from .report import (add_export_arguments, add_table_arguments, print_ranks, print_table,
                     write_exports)


#: profile()'s defaults, which the options of the same names take (tests/cli/commands/
#: test_profile.py checks every option profile_arguments passes against the signature).
DEFAULTS = defaults_of(profile)


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("profile", help="profile a model and print per-node times",
                                   description="Time every node of a model with native timers.")
    add_model_arguments(parser)
    parser.add_argument("--runs", type=int, default=DEFAULTS["runs"], metavar="N",
                        help=f"timed runs (default {DEFAULTS['runs']})")
    parser.add_argument("--warmup", type=warmup_count, default=DEFAULTS["warmup"], metavar="N",
                        help="untimed runs first: N, or auto (until their times have settled, "
                             f"at most {AUTO_WARMUP_MAX}); default {DEFAULTS['warmup']}")
    parser.add_argument("--mode", choices=CHOICES["mode"], default=DEFAULTS["mode"])
    parser.add_argument("--device", default=DEFAULTS["device"], type=device_name,
                        help="run on this device, e.g. cuda or cuda:1 (GPU runs also time "
                             "every node with CUDA events); default cpu")
    parser.add_argument("--capture", choices=CHOICES["capture"], default=DEFAULTS["capture"],
                        help=f"how to capture the model (default {DEFAULTS['capture']}: FX, "
                             "then TorchDynamo, then FX leafing the failing submodules, then module hooks, then "
                             "whole-model timing)")
    parser.add_argument("--granularity", choices=CHOICES["granularity"],
                        default=DEFAULTS["granularity"],
                        help="nodes are torch functions and methods (function) or aten ops "
                             f"(aten, through TorchDynamo); default {DEFAULTS['granularity']}")
    add_compile_arguments(parser)
    parser.add_argument("--backward", action="store_true",
                        help="time training steps: the model in train mode, forward, loss "
                             "(the output if scalar, its .loss, else output.sum()) and backward, "
                             "with a backward column per node")
    parser.add_argument("--profile-memory", action="store_true",
                        help="also measure each node's allocated, freed and peak bytes (torch's "
                             "allocator events, in the untimed analysis run) and show them")
    parser.add_argument("--library-frames", action="store_true",
                        help="keep torch's and transformers' frames in source lines (default: "
                             "model code only)")
    parser.add_argument("--nvtx", action="store_true",
                        help="push an NVTX range named like each node's trace slice around its "
                             "timed call, for Nsight Systems / Compute (docs/gpu.md)")
    _add_alone_arguments(parser)
    add_table_arguments(parser)
    add_roofline_argument(parser)
    add_latency_arguments(parser)
    parser.add_argument("--advise", action="store_true",
                        help="print optimisation suggestions drawn from the profile")
    parser.add_argument("--save", metavar="PATH",
                        help="save the profile as JSON (gzip when PATH ends in .gz)")
    parser.add_argument("--timings", action="store_true",
                        help="print where the command's wall time went (imports, capture, "
                             "analysis run, calibration, warm-up and timed runs, rendering) "
                             "on stderr")
    add_export_arguments(parser)
    _add_distributed_arguments(parser)
    parser.set_defaults(func=run)


def _add_alone_arguments(parser: argparse.ArgumentParser) -> None:
    """--alone NODES and --no-alone: profile()'s alone= (docs/accuracy.md)."""
    parser.add_argument("--alone", type=node_names, default=DEFAULTS["alone"],
                        metavar="NODES",
                        help="time these nodes alone (names or module paths, comma-separated) "
                             "beside their rows; default: the top rows, within a tenth of the "
                             "profile's time (docs/accuracy.md)")
    parser.add_argument("--no-alone", dest="alone", action="store_false",
                        help="time no node alone (no Alone column)")


def _add_distributed_arguments(parser: argparse.ArgumentParser) -> None:
    """--ranks-out and --gather-timeout, for jobs run under torchrun."""
    group = parser.add_argument_group("distributed jobs (torchrun --nproc-per-node N -m pyfxprof "
                                      "profile ...)")
    group.add_argument("--ranks-out", metavar="DIR",
                       help="each rank writes DIR/rank_R.json; rank 0 gathers every rank's "
                            "profile, writes DIR/ranks.json and prints the rank table")
    group.add_argument("--gather-timeout", type=positive_int, default=int(DEFAULT_TIMEOUT),
                       metavar="S", help="give up waiting for the other ranks after S seconds "
                                         f"(default {DEFAULT_TIMEOUT:g})")


def profile_arguments(args: argparse.Namespace) -> dict[str, Any]:
    """profile()'s keyword arguments from the parsed options (every call site uses this).

    >>> profile_arguments(argparse.Namespace(runs=5, warmup=1, mode="codegen", device=None,
    ...     capture="auto", granularity="aten", compile=False, compile_mode=None,
    ...     compare_eager=False, backward=False, profile_memory=True,
    ...     library_frames=False, nvtx=False))["granularity"]
    'aten'
    """
    return {"runs": args.runs, "warmup": args.warmup, "mode": args.mode, "device": args.device,
            "capture": args.capture, "granularity": args.granularity,
            "compile": compile_option(args), "backward": args.backward,
            "profile_memory": args.profile_memory, "library_frames": args.library_frames,
            "nvtx": args.nvtx, "alone": getattr(args, "alone", DEFAULTS["alone"])}


def run(args: argparse.Namespace) -> int:
    if args.ranks_out:
        return run_ranks(args)
    marks = [getattr(args, "started", None), time.perf_counter()]  # see print_timings
    model, inputs, name = model_and_inputs(args, programs=True)
    if args.backward:
        _train(model)
    options = profile_arguments(args)
    marks.append(time.perf_counter())
    prof = profile(model, inputs, name=name, **options)
    marks.append(time.perf_counter())
    if args.roofline:  # the peaks in its meta, so that --save keeps them
        print_roofline_table(chosen_runs(with_peaks(prof), args), args)
    else:
        print_table(chosen_runs(prof, args), args)
    print_latency(chosen_runs(prof, args), args)
    if options["compile"] is not None:
        eager = (profile(model, inputs, name=name, **dict(options, compile=None))
                 if args.compare_eager else None)
        print_compiled(prof, eager, args.top)
    if args.advise:
        print()
        print(prof.advise())
    if args.save:
        prof.save(args.save)
        print(f"wrote profile to {args.save}", file=sys.stderr)
    write_exports(prof, args)
    if args.timings:
        print_timings(prof, marks + [time.perf_counter()], getattr(args, "program", False))
    return 0


def _train(model) -> None:
    """``model.train()`` for --backward; an exported program has no modes (profile() then
    refuses backward=True in one line)."""
    try:
        model.train()
    except (AttributeError, NotImplementedError):  # ExportedProgram, or its module
        pass


def print_timings(prof, marks: list, program: bool = False) -> None:
    """--timings: on stderr, the wall seconds of the interpreter's start (the process's age at
    cli.main's start, when main is the `program` and the age is known), the imports (from
    cli.main's start, `marks[0]`, None when unknown), loading the model, profile()'s steps
    (meta["wall_s"]) and the rest of it, and the rendering; `marks` are the perf_counter
    readings between them."""
    started, loading, profiling, rendering, done = marks
    age = process_age_s() if program else None
    steps = {} if started is None or age is None else {
        "start": max(age - (time.perf_counter() - started), 0.0)}
    steps["imports"] = loading - (loading if started is None else started)
    steps["model"] = profiling - loading
    wall_s = prof.meta.get("wall_s", {})
    steps.update(wall_s)
    steps["other"] = rendering - profiling - sum(wall_s.values())
    steps["rendering"] = done - rendering
    print(format_timings(steps), file=sys.stderr)


def run_ranks(args: argparse.Namespace) -> int:
    """--ranks-out: this rank's profile to DIR/rank_R.json, every rank's gathered on rank 0
    into DIR/ranks.json with the rank table printed; exit 2 when any rank could not profile.

    >>> run_ranks(build_parser().parse_args(["profile", "--ranks-out", "out"]))  # doctest: +SKIP
    0
    """
    from ...run.distributed import barrier, gather, init_from_environment
    import torch.distributed as dist
    out = Path(args.ranks_out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise PyfxprofError(f"--ranks-out {out}: {error.strerror or error}; give a directory "
                            "(it is created when missing)") from None
    owned = init_from_environment(args.device, args.gather_timeout)
    try:
        rank = dist.get_rank() if dist.is_initialized() else 0
        prof = _profile_or_error(args)
        if not isinstance(prof, BaseException):
            prof.save(out / f"rank_{rank}.json")
            print(f"rank {rank}: wrote profile to {out / f'rank_{rank}.json'}", file=sys.stderr)
        ranks = gather(prof, timeout=args.gather_timeout)
        if ranks is not None:
            ranks.save(out / "ranks.json")
            print_ranks(ranks, args)
            print(f"wrote every rank's profile to {out / 'ranks.json'}", file=sys.stderr)
        barrier(args.gather_timeout)  # torchrun stops every rank at the first exit with an error
    finally:
        if owned:
            dist.destroy_process_group()
    if isinstance(prof, BaseException):
        raise PyfxprofError(f"rank {rank} could not profile: {prof}")
    if ranks is not None and ranks.failures:
        raise PyfxprofError(f"ranks {sorted(ranks.failures)} could not profile (their errors "
                            f"are in the table above and in {out / 'ranks.json'})")
    return 0


def _profile_or_error(args: argparse.Namespace):
    """This rank's Profile, or the exception it got (reported to rank 0 by gather)."""
    try:
        model, inputs, name = model_and_inputs(args, programs=True)
        if args.backward:
            _train(model)
        return profile(model, inputs, name=name, progress=False, **profile_arguments(args))
    except Exception as error:  # noqa: BLE001 — any failure is this rank's report
        return PyfxprofError(first_line(error))
