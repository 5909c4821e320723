import gzip
import json

import numpy as np
import pandas as pd
import pytest

from pyfxprof.errors import PyfxprofError
from pyfxprof.views.chrome_trace import DEVICE_TID, HOST_TID, chrome_trace, export_chrome_trace
from pyfxprof.data.profile import Profile

# Three runs of three nodes; overhead 10 ns per node boundary. Host layout of run 0:
#   a: start 0,   dur 100     b: start 110, dur 200     c: start 320, dur 300  -> ends at 620
# run totals 700, 600, 900: run 1's nodes end at 640 > 600, so run 1 lasts 640 ns.
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


def test_top_level_and_metadata_events():
    trace = chrome_trace(make_profile(device=SAMPLES * 2))
    assert set(trace) == {"traceEvents", "displayTimeUnit", "otherData"}
    assert trace["displayTimeUnit"] == "ns"
    names = {(e["name"], e.get("tid"), e["args"].get("name")) for e in trace["traceEvents"]
             if e["ph"] == "M"}
    assert ("process_name", None, "pyfxprof toy") in names
    assert ("thread_name", HOST_TID, "host") in names
    assert ("thread_name", DEVICE_TID, "device cuda:0") in names
    assert trace["otherData"]["runs_exported"] == [0, 1, 2]


def test_host_events_hand_computed_layout():
    events = complete_events(chrome_trace(make_profile()))
    got = [(e["name"], e["ts"], e["dur"]) for e in events]
    assert got == [
        ("run 0", 0.0, 0.7), ("a", 0.0, 0.1), ("b", 0.11, 0.2), ("c", 0.32, 0.3),
        ("run 1", 0.7, 0.64), ("a", 0.7, 0.11), ("b", 0.82, 0.21), ("c", 1.04, 0.3),
        ("run 2", 1.34, 0.9), ("a", 1.34, 0.1), ("b", 1.45, 0.2), ("c", 1.66, 0.5),
    ]
    assert all(e["pid"] == 1 for e in events)


def test_fractional_overhead_gives_ns_precision():
    events = complete_events(chrome_trace(make_profile(overhead=52.4)))
    assert [e["ts"] for e in events[1:4]] == [0.0, 0.152, 0.405]  # 100+52.4, 300+104.8 rounded


def test_node_args_with_and_without_extra_columns():
    plain = complete_events(chrome_trace(make_profile()))[1]
    assert plain["args"] == {"op": "call_module", "target": "conv", "module_path": "conv",
                             "module_type": "Conv2d"}
    assert plain["cat"] == "call_module"
    nodes = make_nodes(input_shapes=["[1, 3]", "[2]", None], flops=[64, 0, 0],
                       inputs=[("x",), ("a",), ("b",)], ratio=[0.5, float("nan"), 1.0])
    rich = complete_events(chrome_trace(make_profile(nodes=nodes)))[1]["args"]
    assert rich["input_shapes"] == "[1, 3]" and rich["flops"] == 64 and rich["inputs"] == ["x"]
    third = complete_events(chrome_trace(make_profile(nodes=nodes)))[3]["args"]
    assert "input_shapes" not in third and "ratio" in third
    assert "ratio" not in complete_events(chrome_trace(make_profile(nodes=nodes)))[2]["args"]


def assert_nested(events):
    """Every node event lies within the run event that precedes it on its track."""
    run = None
    for event in events:
        if event["cat"] == "run":
            run = event
            continue
        assert run is not None
        assert event["ts"] >= run["ts"] - 1e-9
        assert event["ts"] + event["dur"] <= run["ts"] + run["dur"] + 1e-9
    runs = [e for e in events if e["cat"] == "run"]
    for first, second in zip(runs, runs[1:]):
        assert first["ts"] + first["dur"] <= second["ts"] + 1e-9


@pytest.mark.parametrize("run_starts", [False, True])
def test_every_node_event_nests_in_its_run(run_starts):
    trace = chrome_trace(random_profile(run_starts=run_starts))
    for tid in (HOST_TID, DEVICE_TID):
        events = complete_events(trace, tid)
        assert len(events) == 20 * 16
        assert_nested(events)


def test_run_starts_place_runs():
    starts = np.array([5_000_000, 5_002_000, 5_010_500])
    trace = chrome_trace(make_profile(run_starts=starts))
    runs = [e for e in complete_events(trace) if e["cat"] == "run"]
    assert [e["ts"] for e in runs] == [0.0, 2.0, 10.5]
    assert trace["otherData"]["time_origin_ns"] == 5_000_000


def test_device_track_laid_back_to_back():
    device = np.array([[1000, 2000, 3000], [1, 1, 1], [5, 5, 5]])
    trace = chrome_trace(make_profile(device=device))
    events = complete_events(trace, DEVICE_TID)
    assert [(e["name"], e["ts"], e["dur"]) for e in events[:4]] == [
        ("run 0", 0.0, 6.0), ("a", 0.0, 1.0), ("b", 1.0, 2.0), ("c", 3.0, 3.0)]
    host_runs = [e for e in complete_events(trace) if e["cat"] == "run"]
    assert host_runs[1]["ts"] == 6.0  # run 0 lasts as long as its device work
    assert not complete_events(chrome_trace(make_profile()), DEVICE_TID)


def test_runs_selection():
    events = complete_events(chrome_trace(make_profile(), runs=[2, 0, 2]))
    assert [e["name"] for e in events if e["cat"] == "run"] == ["run 0", "run 2"]
    assert [e["ts"] for e in events if e["cat"] == "run"] == [0.0, 0.7]
    assert len(complete_events(chrome_trace(make_profile(), runs=range(1, 3)))) == 8
    assert not complete_events(chrome_trace(make_profile(), runs=[]))
    for bad in ([3], [-1], [0.5]):
        with pytest.raises(ValueError, match=r"runs must be indices in 0..2"):
            chrome_trace(make_profile(), runs=bad)


def test_cap_on_runs_warns():
    with pytest.warns(UserWarning, match="exporting the first 5 of 20 runs"):
        trace = chrome_trace(random_profile(), max_runs=5)
    assert trace["otherData"]["runs_exported"] == [0, 1, 2, 3, 4]
    assert len(complete_events(chrome_trace(random_profile(runs=150), max_runs=None))) == 150 * 16


@pytest.mark.parametrize("name", ["t.json", "t.json.gz"])
def test_written_file_is_valid_json(tmp_path, name):
    path = tmp_path / name
    make_profile(device=SAMPLES).export_chrome_trace(path, runs=[1])
    raw = path.read_bytes()
    text = gzip.decompress(raw) if name.endswith(".gz") else raw
    trace = json.loads(text)
    assert [e["name"] for e in complete_events(trace)] == ["run 1", "a", "b", "c"]
    export_chrome_trace(make_profile(), tmp_path / "plain.json")
    assert json.loads((tmp_path / "plain.json").read_text())["displayTimeUnit"] == "ns"


def test_unwritable_path_is_a_clear_error(tmp_path):
    path = tmp_path / "missing" / "t.json.gz"
    with pytest.raises(PyfxprofError, match=f"cannot write {path}: No such file"):
        export_chrome_trace(make_profile(), path)


def test_empty_profile_gives_metadata_only():
    empty = Profile(make_nodes(), np.zeros((0, 3), np.int64), np.zeros(0, np.int64))
    trace = chrome_trace(empty)
    assert not complete_events(trace) and trace["traceEvents"]
