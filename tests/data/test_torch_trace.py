import gzip
import json
import shutil

import numpy as np
import pytest
import torch
from torch import nn

from pyfxprof.analyses.diff import diff
from pyfxprof.errors import PyfxprofError
from pyfxprof.data.torch_trace import load_trace, read_json, trace_files

STEPS = 3


def export_trace(model: nn.Module, path) -> None:
    """A real torch.profiler Chrome trace of ``STEPS`` forward passes of ``model`` on CPU."""
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(0))
    with torch.no_grad(), torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(STEPS):
            model(x)
    prof.export_chrome_trace(str(path))


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """(control, test) trace paths; the test model has an extra sigmoid."""
    root = tmp_path_factory.mktemp("traces")
    torch.manual_seed(0)
    linear = nn.Linear(8, 8)
    export_trace(nn.Sequential(linear, nn.ReLU()), root / "control.json")
    export_trace(nn.Sequential(linear, nn.ReLU(), nn.Sigmoid()), root / "test.json")
    return root / "control.json", root / "test.json"


def op_events(path, name):
    return [e for e in json.loads(path.read_text())["traceEvents"]
            if e.get("ph") == "X" and e.get("name") == name]


def test_trace_is_aggregated_by_op_name_one_run_per_model_call(traces):
    control, _ = traces
    prof = load_trace(control)
    nodes = prof.nodes.set_index("name")
    assert prof.n_runs == STEPS and prof.samples.dtype == np.int64  # the STEPS model calls
    assert {"aten::linear", "aten::relu"} <= set(nodes.index)
    assert nodes.loc["aten::linear", "calls"] == 1
    assert nodes.loc["aten::linear", "op"] == "cpu_op"
    events = op_events(control, "aten::linear")
    column = nodes.loc["aten::linear", "index"]
    assert prof.samples[:, column].tolist() == [int(np.rint(e["dur"] * 1000)) for e in events]
    assert (prof.run_totals >= prof.samples[:, column]).all()
    assert (prof.samples[:, column] > 0).all()
    assert prof.meta["source"] == "torch.profiler trace" and prof.meta["runs"] == STEPS


def test_trace_runs_are_its_profiler_steps(tmp_path):
    model, x = nn.Sequential(nn.Linear(8, 8), nn.ReLU()), torch.randn(4, 8)
    with torch.no_grad(), torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU],
            schedule=torch.profiler.schedule(wait=0, warmup=1, active=4, repeat=1)) as prof:
        for _ in range(6):
            model(x)
            model(x)  # two calls per step: a run is the step, not the call
            prof.step()
    prof.export_chrome_trace(str(tmp_path / "steps.json"))
    back = load_trace(tmp_path / "steps.json")
    assert back.n_runs == 4
    assert back.nodes.set_index("name").loc["aten::linear", "calls"] == 2


def test_two_real_traces_diff_by_op(traces):
    result = diff(*traces)
    ops = result.ops_diff()
    assert "aten::sigmoid" in ops["added"]
    assert "aten::linear" not in ops["added"] + ops["deleted"]
    df = result.changes()
    assert df.loc["aten::sigmoid", "counts_test"] == 1  # per run: one model call
    assert df.loc["aten::sigmoid", "diff_counts"] == 1
    assert df["p_value"].isna().all()  # STEPS < MIN_RUNS runs per side: no significance test
    assert "aten::sigmoid" in result.table(top=None)


def test_directory_of_traces_is_one_run_per_file(traces, tmp_path):
    control, _ = traces
    shutil.copy(control, tmp_path / "a.pt.trace.json")
    (tmp_path / "b.pt.trace.json.gz").write_bytes(gzip.compress(control.read_bytes()))
    (tmp_path / "notes.txt").write_text("not a trace")
    assert [f.name for f in trace_files(tmp_path)] == ["a.pt.trace.json", "b.pt.trace.json.gz"]
    prof = load_trace(tmp_path)
    single = load_trace(control)
    assert prof.n_runs == 2 * STEPS
    np.testing.assert_array_equal(prof.samples, np.vstack([single.samples] * 2))
    assert prof.nodes["calls"].tolist() == single.nodes["calls"].tolist()
    assert diff(tmp_path, tmp_path).changes()["diff_duration"].eq(0).all()


def test_refuses_missing_file(tmp_path):
    with pytest.raises(PyfxprofError, match=r"missing\.json: no such file"):
        load_trace(tmp_path / "missing.json")


def test_refuses_non_json(tmp_path):
    path = tmp_path / "trace.json"
    path.write_text("this is not json")
    with pytest.raises(PyfxprofError, match=r"trace\.json: not JSON"):
        load_trace(path)


def test_refuses_json_without_trace_events(tmp_path):
    path = tmp_path / "trace.json"
    path.write_text('{"schemaVersion": 1}')
    with pytest.raises(PyfxprofError, match="trace.json: no traceEvents list"):
        load_trace(path)


def test_refuses_trace_without_op_events(tmp_path):
    path = tmp_path / "trace.json"
    path.write_text('{"traceEvents": [{"ph": "M", "name": "process_name"}]}')
    with pytest.raises(PyfxprofError, match="no complete"):
        load_trace(path)


def test_refuses_truncated_gzip(traces, tmp_path):
    path = tmp_path / "trace.json.gz"
    path.write_bytes(gzip.compress(traces[0].read_bytes())[:200])
    with pytest.raises(PyfxprofError, match="corrupt or truncated gzip"):
        load_trace(path)


def test_refuses_directory_without_traces_and_directory_as_file(tmp_path):
    with pytest.raises(PyfxprofError, match="directory holds no torch.profiler trace files"):
        load_trace(tmp_path)
    with pytest.raises(PyfxprofError, match="it is a directory"):
        read_json(tmp_path)


def test_own_chrome_trace_reads_back_one_run_per_step(tmp_path):
    from pyfxprof.data.profile import Profile
    from tests.toy_profiles import toy_nodes
    nodes = toy_nodes()
    samples = np.array([[100, 200, 300, 400], [110, 210, 310, 410]], dtype=np.int64)
    prof = Profile(nodes, samples, np.array([1200, 1300]), {"model": "toy", "overhead_ns": 7.0},
                   device_samples=samples * 2)
    prof.export_chrome_trace(tmp_path / "own.json")
    back = load_trace(tmp_path / "own.json")
    assert back.nodes["name"].tolist() == nodes["name"].tolist()  # no steps, modules, device
    assert back.n_runs == 2 and (back.samples == samples).all()
    assert (back.nodes["calls"] == 1.0).all()
    ops = diff(tmp_path / "own.json", tmp_path / "own.json").ops_diff()
    assert len(ops["unchanged"]) == 4 and not ops["added"] and not ops["deleted"]


def test_old_own_trace_run_events_are_not_ops(tmp_path):
    events = [{"ph": "X", "cat": "run", "name": f"run {i}", "ts": 10.0 * i, "dur": 9.0}
              for i in range(3)]
    events += [{"ph": "X", "cat": "call_module", "name": "conv1", "ts": 10.0 * i, "dur": 4.0}
               for i in range(3)]
    (tmp_path / "old.json").write_text(json.dumps({"traceEvents": events}))
    assert load_trace(tmp_path / "old.json").nodes["name"].tolist() == ["conv1"]
