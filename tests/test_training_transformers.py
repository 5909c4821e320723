"""Hugging Face models with labels (the loss inside the model) in train mode: profiled as
training steps on a graph rung, forward and backward of each node."""

from __future__ import annotations

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


@pytest.mark.filterwarnings("ignore::pyfxprof.capture.tracing.CaptureFallbackWarning")
def test_a_causal_lm_in_a_training_loop_says_why_it_has_no_backward_columns(tmp_path):
    model, _ = llama()
    model.train()
    ids = token_ids(16)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    with pyfxprof.Profiler(model, backward=True) as p:
        for _ in range(2):
            optimizer.zero_grad()
            p.model(input_ids=ids, labels=ids).loss.backward()
            optimizer.step()
            p.step()
    prof = p.profiles[-1]
    assert prof.meta["capture_mode"] == "hooks" and prof.backward_samples is None
    note = prof.meta["backward_note"]
    assert note.startswith("no backward columns") and "\n" not in note
    assert "dynamo: the model is in training mode" in note
    prof.export_html(tmp_path / "r.html")
    assert "backward: no backward columns" in (tmp_path / "r.html").read_text()
