"""Added overhead per node of each timing method, measured side by side in one process:
plain GraphModule, pyfxprof codegen, pyfxprof interpreter, the FX tutorial's time.time
interpreter and torch.profiler, on 300 `x + 1` tensor ops, 500 Python int adds, ResNet-18 at
batch 1 and 5, and one decode step of a tiny GPT-2 (random weights, built from a config),
captured by TorchDynamo.

Each figure: the median of paired rounds' differences with a 95% interval, or "not resolved"
(pyfxprof.tools.overhead, docs/overhead.md).

Run: .venv/bin/python benchmarks/bench_overhead.py [--rounds N] [--resnet-rounds N]
"""

import argparse
import os

os.environ.setdefault("KINETO_LOG_LEVEL", "5")  # keep torch.profiler's console chatter out

import torch  # noqa: E402
from machine import describe_machine  # noqa: E402
from workloads import (int_add_chain, resnet18_batch,  # noqa: E402
                       tensor_plus_one_chain)

from pyfxprof.tools.overhead import compare_overhead  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=60,
                        help="paired rounds per method (blocks of 5 calls), tiny graphs")
    parser.add_argument("--resnet-rounds", type=int, default=20,
                        help="paired rounds per method, ResNet-18")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (default 1: thread-pool wake-ups are noise here)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(describe_machine())
    for name, make, rounds, mode in [
            ("300 x + 1 (1-element tensor)", tensor_plus_one_chain, args.rounds, "fx"),
            ("500 Python int adds", int_add_chain, args.rounds, "fx"),
            ("ResNet-18, 1x3x224x224", lambda: resnet18_batch(1), args.resnet_rounds, "fx"),
            ("ResNet-18, 5x3x224x224", lambda: resnet18_batch(5), args.resnet_rounds, "fx"),
            ("tiny GPT-2, one decode step (dynamo)", gpt2_decode_step, args.rounds, "dynamo")]:
        print()
        try:
            report = compare_overhead(*make(), rounds=rounds, warmup=3, name=name,
                                      capture_mode=mode)
        except Exception as error:  # noqa: BLE001 - a workload capture cannot take: say so
            print(f"{name}: not compared: {type(error).__name__}: {str(error)[:200]}")
            continue
        print(report.format())


def gpt2_decode_step() -> tuple[torch.nn.Module, dict]:
    """A 2-layer GPT-2 (random weights) taking one new token after an 8-token prompt, as
    ``generate`` calls it: keyword inputs with the prompt's DynamicCache. torch.fx cannot
    trace GPT2LMHeadModel; TorchDynamo captures the step as one graph, whose inputs are the
    new token, the cache's tensors and the parameters (the cache is not appended to: each
    run is the same step)."""
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(vocab_size=100, n_embd=64, n_layer=2, n_head=4, n_positions=64,
                        use_cache=True, bos_token_id=0, eos_token_id=0)
    model = GPT2LMHeadModel(config).eval()
    prompt = torch.randint(0, 100, (1, 8))
    with torch.no_grad():
        cache = model(prompt, use_cache=True).past_key_values
    return model, {"input_ids": torch.randint(0, 100, (1, 1)), "past_key_values": cache,
                   "use_cache": True}


if __name__ == "__main__":
    main()
