"""Hugging Face models with labels (the loss inside the model) in train mode: profiled as
training steps on a graph rung, forward and backward of each node."""

from __future__ import annotations

import contextlib

import pytest
import torch

import pyfxprof

from tests.hf_models import gpt2, llama, token_ids


@pytest.mark.timing(attempts=3)  # coverage: gpt2 read 0.79 once at load 7 (0.99 usually)
@pytest.mark.parametrize("build", [llama, gpt2], ids=["llama", "gpt2"])
def test_causal_lm_with_labels_in_train_mode_is_on_a_graph_rung(build):
    model, _ = build()
    model.train()
    ids = token_ids(16)
    before = [p.detach().clone() for p in model.parameters()]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        prof = pyfxprof.profile(model, {"input_ids": ids, "labels": ids}, runs=5, warmup=1,
                                backward=True, progress=False)
    finally:
        torch.set_num_threads(threads)
    assert prof.meta["capture_mode"] in ("fx", "dynamo") and prof.meta["training"]
    assert prof.meta["backward_mechanism"] == "aot"
    assert prof.meta["coverage"] >= 0.85  # forward + backward over whole steps
    frame = prof.to_dataframe()
    model_rows = frame[~frame["op"].isin(["loss", "backward"])]
    assert (model_rows["backward_median"] > 0).sum() >= len(model_rows) // 4
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert all(p.grad is None for p in model.parameters())


def test_cli_backward_prints_forward_and_backward_columns_for_a_tiny_llama_with_labels(capsys):
    from pyfxprof.cli.main import main
    code = main(["profile", "tests.tiny_transformers:tiny_llama_with_labels", "--input",
                 "1x16:int64", "--backward", "--runs", "2", "--warmup", "1", "--threads", "1",
                 "--top", "5"])
    out = capsys.readouterr().out
    assert code == 0 and "capture dynamo" in out
    assert any("Median" in line and "Backward median" in line and "Bwd/Fwd" in line
               for line in out.splitlines())


def _train(build, steps: int, profiler_of=None):
    """(losses, state_dict) after `steps` SGD steps of a fresh seeded model with labels,
    through ``profiler_of(model)``'s loop when given (the Profiler then)."""
    torch.manual_seed(0)
    model, _ = build()
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    profiler = profiler_of(model) if profiler_of else None
    losses = []
    torch.manual_seed(1)  # the dropout masks
    with profiler or contextlib.nullcontext():
        for step in range(steps):
            ids = token_ids(16, seed=step)
            optimizer.zero_grad()
            loss = (profiler.model if profiler else model)(input_ids=ids, labels=ids).loss
            loss.backward()
            optimizer.step()
            losses.append(loss.detach())
            if profiler:
                profiler.step()
    return losses, model.state_dict(), profiler


@pytest.mark.timing(attempts=3)  # coverage is a timing figure
@pytest.mark.parametrize("build", [llama, gpt2], ids=["llama", "gpt2"])
def test_a_causal_lm_in_a_training_loop_gets_backward_columns_on_the_dynamo_rung(build):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        plain_losses, plain_state, _ = _train(build, 3)
        losses, state, p = _train(build, 3, lambda m: pyfxprof.Profiler(m, backward=True))
    finally:
        torch.set_num_threads(threads)
    assert all(torch.equal(a, b) for a, b in zip(plain_losses, losses))
    assert all(torch.equal(plain_state[k], state[k]) for k in plain_state)
    [prof] = p.profiles  # one capture serves every step (labels=ids aliased, as captured)
    # the first step's call captured the group (the model's own call, not timed per node)
    assert prof.meta["capture_mode"] == "dynamo" and prof.n_runs == 2
    assert prof.backward_samples is not None and "backward_note" not in prof.meta
    assert prof.meta["coverage"] >= 0.85  # forward + backward over whole calls
    frame = prof.to_dataframe()
    nodes = frame[~frame["op"].isin(["optimizer", "backward", "data"])]
    assert (nodes["backward_median"] > 0).sum() >= len(nodes) // 4
    if build is gpt2:  # its dropout (p=0.1) is in the graph: the masks drawn as unprofiled
        assert nodes["target"].astype(str).str.contains("dropout").any()
