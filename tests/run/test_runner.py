"""Tests of pyfxprof.profile end to end on small models (behaviour, never speed)."""

import numpy as np
import pytest
import torch

import pyfxprof
from pyfxprof.data.validate import model_nodes
from pyfxprof.data.units import format_ns
from pyfxprof.errors import PyfxprofError
from tests.models import Net, Spin, net_input, spin


def test_profile_returns_one_column_per_node_and_one_row_per_run():
    prof = pyfxprof.profile(Net(), (net_input(),), runs=7, warmup=2)
    assert prof.n_runs == 7 and model_nodes(prof.nodes).sum() == 14  # the outside row apart
    assert prof.samples.dtype == np.int64 and (prof.samples >= 0).all()
    assert prof.run_totals.shape == (7,)
    assert list(prof.nodes["name"][:2]) == ["block1_conv", "block1_relu"]
    assert prof.nodes.loc[0, "output_shapes"] == "[2, 3, 8, 8] float32"
    assert prof.nodes.loc[0, "out_bytes"] == 2 * 3 * 8 * 8 * 4


def test_metadata_states_mode_capture_overhead_and_environment():
    prof = pyfxprof.profile(Net(), (net_input(),), runs=3, warmup=1)
    meta = prof.meta
    assert meta["mode"] == "codegen" and meta["capture_mode"] == "fx"
    assert meta["runs"] == 3 and meta["warmup"] == 1 and meta["device"] == "cpu"
    assert 0 < meta["overhead_ns"] < 10_000 and meta["overhead_method"].startswith("timed call")
    assert meta["clock"]["name"] in ("tsc", "steady_clock")
    assert {"pyfxprof", "torch", "python"} <= set(meta["versions"])
    assert meta["dropped_records"] >= 0 and meta["incomplete_runs"] == 0
    assert 0 < meta["coverage"] <= 1.0
    assert f"overhead: {meta['overhead_ns']:.0f} ns/node, subtracted" in prof.table()


def test_model_is_not_modified():
    model = Net().train()
    model.block1.train(False)  # a mixed state must come back exactly
    flags = [m.training for m in model.modules()]
    state = {k: v.clone() for k, v in model.state_dict().items()}
    pyfxprof.profile(model, (net_input(),), runs=3, warmup=1)
    assert [m.training for m in model.modules()] == flags
    for key, value in model.state_dict().items():
        torch.testing.assert_close(value, state[key])  # BN running stats untouched too


def test_interpreter_mode_times_the_same_nodes():
    prof = pyfxprof.profile(Net(), (net_input(),), runs=4, warmup=1, mode="interpreter")
    assert prof.meta["mode"] == "interpreter" and model_nodes(prof.nodes).sum() == 14
    assert prof.n_runs == 4
    assert prof.meta["overhead_method"].startswith("timed call")  # one calibration for both


def test_keyword_and_single_tensor_inputs():
    x = net_input()
    assert pyfxprof.profile(Net(), {"x": x}, runs=2, warmup=0).n_runs == 2
    assert pyfxprof.profile(Net(), x, runs=2, warmup=0).n_runs == 2


def test_grad_true_keeps_autograd():
    class GradCheck(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)

        def forward(self, x):
            return self.lin(x)

    prof = pyfxprof.profile(GradCheck(), (torch.zeros(1, 2),), runs=2, warmup=0, grad=True)
    assert prof.meta["grad"] is True


def test_node_of_known_duration_is_measured_above_its_spin():
    prof = pyfxprof.profile(torch.nn.Sequential(Spin(300_000)), (torch.zeros(1),), runs=5,
                            warmup=1)
    # The spin alone takes 300 us; the node adds the module call around it, never less.
    assert prof.samples[:, 0].min() >= 300_000


@pytest.mark.parametrize("kwargs, message", [
    ({"runs": 0}, "runs must be a positive integer"),
    ({"warmup": -1}, "warmup must be a non-negative integer"),
    ({"mode": "magic"}, "mode must be one of codegen, interpreter"),
])
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(PyfxprofError, match=message):
        pyfxprof.profile(Net(), (net_input(),), **kwargs)


def test_wrong_input_shape_names_the_node():
    with pytest.raises(PyfxprofError, match=r"node 'block1_conv' .* failed on inputs \(\[2, 5, 8, 8\]"):
        pyfxprof.profile(Net(), (torch.zeros(2, 5, 8, 8),), runs=1)


def test_non_module_is_refused():
    with pytest.raises(PyfxprofError, match="expected a torch.nn.Module to profile, got str"):
        pyfxprof.profile("resnet", ())


def test_model_without_operations_is_refused():
    with pytest.raises(PyfxprofError, match="no operations to time"):
        pyfxprof.profile(torch.nn.Identity(), (torch.zeros(1),), runs=1)


@pytest.mark.parametrize("call", [
    lambda: pyfxprof.profile(),
    lambda: pyfxprof.profile(activities=[torch.profiler.ProfilerActivity.CPU]),
    lambda: pyfxprof.profile(Net(), (net_input(),), record_shapes=True, on_trace_ready=print),
    lambda: pyfxprof.profile(Net(), (net_input(),), with_stack=True, schedule=None),
])
def test_torch_profiler_style_use_fails_at_once_pointing_to_profiler(call, monkeypatch):
    monkeypatch.setattr("pyfxprof.run.capture_cache.prepare", lambda *a, **k: pytest.fail("ran"))
    with pytest.raises(PyfxprofError, match=r"use `with pyfxprof\.Profiler\(model") as error:
        call()
    assert "\n" not in str(error.value)


def test_a_finished_profile_is_not_a_context_manager():
    prof = pyfxprof.profile(Net(), (net_input(),), runs=1, warmup=0)
    with pytest.raises(PyfxprofError, match=r"not a context manager.*pyfxprof\.Profiler"):
        with prof:
            pass


def test_meta_and_header_state_the_mode_the_model_ran_in():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout()).train()
    prof = pyfxprof.profile(model, (torch.randn(2, 4),), runs=2, warmup=0, progress=False)
    meta = prof.meta
    assert (meta["training"], meta["given_training"], meta["autograd"]) == \
        (False, True, "inference_mode")
    assert "model eval (given in train mode), inference_mode" in prof.table().splitlines()[0]
    with torch.no_grad():
        meta = pyfxprof.profile(model.eval(), (torch.randn(2, 4),), runs=2, warmup=0,
                                grad=True, progress=False).meta
    assert (meta["given_training"], meta["autograd"]) == (False, "no_grad")
    meta = pyfxprof.profile(model, (torch.randn(2, 4),), runs=2, warmup=0, grad=True,
                            progress=False).meta
    assert meta["autograd"] == "grad" and "eager_forward_median_ns" not in meta  # fx rung


class SlowTail(torch.nn.Module):
    """A graph of one matmul, then 3 ms of Python that Dynamo's graph does not contain."""

    def forward(self, x):
        y = x @ x
        _python_spin(3_000_000)
        return y


@torch._dynamo.disable
def _python_spin(ns):
    spin(None, ns)


def test_the_python_outside_the_graph_is_a_row_of_the_users_call():
    prof = pyfxprof.profile(SlowTail(), (torch.randn(8, 8),), runs=8, warmup=1,
                            capture="dynamo", progress=False)
    call = prof.meta["call"]
    assert call["runs"] == 4 and call["resolved"]  # ceil(8 / 2) plain calls, each paired
    assert call["median_ns"] >= 3e6 > call["graph_median_ns"]  # the spin is not in the graph
    names = prof.nodes["name"].tolist()
    outside = prof.samples[:, names.index("(Python outside the graph)")]
    assert np.median(outside) >= 0.9 * 3e6
    # the rows sum to the user's call: the run totals are the call's, coverage a share of it
    assert abs(np.median(prof.run_totals) - call["median_ns"]) <= 0.1 * call["median_ns"]
    assert prof.meta["coverage"] < 0.5 < prof.meta["graph_coverage"]
    assert "(your call; graph" in prof.table().splitlines()[1]
    functions = [row["function"] for row in call["functions"]]
    assert "_python_spin" in functions[:3] or "spin" in " ".join(functions[:3])

class _TwoNodes(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x + 1)


@pytest.mark.parametrize("runs", [1023, 1024, 5000, pytest.param(100_000, marks=pytest.mark.slow)])
def test_any_number_of_runs_profiles_and_reports(runs):
    """1,024 runs and more once crashed (an OverflowError from the outside row's interval):
    every statistic of the report holds at every size."""
    prof = pyfxprof.profile(_TwoNodes(), (torch.ones(4),), runs=runs, warmup=1, progress=False)
    assert prof.n_runs == runs and prof.samples.shape == (runs, prof.n_nodes)
    latency = prof.latency()
    low, high = latency.p99_ci
    assert latency.n == runs and low <= latency.p99 <= high
    call = prof.meta["call"]
    assert call["outside_low_ns"] <= call["outside_median_ns"] <= call["outside_high_ns"]
    assert "add" in prof.table() and len(prof.to_dataframe()) == prof.n_nodes


# The profiled model, remembered by weak reference outside the Profile (Profile.replay).

def test_profile_finds_its_model_while_alive_and_never_keeps_it_alive():
    import gc
    from pyfxprof.run.capture_cache import CAPTURES
    from pyfxprof.run.runner import live_model
    model = torch.nn.Sequential(torch.nn.Linear(4, 4))
    prof = pyfxprof.profile(model, (torch.randn(2, 4),), runs=3, warmup=1)
    assert live_model(prof) is model
    del model
    CAPTURES.clear()  # the process's capture cache holds its last models (run/capture_cache.py)
    gc.collect()
    assert live_model(prof) is None


def test_the_model_entry_leaves_with_its_profile_and_a_loaded_profile_has_none(tmp_path):
    import gc
    from pyfxprof.run.runner import _LIVE, live_model
    prof = pyfxprof.profile(torch.nn.Sequential(torch.nn.ReLU()), (torch.randn(2, 4),),
                            runs=3, warmup=1)
    prof.save(tmp_path / "p.json")
    assert live_model(pyfxprof.load(tmp_path / "p.json")) is None
    key = id(prof)
    del prof
    gc.collect()
    assert key not in _LIVE


def test_a_model_without_weak_references_is_not_kept():
    from pyfxprof.run.runner import live_model, remember_model

    class P:
        pass
    prof = P()
    assert remember_model(prof, object()) is prof and live_model(prof) is None
