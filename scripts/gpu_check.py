"""The steps of the prepared device check (scripts/gpu_check.sh), one per invocation:
``python scripts/gpu_check.py STEP``. Each prints what it measured; exit 0 passed, 3 skipped
(no CUDA GPU here: the reason is printed), anything else failed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

SKIPPED = 3


def _require_gpu():
    import torch
    if not torch.cuda.is_available():
        print("skipped: no CUDA GPU here")
        sys.exit(SKIPPED)
    return torch


def versions() -> None:
    """Python, torch, CUDA, GPU, driver, Triton and the native extension's build."""
    import torch
    from pyfxprof.timing.native import _C
    print(f"python {sys.version.split()[0]} · torch {torch.__version__} · CUDA "
          f"{torch.version.cuda} · NVTX built: {_C.nvtx_built} ({_C.nvtx_include_dir or '-'})")
    try:
        import triton
        print(f"triton {triton.__version__}")
    except ImportError:
        print("triton: not installed")
    if torch.cuda.is_available():
        from pyfxprof.timing.device_events import ensure_cuda_runtime
        print(f"GPU {torch.cuda.get_device_name()} · CUDA events via {ensure_cuda_runtime()}")
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True)
        print(f"nvidia-smi: {smi.stdout.strip() or smi.stderr.strip()}")
    else:
        print("no CUDA GPU here")


def tables() -> None:
    """A ResNet-18 and a tiny GPT-2 profiled on the GPU: tables with device columns."""
    torch = _require_gpu()
    import pyfxprof
    from pyfxprof.cli.default_model import resnet18
    from tests.tiny_transformers import tiny_gpt2
    cases = [("ResNet-18 1x3x224x224", resnet18(), (torch.randn(1, 3, 224, 224),)),
             ("tiny GPT-2 1x32 tokens", tiny_gpt2(), (torch.randint(0, 100, (1, 32)),))]
    for title, model, inputs in cases:
        prof = pyfxprof.profile(model, inputs, runs=30, warmup=5, device="cuda", progress=False)
        print(f"\n## {title}\n{prof.table(top=12)}")


def compiled() -> None:
    """A torch.compile'd model on the GPU (Triton kernels): the kernel table."""
    torch = _require_gpu()
    import pyfxprof
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(),
                                torch.nn.LayerNorm(512), torch.nn.Linear(512, 256)).cuda().eval()
    x = torch.randn(64, 256, device="cuda")
    prof = pyfxprof.profile(torch.compile(model), (x,), runs=30, warmup=5, progress=False)
    print(prof.table(top=15))
    print(pyfxprof.kernel_table(prof).head(15).to_string())


def cuda_graphs() -> None:
    """mode="reduce-overhead" (CUDA graphs): what the profile says about its replays."""
    torch = _require_gpu()
    import pyfxprof
    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU()).cuda().eval()
    x = torch.randn(32, 256, device="cuda")
    prof = pyfxprof.profile(torch.compile(model, mode="reduce-overhead"), (x,), runs=20,
                            warmup=5, progress=False)
    print(prof.table(top=10))


def loop_gpt2() -> None:
    """The Profiler loop around a tiny GPT-2 generate() on the GPU: tokens, wall time and TTFT
    against the unprofiled call in the same process."""
    torch = _require_gpu()
    import transformers
    import pyfxprof
    config = transformers.GPT2Config(n_layer=2, n_head=4, n_embd=128, vocab_size=256,
                                     n_positions=128, bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).cuda().eval()
    ids = torch.randint(1, 256, (1, 16), device="cuda")

    def generate():
        return model.generate(ids, max_new_tokens=32, min_new_tokens=32, do_sample=False,
                              pad_token_id=0)
    expected = generate()
    walls = []
    for _ in range(3):
        torch.cuda.synchronize()
        started = time.perf_counter()
        generate()
        torch.cuda.synchronize()
        walls.append(time.perf_counter() - started)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pyfxprof.Profiler(model) as p:
            torch.cuda.synchronize()
            started = time.perf_counter()
            out = generate()
            torch.cuda.synchronize()
            profiled = time.perf_counter() - started
    print(f"tokens identical: {torch.equal(out, expected)}")
    print(f"unprofiled generate(): {min(walls) * 1e3:.1f} ms (best of 3) · profiled (first "
          f"block, captures included): {profiled * 1e3:.1f} ms")
    for prof in p.profiles:
        print(f"\n{prof.table(top=8)}")
    if not torch.equal(out, expected):
        sys.exit(1)


def nvtx_on_device() -> None:
    """NVTX ranges a tool attached through NVTX_INJECTION64_PATH sees on a GPU profile."""
    torch = _require_gpu()
    from pyfxprof.timing.native import _C
    if not _C.nvtx_built:
        print("skipped: built without NVTX headers")
        sys.exit(SKIPPED)
    out = Path(os.environ.get("OUT", ROOT / "build" / "gpu_check"))
    tool = out / "libfake_nvtx_injection.so"
    subprocess.run(["c++", "-O1", "-shared", "-fPIC", "-isystem", _C.nvtx_include_dir,
                    str(ROOT / "csrc/tests/fake_nvtx_injection.cpp"), "-o", str(tool)],
                   check=True)
    log = out / "nvtx_ranges.log"
    script = ("import torch, pyfxprof; m = torch.nn.Sequential(torch.nn.Linear(64, 64), "
              "torch.nn.ReLU()).cuda(); pyfxprof.profile(m, (torch.randn(8, 64, device='cuda'),),"
              " runs=3, warmup=1, progress=False, nvtx=True)")
    env = dict(os.environ, NVTX_INJECTION64_PATH=str(tool), FAKE_NVTX_LOG=str(log),
               PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-c", script], env=env, check=True)
    lines = log.read_text().splitlines()
    ours = [line for line in lines if line.startswith("push pyfxprof\t")]
    print(f"{len(lines)} NVTX events seen by the fake tool, {len(ours)} pyfxprof ranges: "
          f"{sorted(set(line.split(chr(9))[1] for line in ours))}")
    tool.unlink()
    if not ours:
        sys.exit(1)


def gpu_tests() -> None:
    """Every test marked gpu (they skip without a GPU: the step is skipped then)."""
    _require_gpu()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p",
                           "no:cacheprovider", str(ROOT / "tests")], cwd=ROOT)
    sys.exit(done.returncode)


def bench_gpu() -> None:
    """benchmarks/bench_gpu.py: host and device overhead per node, plain vs instrumented."""
    _require_gpu()
    import runpy
    sys.argv = ["bench_gpu.py", "--runs", "30"]
    runpy.run_path(str(ROOT / "benchmarks" / "bench_gpu.py"), run_name="__main__")


STEPS = {f.__name__: f for f in (versions, gpu_tests, bench_gpu, tables, compiled, cuda_graphs, loop_gpt2,
                                 nvtx_on_device)}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in STEPS:
        sys.exit(f"usage: gpu_check.py {{{','.join(STEPS)}}}")
    STEPS[sys.argv[1]]()
