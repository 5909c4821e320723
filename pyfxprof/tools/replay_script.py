"""Profile.replay_script: a standalone Python script that rebuilds a profiled node with torch
alone (modules from their constructor arguments, replay_script_module.py; torch functions and
tensor methods) and times it with torch.utils.benchmark, for a bug report that needs no
pyfxprof."""

from __future__ import annotations

from typing import Any

import torch

from ..data.profile import Profile
from ..errors import ArgumentError, PyfxprofError
from ..run.replay_build import Rebuilt, rebuild, rebuild_shapes, spec_text
from .replay_script_module import constructor_source, import_lines

#: The script's frame: a tensor maker, the node's call, its inputs and the timing.
TEMPLATE = '''"""Replay of node {name!r} ({op} {target}) alone, written by pyfxprof's replay_script.
Recorded inputs: {shapes}. Needs torch only."""
import operator  # noqa: F401  (operator targets)

import torch
import torch.utils.benchmark as benchmark


def make(shape, stride, dtype, device, low=0, high=0):
    """A tensor of this shape, stride, dtype and device with random values."""
    out = torch.empty_strided(shape, stride, dtype=dtype, device=device)
    if dtype == torch.bool:
        return out.copy_(torch.rand(shape) < 0.5)
    if out.is_floating_point() or out.is_complex():
        return out.copy_(torch.randn(shape, dtype=dtype))
    return out.copy_(torch.randint(low, high + 1, shape))


torch.manual_seed(0)
torch.set_num_threads({threads})  # as profiled
{builder}
cases = [  # (args, kwargs) of each recorded shape
{cases}]
print("torch", torch.__version__, "threads", torch.get_num_threads())
with torch.set_grad_enabled({grad}):
    for args, kwargs in cases:
        out = fn(*args, **kwargs)
        timer = benchmark.Timer(stmt="fn(*args, **kwargs)",
                                globals={{"fn": fn, "args": args, "kwargs": kwargs}})
        measurement = timer.blocked_autorange(min_run_time={seconds})
        print("inputs:", [(tuple(a.shape), a.dtype, a.stride()) for a in args
                          if isinstance(a, torch.Tensor)])
        print("output:", [(tuple(o.shape), o.dtype) for o in
                          (out if isinstance(out, (tuple, list)) else [out])
                          if isinstance(o, torch.Tensor)])
        print(f"median {{measurement.median * 1e6:.2f}} us over {{len(measurement.times)}} blocks")
'''


def source_of(value: Any) -> str:
    """Python source rebuilding a recorded argument (capture.call_spec's encoding).

    Example:
        >>> source_of({"tensor": [2, 3], "dtype": "float32", "stride": [3, 1], "device": "cpu"})
        "make((2, 3), (3, 1), torch.float32, 'cpu')"
        >>> source_of({"tuple": [1, {"torch": "float16"}]})
        '(1, torch.float16,)'
    """
    if isinstance(value, list):
        return "[" + ", ".join(source_of(v) for v in value) + "]"
    if not isinstance(value, dict):
        return repr(value)
    if "tensor" in value:
        extra = "".join(f", {v}" for v in value.get("range", []))
        return (f"make({tuple(value['tensor'])}, {tuple(value['stride'])}, "
                f"torch.{value['dtype']}, {value['device']!r}{extra})")
    if "tuple" in value:
        return "(" + "".join(source_of(v) + ", " for v in value["tuple"]).rstrip(" ") + ")"
    if "dict" in value:
        return "{" + ", ".join(f"{k!r}: {source_of(v)}" for k, v in value["dict"].items()) + "}"
    if "torch" in value:
        return f"torch.{value['torch']}"
    if "device" in value:
        return f"torch.device({value['device']!r})"
    if "slice" in value:
        return "slice(" + ", ".join(source_of(v) for v in value["slice"]) + ")"
    return "Ellipsis"


def _builder(built: Rebuilt, training: bool) -> str:
    """The script's lines that define `fn`, the node's call (a module in the profiled mode)."""
    if built.module is not None:
        dtype = next((p.dtype for p in built.module.parameters()), torch.float32)
        device = next((p.device for p in built.module.parameters()), torch.device("cpu"))
        imports, _ = import_lines(type(built.module))
        return (imports + "\n" if imports else "") + (
            f"fn = {constructor_source(built.module)}.to({str(device)!r}, {dtype})"
            f".train({training})  # weights random, mode as profiled")
    if built.op == "call_method":
        return f"fn = lambda self, *a, **k: self.{built.target_name}(*a, **k)"
    name = built.target_name.replace("_operator.", "operator.", 1)
    if not name.startswith(("torch.", "operator.")):
        raise PyfxprofError(f"cannot write a script for node {built.name!r}: it calls "
                            f"{name}, neither a torch function nor an operator")
    return f"fn = {name}"


def _case(built: Rebuilt) -> str:
    return (f"    ({source_of({'tuple': built.spec['args']})},\n"
            f"     {source_of({'dict': built.spec['kwargs']})}),\n")


def _chosen(profile: Profile, node: str, model: Any, shape: int | str | None) -> list[Rebuilt]:
    """The rebuilt calls the script times: the node's recorded call (None), the `shape`-th
    of its recorded shapes (as Profile.replay lists them, from 0) or all of them ("all")."""
    if shape is None:
        return [rebuild(profile, node, model)]
    shapes = rebuild_shapes(profile, node, model)
    if shape == "all":
        return shapes
    if isinstance(shape, bool) or not isinstance(shape, int) or not 0 <= shape < len(shapes):
        raise ArgumentError(f"shape must be None, 'all' or a shape's number from 0 to "
                            f"{len(shapes) - 1} (node {node!r} has {len(shapes)} recorded "
                            f"shape{'s' if len(shapes) > 1 else ''}), got {shape!r}")
    return [shapes[shape]]


def replay_script(profile: Profile, node: str, model: Any = None,
                  shape: int | str | None = None) -> str:
    """A standalone script (torch and torch.utils.benchmark only) that rebuilds `node` on
    inputs of its recorded shapes, dtypes and strides and prints them and its median.
    `shape`: for a node that saw several shapes (a module called at several nodes, a
    Profiler loop's decode step over a growing cache), None for its recorded call, the
    number of one of the shapes Profile.replay lists (from 0), or "all": a timing each.

    Example:
        >>> import pyfxprof
        >>> prof = pyfxprof.profile(torch.nn.Sequential(torch.nn.Linear(4, 2)),
        ...                         (torch.randn(3, 4),), runs=3, warmup=1)
        >>> "torch.nn.Linear(in_features=4, out_features=2" in prof.replay_script("0")
        True
    """
    chosen = _chosen(profile, node, model, shape)
    built, training = chosen[0], bool(profile.meta.get("training", False))
    shapes = ("; ".join(spec_text({"tuple": b.spec["args"]}) for b in chosen) if
              len(chosen) > 1 or built.sized else
              str(profile.nodes.loc[profile.nodes["name"] == built.name, "input_shapes"]
                  .iloc[0]) if "input_shapes" in profile.nodes else "?")
    return TEMPLATE.format(
        name=built.name, op=built.op, target=built.target_name,
        builder=_builder(built, training), shapes=shapes,
        cases="".join(_case(b) for b in chosen), grad=bool(profile.meta.get("grad", False)),
        threads=int(profile.meta.get("threads") or torch.get_num_threads()),
        seconds=1.0 if len(chosen) == 1 else max(0.2, round(4.0 / len(chosen), 2)))
