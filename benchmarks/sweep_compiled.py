"""Compiled models tried per Inductor kernel: for each model, an eager profile and a compiled one
(pyfxprof.profile(model, inputs, compile=True)) in one process, one thread: kernel calls (fused /
extern / fallback), eager nodes, provenance coverage (share of kernel time whose source nodes
and modules are known), the kernels' share of the compiled run, both medians, the compile time,
and the modules (paths cut to --depth parts) where compiling saved the most.

Run: .venv/bin/python benchmarks/sweep_compiled.py [--runs R] [--depth D] [--only NAME ...]
"""

import argparse
import os
import tempfile
import time
import warnings

import numpy as np
import torch
from machine import describe_machine

import pyfxprof
from pyfxprof.analyses.compiled_diff import OUTSIDE, CompiledDiff, provenance_coverage
from pyfxprof.data.units import format_ns


def _hf(name: str):
    """A tiny Hugging Face base model (random weights) and its {"input_ids": 1x16}."""
    import transformers
    configs = {
        "tiny GPT-2": transformers.GPT2Config(n_layer=2, n_head=4, n_embd=64, vocab_size=100,
                                              n_positions=64, bos_token_id=0, eos_token_id=0),
        "tiny Llama": transformers.LlamaConfig(vocab_size=100, hidden_size=64,
                                               num_hidden_layers=2, num_attention_heads=4,
                                               num_key_value_heads=2, intermediate_size=128,
                                               max_position_embeddings=64),
        "tiny BERT": transformers.BertConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2,
                                             num_attention_heads=4, intermediate_size=128,
                                             max_position_embeddings=64)}
    model = transformers.AutoModel.from_config(configs[name]).eval()
    return model, {"input_ids": torch.randint(0, 100, (1, 16))}, "{input_ids: 1x16}"


def models() -> dict:
    """name -> a function making (model, inputs, inputs described)."""
    import torchvision
    from bench_compiled import CNN
    from torchvision.models.vision_transformer import VisionTransformer
    vit = dict(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=64, mlp_dim=128)
    return {
        "Conv/BN/ReLU CNN": lambda: (CNN().eval(), (torch.randn(1, 3, 32, 32),), "1x3x32x32"),
        "ResNet-18": lambda: (torchvision.models.resnet18().eval(),
                              (torch.randn(1, 3, 64, 64),), "1x3x64x64"),
        "MobileNetV3-Small": lambda: (torchvision.models.mobilenet_v3_small().eval(),
                                      (torch.randn(1, 3, 64, 64),), "1x3x64x64"),
        "tiny ViT (2 layers, dim 64)": lambda: (VisionTransformer(**vit).eval(),
                                                (torch.randn(1, 3, 32, 32),), "1x3x32x32"),
        "tiny GPT-2": lambda: _hf("tiny GPT-2"),
        "tiny Llama": lambda: _hf("tiny Llama"),
        "tiny BERT": lambda: _hf("tiny BERT")}


def sweep_one(name: str, make, runs: int, depth: int) -> tuple[str, str]:
    """(the table row, the top-savings line) of one model."""
    torch.manual_seed(0)
    model, inputs, shown = make()
    eager = pyfxprof.profile(model, inputs, runs=runs, warmup=5, progress=False)
    started = time.perf_counter()
    compiled = pyfxprof.profile(model, inputs, compile=True, runs=runs, warmup=5,
                                progress=False)
    compile_s = time.perf_counter() - started
    kernels = compiled.nodes[compiled.nodes["op"] != "outside_kernels"]
    kinds = [int((kernels["op"] == kind).sum())
             for kind in ("fused_kernel", "extern_kernel", "fallback_op")]
    eager_ns, compiled_ns = (float(np.median(p.run_totals)) for p in (eager, compiled))
    row = (f"| {name} | {shown} | {len(kernels)} ({' / '.join(map(str, kinds))}) | "
           f"{eager.n_nodes} ({eager.meta['capture_mode']}) | "
           f"{100 * provenance_coverage(compiled):.1f}% | "
           f"{100 * compiled.meta['coverage']:.0f}% | {format_ns(eager_ns)} | "
           f"{format_ns(compiled_ns)} | {compile_s:.0f} s |")
    return row, f"- {name}: " + _savings(CompiledDiff(eager, compiled, depth=depth))


def _savings(diff: CompiledDiff, top: int = 3) -> str:
    """The modules compiling saved the most in, and the time outside kernels/nodes."""
    frame = diff.frame.set_index("module")
    modules = frame.drop(index=OUTSIDE).head(top)
    parts = [f"{'(root)' if m == '' else m} {format_ns(r.eager_ns)} -> "
             f"{format_ns(r.compiled_ns)}" for m, r in modules.iterrows()]
    outside = frame.loc[OUTSIDE]
    return (", ".join(parts) + f"; outside nodes/kernels {format_ns(outside.eager_ns)} -> "
            f"{format_ns(outside.compiled_ns)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="sweep_compiled_"))
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    print(describe_machine())
    print("| model | input | kernel calls (fused / extern / fallback) | eager nodes (capture) | "
          "provenance coverage | kernels' share of the compiled run | eager median | "
          "compiled median | compile + profile |")
    print("|---|---|---|---|---|---|---|---|---|")
    savings = []
    for name, make in models().items():
        if args.only and name not in args.only:
            continue
        row, saved = sweep_one(name, make, args.runs, args.depth)
        print(row, flush=True)
        savings.append(saved)
    print(f"\nWhere compiling saved the most (eager -> compiled per module, paths cut to "
          f"{args.depth} parts; kernel time split evenly over a kernel's source nodes):")
    print("\n".join(savings))
    print(describe_machine())


if __name__ == "__main__":
    main()
