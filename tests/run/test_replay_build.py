"""Tests for pyfxprof.run.replay_build: every replayable node kind rebuilt alone gives the
output shape and dtype the profile recorded; what cannot be rebuilt is refused in one line."""

import gc
import re

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

import pyfxprof
from pyfxprof.data.profile import Profile
from pyfxprof.errors import PyfxprofError
from pyfxprof.run.capture_cache import CAPTURES
from pyfxprof.run.replay_build import REPLAYED_OPS, function_of, rebuild


def describe(value) -> str:
    from pyfxprof.capture.shape_run import describe as text
    return text(value)


#: torch.nn module types with an input each (an embedding's ids within its table).
MODULES = [
    (lambda: nn.Conv2d(3, 6, 3, padding=1, groups=3), lambda: torch.randn(2, 3, 8, 8)),
    (lambda: nn.Conv1d(4, 4, 3, stride=2), lambda: torch.randn(1, 4, 16)),
    (lambda: nn.Linear(8, 5, bias=False), lambda: torch.randn(3, 8)),
    (lambda: nn.BatchNorm2d(3), lambda: torch.randn(2, 3, 4, 4)),
    (lambda: nn.LayerNorm(8), lambda: torch.randn(2, 5, 8)),
    (lambda: nn.MaxPool2d(2), lambda: torch.randn(1, 3, 8, 8)),
    (lambda: nn.Embedding(10, 4), lambda: torch.randint(0, 10, (2, 7))),
    (lambda: nn.GELU(), lambda: torch.randn(4, 4).t()),  # non-contiguous input
    (lambda: nn.MultiheadAttention(8, 2, batch_first=True), lambda: torch.randn(2, 3, 8)),
]


class Wrap(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x, x, x)[0] if isinstance(self.inner, nn.MultiheadAttention) else self.inner(x)


def replayed_matches_record(prof: Profile, name: str, model=None):
    built = rebuild(prof, name, model)
    args, kwargs = built.inputs()
    out = built.target(*args, **kwargs)
    row = prof.nodes[prof.nodes["name"] == name].iloc[0]
    assert describe(args) == row["input_shapes"]
    assert describe(out) == row["output_shapes"]
    recorded = [a["stride"] for a in built.spec["args"] if isinstance(a, dict) and "stride" in a]
    assert [list(a.stride()) for a in args if isinstance(a, torch.Tensor)] == recorded
    return built, args


@pytest.mark.parametrize("make, example", MODULES, ids=lambda f: str(f()).split("(")[0]
                         if callable(f) else "")
def test_call_module_of_each_type_rebuilds_with_the_models_own_module(make, example):
    model = Wrap(make()).eval()
    x = example()
    prof = pyfxprof.profile(model, (x,), runs=2, warmup=1, capture="dynamo"
                            if isinstance(model.inner, nn.MultiheadAttention) else "auto")
    for name in prof.nodes.loc[prof.nodes["op"].isin(REPLAYED_OPS), "name"]:
        built, args = replayed_matches_record(prof, name)
        if built.module is not None:
            assert any(built.module is m for m in model.modules())  # its weights, not a copy


class Functions(nn.Module):
    def forward(self, x, ids):
        y = torch.add(x, 1.5).transpose(0, 1).contiguous()
        z = torch.nn.functional.scaled_dot_product_attention(x, x, x, is_causal=True)
        return y.view(-1).sum() + z.mean() + ids.float().softmax(-1).sum()


@pytest.mark.parametrize("options", [{}, {"capture": "dynamo"},
                                     {"capture": "dynamo", "granularity": "aten"}],
                         ids=["fx", "dynamo", "aten"])
def test_functions_methods_and_aten_overloads_rebuild(options):
    x, ids = torch.randn(2, 4, 6, 8), torch.randint(3, 9, (2, 5))
    prof = pyfxprof.profile(Functions(), (x, ids), runs=2, warmup=1, **options)
    names = prof.nodes.loc[prof.nodes["op"].isin(REPLAYED_OPS), "name"].tolist()
    ops = set(prof.nodes.loc[prof.nodes["op"].isin(REPLAYED_OPS), "op"])
    assert len(names) >= 5 and "call_function" in ops
    for name in names:
        replayed_matches_record(prof, name)
    targets = " ".join(prof.nodes["target"])
    assert ("aten" in targets) == ("granularity" in options)
    assert "scaled_dot_product" in targets


def test_function_of_resolves_dotted_targets():
    assert function_of("torch._C._nn.linear") is torch._C._nn.linear
    assert function_of("_operator.add")(2, 3) == 5
    with pytest.raises(PyfxprofError, match="cannot find the function"):
        function_of("nowhere.at_all")


def tiny_profile(**row) -> Profile:
    base = {"index": [0], "name": ["n"], "op": ["call_function"], "target": ["torch.relu"],
            "module_path": [""], "module_type": [""], "module_stack": [()],
            "call_args": ['{"args": [], "kwargs": {}}']}
    base.update({k: [v] for k, v in row.items()})
    return Profile(pd.DataFrame(base), np.array([[100]]), np.array([100]))


@pytest.mark.parametrize("row, words", [
    ({"op": "outside_graph"}, "the Python outside the graph"),
    ({"op": "between_graphs"}, "graph break"),
    ({"op": "fused_kernel"}, "compiled kernel (its ops); a compiled profile records no call"),
    ({"op": "get_attr"}, "not a graph node's call"),
    ({"op": "call_function", "communication": True}, "collective"),
    ({"call_args": ""}, "no recorded call"),
    ({"call_args": '{"args": [{"opaque": "DynamicCache"}], "kwargs": {}}'}, "DynamicCache"),
])
def test_nodes_it_cannot_rebuild_are_refused_in_one_line(row, words):
    with pytest.raises(PyfxprofError, match="cannot replay") as error:
        rebuild(tiny_profile(**row), "n")
    assert words in str(error.value) and "\n" not in str(error.value)


def test_a_missing_node_names_its_neighbours():
    with pytest.raises(PyfxprofError, match=r"did you mean \['layer1_conv'\]"):
        rebuild(tiny_profile(name="layer1_conv"), "layer1.conv")


def test_a_profile_that_outlives_its_model_asks_for_model_and_takes_it():
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    prof = pyfxprof.profile(model, (torch.randn(2, 4),), runs=2, warmup=1)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    del model
    CAPTURES.clear()
    gc.collect()
    with pytest.raises(PyfxprofError, match=r"model is gone: pass it as replay\(\.\.\., model=model\)"):
        rebuild(prof, "0")
    other = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
    other.load_state_dict(state)
    assert rebuild(prof, "0", model=other).module is other[0]
    with pytest.raises(PyfxprofError, match="has no submodule"):
        rebuild(prof, "0", model=nn.Identity())


class Broken(nn.Module):
    """Two Dynamo graphs around a graph break (a data-dependent branch)."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

    def forward(self, x):
        y = self.a(x)
        if y.sum().item() > 1e9:
            y = y * 2
        return self.b(y)


def test_a_graph_breaks_nodes_replay_and_its_between_graphs_row_is_refused():
    prof = pyfxprof.profile(Broken(), (torch.randn(2, 4),), runs=2, warmup=1)
    ops = prof.nodes.set_index("name")["op"]
    assert "between_graphs" in set(ops)
    for name, op in ops.items():
        if op in REPLAYED_OPS:
            replayed_matches_record(prof, name)
        else:
            with pytest.raises(PyfxprofError, match=re.escape(f"cannot replay: node '{name}'")):
                rebuild(prof, name)


def test_a_compiled_profiles_kernel_rows_are_refused_naming_the_eager_replay(inductor_cache):
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 8)).eval()
    x = torch.randn(4, 16)
    prof = pyfxprof.profile(torch.compile(model), (x,), runs=2, warmup=1)
    kernels = prof.nodes[prof.nodes["op"].isin(["fused_kernel", "extern_kernel"])]
    assert len(kernels) >= 2
    eager = pyfxprof.profile(model, (x,), runs=2, warmup=1)
    for _, row in kernels.iterrows():
        with pytest.raises(PyfxprofError, match="is a compiled kernel") as error:
            rebuild(prof, row["name"])
        text = str(error.value)
        assert "\n" not in text and all(op in text for op in row["aten_ops"][:4])
        path = row["source_modules"][0]
        assert f".replay({path!r}, variants=['compile'])" in text
        replayed_matches_record(eager, eager.nodes.loc[eager.nodes["module_path"] == path,
                                                       "name"].iloc[0])
