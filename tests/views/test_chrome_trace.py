import gzip
import json

import numpy as np
import pandas as pd
import pytest

from pyfxprof.errors import PyfxprofError
from pyfxprof.views.chrome_trace import DEVICE_TID, HOST_TID, chrome_trace, export_chrome_trace
from pyfxprof.data.profile import Profile

# Three runs of three nodes; overhead 10 ns per node boundary. Each node starts on the first whole
# µs after the previous one's end + 10 ns (so HTA, which rounds fractional timestamps, keeps every
# duration to the ns). Host layout of run 0, in ns:
#   a: start 0, dur 100     b: start 1000, dur 200     c: start 2000, dur 300  -> ends at 2300
# the next run starts on the next whole µs (3000); a zero-length ProfilerStep closes the trace.
SAMPLES = np.array([[100, 200, 300], [110, 210, 300], [100, 200, 500]], dtype=np.int64)
TOTALS = np.array([700, 600, 900], dtype=np.int64)


def make_nodes(**extra):
    nodes = pd.DataFrame({
        "index": [0, 1, 2], "name": ["a", "b", "c"],
        "op": ["call_module", "call_function", "call_method"],
        "target": ["conv", "torch.relu", "view"], "module_path": ["conv", "", "blk"],
        "module_type": ["Conv2d", "Net", "Block"], "module_stack": [("conv",), (), ("blk",)],
    })
    for name, values in extra.items():
        nodes[name] = values
    return nodes


def make_profile(nodes=None, device=None, run_starts=None, overhead=10.0):
    nodes = make_nodes() if nodes is None else nodes
    meta = {"model": "toy", "device": "cuda:0", "overhead_ns": overhead}
    return Profile(nodes, SAMPLES, TOTALS, meta, device_samples=device, run_starts=run_starts)


def random_profile(runs=20, n=15, seed=3, device=True, run_starts=False):
    rng = np.random.default_rng(seed)
    samples = rng.integers(0, 50_000, size=(runs, n))
    nodes = pd.DataFrame({
        "index": range(n), "name": [f"n{i}" for i in range(n)], "op": ["call_function"] * n,
        "target": ["f"] * n, "module_path": [""] * n, "module_type": ["M"] * n,
        "module_stack": [()] * n})
    totals = samples.sum(axis=1) - rng.integers(0, 1000, size=runs)
    starts = np.cumsum(rng.integers(10**6, 2 * 10**6, size=runs)) + 10**15 if run_starts else None
    device_samples = rng.integers(0, 60_000, size=(runs, n)) if device else None
    return Profile(nodes, samples, totals, {"model": "rand", "overhead_ns": 37.3},
                   device_samples, starts)


def complete_events(trace, tid=HOST_TID):
    return [e for e in trace["traceEvents"] if e["ph"] == "X" and e["tid"] == tid]


def assert_strictly_nested(events):
    """Trace Event Format nesting on each (pid, tid): two slices either nest or do not touch,
    with ends computed in floating point as TensorBoard does; events already sorted parents first
    (by ts, then longer first)."""
    tracks = {}
    for event in events:
        if event["ph"] == "X":
            tracks.setdefault((event["pid"], event["tid"]), []).append(event)
    for track in tracks.values():
        assert track == sorted(track, key=lambda e: (e["ts"], -e["dur"]))
        open_ends = []
        for event in track:
            start, end = event["ts"], event["ts"] + event["dur"]  # float sums, as readers do
            while open_ends and open_ends[-1] <= start:
                open_ends.pop()
            assert not open_ends or end <= open_ends[-1], event
            open_ends.append(end)


def steps(events):
    return [e for e in events if e["name"].startswith(("ProfilerStep#", "device step"))]


def run_steps(events):
    """The steps of exported runs (without the zero-length step that closes the trace)."""
    return [e for e in steps(events) if not e["args"].get("closes_trace")]


def node_names(events):
    return [e["args"]["node"] for e in events if e["cat"] == "cpu_op"]


def test_top_level_and_metadata_events():
    trace = chrome_trace(make_profile(device=SAMPLES * 2))
    assert set(trace) == {"schemaVersion", "distributedInfo", "traceEvents", "displayTimeUnit",
                          "otherData"}
    assert trace["displayTimeUnit"] == "ns"
    assert trace["distributedInfo"] == {"backend": "none", "rank": 0, "world_size": 1}
    names = {(e["name"], e.get("tid"), e["args"].get("name")) for e in trace["traceEvents"]
             if e["ph"] == "M"}
    assert ("process_name", None, "pyfxprof toy (rank 0)") in names
    assert ("thread_name", HOST_TID, "host") in names
    assert ("thread_name", DEVICE_TID, "device cuda:0") in names
    assert trace["otherData"]["runs_exported"] == [0, 1, 2]
    assert trace["otherData"]["producer"] == "pyfxprof"


def test_rank_and_world_size_fill_distributed_info_and_pid():
    trace = chrome_trace(make_profile(), rank=3, world_size=8)
    assert trace["distributedInfo"] == {"backend": "none", "rank": 3, "world_size": 8}
    assert {e["pid"] for e in trace["traceEvents"]} == {3}


def test_display_unit_fits_the_runs():
    assert chrome_trace(make_profile())["displayTimeUnit"] == "ns"
    slow = Profile(make_nodes(), SAMPLES * 1000, TOTALS * 1000, {"model": "slow"})
    assert chrome_trace(slow)["displayTimeUnit"] == "ms"


def test_host_events_hand_computed_layout():
    events = complete_events(chrome_trace(make_profile()))
    got = [(e["name"], e["ts"], e["dur"]) for e in events]
    # runs exactly bracket their nodes: run 0 ends at 2300 ns (c ends); slices named by op
    assert got == [
        ("ProfilerStep#0", 0, 2.3005), ("Conv2d", 0, 0.1), ("torch.relu", 1, 0.2),
        ("blk", 2, 0.3005), ("Tensor.view", 2, 0.3),
        ("ProfilerStep#1", 3, 2.3005), ("Conv2d", 3, 0.11), ("torch.relu", 4, 0.21),
        ("blk", 5, 0.3005), ("Tensor.view", 5, 0.3),
        ("ProfilerStep#2", 6, 2.5005), ("Conv2d", 6, 0.1), ("torch.relu", 7, 0.2),
        ("blk", 8, 0.5005), ("Tensor.view", 8, 0.5),
        ("ProfilerStep#3", 9, 0.0005),
    ]
    assert all(isinstance(e["ts"], int) for e in events)  # whole µs: HTA does not round them
    assert node_names(events) == ["a", "b", "c"] * 3
    assert steps(events)[-1]["args"] == {"closes_trace": True}
    assert all(e["pid"] == 0 for e in events)
    assert {e["cat"] for e in run_steps(events)} == {"user_annotation"}
    assert steps(events)[-1]["cat"] == "trace_end"
    assert steps(events)[1]["args"] == {"run": 1, "run_total_ns": 600}


def test_durations_keep_ns_and_overhead_moves_starts():
    events = complete_events(chrome_trace(make_profile(overhead=952.4)))
    # a: 100 + 952.4 -> b starts at 2 µs; b: 200 + 952.4 -> c starts at 4 µs
    assert [(e["ts"], e["dur"]) for e in events[1:5]] == [(0, 0.1), (2, 0.2), (4, 0.3005), (4, 0.3)]


def test_node_args_with_and_without_extra_columns():
    plain = complete_events(chrome_trace(make_profile()))[1]
    assert plain["args"] == {"node": "a", "op": "call_module", "target": "conv",
                             "module_path": "conv", "module_type": "Conv2d"}
    assert plain["cat"] == "cpu_op"
    nodes = make_nodes(input_shapes=["([1, 3] float32, int)", "[2] int64", None],
                       flops=[64, 0, 0], inputs=[("x",), ("a",), ("b",)],
                       ratio=[0.5, float("nan"), 1.0])
    events = [e for e in complete_events(chrome_trace(make_profile(nodes=nodes)))
              if e["cat"] == "cpu_op"]
    rich = events[0]["args"]
    assert rich["input_shapes"] == "([1, 3] float32, int)" and rich["flops"] == 64
    assert rich["inputs"] == ["x"]
    assert rich["Input Dims"] == [[1, 3], []] and rich["Input type"] == ["float32", "int"]
    assert events[1]["args"]["Input Dims"] == [[2]]
    third = events[2]["args"]
    assert "input_shapes" not in third and "Input Dims" not in third and "ratio" in third
    assert "ratio" not in events[1]["args"]


def nested_nodes():
    """Two blocks of a Sequential, each with a conv (a call_module) and an add; a shared relu
    called twice in a row (two separate calls, never one merged slice)."""
    stacks = [("seq", "seq.0", "seq.0.conv"), ("seq", "seq.0"), ("seq", "seq.1", "seq.1.conv"),
              ("seq", "seq.1"), ("relu",), ("relu",)]
    return pd.DataFrame({
        "index": range(6), "name": ["c0", "add0", "c1", "add1", "relu", "relu_1"],
        "op": ["call_module", "call_function", "call_module", "call_function", "call_module",
               "call_module"],
        "target": ["seq.0.conv", "add", "seq.1.conv", "add", "relu", "relu"],
        "module_path": ["seq.0.conv", "seq.0", "seq.1.conv", "seq.1", "relu", "relu"],
        "module_type": ["Conv2d", "Block", "Conv2d", "Block", "ReLU", "ReLU"],
        "module_stack": stacks})


def test_module_levels_are_nested_slices():
    samples = np.array([[100, 10, 200, 20, 5, 6]], dtype=np.int64)
    prof = Profile(nested_nodes(), samples, np.array([400]), {"model": "m", "overhead_ns": 0.0})
    events = complete_events(chrome_trace(prof))
    modules = [(e["name"], e["ts"], e["dur"], e["args"]["level"]) for e in events
               if e["cat"] == "python_function"]
    assert modules == [("seq", 0, 3.0205, 0), ("seq.0", 0, 1.0105, 1), ("seq.1", 2, 1.0205, 1)]
    assert node_names(events) == ["c0", "add0", "c1", "add1", "relu", "relu_1"]
    assert [e["name"] for e in events if e["cat"] == "cpu_op"] == [
        "Conv2d", "add", "Conv2d", "add", "ReLU", "ReLU"]
    assert_strictly_nested(events)


def test_overlapping_run_starts_are_pushed_back():
    # runs 1 and 2 claim to start before run 0 ended: they move to its end, never overlap
    trace = chrome_trace(make_profile(run_starts=np.array([1000, 1100, 1200])))
    assert [e["ts"] for e in run_steps(complete_events(trace))] == [0, 3, 6]
    assert_strictly_nested(trace["traceEvents"])


@pytest.mark.parametrize("run_starts", [False, True])
def test_every_slice_nests_strictly(run_starts):
    trace = chrome_trace(random_profile(run_starts=run_starts))
    for tid in (HOST_TID, DEVICE_TID):
        events = complete_events(trace, tid)
        assert len(events) == 20 * 16 + (tid == HOST_TID)  # + the step closing the trace
        for step in run_steps(events):  # a run lasts until its last node ends (+ half a ns)
            inside = [e for e in events if step["ts"] <= e["ts"] < step["ts"] + step["dur"] - 1e-6
                      and e is not step]
            assert max(e["ts"] + e["dur"] for e in inside) == pytest.approx(
                step["ts"] + step["dur"] - 0.0005, abs=1e-6)
    assert_strictly_nested(trace["traceEvents"])


def test_run_starts_place_runs():
    starts = np.array([5_000_000, 5_002_000, 5_010_500])
    trace = chrome_trace(make_profile(run_starts=starts))
    # run 1 wants 2 µs but run 0 lasts until 3 µs; run 2 wants 10.5 µs, rounded up to 11
    assert [e["ts"] for e in run_steps(complete_events(trace))] == [0, 3, 11]
    assert trace["otherData"]["time_origin_ns"] == 5_000_000


def test_device_track_laid_back_to_back():
    device = np.array([[1000, 2000, 3000], [1, 1, 1], [5, 5, 5]])
    trace = chrome_trace(make_profile(device=device))
    events = complete_events(trace, DEVICE_TID)
    assert [(e["name"], e["ts"], e["dur"]) for e in events[:5]] == [
        ("device step 0", 0, 6.0005), ("Conv2d", 0, 1.0), ("torch.relu", 1, 2.0), ("blk", 3, 3.0005),
        ("Tensor.view", 3, 3.0)]
    assert {e["cat"] for e in events} == {"gpu_user_annotation", "python_function"}
    host_steps = steps(complete_events(trace))
    assert host_steps[0]["dur"] == 2.3005 and host_steps[1]["ts"] == 6  # after device work
    assert not complete_events(chrome_trace(make_profile()), DEVICE_TID)


def test_runs_selection():
    events = complete_events(chrome_trace(make_profile(), runs=[2, 0, 2]))
    assert [e["name"] for e in steps(events)] == ["ProfilerStep#0", "ProfilerStep#2",
                                                  "ProfilerStep#3"]
    assert [e["ts"] for e in steps(events)] == [0, 3, 6]
    assert len(complete_events(chrome_trace(make_profile(), runs=range(1, 3)))) == 11
    assert not complete_events(chrome_trace(make_profile(), runs=[]))
    for bad in ([3], [-1], [0.5]):
        with pytest.raises(ValueError, match=r"runs must be indices in 0..2"):
            chrome_trace(make_profile(), runs=bad)


def test_cap_on_runs_warns():
    with pytest.warns(UserWarning, match="exporting the first 5 of 20 runs"):
        trace = chrome_trace(random_profile(), max_runs=5)
    assert trace["otherData"]["runs_exported"] == [0, 1, 2, 3, 4]
    assert len(complete_events(chrome_trace(random_profile(runs=150), max_runs=None))) == (
        150 * 16 + 1)


@pytest.mark.parametrize("name", ["t.json", "t.json.gz"])
def test_written_file_is_valid_json(tmp_path, name):
    path = tmp_path / name
    make_profile(device=SAMPLES).export_chrome_trace(path, runs=[1])
    raw = path.read_bytes()
    text = gzip.decompress(raw) if name.endswith(".gz") else raw
    trace = json.loads(text)
    assert [e["name"] for e in complete_events(trace)] == [
        "ProfilerStep#1", "Conv2d", "torch.relu", "blk", "Tensor.view", "ProfilerStep#2"]
    export_chrome_trace(make_profile(), tmp_path / "plain.json")
    assert '"rank": 0' in (tmp_path / "plain.json").read_text()  # HTA looks for this text


def test_unwritable_path_is_a_clear_error(tmp_path):
    path = tmp_path / "missing" / "t.json.gz"
    with pytest.raises(PyfxprofError, match=f"cannot write {path}: No such file"):
        export_chrome_trace(make_profile(), path)


def test_empty_profile_gives_metadata_only():
    empty = Profile(make_nodes(), np.zeros((0, 3), np.int64), np.zeros(0, np.int64))
    trace = chrome_trace(empty)
    assert not complete_events(trace) and trace["traceEvents"]


def test_operator_slices_are_named_as_key_averages_names_them():
    from pyfxprof.data.key_averages import key_averages
    nodes = make_nodes(input_shapes=["([1, 3] float32)", "([2] float32, [2] float32)", "(int)"])
    nodes["target"] = ["conv", "_operator.iadd", "view"]
    nodes["op"] = ["call_module", "call_function", "call_method"]
    profile = make_profile(nodes)
    ops = [e["name"] for e in complete_events(chrome_trace(profile)) if e["cat"] == "cpu_op"]
    assert ops[:3] == ["Conv2d", "aten::add_", "Tensor.view"]
    assert "aten::add_" in {row.key for row in key_averages(profile)}


def test_the_outside_row_is_a_slice_of_every_run():
    from tests.outside_profiles import outside_profile
    prof = outside_profile()
    events = chrome_trace(prof)["traceEvents"]
    slices = [e for e in events if e.get("ph") == "X" and "outside the graph" in e["name"]]
    assert len(slices) == prof.n_runs
    assert sorted({round(e["dur"] * 1000) for e in slices}) == [2950, 3050]
