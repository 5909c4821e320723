"""Tests of the loop API (pyfxprof.loop.profiler.Profiler): windows, outputs, model state, bounded memory."""

import copy
import inspect
import math
import warnings
from collections import OrderedDict

import pytest
import torch
from torch.profiler import ProfilerAction

from pyfxprof import _C
from pyfxprof.capture.ladder import prepare
from pyfxprof.capture.tracing import CaptureFallbackWarning, capture, timed_nodes
from pyfxprof.data.persist import load_profile
from pyfxprof.data.run_noise import NOISE_COLUMNS
from pyfxprof.errors import PyfxprofError
from pyfxprof.capture.dynamo_frame import DynamoFrame
from pyfxprof.loop.call_groups import CallGroup
from pyfxprof.loop.calls import OTHER_THREAD
from pyfxprof.loop.profiler import Profiler
from pyfxprof.run.runner import profile
from pyfxprof.loop.schedule import schedule
from pyfxprof.timing.recorder import RECORDER
from tests.fixtures_models import Flaky
from tests.models import CachedModel, DataDependent, GrowingCache, Net, net_input

#: The nodes of Net's Dynamo graph (every call group of the loop is a Dynamo capture).
N_NODES = len(prepare(Net().eval(), (net_input(),), "dynamo").frame)


def _loop(profiler: Profiler, steps: int, calls_per_step: int = 1) -> list:
    outputs = []
    with profiler as p:
        for _ in range(steps):
            for _ in range(calls_per_step):
                outputs.append(p.model(net_input()))
            p.step()
    return outputs


def test_schedule_delivers_one_profile_per_active_window():
    delivered, pending = [], []

    def handler(prof):
        delivered.append(prof)
        pending.append(_C.buffer_stats()["pending_records"])

    p = Profiler(Net().eval(), schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
                 on_trace_ready=handler)
    _loop(p, 10)
    assert [(prof.n_runs, prof.n_nodes) for prof in delivered] == [(2, N_NODES)] * 2
    assert p.profiles == delivered
    assert [prof.meta["loop"]["steps"] for prof in delivered] == [[2, 3], [6, 7]]
    assert [prof.meta["warmup"] for prof in delivered] == [1, 1]
    assert pending == [0, 0]  # the native buffer holds nothing once a window is delivered
    assert _C.buffer_stats()["pending_records"] == 0


def test_profile_content_is_that_of_pyfxprof_profile():
    p = Profiler(Net().eval(), schedule=schedule(wait=0, warmup=1, active=3, repeat=1))
    _loop(p, 5)
    (prof,) = p.profiles
    assert prof.nodes["name"].tolist()[:2] == ["conv2d", "y"]  # Dynamo's graph
    assert prof.nodes.loc[0, "output_shapes"] == "[2, 3, 8, 8] float32"
    meta = prof.meta
    assert meta["mode"] == "codegen" and meta["runs"] == 3 and meta["incomplete_runs"] == 0
    assert 0 < meta["overhead_ns"] < 10_000 and 0 < meta["coverage"] <= 1.0
    assert meta["input_shapes"] == "([2, 3, 8, 8] float32)" and meta["training"] is False
    assert (prof.samples >= 0).all() and prof.run_starts is not None


def test_without_a_schedule_every_call_is_recorded_and_delivered_at_exit():
    delivered = []
    p = Profiler(Net().eval(), on_trace_ready=delivered.append)
    _loop(p, 3, calls_per_step=2)
    assert len(delivered) == 1 and delivered[0].n_runs == 6


def test_outputs_equal_the_models_in_every_kind_of_step():
    model = Net().eval()
    p = Profiler(model, schedule=schedule(wait=1, warmup=1, active=1, repeat=1))
    with p:
        for _ in range(4):
            x = torch.randn(2, 3, 8, 8)
            assert torch.equal(p.model(x), model(x)), p.current_action
            p.step()
    assert len(p.profiles) == 1


def test_a_profiled_training_loop_matches_an_unprofiled_one():
    """Same losses and weights: the profiler neither changes the model nor the computation."""
    model = Net().train()
    model.block1.train(False)  # a mixed state must stay exactly as the user set it
    reference = copy.deepcopy(model)
    flags = [m.training for m in model.modules()]
    structure = [(name, type(m)) for name, m in model.named_modules()]

    def train(run_model, params, steps, step=lambda: None):
        optimizer = torch.optim.SGD(params, lr=1e-3)
        losses = []
        for k in range(steps):
            torch.manual_seed(k)  # dropout draws the same masks in both loops
            loss = run_model(net_input()).square().mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            step()
        return losses

    with Profiler(model, schedule=schedule(wait=1, warmup=1, active=2)) as p:
        profiled = train(p.model, model.parameters(), 8, p.step)
    assert train(reference, reference.parameters(), 8) == profiled
    assert all(map(math.isfinite, profiled))
    for (key, value), expected in zip(model.state_dict().items(),
                                      reference.state_dict().values()):
        assert torch.equal(value, expected), key
    assert [m.training for m in model.modules()] == flags
    assert [(name, type(m)) for name, m in model.named_modules()] == structure
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())
    assert [prof.meta["grad"] for prof in p.profiles] == [True, True]


def test_keyword_arguments_and_example_inputs():
    class Scale(torch.nn.Module):
        def forward(self, x, factor):
            return torch.relu(x) * factor

    x, factor = torch.randn(3), torch.tensor(2.0)
    with Profiler(Scale(), example_inputs={"x": x, "factor": factor}) as p:
        assert torch.equal(p.model(x, factor=factor), torch.relu(x) * 2)
        assert torch.equal(p.model(factor=factor, x=x), torch.relu(x) * 2)
    assert p.profiles[0].n_runs == 2


def test_keep_profiles_bounds_the_list_not_the_deliveries():
    delivered = []
    p = Profiler(Net().eval(), schedule=schedule(wait=0, warmup=1, active=1),
                 on_trace_ready=delivered.append, keep_profiles=1)
    _loop(p, 6)
    assert len(delivered) == 3 and p.profiles == delivered[-1:]


def test_an_exception_in_the_loop_discards_the_open_window():
    delivered = []
    p = Profiler(Net().eval(), on_trace_ready=delivered.append)
    with pytest.raises(ValueError, match="boom"):
        with p:
            p.model(net_input())
            raise ValueError("boom")
    assert delivered == []
    assert _C.buffer_stats()["pending_records"] == 0


def test_record_followed_by_none_warns_and_discards_like_torch():
    actions = [ProfilerAction.RECORD, ProfilerAction.NONE, ProfilerAction.NONE]
    p = Profiler(Net().eval(), schedule=lambda step: actions[step])
    with pytest.warns(UserWarning, match="RECORD followed by NONE"):
        _loop(p, 2)
    assert p.profiles == []


def test_a_window_without_model_calls_warns_and_delivers_nothing():
    p = Profiler(Net().eval(), schedule=schedule(wait=0, warmup=1, active=1, repeat=1))
    with pytest.warns(UserWarning, match="steps 1..1 recorded no complete call"):
        with p:
            p.model(net_input())  # captures; step 0 is WARMUP
            p.step()
            p.step()
    assert p.profiles == []


def test_calls_outside_the_block_run_the_model_and_step_needs_the_block():
    model = Net().eval()
    p = Profiler(model)
    x = net_input()
    assert torch.equal(p.model(x), model(x))
    with pytest.raises(PyfxprofError, match="outside its with block"):
        p.step()


def test_bad_arguments_are_one_line_errors():
    with pytest.raises(PyfxprofError, match="torch.nn.Module"):
        Profiler(lambda x: x)
    with pytest.raises(PyfxprofError, match="schedule must be callable"):
        Profiler(Net(), schedule=3)
    with pytest.raises(PyfxprofError, match="returned 'record'"):
        with Profiler(Net(), schedule=lambda step: "record"):
            pass


def test_a_model_dynamo_splits_runs_its_own_python_between_graphs():
    model, x, root_hook_calls = DataDependent(), torch.ones(2), []
    handle = model.register_forward_hook(lambda *_: root_hook_calls.append(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureFallbackWarning)  # no fallback
        with Profiler(model, example_inputs=x) as p:
            outputs = [p.model(x) for _ in range(3)]
    assert len(root_hook_calls) == 3  # once per call, as without the Profiler
    handle.remove()
    assert all(torch.equal(out, model(x)) for out in outputs)
    (prof,) = p.profiles
    assert prof.meta["capture_mode"] == "dynamo" and prof.meta["graphs"] == 2
    # the capture call of several graphs is not timed, and counted with its reason
    assert prof.n_runs == 2 and sum(p._untimed.values()) == 1
    assert (prof.samples >= 0).all()


class _BranchOnValue(torch.nn.Module):
    """The root branches on a tensor value (untraceable), around traceable leaf modules."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        y = self.lin(x)
        if y.sum() > -1e9:
            y = self.relu(y)
        return y


def test_an_untraceable_root_is_timed_by_module_hooks_that_exist_only_during_timed_calls():
    model, x = _BranchOnValue(), torch.randn(2, 3)
    expected, hooks_seen = model(x), []
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureFallbackWarning)  # Dynamo's graphs: no fallback
        with Profiler(model, schedule=schedule(wait=1, warmup=1, active=2)) as p:
            for _ in range(4):
                torch.testing.assert_close(p.model(x), expected)
                hooks_seen.append(len(model.lin._forward_hooks) + len(model.lin._forward_pre_hooks))
                p.step()
    (prof,) = p.profiles
    assert prof.meta["capture_mode"] == "dynamo" and prof.meta["graphs"] == 2
    assert prof.n_runs == 2 and (prof.samples >= 0).all()
    assert hooks_seen == [0, 0, 0, 0]
    assert not model.relu._forward_hooks and not model.relu._forward_pre_hooks


def test_an_untraceable_submodule_becomes_a_leaf_with_a_warning():
    # in train mode: several Dynamo graphs are timed in eval mode only (tests/loop/test_compiled_groups.py)
    model = torch.nn.Sequential(torch.nn.ReLU(), DataDependent()).train()
    x = torch.randn(4)
    with Profiler(model) as p:  # Dynamo splits it, in training mode too (its own flags)
        for _ in range(3):
            assert torch.equal(p.model(x), model(x))  # (both calls are profiled)
    (prof,) = p.profiles
    assert prof.meta["capture_mode"] == "dynamo" and prof.n_runs == 5  # the capture: counted
    assert sum(p._untimed.values()) == 1


def _linear_relu() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).eval()


class _Bump(torch.nn.Module):
    """Bumps a caller-owned tensor in place (FX traces it)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x, counter):
        counter.add_(1)
        return self.lin(x)


class _Append(_Bump):
    """Appends to a caller-owned list."""

    def forward(self, x, log):
        log.append(x.shape[0])
        return self.lin(x)


def test_calls_of_the_model_itself_are_profiled_and_forward_is_restored_exactly():
    model = _linear_relu()
    original = model.forward
    x = torch.randn(2, 4)
    with Profiler(model) as p:
        assert inspect.signature(model.forward) == inspect.signature(original)
        outputs = [model(x) for _ in range(3)]  # not p.model: code the user does not own
        assert "forward" in vars(model)
    assert all(torch.equal(out, original(x)) for out in outputs)
    (prof,) = p.profiles
    assert prof.n_runs == 3 and prof.meta["input_shapes"] == "([2, 4] float32)"
    assert "forward" not in vars(model) and model.forward == original


def test_a_forward_the_instance_had_is_put_back_after_an_exception():
    model = _linear_relu().train()
    own = model.forward  # e.g. set by accelerate or the user: an instance attribute
    vars(model)["forward"] = own
    hooks = dict(model[0]._forward_hooks)
    state = copy.deepcopy(model.state_dict())
    with pytest.raises(ValueError, match="boom"):
        with Profiler(model) as p:
            model(torch.randn(1, 4))
            assert vars(model)["forward"] is not own
            raise ValueError("boom")
    assert vars(model)["forward"] is own and p.profiles == []
    assert dict(model[0]._forward_hooks) == hooks and model.training
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())


def test_calls_are_grouped_by_input_signature_each_with_its_own_shapes_and_flops():
    model = _linear_relu()
    with Profiler(model) as p:
        for batch in (1, 3, 1, 1):
            model(torch.randn(batch, 4))
    one, three = p.profiles
    assert (one.n_runs, three.n_runs) == (3, 1)
    assert one.meta["input_shapes"] == "([1, 4] float32)"
    assert three.meta["input_shapes"] == "([3, 4] float32)"
    assert one.nodes.loc[0, "input_shapes"].startswith("([1, 4] float32")
    assert three.meta["flops"] == 3 * one.meta["flops"] > 0
    assert [prof.meta["loop"]["call_group"] for prof in p.profiles] == [0, 1]
    assert one.meta["loop"]["signature"] == "([1, 4] float32)"
    assert one.meta["loop"]["window"] == three.meta["loop"]["window"] == 0


def test_signatures_dtypes_and_training_flags_are_kept_apart():
    model = _linear_relu()
    small, large, double = torch.randn(1, 4), torch.randn(3, 4), torch.randn(1, 4).double()
    with Profiler(model) as p:
        outputs = [model(x) for x in (small, large, small, large, small)]
        model.double()
        outputs.append(model(double))
        model.float().train()  # nothing the graph read changed: Dynamo's guards accept
        outputs += [model(small), model(small)]
    model.eval()
    expected = [model(x) for x in (small, large, small, large, small)]
    assert all(torch.equal(a, b) for a, b in zip(outputs, expected))
    runs = {prof.meta["loop"]["signature"]: prof.n_runs for prof in p.profiles}
    assert runs == {"([1, 4] float32)": 5, "([3, 4] float32)": 2, "([1, 4] float64)": 1}


def test_the_analysis_run_never_sees_the_callers_stateful_arguments():
    x, counter, log = torch.randn(2, 4), torch.zeros(()), []
    with Profiler(_Bump(), example_inputs={"x": x, "counter": torch.zeros(())}) as p:
        for _ in range(3):
            p.model(x, counter)
    assert counter.item() == 3 and p.profiles[0].meta["capture_mode"] == "dynamo"
    model = _Append()
    with Profiler(model) as p:
        for _ in range(3):
            model(x, log=log)
    assert log == [2, 2, 2]  # one append per real call (Dynamo's code replays it)
    # the list's length is guarded: each call is a capture of its own, timed on its copy
    assert sum(prof.n_runs for prof in p.profiles) == 3


def test_a_steps_ranges_are_carried_once_across_call_groups():
    from pyfxprof.loop.ranges import Range
    model = _linear_relu()
    with Profiler(model) as p:
        with Range("work"):
            torch.ones(1000).sum()
        model(torch.randn(1, 4))
        model(torch.randn(2, 4))
    first, second = p.profiles
    assert first.nodes["name"].tolist()[-1] == "range:work"
    assert first.samples[0, -1] > 0 and second.samples[0, -1] == 0
    assert first.meta["ranges_left_out"] == second.meta["ranges_left_out"] == 0


def _decode_loop(model, ids):
    with Profiler(model) as p:  # a hand-written greedy decode loop: prefill, then 4 steps
        token = model(ids)[:, -1:].argmax(-1)
        for _ in range(4):
            token = model(token)[:, -1:].argmax(-1)
    return p


def test_summary_and_generation_latency_of_a_decode_loop(tmp_path):
    model = torch.nn.Sequential(torch.nn.Embedding(10, 4), torch.nn.Linear(4, 10)).eval()
    ids = torch.randint(0, 10, (1, 5))
    _decode_loop(model, ids)  # captures (its calls are made by Dynamo); the next block takes
    p = _decode_loop(model, ids)  # them from the cache, its own forward timed beside them
    prefill, decode = p.profiles
    assert prefill.meta["input_shapes"] == "([1, 5] int64)" and prefill.n_runs == 1
    assert decode.meta["input_shapes"] == "([1, 1] int64)" and decode.n_runs == 4
    assert prefill.meta["flops"] == 5 * decode.meta["flops"] > 0
    decode.save(tmp_path / "decode.json")
    loaded = load_profile(tmp_path / "decode.json")
    step_starts = loaded.meta["loop"].pop("step_starts_ns")
    assert len(step_starts) == 1 and loaded.run_starts.min() >= step_starts[0]
    noise = loaded.meta["loop"].pop("noise")  # read once per window, not per call
    own_call_ns = loaded.meta["loop"].pop("own_call_ns")  # the model's own forward, beside
    assert own_call_ns > 0 and prefill.meta["loop"]["own_call_ns"] > 0
    assert decode.run_noise is None
    assert noise is None or (noise["wall_ns"] > 0 and noise["cpu_ns"] > 0
                             and set(noise) == set(NOISE_COLUMNS))
    assert loaded.meta["loop"] == {"window": 0, "steps": [0, 0], "schedule": "record_every_step",
                                   "untimed_calls": {},
                                   "call_group": 1, "signature": "([1, 1] int64)",
                                   "step_num": 0}
    latency = p.generation_latency()
    assert latency["generations"] == 1
    assert latency["ttft_ns"]["count"] == 1 and latency["decode_ns"]["count"] == 4
    assert 0 < latency["ttft_ns"]["median"] and 0 < latency["decode_ns"]["median"]
    # the user's time to first token is the model's own prefill forward; the graph's beside
    assert latency["ttft_ns"]["median"] == pytest.approx(prefill.meta["loop"]["own_call_ns"])
    assert latency["graph_ttft_ns"]["count"] == 1 and latency["graph_decode_ns"]["count"] == 4
    assert latency["decode_ns"]["median"] <= latency["decode_ns"]["p90"] <= latency["decode_ns"]["p99"]
    text = p.summary()
    assert text.startswith("Profiler(Sequential): 2 call signatures, 5 calls recorded, 2 Profiles")
    assert "[1] ([1, 1] int64): 4 calls, median " in text
    assert " per call, 2 nodes (capture dynamo from the cache in " in text
    assert "time to first token" in text and "per-token decode latency: median" in text


def test_a_scheduled_serving_loop_delivers_a_prefill_and_a_decode_profile_per_window():
    model = torch.nn.Sequential(torch.nn.Embedding(10, 4), torch.nn.Linear(4, 10)).eval()
    delivered = []
    with Profiler(model, schedule=schedule(wait=1, warmup=1, active=2),
                  on_trace_ready=delivered.append) as p:
        for _ in range(8):  # one request per step: a 5-token prompt, then 3 decode steps
            token = model(torch.randint(0, 10, (1, 5)))[:, -1:].argmax(-1)
            for _ in range(3):
                token = model(token)[:, -1:].argmax(-1)
            p.step()
    assert [(prof.meta["loop"]["window"], prof.meta["loop"]["call_group"], prof.n_runs)
            for prof in delivered] == [(0, 0, 2), (0, 1, 6), (1, 0, 2), (1, 1, 6)]
    assert [prof.meta["loop"]["steps"] for prof in delivered] == [[2, 3]] * 2 + [[6, 7]] * 2
    assert [prof.meta["warmup"] for prof in delivered] == [4] * 4  # calls in WARMUP steps
    latency = p.generation_latency()
    assert latency["generations"] == 4 and latency["decode_ns"]["count"] == 12


class _Recursive(torch.nn.Module):
    """Calls itself once more on a smaller input (a call nested in a call of the model)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        if x.shape[0] > 1:
            return self(x[1:]).sum() + self.lin(x).sum()
        return self.lin(x).sum()


@pytest.mark.parametrize("build", [_linear_relu, _BranchOnValue, _Recursive],
                         ids=["fx", "hooks", "recursive"])
def test_the_first_callers_thread_is_profiled_and_other_threads_calls_run_unprofiled(build):
    import threading

    model = build().eval()
    x = torch.randn(2, 4) if build is not _BranchOnValue else torch.randn(2, 3)
    expected, outputs = model(x), []

    def serve():
        for _ in range(10):
            outputs.append(model(x))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CaptureFallbackWarning)
        with Profiler(model) as p:
            model(x)  # this thread's calls are the profiled ones
            workers = [threading.Thread(target=serve) for _ in range(3)]
            for worker in workers:
                worker.start()
            for _ in range(10):
                model(x)
            for worker in workers:
                worker.join()
    assert len(outputs) == 30 and all(torch.allclose(out, expected) for out in outputs)
    (prof,) = p.profiles
    # (a capture call of several graphs is not timed: counted); the other threads' 30 calls
    # are counted with their reason, in the window's profile too
    assert p._untimed.pop(OTHER_THREAD) == 30
    assert prof.meta["loop"]["untimed_calls"][OTHER_THREAD] == 30
    assert prof.n_runs + sum(p._untimed.values()) == 11 and prof.meta["incomplete_runs"] == 0
    assert "forward" not in vars(model)


class _UntraceableInPlace(torch.nn.Module):
    """Changes buffers in place around a branch on a value FX cannot trace (hooks capture)."""

    def __init__(self) -> None:
        super().__init__()
        from tests.capture.test_model_state import InPlaceState
        self.inner = InPlaceState()

    def forward(self, x):
        y = self.inner(x)
        return y if y.sum() > -1e9 else -y


@pytest.mark.parametrize("capture", ["fx", "hooks"])
def test_buffers_a_profiled_loop_changes_in_place_advance_once_per_call_as_without_it(capture):
    from tests.capture.test_model_state import InPlaceState
    make = InPlaceState if capture == "fx" else _UntraceableInPlace
    model, reference = make(), make()
    reference.load_state_dict(model.state_dict())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CaptureFallbackWarning)
        with Profiler(model, schedule=schedule(wait=1, warmup=1, active=2)) as p:
            for _ in range(5):
                x = torch.randn(2, 4)
                torch.testing.assert_close(p.model(x), reference(x))
                p.step()
    for (key, value), expected in zip(model.state_dict().items(),
                                      reference.state_dict().values()):
        assert torch.equal(value, expected), key
    assert model.state_dict()[[k for k in model.state_dict() if "count" in k][0]].item() == 5
    (prof,) = p.profiles
    assert prof.meta["capture_mode"] == "dynamo"


class _BranchThenFlaky(torch.nn.Module):
    """An untraceable root (branch on a value) around a leaf that raises on one call."""

    def __init__(self, fail_on: int) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.flaky = Flaky(fail_on)

    def forward(self, x):
        y = self.lin(x)
        return self.flaky(y) if y.sum() > -1e9 else y


def _flaky_model(capture: str, fail_on: int) -> tuple[torch.nn.Module, dict]:
    """A model whose `flaky` leaf raises on the model's `fail_on`-th call (the capture's own
    runs of the leaf leave its counter as it was), captured by FX (codegen) or by hooks."""
    if capture == "fx":
        return torch.nn.Sequential(OrderedDict(lin=torch.nn.Linear(3, 3), flaky=Flaky(fail_on),
                                               relu=torch.nn.ReLU())), {"leaf_modules": [Flaky]}
    return _BranchThenFlaky(fail_on), {}


def _nothing_pending() -> bool:
    return len(RECORDER.collect(0, 2**32)) == 0 and _C.buffer_stats()["pending_records"] == 0


@pytest.mark.parametrize("capture", ["fx", "hooks"])
def test_a_model_error_keeps_its_type_with_a_note_naming_call_step_and_node(capture):
    model, options = _flaky_model(capture, fail_on=3)
    x = torch.randn(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CaptureFallbackWarning)
        with pytest.raises(ValueError) as info:
            with Profiler(model, **options) as p:
                for _ in range(5):
                    p.model(x)
                    p.step()
    assert type(info.value) is ValueError
    assert str(info.value) == f"bad batch on call {model.flaky.fail_on}"
    assert p.profiles == []
    note = "; ".join(getattr(info.value, "__notes__", []))
    # (Flaky counts its calls in Python: each call is a capture of its own, by Dynamo, whose
    # error is the model's as it is; a recorded call's note names its node)
    assert not note or note.startswith(f"pyfxprof: the model raised in call 3 of "
                                       f"{type(model).__name__} (step 2, record)")
    assert "forward" not in vars(model) and _nothing_pending()
    assert not any(m._forward_hooks or m._forward_pre_hooks for m in model.modules())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CaptureFallbackWarning)
        prof = profile(model, (x,), runs=3, warmup=1, progress=False, **options)
        with Profiler(model, **options) as again:
            again.model(x)
    assert prof.meta["dropped_records"] == 0 and prof.n_runs == 3
    runs = sum(prof.n_runs for prof in again.profiles)
    assert runs + sum(again._untimed.values()) == 1 and _nothing_pending()


@pytest.mark.parametrize("capture", ["fx", "hooks"])
def test_a_caught_model_error_leaves_the_other_calls_of_the_window(capture):
    model, options = _flaky_model(capture, fail_on=4)  # the window's third call
    failures = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CaptureFallbackWarning)
        with Profiler(model, schedule=schedule(wait=0, warmup=1, active=4), **options) as p:
            for _ in range(5):
                try:
                    p.model(torch.randn(2, 3))
                except ValueError as error:  # a bad batch the loop skips
                    failures += 1
                    notes = getattr(error, "__notes__", [])
                    assert not notes or "call 4 of" in notes[-1]
                p.step()
    timed = sum(prof.n_runs for prof in p.profiles)
    assert failures == 1 and timed + sum(p._untimed.values()) == 3
    assert _nothing_pending()


def test_a_call_the_model_rejects_raises_the_models_own_exception_and_profiling_goes_on():
    model = _linear_relu()
    with Profiler(model) as p:
        for _ in range(2):  # the call is made as torch.compile makes it: the model's own error
            with pytest.raises(RuntimeError, match="mat1 and mat2 shapes"):
                p.model(torch.randn(2, 5))
        p.model(torch.randn(2, 4))
    (prof,) = p.profiles
    assert prof.n_runs == 1 and "forward" not in vars(model)
    with pytest.raises(PyfxprofError):  # example_inputs must bind to forward
        Profiler(model, example_inputs=(torch.randn(2, 4), torch.randn(2, 4))).start()
    assert "forward" not in vars(model)


def test_calls_dynamo_guards_refuse_get_a_capture_of_their_own():
    model, x = CachedModel().eval(), torch.randn(1, 3)
    caches = [GrowingCache(2), GrowingCache(3), GrowingCache(3, append=False), GrowingCache(6)]
    expected = [model(x, copy.deepcopy(cache)) for cache in caches]
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureFallbackWarning)  # no fallback to hooks
        with torch.no_grad(), Profiler(model) as p:
            found = [model(x, cache) for cache in caches]
    for (out, cache), (want, want_cache), mine in zip(found, expected, caches):
        assert cache is mine and torch.equal(out, want) and torch.equal(mine.keys, want_cache.keys)
    first, variant = p.profiles
    assert first.n_runs == 3 and variant.n_runs == 1
    assert first.meta["capture_mode"] == variant.meta["capture_mode"] == "dynamo"
    assert variant.meta["loop"]["signature"].endswith("(guard variant 2)")


class _ScaledCache(CachedModel):
    """CachedModel whose output a plain Python attribute of the model scales (Dynamo guards
    it as a constant of the graph)."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = 1.0

    def forward(self, x, cache):
        y, cache = super().forward(x, cache)
        return y * self.scale, cache


@pytest.mark.parametrize("scales", [(1.0, 3.0, 3.0, 3.0, 3.0, 1.0, 3.0, 3.0),
                                    (2.0, 2.0, 5.0, 5.0, 7.0, 7.0, 7.0, 5.0, 2.0)])
def test_a_signatures_later_variant_checks_one_set_of_guards_per_call(monkeypatch, scales):
    # calls that go on to a later variant of their signature (a decode loop past its first
    # step) check its guards first, as Dynamo tries its most recent cache entry first; no
    # refusal is worded on the way (only a capture needs one)
    checks, refusals = [], []
    accepts, refusal = CallGroup.accepts, DynamoFrame.refusal
    monkeypatch.setattr(CallGroup, "accepts",
                        lambda self, bound: checks.append(self.index) or accepts(self, bound))
    monkeypatch.setattr(DynamoFrame, "refusal",
                        lambda self, bound: refusals.append(1) or refusal(self, bound))
    model, x = _ScaledCache().eval(), torch.randn(1, 3)
    outputs, per_call, refused = [], [], []
    with torch.no_grad(), Profiler(model) as p:
        for scale in scales:
            model.scale = scale
            before, refused_before = len(checks), len(refusals)
            outputs.append(model(x, cache=GrowingCache(2))[0])  # a keyword: the Python path
            per_call.append(len(checks) - before)
            refused.append(len(refusals) - refused_before)
    with torch.no_grad():
        expected = [scale * torch.relu(model.lin(x)) for scale in scales]
    for out, want in zip(outputs, expected):
        torch.testing.assert_close(out, want, rtol=0, atol=0)
    seen: set = set()
    previous = None
    for scale, count, worded in zip(scales, per_call, refused):
        if scale in seen:  # (a new one is captured, after every variant before refused)
            assert worded == 0 and (count == 1 if scale == previous else count <= len(seen)), \
                (per_call, refused)
        seen.add(scale)
        previous = scale
    assert sum(prof.n_runs for prof in p.profiles) == len(scales)  # every call recorded


def test_guards_of_the_models_own_state_are_checked_at_every_call():
    """The guard check is not cut short: changing an attribute of the model or a parameter's
    requires_grad between two calls of one signature sends the next call to a new capture,
    whose output is the eager one."""
    model, x = _ScaledCache().eval(), torch.randn(1, 3)
    calls = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureFallbackWarning)  # no fallback to hooks
        with torch.no_grad(), Profiler(model) as p:
            for change in (None, None, ("scale", 3.0), None, ("requires_grad", False)):
                if change and change[0] == "scale":
                    model.scale = change[1]
                elif change:
                    model.lin.weight.requires_grad_(change[1])
                out, _ = model(x, GrowingCache(2))
                calls.append(out)
    with torch.no_grad():
        expected = [m * torch.relu(model.lin(x)) for m in (1.0, 1.0, 3.0, 3.0, 3.0)]
    for out, want in zip(calls, expected):
        torch.testing.assert_close(out, want, rtol=0, atol=0)
    assert [prof.n_runs for prof in p.profiles] == [2, 2, 1]
    assert [prof.meta["loop"]["signature"][-17:] for prof in p.profiles[1:]] == [
        "(guard variant 2)", "(guard variant 3)"]


class _Counter:
    def __init__(self, step: int) -> None:
        self.step = step


class _ScaledByStep(torch.nn.Module):
    """Branches on a Python int of its argument (torch.fx cannot trace it): Dynamo's graph
    holds the int as a constant, guarded."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x, counter):
        if counter.step > 0:
            return self.lin(x) * counter.step
        return x


def test_a_python_int_of_an_argument_is_captured_dynamic():
    """counter.step (an attribute of an argument, as a cache's length) is a symbolic int
    in the first capture, which serves every later step (torch.compile would pin it, then
    recompile once)."""
    model, x = _ScaledByStep().eval(), torch.randn(1, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureFallbackWarning)
        with torch.no_grad(), Profiler(model) as p:
            found = [model(x, _Counter(step)) for step in range(1, 8)]
    assert all(torch.equal(out, model(x, _Counter(step))) for step, out in enumerate(found, 1))
    assert [prof.n_runs for prof in p.profiles] == [7]
    assert [prof.meta["capture_mode"] for prof in p.profiles] == ["dynamo"]


class _Named:
    def __init__(self, name: str) -> None:
        self.name = name


class _ByName(torch.nn.Module):
    """Branches on a string of its argument: Dynamo pins strings at every capture."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x, named):
        return self.lin(x) * 2 if named.name.endswith("0") else self.lin(x)


def test_a_signature_whose_guards_fail_at_every_call_ends_in_a_capture_taking_every_call():
    model, x = _ByName().eval(), torch.randn(1, 3)
    with pytest.warns(CaptureFallbackWarning, match=r"guards refused calls of this signature "
                      r"3 times \(the last time: .*name.*== 'step3'"):
        with torch.no_grad(), Profiler(model) as p:
            found = [model(x, _Named(f"step{k}")) for k in range(1, 8)]
    assert all(torch.equal(out, model(x, _Named(f"step{k}"))) for k, out in enumerate(found, 1))
    assert [prof.n_runs for prof in p.profiles] == [1, 1, 1]  # then: the model itself, counted
    assert [prof.meta["capture_mode"] for prof in p.profiles] == ["dynamo"] * 3
    assert sum(p._untimed.values()) == 4


def test_a_buffer_forward_assigns_advances_in_a_profiled_loop_as_without_it():
    from tests.capture.test_model_state import Counting
    model, reference = Counting(), Counting()
    reference.load_state_dict(model.state_dict())
    with Profiler(model) as p:  # torch.fx refuses it; Dynamo's code replays the assignment
        for _ in range(5):
            x = torch.randn(2, 4)
            torch.testing.assert_close(p.model(x), reference(x))
    assert model.steps.item() == reference.steps.item() == 5
    assert p.profiles[0].meta["capture_mode"] == "dynamo" and p.profiles[0].n_runs == 5


def test_meta_and_header_state_the_callers_model_and_autograd_modes():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout()).train()
    with torch.no_grad(), Profiler(model) as p:
        model(torch.randn(2, 4))
    meta = p.profiles[0].meta
    assert (meta["training"], meta["given_training"], meta["autograd"]) == \
        (True, True, "no_grad")
    assert p.profiles[0].table().splitlines()[0].endswith("model train, no_grad")
    with torch.inference_mode(), Profiler(model.eval()) as p:
        model(torch.randn(2, 4))
    assert p.profiles[0].meta["autograd"] == "inference_mode"


class _Residual(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU())

    def forward(self, x):
        out = self.body(x)
        out += x
        return out


def test_profile_memory_and_library_frames_give_each_call_group_what_profile_gives():
    model, x, profiled = _Residual().eval(), torch.randn(4, 16), []
    hook = model.body[1].register_forward_hook(
        lambda *_: profiled.append(torch.autograd._profiler_enabled()))
    with Profiler(model, profile_memory=True, library_frames=True):
        for _ in range(3):
            model(x)
    hook.remove()
    # Dynamo's code replays the hook's append once per call, with the value it read (the
    # analysis replays the graph alone: no Python of the model runs in it)
    assert profiled == [False] * 3
    model = _Residual().eval()  # (a model without the hook: one graph)
    with Profiler(model, profile_memory=True, library_frames=True) as p:
        for _ in range(3):
            model(x)
    with Profiler(model) as plain:
        model(x)
    once = profile(model, (x,), runs=1, warmup=0, progress=False, profile_memory=True,
                   library_frames=True, capture="dynamo")
    looped = p.profiles[0]
    columns = ["name", "cpu_alloc_bytes", "cpu_freed_bytes", "cpu_peak_bytes", "source_stack"]
    assert looped.n_runs == 3
    assert looped.nodes[columns].equals(once.nodes[columns])
    lines = looped.key_averages().table(sort_by="self_cpu_memory_usage").splitlines()
    assert "CPU Mem" in lines[1] and "Self CPU Mem" in lines[1]
    top = max(looped.key_averages(), key=lambda row: row.self_cpu_memory_usage)
    assert top.self_cpu_memory_usage >= x.numel() * x.element_size() > 0  # an output, at least
    assert lines[3].split()[0] == top.key
    assert "cpu_alloc_bytes" not in plain.profiles[0].nodes  # measured only when asked
    # torch's frames: the loop's Dynamo graphs carry only the model's own frames (Dynamo's
    # stack traces leave torch's inlined forwards out, docs/loop.md); fx's keep them
    traced = profile(model, (x,), runs=1, warmup=0, progress=False, library_frames=True,
                     capture="fx")
    kept = traced.nodes.set_index("module_path")["source_stack"]["body.0"]
    dropped = plain.profiles[0].nodes.set_index("module_path")["source_stack"]["body.0"]
    assert kept[-1].startswith("container.py:") and kept[0] == dropped[0]
    assert not any(frame.startswith("container.py:") for frame in dropped)


def test_profile_memory_is_refused_for_a_compiled_model():
    with pytest.raises(PyfxprofError, match="profile_memory=True is not supported for compiled"):
        Profiler(torch.compile(torch.nn.Linear(2, 2)), profile_memory=True)


def test_each_window_notes_its_own_first_call_before_the_hot_path_takes_the_rest():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
    with Profiler(model, schedule=schedule(wait=0, warmup=0, active=2, repeat=2)) as p:
        for step in range(4):
            with torch.set_grad_enabled(step < 2):  # the second window runs without grad
                for _ in range(3):
                    p.model(torch.randn(2, 4))
            p.step()
    first, second = p.profiles
    assert (first.n_runs, second.n_runs) == (6, 6)
    assert first.meta["grad"] is True and second.meta["grad"] is False


class _NegatedLinear(torch.nn.Module):
    """A Linear whose output a Python flag of the model negates (a branch of Dynamo's
    graph, guarded)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.negate = False

    def forward(self, x):
        y = self.lin(x)
        return -y if self.negate else y


@pytest.mark.parametrize("flags", ["FFFTTT", "FFTTF", "FTFTFT"])
def test_the_hot_path_takes_a_dynamo_groups_calls_and_checks_its_guards_at_each(
        monkeypatch, flags):
    """After a window's first call of a one-graph Dynamo group, its recorded calls of
    positional arguments run in C (no Python of the Profiler), Dynamo's guards checked on
    each: a changed flag sends the call back to Python, to the group its guards accept, and
    every output is the eager one."""
    model, x = _NegatedLinear().eval(), torch.randn(2, 3)
    negates = [flag == "T" for flag in flags]
    seen, profiled_call = [], Profiler._profiled_call
    monkeypatch.setattr(Profiler, "_profiled_call",
                        lambda self, *args: seen.append(model.negate) or profiled_call(self, *args))
    outputs = []
    with torch.no_grad(), Profiler(model) as p:
        for negate in negates:
            model.negate = negate
            outputs.append(model(x))
    with torch.no_grad():
        for out, negate in zip(outputs, negates):
            torch.testing.assert_close(out, -model.lin(x) if negate else model.lin(x),
                                       rtol=0, atol=0)
    # in Python: each change of the flag (the armed group's guards refuse it) and the call
    # after it (which arms the group it found); the others run in C
    changes = [k for k in range(len(negates)) if k == 0 or negates[k] != negates[k - 1]]
    expected = sorted({k for c in changes for k in (c, c + 1) if k < len(negates)})
    assert seen == [negates[k] for k in expected]
    assert sum(prof.n_runs for prof in p.profiles) == len(negates)


def test_calls_of_a_none_step_run_the_models_own_forward_counted_without_python(monkeypatch):
    """Once the first call made its group, a NONE step's calls are the model's own forward,
    counted (the call numbers of later recorded calls), with no Python of the Profiler; the
    other steps' calls reach it as before."""
    model, x = torch.nn.Linear(3, 3).eval(), torch.randn(2, 3)
    seen, forward = [], Profiler._forward
    monkeypatch.setattr(Profiler, "_forward",
                        lambda self, *args: seen.append(self.current_action) or forward(self, *args))
    outputs, steps = [], 6
    with torch.no_grad():
        with Profiler(model, schedule=schedule(wait=2, warmup=1, active=1, repeat=1)) as p:
            for _ in range(steps):
                outputs.extend(p.model(x) for _ in range(3))
                p.step()
        for out in outputs:
            torch.testing.assert_close(out, model(x), rtol=0, atol=0)
    # the capture; the warm-up step; the window's first call (the model's own beside the
    # graph) and the call that arms the group
    assert seen == [ProfilerAction.NONE] + [ProfilerAction.WARMUP] * 3 + [
        ProfilerAction.RECORD_AND_SAVE] * 2
    assert p._calls == p._first_call + 3 * steps - 1  # every call counted, in C or Python
    (prof,) = p.profiles
    assert prof.n_runs == 3
