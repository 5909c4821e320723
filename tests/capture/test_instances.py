"""Instance paths of Dynamo graphs: a graph Dynamo compiled for a submodule's frame and ran for
several instances of it (the blocks of a container, each with a graph break) gives rows of
its own per instance, each named by the instance's full module path."""

import itertools

import pytest
import torch

import pyfxprof
from pyfxprof.capture.dynamo import module_path
from pyfxprof.capture.instances import Instance, instance_stack, locate, modules_of

RUNS = dict(runs=2, warmup=1, progress=False, capture="dynamo")
KINDS = ("list", "dict", "sequential")


class Leaf(torch.nn.Module):
    """Linear `a`, a ReLU in the block's own code, Linear `b`; a graph break at `cut`
    (0: first, 1: after `a`, 2: after `b`)."""

    def __init__(self, cut: int):
        super().__init__()
        self.cut = cut
        self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)

    def forward(self, x):
        if self.cut == 0:
            torch._dynamo.graph_break()
        x = self.a(x)
        if self.cut == 1:
            torch._dynamo.graph_break()
        x = self.b(torch.relu(x))
        if self.cut == 2:
            torch._dynamo.graph_break()
        return x


class Container(torch.nn.Module):
    """`children` held as `kind` (a ModuleList, a ModuleDict or a Sequential), called in turn."""

    def __init__(self, kind: str, children: list):
        super().__init__()
        self.kind = kind
        if kind == "list":
            self.items = torch.nn.ModuleList(children)
        elif kind == "dict":
            self.items = torch.nn.ModuleDict({f"k{k}": c for k, c in enumerate(children)})
        else:
            self.items = torch.nn.Sequential(*children)

    def forward(self, x):
        if self.kind == "sequential":
            return self.items(x)
        for child in (self.items.values() if self.kind == "dict" else self.items):
            x = child(x)
        return x


def build(kinds: tuple, blocks: int, cut: int) -> Container:
    """Containers nested as `kinds` (outermost first), `blocks` children each, Leaf blocks."""
    if len(kinds) == 1:
        return Container(kinds[0], [Leaf(cut) for _ in range(blocks)])
    return Container(kinds[0], [build(kinds[1:], blocks, cut) for _ in range(blocks)])


def leaf_paths(model: torch.nn.Module) -> list[str]:
    return [path for path, module in model.named_modules() if isinstance(module, Leaf)]


CASES = [(kinds, 3, cut) for kinds, cut in itertools.product([(k,) for k in KINDS], range(3))] + \
    [(pair, 2, k % 3) for k, pair in enumerate(itertools.permutations(KINDS, 2))]


@pytest.mark.parametrize("kinds, blocks, cut", CASES)
def test_each_instance_of_a_block_has_rows_of_its_own_named_by_its_path(kinds, blocks, cut):
    torch.manual_seed(0)
    model = build(kinds, blocks, cut).eval()
    prof = pyfxprof.profile(model, (torch.randn(2, 4),), **RUNS)
    nodes = prof.nodes[prof.nodes["graph"] >= 0]
    paths = leaf_paths(model)
    assert prof.meta["capture_mode"] == "dynamo" and len(paths) == blocks ** len(kinds)
    linear = nodes[nodes["target"].astype(str).str.endswith("linear")]
    relu = nodes[nodes["target"].astype(str).str.endswith("relu")]
    # every instance's Linears and ReLU are rows of their own (run once per call), in the
    # order the blocks run, named by the instance's full path
    assert list(linear["module_path"]) == [f"{p}.{m}" for p in paths for m in "ab"]
    assert list(relu["module_path"]) == paths
    assert (nodes["calls"] == 1).all() and nodes["name"].is_unique
    assert all(stack[-1] == path for stack, path in zip(relu["module_stack"], paths))
    assert (prof.samples[:, :len(nodes)] > 0).all()


class Repeated(torch.nn.Module):
    """One block (with a graph break) called three times: one instance, its rows run 3 times."""

    def __init__(self):
        super().__init__()
        self.step = Leaf(1)

    def forward(self, x):
        for _ in range(3):
            x = self.step(x)
        return x


def test_one_instance_called_in_a_loop_keeps_one_row_per_node_with_its_calls():
    prof = pyfxprof.profile(Repeated().eval(), (torch.randn(2, 4),), **RUNS)
    nodes = prof.nodes[prof.nodes["graph"] >= 0]
    # (Dynamo may compile the block's first part twice, for the first call and the later
    # ones: two graphs, each with the instance's path, their calls adding up to 3)
    assert nodes.groupby("module_path")["calls"].sum().to_dict() == {
        "step": 3, "step.a": 3, "step.b": 3}


class Shared(torch.nn.Module):
    """Two blocks, the first called twice around the second: rows per (graph, instance)."""

    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Leaf(1) for _ in range(2))

    def forward(self, x):
        for k in (0, 1, 0):
            x = self.blocks[k](x)
        return x


def test_instances_run_in_any_order_sum_each_instances_runs():
    model, x = Shared().eval(), torch.randn(2, 4)
    prof = pyfxprof.profile(model, (x,), **RUNS)
    nodes = prof.nodes[prof.nodes["graph"] >= 0]
    calls = nodes.groupby("module_path")["calls"].sum().to_dict()  # (over Dynamo's graphs)
    assert calls == {"blocks.0.a": 2, "blocks.0": 2, "blocks.0.b": 2,
                     "blocks.1.a": 1, "blocks.1": 1, "blocks.1.b": 1}
    assert (prof.samples[:, :len(nodes)] > 0).all()


def test_locate_reads_the_module_calls_on_the_stack_and_the_frames_locals():
    model = build(("list",), 2, 0)
    modules = modules_of(model)
    found = []

    def spy(module, args):
        found.append(locate(modules, None, frozenset({__file__})))
    handle = model.items[1].a.register_forward_pre_hook(spy)
    try:
        model(torch.randn(2, 4))
    finally:
        handle.remove()
    [instance] = found
    # the first frame outside this file is Module._call_impl of items.1.a (its local `self`);
    # the modules called are items.1 and items.1.a (the ModuleList is iterated, not called)
    assert [path for path, _ in instance.ancestors] == ["items.1", "items.1.a"]
    assert instance.path_of("L['self'].w", "w") == "items.1.a.w"
    raw = {"x": ("L['self']", Leaf), "y": ("G['other'].c", torch.nn.Linear)}
    stack = instance_stack(raw, instance, module_path)
    assert list(stack) == ["items.1", "items.1.a", "c"]


def test_an_instance_with_no_module_keeps_the_relative_paths():
    assert modules_of(lambda x: x) is None
    assert Instance((), ()).path_of("L['self'].a", "a") == "a"


class BranchLeaf(Leaf):
    """A Leaf whose break is a data-dependent branch (torch.fx cannot trace it)."""

    def forward(self, x):
        x = self.a(x)
        if x.sum() > -1e9:
            x = torch.relu(x)
        return self.b(x)


def test_the_profiler_loop_names_each_instance_too():
    torch.manual_seed(0)
    model, x = Container("list", [BranchLeaf(1) for _ in range(3)]).eval(), torch.randn(2, 4)
    with torch.no_grad():
        expected = model(x)
        with pyfxprof.Profiler(model) as p:
            outputs = [model(x) for _ in range(3)]
    assert all(torch.equal(out, expected) for out in outputs)
    [prof] = p.profiles
    nodes = prof.nodes[prof.nodes["graph"] >= 0]
    relu = nodes[nodes["target"].astype(str).str.endswith("relu")]
    assert prof.meta["capture_mode"] == "dynamo" and list(relu["module_path"]) == leaf_paths(model)
