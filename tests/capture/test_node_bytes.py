"""Tests of capture.node_bytes: the bytes a node moves at least (inputs, parameters, outputs,
by dtype), hand-counted, and the columns a profile's nodes get from the analysis run."""

import pytest
import torch
from torch import nn

import pyfxprof
from pyfxprof.capture.node_bytes import node_bytes


@pytest.mark.parametrize("dtype, size", [(torch.float32, 4), (torch.bfloat16, 2),
                                         (torch.float64, 8), (torch.int8, 1)])
@pytest.mark.parametrize("shape", [(3,), (2, 5), (4, 1, 6)])
def test_inputs_and_outputs_are_counted_at_their_element_size(dtype, size, shape):
    x = torch.ones(shape, dtype=dtype)
    figures = node_bytes(None, (x, x.clone()), x + x)
    count = x.numel()
    assert figures["in_bytes"] == 2 * count * size
    assert figures["param_bytes"] == 0
    assert figures["bytes_by_dtype"] == f"{str(dtype)[6:]}={3 * count * size}"
    assert figures["dtype"] == str(dtype)[6:]
    assert figures["aliases_input"] is False


def test_a_tensor_passed_twice_is_read_once_and_parameters_count():
    linear = nn.Linear(6, 3).to(torch.bfloat16)
    x = torch.ones(4, 6)
    figures = node_bytes(linear, (x, x), torch.ones(4, 3, dtype=torch.bfloat16))
    assert figures["in_bytes"] == 4 * 6 * 4
    assert figures["param_bytes"] == (6 * 3 + 3) * 2
    assert figures["bytes_by_dtype"] == "float32=96, bfloat16=66"
    assert figures["dtype"] == "float32"  # the dtype moving most bytes


def test_views_and_in_place_ops_alias_their_input():
    x = torch.ones(4, 4)
    assert node_bytes(None, (x,), x.t())["aliases_input"]
    assert node_bytes(None, (x,), x.relu_())["aliases_input"]
    assert not node_bytes(None, (x,), x.contiguous().clone())["aliases_input"]
    assert not node_bytes(None, (x,), None)["aliases_input"]  # no output tensor


def test_profile_nodes_carry_the_roofline_columns():
    model = nn.Sequential(nn.Linear(16, 8), nn.ReLU())
    prof = pyfxprof.profile(model, (torch.ones(5, 16),), runs=2, warmup=0, progress=False)
    rows = prof.nodes.set_index("name")
    assert rows.loc["_0", "in_bytes"] == 5 * 16 * 4
    assert rows.loc["_0", "param_bytes"] == (16 * 8 + 8) * 4
    assert rows.loc["_0", "out_bytes"] == 5 * 8 * 4
    assert rows.loc["_0", "flops"] == 2 * 5 * 16 * 8 and rows.loc["_0", "vector_flops"] == 0
    assert rows.loc["_1", "vector_flops"] == 5 * 8 and rows.loc["_1", "flops"] == 0
    assert (rows["dtype"] == "float32").all() and (rows["unknown_ops"] == "").all()


class _NoStorage(torch.Tensor):
    """A wrapper subclass whose storage raises when touched, as a collective's async result's
    does."""

    def untyped_storage(self):
        raise RuntimeError("Attempted to access the data pointer on an invalid python storage.")


def _tensor_of_kind(kind: str) -> torch.Tensor:
    base = torch.ones(3, 4)
    makers = {"strided": lambda: base, "empty": lambda: torch.ones(0, 4),
              "meta": lambda: base.to("meta"), "sparse_coo": base.to_sparse,
              "sparse_csr": base.to_sparse_csr, "no_storage": lambda: base.as_subclass(_NoStorage),
              "nested": lambda: torch.nested.nested_tensor([torch.ones(2), torch.ones(3)],
                                                           layout=torch.jagged),
              "view": lambda: base[1:]}
    return makers[kind]()


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("kind", ["strided", "empty", "meta", "sparse_coo", "sparse_csr",
                                  "nested", "no_storage", "view"])
@pytest.mark.parametrize("place", ["input", "output", "both"])
def test_every_kind_of_tensor_is_counted_without_touching_a_storage_it_lacks(kind, place):
    tensor = _tensor_of_kind(kind)
    size = tensor.numel() * tensor.element_size() if kind != "nested" else None
    figures = node_bytes(None, (tensor,) if place != "output" else (),
                         tensor if place != "input" else None)
    expected_in = size if place != "output" else 0
    if size is not None:
        assert figures["in_bytes"] == expected_in
    assert figures["aliases_input"] is (place == "both" and kind not in ("empty",))


def _buffered(x):
    out = torch.empty_like(x)
    return torch.add(x, x, out=out), {"out": out}


@pytest.mark.parametrize("what, make, fresh", [
    ("a new output", lambda x: (x + 1, {}), [96]),
    ("an out= buffer", _buffered, []),
    ("in place", lambda x: (x.mul_(2), {}), []),
    ("a view of the input", lambda x: (x.t(), {}), []),
    ("two new outputs", lambda x: (torch.max(x, dim=0), {}), [6 * 4, 6 * 8]),
    ("a new output and the input", lambda x: ((x.clone(), x), {}), [96]),
    ("a view of a new output", lambda x: ((x + 1)[1:], {}), [96]),
])
def test_fresh_outputs_are_the_allocations_no_argument_shares(what, make, fresh):
    x = torch.ones(4, 6)
    result, kwargs = make(x)
    figures = node_bytes(None, (x,), result, kwargs)
    assert figures["fresh_out_bytes"] == sum(fresh), what
    assert figures["fresh_out_largest"] == max(fresh, default=0), what


def test_a_module_returning_its_parameter_allocates_nothing():
    linear = nn.Linear(3, 3)
    assert node_bytes(linear, (torch.ones(3),), linear.weight)["fresh_out_bytes"] == 0
