"""A model that raises during the runs: one line naming the run and the node, the original
exception type and message, exit 2 on the CLI, and nothing of the failed run left pending."""

import re

import pytest
import torch

from pyfxprof import _C
from pyfxprof.cli import main as cli
from pyfxprof.errors import PyfxprofError
from pyfxprof.run.runner import profile
from pyfxprof.timing.recorder import RECORDER
from tests.fixtures_models import SMALL_INPUT, Flaky, flaky

RUN = r"(warm-up|timed) run \d+ of \d+"
NODE = r"'flaky' \(call_module flaky\)"  # the node's name, op and target


def nothing_pending() -> bool:
    return len(RECORDER.collect(0, 2**32)) == 0


@pytest.mark.parametrize("mode, capture", [("codegen", "fx"), ("interpreter", "fx"),
                                           ("codegen", "hooks")])
@pytest.mark.parametrize("fail_on", [3, 5])
def test_a_raising_model_is_one_line_naming_run_and_node(mode, capture, fail_on):
    model = flaky()
    model.flaky.fail_on = fail_on  # no warm-up: the user's own calls come after the runs
    RECORDER.collect(0, 2**32)
    with pytest.raises(PyfxprofError) as info:
        profile(model, (torch.randn(2, 3, 8, 8),), runs=6, warmup=0, mode=mode, capture=capture,
                leaf_modules=[Flaky], progress=False)
    message = str(info.value)
    assert re.fullmatch(f"the model raised in {RUN}, in node {NODE}: ValueError: bad batch "
                        f"on call {fail_on}", message), message
    assert isinstance(info.value.__cause__, ValueError)
    assert nothing_pending()
    assert model.training  # flags restored on the way out


def test_the_run_named_is_the_one_that_failed():
    model = flaky()
    model.flaky.fail_on = 3  # analysis run, timed runs 1 and 2 (the user's calls come after)
    with pytest.raises(PyfxprofError, match=f"in timed run 2 of 3, in node {NODE}"):
        profile(model, (torch.randn(2, 3, 8, 8),), runs=3, warmup=0, capture="fx",
                leaf_modules=[Flaky], progress=False)


def test_cli_exit_2_with_one_line(capsys):
    rc = cli.main(["profile", "tests.fixtures_models:flaky", "--input", SMALL_INPUT,
                   "--runs", "3", "--warmup", "2", "--capture", "hooks"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "\n" not in err, err
    assert re.fullmatch(f"pyfxprof: error: the model raised in {RUN}, in node {NODE}: "
                        "ValueError: bad batch on call 3", err), err
    assert nothing_pending()
    assert _C.buffer_stats()["pending_records"] == 0


class _RaisesBetweenLeaves(torch.nn.Module):
    """Raises in its own code, after its first leaf ran (`where="after"`) or before any."""

    def __init__(self, where: str) -> None:
        super().__init__()
        self.conv, self.relu = torch.nn.Conv2d(3, 4, 1), torch.nn.ReLU()
        self.where, self.calls = where, 0

    def forward(self, x):
        self.calls += 1
        if self.where == "before" and self.calls == 3:
            raise ValueError("before any leaf")
        y = self.conv(x)
        if self.where == "after" and self.calls == 3:
            raise ValueError("between the leaves")
        return self.relu(y)


@pytest.mark.parametrize("where", ["before", "after"])
def test_hooks_a_raise_in_the_models_own_code_is_outside_the_timed_nodes(where):
    with pytest.raises(PyfxprofError, match="in warm-up run 2 of 2, outside its timed nodes: "
                                            "ValueError"):
        profile(_RaisesBetweenLeaves(where), (torch.randn(2, 3, 8, 8),), runs=2, warmup=2,
                capture="hooks", progress=False)
    assert nothing_pending()


class _Interrupted(Flaky):
    """Ctrl-C on its `fail_on`-th call (KeyboardInterrupt, not an Exception)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls == self.fail_on:
            raise KeyboardInterrupt
        return x * 2


@pytest.mark.parametrize("capture", ["hooks", "fx"])
def test_an_interrupt_mid_run_passes_through_and_leaves_no_records(capture):
    model = flaky()
    model.flaky = _Interrupted(fail_on=5)  # analysis, warm-up 1 and 2, timed run 1, then 2
    RECORDER.collect(0, 2**32)
    with pytest.raises(KeyboardInterrupt):
        profile(model, (torch.randn(2, 3, 8, 8),), runs=4, warmup=2, capture=capture,
                leaf_modules=[_Interrupted], progress=False)
    assert _C.buffer_stats()["pending_records"] == 0
    assert nothing_pending()
