"""The CLI's torch-only default model matches torchvision's ResNet-18 (weights, graph, output)."""

import torch
import torch.fx

from pyfxprof.cli.default_model import resnet18
from pyfxprof.cli.model_spec import DEFAULT_MODEL, load_model

torchvision = __import__("pytest").importorskip("torchvision")


def test_default_model_is_the_torch_only_resnet18():
    assert type(load_model(DEFAULT_MODEL)).__name__ == "ResNet18"


def test_same_parameters_graph_and_output_as_torchvision():
    reference = torchvision.models.resnet18().eval()
    ours = resnet18().eval()
    ours.load_state_dict(reference.state_dict(), strict=True)
    graph = [(n.op, str(n.target), n.name) for n in torch.fx.symbolic_trace(ours).graph.nodes]
    expected = [(n.op, str(n.target), n.name)
                for n in torch.fx.symbolic_trace(reference).graph.nodes]
    assert graph == expected
    x = torch.randn(1, 3, 64, 64)
    with torch.no_grad():
        assert torch.equal(ours(x), reference(x))
