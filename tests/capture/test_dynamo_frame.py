"""capture/dynamo_frame.py: the code Dynamo generates around its graph, kept with the graph
behind a relay, makes calls that give the model's own outputs, object identities and side
effects (a cache updated in place); its guards say which calls it is valid for."""

import torch

from pyfxprof.capture.dynamo_frame import LiveCall, frame_capture
from pyfxprof.capture.inputs import BoundInputs


class Cache:
    """A KV-cache-like object the model appends to in place."""

    def __init__(self, length: int, mode: str = "append") -> None:
        self.keys = torch.arange(length * 4, dtype=torch.float32).reshape(length, 4)
        self.mode = mode


class CachedModel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x, cache):
        y = self.lin(x)
        if cache.mode == "append":
            cache.keys = torch.cat([cache.keys, y], dim=0)
        scores = (cache.keys @ y.T).softmax(0)
        return {"out": (scores * cache.keys).sum(0), "cache": cache, "layers": 1}


def _call(model, length, mode="append"):
    return BoundInputs((torch.ones(1, 4), Cache(length, mode)))


def _captured(model, length=3):
    model.eval()
    with torch.no_grad():
        graph, frame = frame_capture(LiveCall.of(model.forward, model), _call(model, length),
                                     "CachedModel")
    frame.run_graph_with(lambda flat: graph(*flat))
    return graph, frame


def test_calls_give_the_models_own_outputs_identities_and_side_effects():
    model = CachedModel()
    graph, frame = _captured(model)
    assert any(n.meta["nn_module_stack"] == {"lin": ("lin", torch.nn.Linear)}
               for n in graph.graph.nodes if n.op == "call_function")
    eager, captured = _call(model, 3), _call(model, 3)
    with torch.no_grad():
        expected, found = model(*eager.args), frame.call(captured)
    assert found["cache"] is captured.args[1] and found["layers"] == 1
    assert torch.equal(found["out"], expected["out"])
    assert torch.equal(captured.args[1].keys, eager.args[1].keys)
    assert captured.args[1].keys.shape == (4, 4)  # the caller's cache grew by one row


def test_one_capture_serves_a_growing_cache_and_the_graph_runs_through_the_relay():
    model = CachedModel()
    graph, frame = _captured(model, length=3)
    runs = []
    frame.run_graph_with(lambda flat: runs.append(len(flat)) or graph(*flat))
    for length in (4, 9, 17):
        eager, captured = _call(model, length), _call(model, length)
        with torch.no_grad():
            assert frame.accepts(captured)
            torch.testing.assert_close(frame.call(captured)["out"], model(*eager.args)["out"],
                                       rtol=0, atol=0)
        assert torch.equal(captured.args[1].keys, eager.args[1].keys)
    assert len(runs) == 3


def test_guards_refuse_the_calls_the_code_was_not_made_for():
    model = CachedModel()
    _, frame = _captured(model)
    with torch.no_grad():
        assert frame.accepts(_call(model, 5))
        assert not frame.accepts(_call(model, 5, mode="read"))  # another branch
        assert not frame.accepts(BoundInputs((torch.ones(2, 4), Cache(5))))  # first tensor
    with torch.enable_grad():
        assert not frame.accepts(_call(model, 5))  # the autograd mode of the capture


class Breaks(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # data-dependent branch: a graph break
            return x + 1
        return x - 1


def test_a_graph_break_gives_the_graphs_run_by_dynamos_code():
    model = Breaks().eval()
    with torch.no_grad():
        graph, frame = frame_capture(LiveCall.of(model.forward, model),
                                     BoundInputs((torch.ones(2),)), "Breaks")
        found = [frame.call(BoundInputs((x,))) for x in (torch.ones(2), -torch.ones(2))]
    assert graph is None and len(frame.graphs) == 2 and frame.breaks
    assert [out.tolist() for out in found] == [[2.0, 2.0], [-2.0, -2.0]]


class ReturnsItsInputs(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x, cache):
        cache.keys.add_(1.0)  # in place, as a static cache is written
        return {"x": x, "row": x[0], "keys": cache.keys, "y": self.lin(x)}


def test_outputs_that_alias_the_inputs_are_the_callers_own_tensors():
    model = ReturnsItsInputs().eval()
    with torch.no_grad():
        graph, frame = frame_capture(LiveCall.of(model.forward, model), _call(model, 3), "M")
        frame.run_graph_with(lambda flat: graph(*flat))
        x, cache = torch.ones(1, 4), Cache(3)
        keys = cache.keys
        found = frame.call(BoundInputs((x, cache)))
    assert found["x"] is x and found["keys"] is keys and cache.keys is keys
    assert found["row"].untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert torch.equal(keys, Cache(3).keys + 1)  # updated once, in place
