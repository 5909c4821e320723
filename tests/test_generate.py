"""Profiling Hugging Face ``generate`` under ``pyfxprof.Profiler``: tiny GPT-2 and Llama built
from configs (random weights, no hub), greedy decode with a dynamic and a static KV cache.
Prefill and decode steps are captured by TorchDynamo (capture/dynamo_frame.py), one capture
for all decode steps, and generate the tokens they generate without the Profiler."""

import copy
import warnings

import pytest
import torch

transformers = pytest.importorskip("transformers")

from pyfxprof.capture.tracing import CaptureFallbackWarning  # noqa: E402
from pyfxprof.loop.profiler import Profiler  # noqa: E402

PROMPT, NEW_TOKENS = 6, 8


def _gpt2():
    config = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=64,
                                     n_positions=32, bos_token_id=0, eos_token_id=0)
    return transformers.GPT2LMHeadModel(config)


def _llama():
    config = transformers.LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=2, num_key_value_heads=1,
                                      vocab_size=64, max_position_embeddings=32,
                                      bos_token_id=0, eos_token_id=0)
    return transformers.LlamaForCausalLM(config)


def _model(build):
    torch.manual_seed(0)
    return build().eval()


def _generate(model, ids, cache, **extra):
    return model.generate(ids, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS,
                          do_sample=False, pad_token_id=0, cache_implementation=cache, **extra)


def _profiled(model, call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # capture fallback notes; asserted in test_loop
        with Profiler(model) as p:
            out = call()
    return p, out


def _projection_rows(prof):
    """The rows of the projections (Linear, Conv1D) but the LM head, in graph order."""
    nodes = prof.nodes
    return nodes[nodes["module_type"].isin(["Linear", "Conv1D"])
                 & ~nodes["module_path"].str.contains("lm_head")]


def _projection_flops(prof):
    """FLOPs per projection module (a graph capture may give a module several rows)."""
    return _projection_rows(prof).groupby("module_path")["flops"].sum().sort_index()


@pytest.mark.parametrize("cache", [None, "static"], ids=["dynamic", "static"])
@pytest.mark.parametrize("build", [_gpt2, _llama], ids=["gpt2", "llama"])
def test_generate_yields_the_same_tokens_and_a_prefill_and_a_decode_profile(build, cache):
    model = _model(build)
    ids = torch.randint(1, 64, (1, PROMPT), generator=torch.Generator().manual_seed(1))
    expected = _generate(model, ids, cache)
    p, out = _profiled(model, lambda: _generate(model, ids, cache))
    assert torch.equal(out, expected) and out.shape == (1, PROMPT + NEW_TOKENS)
    prefill, decode = p.profiles
    assert prefill.n_runs == 1 and decode.n_runs == NEW_TOKENS - 1
    assert prefill.meta["capture_mode"] == decode.meta["capture_mode"] == "dynamo"
    assert prefill.meta["input_shapes"].startswith(f"{{input_ids: [1, {PROMPT}] int64")
    assert decode.meta["input_shapes"].startswith("{input_ids: [1, 1] int64")
    cache_type = "StaticCache" if cache else "DynamicCache"
    assert f"past_key_values: {cache_type}" in decode.meta["input_shapes"]
    # each profile's shapes and FLOPs are its own: a projection of the prompt costs PROMPT
    # times the projection of one new token
    flops = [_projection_flops(prof) for prof in (prefill, decode)]
    assert len(flops[0]) >= 8 and (flops[1] > 0).all()
    assert (flops[0] == PROMPT * flops[1]).all()
    first = [_projection_rows(prof).iloc[0]["input_shapes"] for prof in (prefill, decode)]
    assert f"[1, {PROMPT}, 32]" in first[0] and "[1, 1, 32]" in first[1]
    assert prefill.meta["flops"] > decode.meta["flops"] > 0
    latency = p.generation_latency()
    assert latency["generations"] == 1 and latency["ttft_ns"]["count"] == 1
    assert latency["decode_ns"]["count"] == NEW_TOKENS - 1
    assert 0 < latency["ttft_ns"]["median"] and 0 < latency["decode_ns"]["median"]


def test_the_callers_cache_grows_as_without_the_profiler():
    model = _model(_gpt2)
    ids = torch.randint(1, 64, (1, PROMPT), generator=torch.Generator().manual_seed(2))
    reference_cache = transformers.DynamicCache(config=model.config)
    expected = _generate(model, ids, None, past_key_values=reference_cache)
    cache = transformers.DynamicCache(config=model.config)
    _, out = _profiled(model, lambda: _generate(model, ids, None, past_key_values=cache))
    assert torch.equal(out, expected)
    assert cache.get_seq_length() == reference_cache.get_seq_length() == PROMPT + NEW_TOKENS - 1
    for ours, theirs in zip(cache.layers, reference_cache.layers):
        assert torch.equal(ours.keys, theirs.keys) and torch.equal(ours.values, theirs.values)


def test_the_model_is_restored_exactly():
    model = _model(_llama)
    model.model.layers[0].train()  # a mixed training state must come back as it was
    flags = [m.training for m in model.modules()]
    state = copy.deepcopy(model.state_dict())
    forward, hooks = model.forward, [(dict(m._forward_hooks), dict(m._forward_pre_hooks))
                                     for m in model.modules()]
    ids = torch.randint(1, 64, (1, PROMPT))
    p, _ = _profiled(model, lambda: _generate(model, ids, None))
    assert len(p.profiles) == 2
    assert "forward" not in vars(model) and model.forward == forward
    assert [(dict(m._forward_hooks), dict(m._forward_pre_hooks))
            for m in model.modules()] == hooks
    assert [m.training for m in model.modules()] == flags
    assert all(torch.equal(value, state[key]) for key, value in model.state_dict().items())


def test_summary_prints_both_signatures_and_the_generation_latency():
    model = _model(_gpt2)
    p, _ = _profiled(model, lambda: _generate(model, torch.randint(1, 64, (1, PROMPT)), None))
    lines = p.summary().splitlines()
    assert lines[0] == ("Profiler(GPT2LMHeadModel): 2 call signatures, "
                        f"{NEW_TOKENS} calls recorded, 2 Profiles")
    assert lines[1].startswith(f"  [0] {{input_ids: [1, {PROMPT}] int64") and "1 call," in lines[1]
    assert lines[2].startswith("  [1] {input_ids: [1, 1] int64")
    assert f"{NEW_TOKENS - 1} calls, median " in lines[2] and " per call, " in lines[2]
    assert all(" (capture dynamo in " in line for line in lines[1:3])
    assert lines[3].startswith("time to first token: ") and "(1 prefill)" in lines[3]
    assert lines[3].endswith("(1 prefill)") or "; the graph alone: " in lines[3]
    assert lines[4].startswith("per-token decode latency: median ")
    assert f"over {NEW_TOKENS - 1} tokens" in lines[4]


def test_prefill_and_decode_steps_are_timed_node_by_node():
    """Coverage is a timing figure: 88-96% measured at these sizes on a quiet machine (the
    rest is the graph's Python between nodes, 100-140 nodes in a 0.6-1.5 ms decode step); the
    bound catches a fallback to module hooks (16-41% here) without failing on a loaded one."""
    model = _model(_gpt2)
    ids = torch.randint(1, 64, (1, PROMPT), generator=torch.Generator().manual_seed(3))
    p, _ = _profiled(model, lambda: [_generate(model, ids, None) for _ in range(3)])
    prefill, decode = p.profiles
    assert (prefill.n_runs, decode.n_runs) == (3, 3 * (NEW_TOKENS - 1))
    for prof in (prefill, decode):
        assert prof.meta["capture_mode"] == "dynamo" and prof.n_nodes >= 90
        assert prof.meta["coverage"] >= 0.6
        attention = prof.nodes[prof.nodes["target"].str.contains("scaled_dot_product")]
        assert attention["module_path"].tolist() == ["transformer.h.0.attn", "transformer.h.1.attn"]


def test_a_one_token_prompt_gets_its_decode_steps_captured_after_it():
    """A one-token prompt has the decode steps' signature; Dynamo's guards tell its empty cache
    and the one-position cache of the first step (sizes 0 and 1 are never dynamic) from the
    longer ones, which one capture serves."""
    model = _model(_llama)
    ids = torch.randint(1, 64, (1, 1), generator=torch.Generator().manual_seed(4))
    expected = _generate(model, ids, None)
    p, out = _profiled(model, lambda: _generate(model, ids, None))
    assert torch.equal(out, expected)
    assert [prof.n_runs for prof in p.profiles] == [1, 1, NEW_TOKENS - 2]
    assert all(prof.meta["capture_mode"] == "dynamo" for prof in p.profiles)


_SLIDING = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                num_key_value_heads=1, vocab_size=64, max_position_embeddings=32,
                bos_token_id=0, eos_token_id=0, sliding_window=4)


@pytest.mark.parametrize("build", [
    lambda: transformers.MistralForCausalLM(transformers.MistralConfig(**_SLIDING)),
    lambda: transformers.Gemma2ForCausalLM(transformers.Gemma2Config(**_SLIDING, head_dim=16)),
    lambda: transformers.Starcoder2ForCausalLM(transformers.Starcoder2Config(**_SLIDING)),
], ids=["mistral", "gemma2", "starcoder2"])
@pytest.mark.timing(attempts=3)  # the prefill's coverage is one run's: a preempted run reads low
def test_sliding_window_models_decode_on_the_dynamo_rung_in_one_profile(build):
    """A sliding-window cache keeps its length in a Python int (cumulative_length) that
    Dynamo would pin: captured dynamic, one capture serves every decode step."""
    model = _model(build)
    ids = torch.randint(1, 64, (1, PROMPT), generator=torch.Generator().manual_seed(0))
    expected = _generate(model, ids, None)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureFallbackWarning)
        with Profiler(model) as p:
            out = _generate(model, ids, None)
    assert torch.equal(out, expected)
    assert [prof.meta["capture_mode"] for prof in p.profiles] == ["dynamo", "dynamo"]
    assert [prof.n_runs for prof in p.profiles] == [1, NEW_TOKENS - 1]
    assert all(prof.meta["coverage"] > 0.5 for prof in p.profiles)
