"""Tests for pyfxprof.tools.replay_script_module: torch.nn modules rebuilt equal from their
arguments; a user-defined module imported from its module file and rebuilt in a script that
runs in a fresh interpreter without pyfxprof; modules it cannot rebuild refused in one line."""

import importlib
import sys
import textwrap

import pytest
import torch
from torch import nn

import pyfxprof
from pyfxprof.errors import PyfxprofError
from pyfxprof.tools.replay_script_module import constructor_source, import_lines
from tests.tools.test_replay_script import run_fresh

#: The user module is the whole model's weights: a coarse capture, as the test wants.
pytestmark = pytest.mark.filterwarnings("ignore:pyfxprof. coarse capture")

#: A user's module file (written to a temporary package: a fresh interpreter finds it only
#: through the script's own sys.path line).
USER_MODULES = '''
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim, hidden=32, act="gelu"):
        super().__init__()
        self.dim, self.hidden, self.act = dim, hidden, act
        self.up, self.down = nn.Linear(dim, hidden), nn.Linear(hidden, dim)

    def forward(self, x):
        return x + self.down(nn.functional.gelu(self.up(x)))


class Hidden(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)  # dim is not kept

    def forward(self, x):
        return self.proj(x)


class Liar(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = 1  # not the argument it was built with
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x)


class Net(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x).relu()
'''


@pytest.fixture
def user_modules(tmp_path, monkeypatch):
    package = tmp_path / "userpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "blocks.py").write_text(textwrap.dedent(USER_MODULES))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield importlib.import_module("userpkg.blocks")
    for name in ("userpkg.blocks", "userpkg"):
        sys.modules.pop(name, None)


def profiled(blocks, inner):
    return pyfxprof.profile(blocks.Net(inner).eval(), (torch.randn(4, 16),), runs=2, warmup=1,
                            leaf_modules=[type(inner)])


def test_a_user_module_is_imported_and_rebuilt_in_a_fresh_interpreter(user_modules, tmp_path):
    prof = profiled(user_modules, user_modules.Block(16, hidden=48))
    script = prof.replay_script("inner")
    assert "from userpkg.blocks import Block" in script
    assert "Block(dim=16, hidden=48, act='gelu')" in script
    run_in = tmp_path / "elsewhere"
    run_in.mkdir()
    out = run_fresh(script, run_in)
    assert "inputs: [((4, 16), torch.float32, (16, 1))]" in out and "median " in out
    assert "output: [((4, 16), torch.float32)]" in out


@pytest.mark.parametrize("name, words", [
    ("Hidden", "its __init__ takes 'dim', which the module does not keep"),
    ("Liar", "rebuilt from its attributes it differs in its weights"),
])
def test_a_user_module_it_cannot_rebuild_is_refused_in_one_line(user_modules, name, words):
    prof = profiled(user_modules, getattr(user_modules, name)(16))
    with pytest.raises(PyfxprofError, match=words) as error:
        prof.replay_script("inner")
    assert "\n" not in str(error.value)


def test_a_module_defined_in_a_function_is_refused_in_one_line():
    class Local(nn.Linear):
        pass
    with pytest.raises(PyfxprofError, match="defined inside a function, which a fresh "
                                            "interpreter cannot import"):
        import_lines(Local)


@pytest.mark.parametrize("module", [nn.Conv2d(3, 8, 3, stride=2, bias=False), nn.Linear(4, 5),
                                    nn.BatchNorm2d(6, eps=1e-3, momentum=None),
                                    nn.LayerNorm((4, 5)), nn.Embedding(9, 3, padding_idx=0),
                                    nn.MaxPool2d(3, stride=2), nn.GELU(approximate="tanh"),
                                    nn.MultiheadAttention(8, 2, batch_first=True)],
                         ids=lambda m: type(m).__name__)
def test_constructor_source_rebuilds_an_equal_torch_nn_module(module):
    rebuilt = eval(constructor_source(module), {"torch": torch})
    assert type(rebuilt) is type(module) and repr(rebuilt) == repr(module)
    assert [p.shape for p in rebuilt.parameters()] == [p.shape for p in module.parameters()]
