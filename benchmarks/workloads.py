"""Models the benchmarks run: a 500-node graph of tiny Python ops, 500 tiny tensor ops, ResNet-18."""

import operator

import torch
import torch.fx as fx


def _chain(function, nodes: int, name: str) -> fx.GraphModule:
    """A graph calling `function(value, 1)` `nodes` times in a row."""
    graph = fx.Graph()
    value = graph.placeholder("x")
    for _ in range(nodes):
        value = graph.call_function(function, (value, 1))
    graph.output(value)
    return fx.GraphModule(torch.nn.Module(), graph, name)


def int_add_chain(nodes: int = 500) -> tuple[fx.GraphModule, tuple]:
    """`nodes` additions of Python ints (~20 ns each): the per-node overhead shows undiluted."""
    return _chain(operator.add, nodes, "IntAddChain"), (0,)


def tensor_add_chain(nodes: int = 500) -> tuple[fx.GraphModule, tuple]:
    """`nodes` adds on a 1-element tensor: tiny aten ops torch.profiler also sees."""
    return _chain(torch.add, nodes, "TensorAddChain"), (torch.zeros(1),)


def resnet18() -> tuple[torch.nn.Module, tuple]:
    """torchvision ResNet-18 (random weights) on a 5x3x224x224 input."""
    import torchvision
    return torchvision.models.resnet18(), (torch.randn(5, 3, 224, 224),)


def tensor_plus_one_chain(nodes: int = 300) -> tuple[fx.GraphModule, tuple]:
    """`nodes` times `x + 1` (operator.add, inlined as `x + 1` by FX) on a 1-element tensor."""
    return _chain(operator.add, nodes, "TensorPlusOneChain"), (torch.zeros(1),)


def resnet18_batch(batch: int) -> tuple[torch.nn.Module, tuple]:
    """torchvision ResNet-18 (random weights) on a batch x 3 x 224 x 224 input."""
    import torchvision
    return torchvision.models.resnet18(), (torch.randn(batch, 3, 224, 224),)
