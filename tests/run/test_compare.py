import copy
import random

import numpy as np
import pytest
import torch

import pyfxprof
from pyfxprof.errors import PyfxprofError
from pyfxprof.run.compare import CallableModel, as_model, compare, merged_blocks

X = (torch.randn(8, 32),)
FAST = dict(blocks=6, max_blocks=6, runs_per_block=2, warmup=1, progress=False, seed=3)


def small():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU())


def test_interleaved_blocks_are_paired_and_balanced():
    d = compare(small(), small(), X, copies=2, **FAST)
    assert isinstance(d, pyfxprof.ProfileDiff) and d.design.kind == "paired"
    control, test = d.control.meta["ab"], d.test.meta["ab"]
    assert control["pair"] == test["pair"]
    assert control["blocks"] == [b for b in range(6) for _ in range(2)]
    assert control["copies"] == test["copies"] == [0, 1, 0, 1, 0, 1]  # two copies per side
    assert d.design.copies == (0, 1, 0, 1, 0, 1)
    assert d.control.n_runs == d.test.n_runs == 12 and d.control.meta["runs"] == 12
    # each block pair runs one side first; half the pairs start with the control
    assert sorted(control["positions"]) == [0, 0, 0, 1, 1, 1]
    assert [1 - p for p in control["positions"]] == test["positions"]
    frame = d.changes()
    assert set(frame["change"]) <= {"+", "-", "=", "?"}
    assert {"ci_low", "ci_high", "q_value"} <= set(frame.columns)


def test_callables_profile_as_models():
    d = compare(lambda x: torch.relu(x), lambda x: x.clamp(min=0), X, **FAST)
    assert d.control.meta["model"] == "test_callables_profile_as_models.<locals>.<lambda>"
    assert "relu" in " ".join(d.control.nodes["name"])
    assert "clamp" in " ".join(d.test.nodes["name"])
    assert isinstance(as_model(torch.add, "control"), CallableModel)
    with pytest.raises(ValueError, match="test must be a torch.nn.Module or a callable"):
        as_model(3, "test")


def test_outputs_of_another_shape_are_refused_unless_asked():
    with pytest.raises(PyfxprofError, match=r"outputs differ: control returns \[\(8, 32\) "
                                            r"float32\], test returns \[\(8, 4\) float32\]"):
        compare(small(), torch.nn.Linear(32, 4), X, **FAST)
    d = compare(small(), torch.nn.Linear(32, 4), X, check_outputs=False, **FAST)
    assert d.test.n_runs == 12


def test_a_raising_callable_is_one_line():
    with pytest.raises(PyfxprofError, match="test raised on the example inputs: RuntimeError"):
        compare(small(), lambda x: x @ torch.ones(3, 3), X, **FAST)


def test_arguments_are_checked():
    for kwargs, message in (({"blocks": 1}, "blocks must be an int >= 2"),
                            ({"runs_per_block": 0}, "runs_per_block"),
                            ({"runs": 5}, r"instead of \['runs'\]"),
                            ({"max_blocks": 4}, "max_blocks must be an int >= 6"),
                            ({"precision": -0.1}, "precision must be a fraction >= 0")):
        with pytest.raises(ValueError, match=message):
            compare(small(), small(), X, **{**FAST, **kwargs})


def test_blocks_are_added_until_the_whole_interval_is_narrow_enough():
    """Sequential by precision: an unreachable precision adds blocks, half as many at a
    time, up to max_blocks; a reached one adds none. Each batch is balanced."""
    d = compare(small(), small(), X, **{**FAST, "max_blocks": 10, "precision": 0.0})
    blocks = d.control.meta["ab"]["blocks"]
    assert blocks == [b for b in range(10) for _ in range(2)] and d.test.n_runs == 20
    positions = d.control.meta["ab"]["positions"]
    assert sum(positions[:6]) == 3 and sum(positions[6:9]) in (1, 2)
    d = compare(small(), small(), X, **{**FAST, "max_blocks": 10, "precision": float("inf")})
    assert d.control.n_runs == 12
    default = {key: value for key, value in FAST.items() if key != "max_blocks"}
    d = compare(small(), small(), X, **{**default, "precision": 0.0})
    assert len(set(d.control.meta["ab"]["blocks"])) == 3 * 6  # default: up to 3 x blocks


def test_global_random_state_is_untouched():
    torch_state, python_state = torch.get_rng_state(), random.getstate()
    compare(small(), small(), X, **{**FAST, "seed": None})
    assert torch.equal(torch.get_rng_state(), torch_state)
    assert random.getstate() == python_state


def test_merged_blocks_keep_runs_in_order():
    d = compare(small(), small(), X, **FAST)
    merged = merged_blocks([d.control, d.control], "p", [0, 1])
    assert merged.n_runs == 24 and merged.meta["ab"]["blocks"][12] == 1
    assert np.array_equal(merged.samples[12:], d.control.samples)


@pytest.mark.timing
def test_a_model_doing_three_times_the_work_is_slower():
    def once(x):
        return torch.tanh(x @ x.T)

    def thrice(x):
        return torch.tanh(x @ x.T) + torch.tanh(x @ x.T) * 0 + torch.tanh(x @ x.T) * 0

    d = compare(once, thrice, (torch.randn(256, 256),), blocks=8, max_blocks=8,
                runs_per_block=2, warmup=2, progress=False, seed=1)
    assert d.totals()["change"] == "+"
    assert d.totals()["rel_change"] > 0.5


def test_a_model_and_its_deep_copy_flag_no_row():
    """The CI version of benchmarks/bench_ab.py's A/A check: a model of 20 rows (in-place
    ReLUs of a few us beside matmuls) against a deep copy of itself. At the false
    discovery rate (5%) one comparison in 20 may flag a row; two of three flagging is
    a broken analysis (docs/ab.md, "Two copies of one model")."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[layer for _ in range(10) for layer in (
        torch.nn.Linear(64, 64), torch.nn.ReLU(inplace=True))])
    flagged = 0
    for seed in range(3):
        d = compare(model, copy.deepcopy(model), (torch.randn(16, 64),), blocks=6,
                    max_blocks=6, runs_per_block=2, warmup=2, progress=False, seed=seed)
        rows = d.changes()
        assert len(rows) == 20
        flagged += bool(rows["change"].isin(["+", "-"]).any())
    assert flagged <= 1


def test_each_copy_is_captured_once_however_many_copies(monkeypatch):
    """Three copies per side are six models, more than the capture cache keeps by default
    (MAX_MODELS): compare() makes room, so no copy is captured anew at each block."""
    import pyfxprof.run.capture_cache as capture_cache
    made = []
    original = capture_cache.prepare

    def counted(*args, **kwargs):
        made.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(capture_cache, "prepare", counted)
    compare(small(), small(), X, copies=3, **FAST)
    assert len(made) == 6
    assert capture_cache.CAPTURES.max_models == capture_cache.MAX_MODELS
