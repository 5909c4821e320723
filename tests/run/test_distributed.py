"""pyfxprof.gather across real processes (gloo on CPU, torch.multiprocessing spawn): rank
metadata, the gathered RankProfiles, a straggler found by node and rank, a rank whose capture
fails, and a rank that never arrives (bounded by a timeout, never a hang)."""

from __future__ import annotations

import datetime
import json
import os
import socket
import time
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
import torch.multiprocessing as mp

import pyfxprof
from pyfxprof.data.rank_profiles import load_rank_profiles

#: The straggler's extra busy time in its slow node: far above any scheduling noise on a
#: loaded 2-core machine running 4 ranks.
SLOW_S = 0.020
#: Bound on a whole multi-process test; past it the processes are killed and the test fails.
DEADLINE_S = 240.0


@torch.library.custom_op("pyfxprof_tests::spin", mutates_args=())
def spin(x: torch.Tensor, seconds: float) -> torch.Tensor:
    """Busy-wait ``seconds`` then return a copy of ``x``: an operator of its own, so a node
    of every capture (fx, Dynamo) rather than Python between graphs."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass
    return x.clone()


@spin.register_fake
def _(x: torch.Tensor, seconds: float) -> torch.Tensor:
    return torch.empty_like(x)


def _spin_row(prof) -> str:
    """The name of the spin operator's row (fx names it after the operator, Dynamo after
    the variable it is assigned to)."""
    nodes = prof.nodes
    return nodes.loc[nodes["target"].astype(str).str.contains("spin"), "name"].iloc[0]


class DataParallelStep(torch.nn.Module):
    """Linear -> spin (slow on one rank) -> all_reduce (functional collective) -> relu."""

    def __init__(self, slow_s: float = 0.0):
        super().__init__()
        self.linear = torch.nn.Linear(16, 16)
        self.slow_s = slow_s

    def forward(self, x):
        y = spin(self.linear(x), self.slow_s)
        y = funcol.all_reduce(y, "sum", dist.group.WORLD)
        return torch.relu(y)


class InPlaceStep(DataParallelStep):
    """Linear -> spin (slow on one rank) -> dist.all_reduce in place, result ignored -> relu."""

    def forward(self, x):
        y = spin(self.linear(x), self.slow_s)
        dist.all_reduce(y)
        return torch.relu(y)


class InPlaceReduce(torch.nn.Module):
    """x * 2 -> dist.all_reduce in place -> relu: no spin, whose clock reads break dynamo's graph."""

    def forward(self, x):
        y = x * 2
        dist.all_reduce(y)
        return torch.relu(y)


class Broken(torch.nn.Module):
    """A model whose forward fails, so its capture and eager run both fail."""

    def forward(self, x):
        raise ValueError("this rank's model is broken on purpose")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _model_for(scenario: str, rank: int, world: int) -> torch.nn.Module:
    if scenario == "capture_fails":  # no collectives: the healthy ranks must not wait for rank 1
        return Broken() if rank == 1 else torch.nn.Linear(16, 16)
    slow = SLOW_S if scenario in ("straggler", "in_place") and rank == world - 1 else 0.0
    torch.manual_seed(0)
    return InPlaceStep(slow) if scenario == "in_place" else DataParallelStep(slow)


def _profile(model, api: str):
    """This rank's Profile (or the error it got), with profile() or the Profiler loop API."""
    x = torch.randn(4, 16)
    try:
        if api == "profile":
            return pyfxprof.profile(model, (x,), runs=10, warmup=2, progress=False)
        with pyfxprof.Profiler(model, schedule=pyfxprof.schedule(wait=0, warmup=1, active=8)
                               ) as profiler:
            for _ in range(9):
                profiler.model(x)
                profiler.step()
        return profiler.profiles[-1]
    except Exception as error:  # noqa: BLE001 — any failure is reported to rank 0
        return error


def _dynamo_communication(model) -> list[list[str]]:
    """[name, target] of the communication nodes of a dynamo capture of ``model``."""
    prof = pyfxprof.profile(model, (torch.randn(4, 16),), runs=2, warmup=1, progress=False,
                            capture="dynamo")
    nodes = prof.nodes[prof.nodes["communication"]]
    return nodes[["name", "target"]].values.tolist()


def _worker(rank: int, world: int, port: int, scenario: str, api: str, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=120))
    result = {"rank": rank}
    try:
        if scenario == "rank_vanishes" and rank == 1:
            return  # never calls gather: the others must give up, not hang
        prof = _profile(_model_for(scenario, rank, world), api)
        if isinstance(prof, pyfxprof.Profile):
            result["meta"] = prof.meta.get("distributed")
            result["capture_mode"] = prof.meta.get("capture_mode")
        timeout = 8.0 if scenario == "rank_vanishes" else 120.0
        ranks = pyfxprof.gather(prof, timeout=timeout)
        result["gathered"] = ranks is not None
        if ranks is not None:
            ranks.save(Path(out) / "ranks.json")
        if scenario == "in_place":
            result["dynamo_comm"] = _dynamo_communication(InPlaceReduce())
    except pyfxprof.PyfxprofError as error:
        result["error"] = str(error)
    finally:
        (Path(out) / f"result{rank}.json").write_text(json.dumps(result))
        if scenario != "rank_vanishes":
            dist.destroy_process_group()


def run_ranks(world: int, scenario: str, out: Path, api: str = "profile") -> list[dict]:
    """Run ``world`` ranks of ``scenario`` profiling with ``api`` ("profile" or "loop"); their
    result dicts, by rank. Fails (never hangs) past DEADLINE_S."""
    context = mp.spawn(_worker, args=(world, _free_port(), scenario, api, str(out)),
                       nprocs=world, join=False)
    deadline = time.monotonic() + DEADLINE_S
    while not context.join(timeout=5):
        if time.monotonic() > deadline:
            for process in context.processes:
                process.kill()
            pytest.fail(f"{world} ranks of {scenario!r} still running after {DEADLINE_S} s")
    return [json.loads((out / f"result{r}.json").read_text()) for r in range(world)]


@pytest.mark.parametrize("world, api", [(2, "loop"), (4, "profile")])
def test_the_slow_node_and_rank_are_found_as_the_straggler(world, api, tmp_path):
    results = run_ranks(world, "straggler", tmp_path, api)
    assert [r["meta"]["rank"] for r in results] == list(range(world))
    assert {r["meta"]["world_size"] for r in results} == {world}
    assert [r["gathered"] for r in results] == [True] + [False] * (world - 1)
    ranks = load_rank_profiles(tmp_path / "ranks.json")
    assert ranks.ranks == list(range(world)) and ranks.failures == {}
    assert {p.n_runs for p in ranks.profiles.values()} == {8 if api == "loop" else 10}
    top, spin_row = ranks.stragglers().iloc[0], _spin_row(ranks.profiles[0])
    assert (top["name"], top["rank"]) == (spin_row, world - 1)
    assert top["excess"] > 0.5 * SLOW_S * 1e9
    frame = ranks.to_dataframe()
    assert frame.loc[spin_row, "slowest_rank"] == world - 1
    nodes = ranks.profiles[0].nodes
    comm = nodes[nodes["communication"]]["target"].astype(str)
    assert comm.str.contains("all_reduce").any() and comm.str.contains("wait_tensor").any()
    assert set(nodes[nodes["communication"]]["name"]) <= set(frame.index[frame["communication"]])
    waits = ranks.waits().sum(axis=0)  # the fast ranks wait in the collective for the slow one
    assert waits.idxmin() == world - 1 and waits.drop(world - 1).min() > 0.5 * SLOW_S * 1e9


def test_an_in_place_all_reduce_is_timed_as_communication(tmp_path):
    results = run_ranks(2, "in_place", tmp_path, "loop")  # the loop's Dynamo capture
    assert [r["capture_mode"] for r in results] == ["dynamo", "dynamo"]
    ranks = load_rank_profiles(tmp_path / "ranks.json")
    nodes = ranks.profiles[0].nodes
    comm = sorted(nodes.loc[nodes["communication"], "target"].astype(str))
    assert comm == ["torch.ops._c10d_functional.all_reduce",
                    "torch.ops._c10d_functional.wait_tensor"], comm
    summary = ranks.rank_summary()  # rank 0 waits in the all_reduce for the slow rank 1
    assert summary.loc[0, "communication"] > 0.5 * SLOW_S * 1e9
    assert summary.loc[0, "compute"] < summary.loc[1, "compute"] - 0.5 * SLOW_S * 1e9
    assert summary.loc[0, "wait"] > 0.5 * SLOW_S * 1e9 > summary.loc[1, "wait"]
    assert "comm" in ranks.table()
    # dynamo turns it into a functional all_reduce and its wait, both communication
    assert results[0]["dynamo_comm"] == [
        ["tensor", "torch.ops._c10d_functional.all_reduce"],
        ["wait_tensor", "torch.ops._c10d_functional.wait_tensor"]]


def test_a_rank_whose_capture_fails_is_reported_and_nobody_hangs(tmp_path):
    started = time.monotonic()
    results = run_ranks(4, "capture_fails", tmp_path)
    assert time.monotonic() - started < DEADLINE_S
    assert all("error" not in r for r in results)
    ranks = load_rank_profiles(tmp_path / "ranks.json")
    assert ranks.ranks == [0, 2, 3] and list(ranks.failures) == [1]
    assert "broken on purpose" in ranks.failures[1]
    assert "rank 1 FAILED" in ranks.table()


def test_a_rank_that_never_gathers_makes_the_others_give_up_within_the_timeout(tmp_path):
    started = time.monotonic()
    results = run_ranks(2, "rank_vanishes", tmp_path)
    assert time.monotonic() - started < DEADLINE_S
    assert "gave up after 8 s" in results[0]["error"]
    assert "not called pyfxprof.gather" in results[0]["error"]


# ---- without processes ------------------------------------------------------------------------

def _small_profile() -> pyfxprof.Profile:
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    return pyfxprof.profile(model, (torch.randn(2, 4),), runs=3, warmup=1, progress=False)


def test_rank_metadata_comes_from_torchruns_environment_without_a_process_group(monkeypatch):
    from pyfxprof.run.distributed import rank_meta
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "8")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert rank_meta() == {"distributed": {"rank": 3, "world_size": 8, "backend": None,
                                           "source": "environment", "local_rank": 1}}
    monkeypatch.setenv("RANK", "x")
    assert rank_meta() == {}


def test_the_wire_encoding_round_trips_a_profile_and_carries_a_failure():
    from pyfxprof.run.distributed import _decode, _encode
    prof = _small_profile()
    header, text, payload = _encode(prof)
    from pyfxprof.data.validate import ARRAY_FIELDS
    arrays = [getattr(prof, f.key) for f in ARRAY_FIELDS if getattr(prof, f.key) is not None]
    assert str(payload.dtype) == "int64" and payload.size == sum(a.size for a in arrays)
    document = json.loads(text)  # the arrays travel as int64, not as base64 in the JSON
    assert document["samples"] == {"$payload": [0, list(prof.samples.shape)]}
    assert _decode(header, text, payload) == prof
    header, text, payload = _encode(ValueError("capture failed: no graph"))
    assert _decode(header, text, payload) == "capture failed: no graph" and payload.size == 0


def test_gather_without_a_process_group_is_a_world_of_one():
    prof = _small_profile()
    ranks = pyfxprof.gather(prof)
    assert ranks.ranks == [0] and ranks.world_size == 1 and ranks.profiles[0] is prof
    with pytest.raises(pyfxprof.PyfxprofError, match="this process has no profile"):
        pyfxprof.gather(RuntimeError("boom"))
