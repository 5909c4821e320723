"""Tests of capture.kernel_work: a kernel's FLOPs and its own inputs' and outputs' bytes from
the post-grad nodes it covers (hand counts on fake-traced graphs, torch's FLOP counter), and
which kernel owns a node Inductor maps to several."""

import pytest
import torch
import torch.fx.experimental.proxy_tensor as proxy
from hypothesis import given
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode

from pyfxprof.capture.kernel_work import WORK_UNKNOWN, kernel_work, owned_nodes


def traced(function, *inputs):
    """`function` traced to aten ops on fake tensors (each node's meta["val"]), as Inductor's
    post-grad graphs are."""
    return proxy.make_fx(function, tracing_mode="fake")(*inputs)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("shape", [(8, 4), (3, 5, 7), (1024,)])
def test_a_fused_chain_moves_its_inputs_and_output_not_its_intermediates(dtype, shape):
    x, y = torch.ones(shape, dtype=dtype), torch.ones(shape, dtype=dtype)
    gm = traced(lambda a, b: ((a + b) * 2).relu(), x, y)
    covered = {n.name for n in gm.graph.nodes if n.op == "call_function"}
    work = kernel_work(gm, covered)
    size = x.numel() * x.element_size()
    assert work["in_bytes"] == 2 * size and work["out_bytes"] == size
    assert work["vector_flops"] == 3 * x.numel() and work["flops"] == 0
    assert work["dtype"] == str(dtype)[6:] and work["unknown_ops"] == ""


def test_an_intermediate_used_outside_the_kernel_is_written():
    def returns_both(a):
        e = a.exp()
        return e, e.relu()
    gm = traced(returns_both, torch.ones(16))
    names = [n.name for n in gm.graph.nodes if n.op == "call_function"]
    alone = kernel_work(gm, set(names[:1]))  # exp alone: read a, write exp
    assert (alone["in_bytes"], alone["out_bytes"]) == (64, 64)
    both = kernel_work(gm, set(names))  # exp is returned too: both leave the kernel
    assert (both["in_bytes"], both["out_bytes"]) == (64, 128)


@pytest.mark.parametrize("m, k, n", [(16, 32, 8), (1, 64, 64), (33, 7, 5)])
def test_matrix_flops_match_torchs_counter(m, k, n):
    a, b, bias = torch.ones(m, k), torch.ones(k, n), torch.ones(n)
    gm = traced(lambda x, w, c: torch.addmm(c, x, w), a, b, bias)
    covered = {n.name for n in gm.graph.nodes if n.op == "call_function"}
    with FlopCounterMode(display=False) as counter:
        torch.addmm(bias, a, b)
    work = kernel_work(gm, covered)
    assert work["flops"] == counter.get_total_flops() == 2 * m * k * n
    assert work["in_bytes"] == 4 * (m * k + k * n + n) and work["out_bytes"] == 4 * m * n


def test_an_expanded_input_is_read_once():
    gm = traced(lambda a, b: a + b.expand(8, 16), torch.ones(8, 16), torch.ones(16))
    add = {n.name for n in gm.graph.nodes if n.target == torch.ops.aten.add.Tensor}
    assert kernel_work(gm, add)["in_bytes"] == 4 * (8 * 16 + 16)


def test_without_fake_tensors_or_nodes_the_work_is_unknown():
    gm = torch.fx.symbolic_trace(lambda a: a + 1)  # no meta["val"]
    assert kernel_work(gm, {"add"}) == {"unknown_ops": WORK_UNKNOWN}
    assert kernel_work(traced(lambda a: a + 1, torch.ones(2)), set()) == {
        "unknown_ops": WORK_UNKNOWN}


KERNELS = st.sampled_from(["extern_kernels.mm", "aten.sort", "cpp_fused_a", "cpp_fused_b",
                           "triton_poi_c"])


@given(st.dictionaries(KERNELS, st.lists(st.sampled_from("abcdefgh"), min_size=1,
                                         unique=True), min_size=1))
def test_every_covered_node_is_owned_by_exactly_one_kernel(covers):
    owned = {handle: owned_nodes(covers, handle) for handle in covers}
    names = [name for nodes in owned.values() for name in nodes]
    assert len(names) == len(set(names))
    assert set(names) == {name for nodes in covers.values() for name in nodes}
    for handle, nodes in owned.items():
        library = [other for other in covers if other.split(".")[0] in ("extern_kernels", "aten")]
        for name in nodes:  # a node a library call covers is that call's
            assert handle in library or not any(name in covers[o] for o in library)
