"""Tests of pyfxprof.capture.collectives: torch.distributed's in-place collectives traced as graph
nodes of their own (constants bound), tagged as communication; functional collectives' waits.
Running them needs process groups: tests/run/test_distributed.py does, with 2 gloo processes."""

import torch
import torch.distributed as dist
import torch.fx as fx

from pyfxprof.capture.collectives import BoundCollective, with_explicit_waits
from pyfxprof.capture.node_table import nodes_frame
from pyfxprof.capture.tracing import capture, timed_nodes


class InPlaceCollectives(torch.nn.Module):
    """The usual eager style: results ignored, tensors reduced in place, one async."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.linear(x)
        dist.all_reduce(y, op=dist.ReduceOp.MAX)
        dist.broadcast(y, src=0)
        work = dist.all_reduce(x, async_op=True)
        work.wait()
        return torch.relu(y) + x


def test_in_place_collectives_are_nodes_of_their_own_tagged_as_communication():
    captured = capture(InPlaceCollectives())
    assert captured.mode == "fx"
    frame = nodes_frame(timed_nodes(captured.graph_module.graph), captured.graph_module)
    rows = frame.set_index("name")
    assert rows.loc["all_reduce", "target"] == "torch.distributed.all_reduce"
    assert rows.loc["broadcast", "target"] == "torch.distributed.broadcast"
    assert list(frame.loc[frame["communication"], "name"]) == [
        "all_reduce", "broadcast", "all_reduce_1", "wait"]
    assert list(frame.loc[~frame["communication"], "name"]) == ["linear", "relu", "add"]


def test_the_constants_the_code_cannot_spell_are_bound_and_the_traced_tensors_stay_args():
    gm = capture(InPlaceCollectives()).graph_module
    calls = {n.name: n for n in gm.graph.nodes if isinstance(n.target, BoundCollective)}
    reduce_max = calls["all_reduce"]
    assert reduce_max.args == (next(n for n in gm.graph.nodes if n.name == "linear"),)
    assert reduce_max.kwargs == {}
    assert reduce_max.target.constants["op"] == dist.ReduceOp.MAX
    assert reduce_max.target.constants["group"] is None
    assert calls["broadcast"].target.constants["src"] == 0
    assert calls["all_reduce_1"].target.constants["async_op"] is True
    assert "all_reduce(op=RedOpType.MAX" in repr(reduce_max.target)


def test_a_bound_collective_calls_the_function_with_its_constants_and_is_never_copied():
    seen = []
    bound = BoundCollective(lambda tensor, **kw: seen.append((tensor, kw)), {"op": "MAX"})
    bound("t", group=None)
    assert seen == [("t", {"group": None, "op": "MAX"})]
    import copy
    assert copy.deepcopy(bound) is bound


def test_a_functional_collective_gets_its_wait_as_a_node_and_the_users_graph_is_untouched():
    graph = fx.Graph()  # what tracing funcol.all_reduce gives, built without a process group
    x = graph.placeholder("x")
    reduced = graph.call_function(torch.ops._c10d_functional.all_reduce.default, (x, "sum", "0"))
    reduced.name = "all_reduce"
    graph.output(graph.call_function(torch.relu, (reduced,)))
    gm = fx.GraphModule(torch.nn.Module(), graph)
    before = [n.name for n in gm.graph.nodes]
    waited = with_explicit_waits(gm)
    assert [n.name for n in gm.graph.nodes] == before
    names = [n.name for n in waited.graph.nodes]
    assert names.index("wait_tensor_default") == names.index("all_reduce") + 1
    relu = next(n for n in waited.graph.nodes if n.name == "relu")
    assert relu.args[0].name == "wait_tensor_default"
    frame = nodes_frame(timed_nodes(waited.graph), waited).set_index("name")
    assert frame.loc["wait_tensor_default", "communication"]
