"""Real models end to end: a representative subset of torchvision classification models through
FX at a small input, nn.TransformerEncoder, and detection/segmentation models that fall back
with a stated coverage. The whole sweep is benchmarks/sweep_torchvision.py (behaviour only,
never speed)."""

import warnings

import pytest
import torch
from torch import nn

import pyfxprof
from pyfxprof.capture.tracing import CaptureFallbackWarning
from pyfxprof.data.validate import model_nodes

torchvision = pytest.importorskip("torchvision")

#: One or two per family: plain convs, depthwise/inverted residuals, channel shuffle, dense
#: concatenation, inception branches, squeeze-excitation, ConvNeXt, shifted windows, ViT (built
#: for 64x64 images: ViTs check the image size), MaxViT (1,500 nodes).
CLASSIFICATION = [
    "alexnet", "resnet18", "mobilenet_v3_small", "squeezenet1_1", "shufflenet_v2_x0_5",
    "densenet121", "googlenet", "inception_v3", "efficientnet_b0", "efficientnet_v2_s",
    "regnet_y_400mf", "mnasnet0_5", "convnext_tiny", "swin_t", "vit_b_32", "maxvit_t",
]
#: Input sizes of the models that refuse 64x64.
SIZES = {"inception_v3": 96, "maxvit_t": 224}


def quiet_profile(model, inputs, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CaptureFallbackWarning)
        return pyfxprof.profile(model, inputs, runs=2, warmup=0, progress=False, **kwargs)


def image(size: int) -> torch.Tensor:
    return torch.rand(3, size, size, generator=torch.Generator().manual_seed(0))


@pytest.mark.filterwarnings("ignore:The default weight initialization:FutureWarning")
@pytest.mark.parametrize("name", CLASSIFICATION)
def test_classification_model_profiles_through_fx(name):
    extra = {"image_size": 64} if name.startswith("vit") else {}
    model = torchvision.models.get_model(name, weights=None, **extra)
    prof = pyfxprof.profile(model, (image(SIZES.get(name, 64))[None],), runs=2, warmup=0,
                            progress=False)
    assert prof.meta["capture_mode"] == "fx" and prof.meta["capture_notes"] == []
    assert prof.n_runs == 2 and prof.n_nodes > 20
    assert 0.5 < prof.meta["coverage"] and prof.meta["flops"] > 0
    assert prof.nodes["flops"].sum() == prof.meta["flops"]
    top = prof.table(group_by="module", depth=1)
    assert "coverage" in top and "FLOP" in top


def test_transformer_encoder_inside_a_model_is_one_fx_leaf():
    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(16, 32)
            layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            self.head = nn.Linear(32, 10)

        def forward(self, x):
            return self.head(self.encoder(self.embed(x)).mean(dim=1))

    prof = quiet_profile(Classifier(), (torch.randn(2, 12, 16),))
    assert prof.meta["capture_mode"] == "fx"
    names = prof.nodes["name"][model_nodes(prof.nodes)]  # the outside row apart
    assert list(names) == ["embed", "encoder", "mean", "head"]


def test_bare_transformer_encoder_is_captured_by_dynamo_node_by_node():
    layer = nn.TransformerEncoderLayer(32, 4, 64, batch_first=True)
    encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    prof = pyfxprof.profile(encoder, (torch.randn(2, 12, 32),), runs=2, warmup=0,
                            progress=False)
    assert prof.meta["capture_mode"] == "dynamo"
    assert prof.meta["capture_notes"][0].startswith("fx: torch.fx cannot trace")
    assert {"layers.0", "layers.1"} <= {path[:8] for path in prof.nodes["module_path"]}
    assert 0 < prof.meta["coverage"]


@pytest.mark.slow
@pytest.mark.parametrize("builder, capture_mode", [
    ("fasterrcnn_mobilenet_v3_large_320_fpn", "dynamo"),  # Dynamo graphs split at breaks
    ("ssdlite320_mobilenet_v3_large", "dynamo")])  # a break in a loop: a graph runs per box
def test_detection_models_are_profiled_with_a_stated_coverage(builder, capture_mode):
    model = getattr(torchvision.models.detection, builder)(weights=None, weights_backbone=None)
    prof = quiet_profile(model, ([image(64)],))
    assert prof.meta["capture_mode"] == capture_mode
    assert "its own forward" in prof.meta["capture_notes"][0]
    assert 0 < prof.meta["coverage"] and prof.n_nodes > 50
    assert f"coverage {100 * prof.meta['coverage']:.1f}%" in prof.table()
    if capture_mode == "hooks":
        assert set(prof.nodes["op"]) == {"call_module"}
    else:
        ops = prof.nodes["op"].tolist()  # the graphs' rows, then the time between them
        last = ops[-2] if ops[-1] == "outside_graph" else ops[-1]  # and the user's call's
        assert prof.meta["graphs"] > 1 and last == "between_graphs"
        assert prof.nodes["module_path"].str.startswith("backbone").any()
        if builder.startswith("ssdlite"):  # its graph in a loop, timed at each run
            assert prof.nodes["calls"].max() > 1 and "Calls" in prof.table(width=None)


@pytest.mark.slow
def test_segmentation_model_profiles_with_a_stated_coverage():
    model = torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None,
                                                                      weights_backbone=None)
    prof = quiet_profile(model, (image(64)[None],))
    assert prof.meta["capture_mode"] in ("fx", "fx+leaf", "hooks")
    assert 0 < prof.meta["coverage"] and "coverage" in prof.table()
