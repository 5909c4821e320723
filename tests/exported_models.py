"""Programs made by torch.export for the tests of exported programs: an MLP, a ResNet-18 (the
CLI's default model, small images) and a tiny GPT-2 exported with a dynamic sequence length.
Each program is exported once per process (export takes seconds); profile() never writes to
it. Usable as CLI models: ``pyfxprof profile tests.exported_models:mlp_program --input 64x512``."""

import functools

import torch
from torch.export import Dim

#: The MLP's input and the ResNet's (5 small images).
MLP_SHAPE = (64, 512)
RESNET_SHAPE = (2, 3, 64, 64)
#: The GPT-2's batch of token ids and the range its sequence length was exported with.
GPT2_BATCH, GPT2_SEQ = 2, Dim("seq", min=4, max=64)


def mlp() -> torch.nn.Module:
    """Three Linear layers with ReLUs, large enough that each layer's time dominates."""
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(),
                               torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                               torch.nn.Linear(1024, 10)).eval()


@functools.lru_cache(maxsize=None)
def mlp_program() -> torch.export.ExportedProgram:
    """The MLP exported for a batch of 64."""
    return torch.export.export(mlp(), (torch.randn(*MLP_SHAPE),))


def mlp_module() -> torch.nn.Module:
    """``mlp_program().module()`` (a new module each call)."""
    return mlp_program().module()


def resnet() -> torch.nn.Module:
    from pyfxprof.cli.default_model import resnet18
    torch.manual_seed(0)
    return resnet18().eval()


@functools.lru_cache(maxsize=None)
def resnet_program() -> torch.export.ExportedProgram:
    """ResNet-18 exported for RESNET_SHAPE images."""
    return torch.export.export(resnet(), (torch.randn(*RESNET_SHAPE),))


def resnet_module() -> torch.nn.Module:
    return resnet_program().module()


@functools.lru_cache(maxsize=None)
def gpt2_program() -> torch.export.ExportedProgram:
    """A tiny GPT-2 (tests/tiny_transformers.py) exported with a dynamic sequence length."""
    from tests.tiny_transformers import tiny_gpt2
    torch.manual_seed(0)
    ids = torch.randint(0, 100, (GPT2_BATCH, 16))
    return torch.export.export(tiny_gpt2(), (ids,), dynamic_shapes=({1: GPT2_SEQ},))


def token_ids(length: int) -> torch.Tensor:
    return torch.randint(0, 100, (GPT2_BATCH, length), generator=torch.Generator().manual_seed(1))
