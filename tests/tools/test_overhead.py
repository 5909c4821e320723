"""Tests of the overhead comparison: the paired-rounds interval on synthetic data (hand-checked,
deterministic), the report's wording, and small end-to-end runs (never speed)."""

import numpy as np
import pytest
import torch

from pyfxprof.cli import main as cli
from pyfxprof.tools.overhead import (TORCH_PROFILER, AddChain, Estimate, OverheadReport,
                                     compare_overhead, paired_estimate, paired_rounds)

METHODS = {"pyfxprof codegen", "pyfxprof interpreter", "time.time interpreter", TORCH_PROFILER}


def test_interval_is_the_sign_tests_order_statistics_of_the_differences():
    # differences 1..30 (shuffled): median 15.5; the sign test's 95% interval for n = 30 is
    # [X(10), X(21)] (P(Binomial(30, 1/2) <= 9) = 0.021 <= 0.025)
    order = np.random.default_rng(0).permutation(30)
    estimate = paired_estimate(np.full(30, 1000), 1000 + 1 + order)
    assert estimate == Estimate(15.5, 10.0, 21.0) and estimate.resolved


def test_an_interval_holding_zero_is_not_resolved_and_says_its_width():
    plain = np.full(30, 10_000)
    noise = np.arange(-15, 15) * 100  # -1.5 µs .. +1.4 µs around a 0 ns effect
    estimate = paired_estimate(plain, plain + noise)
    assert estimate.low < 0 < estimate.high and not estimate.resolved
    assert estimate.text() == "not resolved (±550 ns)"  # (X(21) - X(10)) / 2 = (500+600)/2
    assert estimate.scaled(10).text() == "not resolved (±55 ns)"


def test_a_negative_effect_resolves_and_fewer_than_six_rounds_never_do():
    estimate = paired_estimate(np.full(30, 500), np.full(30, 500) - 40 - np.arange(30))
    assert estimate.resolved and estimate.high < 0 and estimate.text().startswith("-")
    few = paired_estimate([100] * 5, [200] * 5)
    assert (few.low, few.high, few.resolved) == (None, None, False)
    assert few.text() == "not resolved (fewer than 6 rounds)"


def test_rounds_alternate_which_block_runs_first():
    calls = []
    plain = lambda k: calls.append("plain") or 100  # noqa: E731
    method = lambda k: calls.append("m") or 130  # noqa: E731
    out = paired_rounds(plain, {"m": method}, rounds=4, block=3)
    assert calls == ["plain", "m", "m", "plain"] * 2
    assert out["m"].tolist() == [[100, 130]] * 4


def test_report_shows_resolved_figures_with_intervals_and_noise_as_not_resolved():
    rounds = 30
    plain = np.full(rounds, 100_000)
    steady = np.stack([plain, plain + 12_000 + np.arange(rounds)], axis=1)  # +12 µs per call
    noisy = np.stack([plain, plain + (np.arange(rounds) - 15) * 3_000], axis=1)
    report = OverheadReport("toy", 300, {"pyfxprof codegen": steady, TORCH_PROFILER: noisy},
                            block=5, events_per_call=600)
    assert report.added_per_node("pyfxprof codegen").resolved
    text = report.format()
    codegen = next(line for line in text.splitlines() if line.startswith("pyfxprof codegen"))
    assert codegen.endswith("+40 ns [40 ns, 40 ns]")  # (12,000 + 14.5) / 300
    profiler = next(line for line in text.splitlines() if line.startswith(TORCH_PROFILER))
    assert "not resolved (±" in profiler and "-" not in profiler.split("not resolved")[0][24:]
    assert text.splitlines()[-1].startswith("torch.profiler recorded 600 events per call: "
                                            "not resolved (±")


def test_every_method_is_measured_in_paired_rounds_on_the_chain():
    report = compare_overhead(AddChain(6), (torch.zeros(4),), rounds=2, warmup=1, block=1)
    assert set(report.rounds_ns) == METHODS and report.n_nodes == 6
    assert all(pairs.shape == (2, 2) and (pairs > 0).all() for pairs in report.rounds_ns.values())
    assert report.events_per_call >= 6  # one aten::add per node at least


class _KeywordsOnly(torch.nn.Module):
    """Its input comes through **kwargs, which a torch.fx graph cannot receive."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, **kwargs):
        return self.lin(kwargs["x"]).relu()


def test_a_dynamo_graph_is_compared_on_the_graphs_own_inputs():
    report = compare_overhead(_KeywordsOnly(), {"x": torch.ones(2, 3)}, rounds=2, warmup=1,
                              block=1, capture_mode="dynamo")
    assert report.n_nodes == 2 and all(len(v) == 2 for v in report.rounds_ns.values())


def test_cli_prints_the_chain_then_the_model(capsys):
    assert cli.main(["overhead", "torch.nn:ReLU", "--input", "4", "--runs", "6",
                     "--block", "1", "--warmup", "0", "--chain", "5"]) == 0
    out = capsys.readouterr().out
    chain, model = out.split("\n\n")
    assert chain.startswith("overhead on chain of 5 x + 1 (16 floats): 5 nodes · 6 paired")
    assert model.startswith("overhead on ReLU: 1 nodes · 6 paired rounds")
    for block in (chain, model):
        rows = [line for line in block.splitlines() if line.split("  ")[0] in METHODS]
        assert len(rows) == 4 and all(("[" in r and "]" in r) or "not resolved (±" in r
                                      for r in rows)


def test_a_model_without_operations_is_a_one_line_error(capsys):
    assert cli.main(["overhead", "torch.nn:Identity", "--input", "4", "--chain", "0"]) == 2
    assert capsys.readouterr().err.strip() == (
        "pyfxprof: error: Identity has no operations to time (its graph only passes inputs "
        "through)")


@pytest.mark.parametrize("argv", [["--runs", "5"], ["--rounds", "5"], ["--block", "0"], ["--chain", "-1"]])
def test_cli_refuses_too_few_rounds_and_bad_counts(capsys, argv):
    with pytest.raises(SystemExit) as info:
        cli.main(["overhead", "torch.nn:ReLU", *argv])
    assert info.value.code == 2
