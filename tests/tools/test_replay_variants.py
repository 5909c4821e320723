"""Tests for pyfxprof.tools.replay_variants: the cuda_graph variant replays a CUDA node's graph
with the as-is outputs (on a GPU), and says in one line why not on a CPU node or an in-place
node; every variant computes in the dtype it names and leaves the as-is inputs alone."""

import pytest
import torch
from torch import nn

import pyfxprof
from pyfxprof.run.replay_build import Rebuilt
from pyfxprof.tools.replay_variants import variant_call

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def test_cuda_graph_on_a_cpu_node_is_a_row_saying_why():
    prof = pyfxprof.profile(nn.Sequential(nn.Linear(8, 8)), (torch.randn(4, 8),), runs=2,
                            warmup=1)
    row, = prof.replay("0", budget=0.1, variants=["cuda_graph"]).variants
    assert row.verdict == "?" and "\n" not in row.error
    assert row.error == ("PyfxprofError: cuda_graph replays CUDA work: node '_0' runs on cpu "
                         "(profile it with device='cuda')")


def linear_built(device: str, mutates: bool = False) -> Rebuilt:
    spec = {"args": [{"tensor": [4, 8], "dtype": "float32", "stride": [8, 1],
                      "device": device}], "kwargs": {}}
    module = nn.Linear(8, 8).to(device)
    return Rebuilt("fc", "call_module", "fc", module, spec, module, 1000.0, mutates=mutates)


@pytest.mark.parametrize("name, dtype", [("bf16", torch.bfloat16), ("fp16", torch.float16),
                                         ("channels_last", torch.float32),
                                         ("contiguous", torch.float32),
                                         ("inference_mode", torch.float32),
                                         ("threads=1", torch.float32)])
def test_each_variant_computes_in_its_dtype_on_its_own_inputs(name, dtype):
    built = linear_built("cpu")
    args, kwargs = built.inputs()
    kept = args[0].clone()
    variant = variant_call(name, built, args, kwargs)
    with variant.context():
        out = variant.call()
    assert out.dtype == dtype and out.shape == (4, 8) and torch.equal(args[0], kept)


@CUDA
def test_cuda_graph_replays_the_node_with_the_as_is_outputs():
    model = nn.Sequential(nn.Linear(64, 64), nn.GELU()).cuda().eval()
    prof = pyfxprof.profile(model, (torch.randn(16, 64, device="cuda"),), runs=3, warmup=1)
    result = prof.replay("0", budget=0.5, variants=["cuda_graph"])
    row, = result.variants
    assert row.error == "" and row.verdict in "+-=?" and row.median_ns > 0
    assert row.max_rel_error <= 1e-5


@CUDA
def test_cuda_graph_of_an_in_place_node_is_refused_in_one_line():
    built = linear_built("cuda", mutates=True)
    variant = variant_call("cuda_graph", built, *built.inputs())
    with pytest.raises(pyfxprof.PyfxprofError, match="writes to its inputs, and a graph "
                                                     "replays on the same memory"):
        variant.call()
