"""Chrome / Perfetto traces of a RankProfiles, built from views.chrome_trace's trace of each
rank (pid = rank, one process row per rank, ``distributedInfo`` with rank, world size and
backend).

Two outputs: one file holding every rank (for Perfetto / chrome://tracing), and a directory of
one file per rank, which is what Holistic Trace Analysis reads a multi-rank job from
(``TraceAnalysis(trace_dir=...)``). Each rank's timeline starts at 0 at its first exported
run: ranks' clocks are not compared (collectives keep their runs in step).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from ..data.files import PathLike, open_output
from ..data.rank_profiles import RankProfiles
from . import chrome_trace as single


def chrome_trace_of_ranks(ranks: RankProfiles, runs=None, max_runs: int | None = 20) -> dict:
    """Every rank in one trace: one process row per rank; ``otherData.ranks`` holds each
    rank's ``distributedInfo`` and ``otherData.failures`` the ranks that could not profile.

    >>> chrome_trace_of_ranks(ranks)["otherData"]["ranks"]["1"]   # doctest: +SKIP
    {'backend': 'gloo', 'rank': 1, 'world_size': 4}
    """
    events, infos = [], {}
    for rank, profile in ranks.profiles.items():
        trace = single.chrome_trace(profile, runs=runs, max_runs=max_runs, rank=rank,
                                    world_size=ranks.world_size)
        events += trace["traceEvents"]
        infos[str(rank)] = trace["distributedInfo"]
    other = {"producer": "pyfxprof", "world_size": ranks.world_size, "ranks": infos,
             "failures": {str(r): m for r, m in ranks.failures.items()}}
    return {"schemaVersion": 1, "traceEvents": events, "displayTimeUnit": "ms",
            "otherData": other}


def export_chrome_trace(ranks: RankProfiles, path: PathLike, runs: Iterable[int] | None = None,
                        max_runs: int | None = 20) -> None:
    """Write every rank in one Chrome/Perfetto trace (gzip when ``path`` ends in .gz).

    >>> export_chrome_trace(ranks, "ranks_trace.json.gz")   # doctest: +SKIP
    """
    trace = chrome_trace_of_ranks(ranks, runs, max_runs)
    with open_output(path) as stream:
        stream.write(json.dumps(trace, separators=(",", ":"), allow_nan=False))


def export_rank_traces(ranks: RankProfiles, directory: PathLike,
                       runs: Iterable[int] | None = None,
                       max_runs: int | None = 20) -> list[Path]:
    """Write ``rank_R.json`` per rank in ``directory`` (created) with views.chrome_trace's
    writer; returns the paths. ``TraceAnalysis(trace_dir=directory)`` of HTA loads them as one
    multi-rank trace.

    >>> export_rank_traces(ranks, "traces/")   # doctest: +SKIP
    [PosixPath('traces/rank_0.json'), PosixPath('traces/rank_1.json')]
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for rank, profile in ranks.profiles.items():
        path = directory / f"rank_{rank}.json"
        single.export_chrome_trace(profile, path, runs=runs, max_runs=max_runs, rank=rank,
                                   world_size=ranks.world_size)
        paths.append(path)
    return paths
