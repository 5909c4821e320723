"""Models the benchmarks run: a 500-node graph of tiny Python ops, 500 tiny tensor ops, ResNet-18."""

import operator

import torch
import torch.fx as fx


def int_add_chain(nodes: int = 500) -> tuple[fx.GraphModule, tuple]:
    """`nodes` additions of Python ints (~20 ns each): the per-node overhead shows undiluted."""
    graph = fx.Graph()
    value = graph.placeholder("x")
    for _ in range(nodes):
        value = graph.call_function(operator.add, (value, 1))
    graph.output(value)
    return fx.GraphModule(torch.nn.Module(), graph, "IntAddChain"), (0,)


def tensor_add_chain(nodes: int = 500) -> tuple[fx.GraphModule, tuple]:
    """`nodes` in-place adds on a 1-element tensor: tiny aten ops torch.profiler also sees."""
    graph = fx.Graph()
    value = graph.placeholder("x")
    for _ in range(nodes):
        value = graph.call_function(torch.add, (value, 1))
    graph.output(value)
    return fx.GraphModule(torch.nn.Module(), graph, "TensorAddChain"), (torch.zeros(1),)


def resnet18() -> tuple[torch.nn.Module, tuple]:
    """torchvision ResNet-18 (random weights) on a 5x3x224x224 input."""
    import torchvision
    return torchvision.models.resnet18(), (torch.randn(5, 3, 224, 224),)
