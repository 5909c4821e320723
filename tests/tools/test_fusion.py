"""Tests for pyfxprof.tools.fusion: the Conv/BatchNorm fusion pass."""

import typing

import pytest
import torch
import torchvision
from torch import Tensor, nn
from torch.fx.experimental.optimization import fuse as torch_fx_fuse
from torch.nn.modules.batchnorm import _BatchNorm

from pyfxprof.tools.fusion import FusionError, FusionReport, fuse_conv_bn, max_abs_difference


def randomize_bn(model: nn.Module, seed: int = 0) -> nn.Module:
    """Give every BN non-trivial stats and affine params, so folding actually changes weights."""
    gen = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, _BatchNorm):
            n = m.num_features
            if m.running_mean is not None:
                m.running_mean.copy_(torch.randn(n, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=gen) + 0.5)
            if m.affine:
                m.weight.data.copy_(torch.rand(n, generator=gen) + 0.5)
                m.bias.data.copy_(torch.randn(n, generator=gen) * 0.1)
    return model


def assert_same_outputs(original, fused, *inputs):
    with torch.no_grad():
        torch.testing.assert_close(fused(*inputs), original(*inputs), rtol=1e-4, atol=1e-5)


def bn_count(model: nn.Module) -> int:
    return sum(isinstance(m, _BatchNorm) for m in model.modules())


# The FX conv/bn fusion tutorial's tricky model: nested Sequential and a wrapped BatchNorm.
class WrappedBatchNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.mod = nn.BatchNorm2d(1)

    def forward(self, x):
        return self.mod(x)


class TutorialModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 1, 1)
        self.bn1 = nn.BatchNorm2d(1)
        self.conv2 = nn.Conv2d(1, 1, 1)
        self.nested = nn.Sequential(nn.BatchNorm2d(1), nn.Conv2d(1, 1, 1))
        self.wrapped = WrappedBatchNorm()

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.conv2(x)
        x = self.nested(x)
        x = self.wrapped(x)
        return x


class ReusedConv(nn.Module):
    """The same conv module called at two sites; only the first is followed by BN."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)

    def forward(self, x):
        return self.conv(self.bn(self.conv(x)))


class ConvOutputUsedTwice(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)

    def forward(self, x):
        y = self.conv(x)
        return self.bn(y) + y


def test_tutorial_model_is_fused_and_close():
    torch.manual_seed(0)
    model = randomize_bn(TutorialModel()).eval()
    fused = fuse_conv_bn(model)
    assert isinstance(fused, torch.fx.GraphModule)
    assert fused.fusion_report.fused == [
        ("conv1", "bn1"),
        ("conv2", "nested.0"),
        ("nested.1", "wrapped.mod"),
    ]
    assert fused.fusion_report.skipped == []
    assert bn_count(fused) == 0
    x = torch.randn(2, 1, 8, 8)
    assert_same_outputs(model, fused, x)
    assert max_abs_difference(model, fused, (x,)) < 1e-5


def test_original_model_is_untouched():
    model = randomize_bn(TutorialModel()).eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    flags = [m.training for m in model.modules()]
    fused = fuse_conv_bn(model)
    after = model.state_dict()
    assert before.keys() == after.keys()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert [m.training for m in model.modules()] == flags
    assert bn_count(model) == 3 and bn_count(fused) == 0
    assert fused.conv1 is not model.conv1


@pytest.mark.parametrize(
    "name, shape",
    [("resnet18", (1, 3, 64, 64)), ("mobilenet_v2", (1, 3, 64, 64))],
)
def test_torchvision_matches_torch_fx_fuse(name, shape):
    torch.manual_seed(0)
    model = randomize_bn(getattr(torchvision.models, name)(weights=None)).eval()
    ours = fuse_conv_bn(model)
    reference = torch_fx_fuse(model)
    assert bn_count(model) - bn_count(ours) == bn_count(model) - bn_count(reference) > 0
    assert len(ours.fusion_report.fused) == bn_count(model) - bn_count(ours)
    x = torch.randn(*shape)
    with torch.no_grad():
        expected = model(x)
        torch.testing.assert_close(ours(x), expected, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(ours(x), reference(x), rtol=1e-4, atol=1e-4)


def test_conv_called_from_two_places_is_not_fused():
    model = randomize_bn(ReusedConv()).eval()
    fused = fuse_conv_bn(model)
    assert fused.fusion_report.fused == []
    [(conv, bn, reason)] = fused.fusion_report.skipped
    assert (conv, bn) == ("conv", "bn")
    assert "called from 2 places" in reason
    assert_same_outputs(model, fused, torch.randn(1, 4, 8, 8))


def test_conv_output_used_elsewhere_is_skipped():
    model = randomize_bn(ConvOutputUsedTwice()).eval()
    fused = fuse_conv_bn(model)
    [(conv, bn, reason)] = fused.fusion_report.skipped
    assert (conv, bn) == ("conv", "bn") and "also used by add" in reason
    assert_same_outputs(model, fused, torch.randn(1, 3, 8, 8))


def test_bn_without_running_stats_is_skipped():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4, track_running_stats=False)).eval()
    fused = fuse_conv_bn(model)
    [(conv, bn, reason)] = fused.fusion_report.skipped
    assert (conv, bn) == ("0", "1") and "running statistics" in reason
    assert_same_outputs(model, fused, torch.randn(2, 3, 8, 8))


def test_unsupported_kind_is_skipped_with_reason():
    model = randomize_bn(nn.Sequential(nn.ConvTranspose2d(3, 4, 2), nn.BatchNorm2d(4))).eval()
    fused = fuse_conv_bn(model)
    [(_, _, reason)] = fused.fusion_report.skipped
    assert reason == "no fusion rule for ConvTranspose2d -> BatchNorm2d"
    assert_same_outputs(model, fused, torch.randn(1, 3, 5, 5))


def test_bn_with_forward_hook_is_skipped():
    model = randomize_bn(nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))).eval()
    model[1].register_forward_hook(lambda module, inputs, output: None)
    [(_, _, reason)] = fuse_conv_bn(model).fusion_report.skipped
    assert "forward hooks" in reason


def test_conv_parameters_read_directly_is_skipped():
    class ReadsWeight(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)
            self.bn = nn.BatchNorm2d(4)

        def forward(self, x):
            return self.bn(self.conv(x)) + self.conv.weight.sum()

    model = randomize_bn(ReadsWeight()).eval()
    fused = fuse_conv_bn(model)
    [(_, _, reason)] = fused.fusion_report.skipped
    assert "read directly" in reason
    assert_same_outputs(model, fused, torch.randn(1, 3, 8, 8))


def test_training_mode_raises():
    model = TutorialModel().train()
    with pytest.raises(FusionError, match=r"call model\.eval\(\) first") as raised:
        fuse_conv_bn(model)
    assert "\n" not in str(raised.value)  # one line, as the CLI prints it


def test_single_bn_in_training_mode_raises():
    model = TutorialModel().eval()
    model.wrapped.mod.train()
    with pytest.raises(FusionError, match=r"'wrapped\.mod' is in training mode"):
        fuse_conv_bn(model)


def test_untraceable_model_raises_fusion_error():
    class DataDependent(nn.Module):
        def forward(self, x):
            return x if x.sum() > 0 else -x

    with pytest.raises(FusionError, match="cannot trace DataDependent"):
        fuse_conv_bn(DataDependent().eval())


def test_linear_batchnorm1d_is_fused():
    torch.manual_seed(0)
    model = randomize_bn(nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU())).eval()
    fused = fuse_conv_bn(model)
    assert fused.fusion_report.fused == [("0", "1")]
    assert bn_count(fused) == 0
    assert_same_outputs(model, fused, torch.randn(4, 8))


@pytest.mark.parametrize(
    "conv, bn, shape",
    [
        (nn.Conv1d(3, 6, 3, bias=False), nn.BatchNorm1d(6), (2, 3, 16)),
        (nn.Conv3d(3, 6, 3), nn.BatchNorm3d(6), (1, 3, 6, 6, 6)),
        (nn.Conv2d(4, 8, 3, groups=2), nn.BatchNorm2d(8, affine=False), (1, 4, 8, 8)),
    ],
)
def test_conv1d_conv3d_grouped_and_non_affine(conv, bn, shape):
    torch.manual_seed(0)
    model = randomize_bn(nn.Sequential(conv, bn)).eval()
    fused = fuse_conv_bn(model)
    assert fused.fusion_report.fused == [("0", "1")]
    assert_same_outputs(model, fused, torch.randn(*shape))


def test_max_abs_difference_handles_nested_outputs_and_restores_mode():
    class Multi(nn.Module):
        def __init__(self, offset):
            super().__init__()
            self.offset = offset

        def forward(self, x):
            return {"a": x, "b": (x * 2, [x + self.offset]), "n": 3}

    a, b = Multi(0.0).train(), Multi(0.5)
    assert max_abs_difference(a, b, (torch.zeros(3),)) == pytest.approx(0.5)
    assert a.training and b.training


def test_report_str_has_one_line_per_pair():
    report = FusionReport(fused=[("conv1", "bn1")], skipped=[("conv", "bn", "why")])
    assert str(report).splitlines() == [
        "Conv/BatchNorm fusion: 1 fused, 1 skipped",
        "  fused    conv1 + bn1",
        "  skipped  conv + bn: why",
    ]



class ConvBnWithTextAnnotations(nn.Module):
    """A conv + BN; each test sets its forward's annotations as text, as a module written with
    ``from __future__ import annotations`` has them (the CLI's default model's does)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)

    def forward(self, x, scale=2.0):
        return self.bn(self.conv(x)) * scale


class TupleOutput(ConvBnWithTextAnnotations):
    """The same model returning a pair."""

    def forward(self, x, scale=2.0):
        y = self.bn(self.conv(x)) * scale
        return y, y + 1


#: Names the annotations below use, evaluated in this module (as a model's in its own).
ANNOTATION_NAMES = (Tensor, typing.Tuple)


@pytest.mark.parametrize("cls, annotations", [
    (ConvBnWithTextAnnotations, {"x": "torch.Tensor", "scale": "float", "return": "torch.Tensor"}),
    (ConvBnWithTextAnnotations, {"x": "Tensor", "scale": "float", "return": "Tensor"}),
    (ConvBnWithTextAnnotations,
     {"x": "torch.Tensor", "scale": "float", "return": "NotDefinedAnywhere"}),
    (TupleOutput,
     {"x": "torch.Tensor", "scale": "float", "return": "tuple[torch.Tensor, torch.Tensor]"}),
    (TupleOutput, {"x": "Tensor", "scale": "float", "return": "typing.Tuple[Tensor, Tensor]"}),
])
def test_text_annotations_are_types_in_the_fused_model_so_it_scripts(cls, annotations,
                                                                      monkeypatch):
    """(A parameter left unannotated would be a Tensor to TorchScript: `scale` always is.)"""
    monkeypatch.setattr(cls.forward, "__annotations__", dict(annotations))
    model = randomize_bn(cls()).eval()
    fused = fuse_conv_bn(model)
    assert "_torch_" not in fused.code and "NotDefinedAnywhere" not in fused.code
    assert_same_outputs(model, torch.jit.script(fused), torch.randn(1, 3, 8, 8))


def test_the_cli_default_model_scripts_once_fused():
    """The default model's module is written with ``from __future__ import annotations``."""
    from pyfxprof.cli.default_model import resnet18
    model = randomize_bn(resnet18()).eval()
    scripted = torch.jit.script(fuse_conv_bn(model))
    assert_same_outputs(model, scripted, torch.randn(1, 3, 32, 32))
