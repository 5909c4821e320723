"""FX pass that folds eval-mode BatchNorm into the preceding Conv1d/2d/3d or Linear.

Safer than the PyTorch FX fusion tutorial's pass: it never touches the caller's model, refuses
training mode, and skips (and reports why) every pattern where folding would change results:
the conv's output read by anything besides the BN, a conv module called from more than one
place, a BN without running statistics, mismatched kinds or channel counts, hooks or
parametrizations that folding would silently drop, and conv parameters read directly.

Example:
    >>> fused = fuse_conv_bn(model.eval())  # doctest: +SKIP
    >>> print(fused.fusion_report)  # doctest: +SKIP
    >>> max_abs_difference(model, fused, (x,))  # doctest: +SKIP
"""

from __future__ import annotations

import copy
import inspect
import typing
from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace

import torch
import torch.fx
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm
from torch.nn.modules.conv import _ConvNd
from torch.nn.utils import parametrize
from torch.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval

from ..capture.node_targets import target_module, target_path
from ..errors import ArgumentError, PyfxprofError, first_line

__all__ = ["FusionError", "FusionReport", "fuse_conv_bn", "max_abs_difference"]

# Exact types only: a subclass may override forward(), and then folding is not safe.
_RULES: dict[type[nn.Module], type[nn.Module]] = {
    nn.Conv1d: nn.BatchNorm1d,
    nn.Conv2d: nn.BatchNorm2d,
    nn.Conv3d: nn.BatchNorm3d,
    nn.Linear: nn.BatchNorm1d,
}


class FusionError(PyfxprofError, ValueError):
    """The model cannot be fused at all (untraceable, training mode, not copyable).

    A PyfxprofError, so the CLI prints its one-line message and exits with code 2.

    Example:
        >>> try:  # doctest: +SKIP
        ...     fuse_conv_bn(model.train())
        ... except FusionError as e:
        ...     print(e)   # "model is in training mode; call model.eval() first"
    """


@dataclass
class FusionReport:
    """What `fuse_conv_bn` did: pairs fused and pairs skipped, by module path.

    `fused` holds `(conv_name, bn_name)`; `skipped` holds `(conv_name, bn_name, reason)`.
    A "conv" may also be a Linear (Linear + BatchNorm1d pairs).

    Example:
        >>> report = fuse_conv_bn(model).fusion_report  # doctest: +SKIP
        >>> report.fused[0]  # doctest: +SKIP
        ('conv1', 'bn1')
        >>> print(report)   # one line per pair  # doctest: +SKIP
    """

    fused: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str, str]] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"Conv/BatchNorm fusion: {len(self.fused)} fused, {len(self.skipped)} skipped"]
        lines += [f"  fused    {conv} + {bn}" for conv, bn in self.fused]
        lines += [f"  skipped  {conv} + {bn}: {why}" for conv, bn, why in self.skipped]
        return "\n".join(lines)


def fuse_conv_bn(model: nn.Module) -> torch.fx.GraphModule:
    """Return a new GraphModule with eval-mode BatchNorms folded into the preceding conv/linear.

    The model is deep-copied first and never modified. Pairs are found through data
    dependencies (a BN whose input is a conv's output), so nested Sequentials and BNs wrapped
    in custom modules are covered. What was fused and what was skipped (with the reason) is
    attached as `fused.fusion_report` (a `FusionReport`). Check numerics with
    `max_abs_difference`.

    Limitation: Linear + BatchNorm1d is folded assuming the BN normalises the Linear's last
    dimension, i.e. a 2-D (batch, features) activation; shapes are not known without inputs.

    Raises FusionError when the model is in training mode, cannot be traced or copied.

    Example:
        >>> model = torchvision.models.resnet18(weights=None).eval()  # doctest: +SKIP
        >>> fused = fuse_conv_bn(model)  # doctest: +SKIP
        >>> print(fused.fusion_report)        # 20 fused, 0 skipped  # doctest: +SKIP
        >>> max_abs_difference(model, fused, (torch.randn(1, 3, 64, 64),)) < 1e-4  # doctest: +SKIP
        True
    """
    if not isinstance(model, nn.Module):
        raise ArgumentError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if model.training:
        raise FusionError("model is in training mode; call model.eval() first")
    gm = _trace(_copy(model))
    modules: dict[str, nn.Module] = dict(gm.named_modules())
    _require_eval(gm, modules)
    calls = Counter(id(modules[n.target]) for n in gm.graph.nodes if n.op == "call_module")
    read_attrs = [n.target for n in gm.graph.nodes if n.op == "get_attr"]
    report = FusionReport()
    for bn_node in list(gm.graph.nodes):
        conv_node = _producer(bn_node, gm)
        if conv_node is None:
            continue
        conv_path, bn_path = target_path(conv_node), target_path(bn_node)
        conv, bn = gm.get_submodule(conv_path), gm.get_submodule(bn_path)
        reason = _unsafe_reason(conv_node, bn_node, conv, bn, calls, read_attrs)
        if reason:
            report.skipped.append((conv_path, bn_path, reason))
            continue
        gm.set_submodule(conv_path, _folded(conv, bn))
        bn_node.replace_all_uses_with(conv_node)
        gm.graph.erase_node(bn_node)
        report.fused.append((conv_path, bn_path))
    gm.delete_all_unused_submodules()
    gm.graph.lint()
    gm.recompile()
    gm.fusion_report = report  # type: ignore[assignment]  # (Module.__setattr__ takes any value)
    return gm


def max_abs_difference(original: nn.Module, fused: nn.Module, example_inputs) -> float:
    """Largest absolute difference between the outputs of two models on the same inputs.

    Both run under `torch.no_grad()` in eval mode (each module's training flag is restored
    afterwards). Outputs may be tensors or nested tuples/lists/dicts of tensors; non-tensor
    leaves are ignored. `example_inputs` is a tuple of positional arguments.

    Example:
        >>> fused = fuse_conv_bn(model)  # doctest: +SKIP
        >>> max_abs_difference(model, fused, (torch.randn(1, 3, 64, 64),))  # doctest: +SKIP
        2.384185791015625e-07
    """
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    with torch.no_grad(), _eval_mode(original), _eval_mode(fused):
        expected = _tensors(original(*example_inputs))
        actual = _tensors(fused(*example_inputs))
    if len(expected) != len(actual):
        raise ArgumentError(
            f"outputs differ in structure: {len(expected)} vs {len(actual)} tensors; "
            "compare models with the same outputs"
        )
    worst = 0.0
    for a, b in zip(expected, actual):
        if a.shape != b.shape:
            raise ArgumentError(f"output shapes differ: {tuple(a.shape)} vs {tuple(b.shape)}")
        if a.numel():
            worst = max(worst, (a.double() - b.double()).abs().max().item())
    return worst


# ---------------------------------------------------------------------------------------------
# helpers


def _copy(model: nn.Module) -> nn.Module:
    try:
        return copy.deepcopy(model)
    except Exception as e:  # noqa: BLE001 - any failure means we cannot work on a copy
        raise FusionError(
            f"cannot deep-copy {type(model).__name__} ({type(e).__name__}: "
            f"{first_line(e, empty='no message')}); "
            "fuse_conv_bn works on a copy, make the model deep-copyable"
        ) from e


def _trace(model: nn.Module) -> torch.fx.GraphModule:
    try:
        return _with_typed_signature(torch.fx.symbolic_trace(model), model)
    except Exception as e:  # noqa: BLE001 - tracing fails in many ways, all mean the same
        raise FusionError(
            f"cannot trace {type(model).__name__} with torch.fx ({type(e).__name__}: "
            f"{first_line(e, empty='no message')}); fuse a traceable submodule instead, or make "
            "the untraceable part a leaf module"
        ) from e


def _with_typed_signature(gm: torch.fx.GraphModule, model: nn.Module) -> torch.fx.GraphModule:
    """`gm` with its inputs' and output's annotations written as text (a model module with
    ``from __future__ import annotations``: fx keeps the text and its code names it as a global
    string, which torch.jit.script cannot read) evaluated to the types they name in the model's
    module; text that does not evaluate there is dropped (TorchScript then assumes a Tensor)."""
    namespace = getattr(inspect.unwrap(type(model).forward), "__globals__", {})
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "output") and isinstance(node.type, str):
            node.type = _evaluated(node.type, namespace)
    gm.recompile()
    return gm


def _evaluated(annotation: str, namespace: dict) -> object | None:
    """The type the annotation text names in `namespace` (typing's own evaluation), or None."""
    try:
        return typing.get_type_hints(SimpleNamespace(__annotations__={"a": annotation}),
                                     namespace)["a"]
    except Exception:  # noqa: BLE001 - a name the module does not define, a syntax error
        return None


def _require_eval(gm: torch.fx.GraphModule, modules: dict[str, nn.Module]) -> None:
    """Raise if any conv, linear or BN called by the graph is in training mode."""
    for node in gm.graph.nodes:
        if node.op != "call_module":
            continue
        module = modules[node.target]
        if isinstance(module, (_BatchNorm, _ConvNd, nn.Linear)) and module.training:
            raise FusionError(f"'{node.target}' is in training mode; call model.eval() first")


def _producer(bn_node: torch.fx.Node, gm: torch.fx.GraphModule) -> torch.fx.Node | None:
    """The conv/linear call_module node feeding `bn_node` if it is a BN call, else None."""
    if bn_node.op != "call_module" or not bn_node.args:
        return None
    if not isinstance(target_module(gm, bn_node), _BatchNorm):
        return None
    src = bn_node.args[0]
    if not isinstance(src, torch.fx.Node) or src.op != "call_module":
        return None
    return src if isinstance(target_module(gm, src), (_ConvNd, nn.Linear)) else None


def _folded(conv: nn.Module, bn: nn.Module) -> nn.Module:
    """`conv` with the eval-mode `bn` folded in (_producer paired a conv or Linear with a
    BatchNorm)."""
    assert isinstance(bn, _BatchNorm) and isinstance(conv, (_ConvNd, nn.Linear))
    if isinstance(conv, nn.Linear):
        return fuse_linear_bn_eval(conv, bn)
    return fuse_conv_bn_eval(conv, bn)


def _unsafe_reason(conv_node, bn_node, conv, bn, calls: Counter, read_attrs) -> str | None:
    """Why folding `bn` into `conv` would change results, or None when it is safe."""
    if _RULES.get(type(conv)) is not type(bn):
        return f"no fusion rule for {type(conv).__name__} -> {type(bn).__name__}"
    if len(bn_node.args) != 1 or bn_node.kwargs:
        return "BatchNorm is called with extra arguments"
    if calls[id(conv)] > 1:
        return f"the conv module is called from {calls[id(conv)]} places in the graph"
    others = [u.name for u in conv_node.users if u is not bn_node]
    if others:
        return f"the conv output is also used by {', '.join(sorted(others))}"
    if not bn.track_running_stats or bn.running_mean is None or bn.running_var is None:
        return "BatchNorm has no running statistics (track_running_stats=False)"
    out = conv.out_features if isinstance(conv, nn.Linear) else conv.out_channels
    if bn.num_features != out and not (isinstance(conv, nn.Linear) and bn.num_features == 1):
        return f"channel mismatch: conv has {out} outputs, BatchNorm {bn.num_features} features"
    return _hidden_state_reason(conv_node, conv, bn, read_attrs)


def _hidden_state_reason(conv_node, conv, bn, read_attrs) -> str | None:
    """Hooks, parametrizations or direct parameter reads that folding would silently break."""
    for name, module in (("conv", conv), ("BatchNorm", bn)):
        if module._forward_hooks or module._forward_pre_hooks:
            return f"the {name} has forward hooks that fusion would bypass"
        if parametrize.is_parametrized(module):
            return f"the {name} has parametrizations"
    prefix = conv_node.target + "."
    if any(t.startswith(prefix) for t in read_attrs):
        return "the conv's parameters are also read directly in the graph"
    return None


class _eval_mode:
    """Context manager: put a module tree in eval mode, restore every training flag on exit."""

    def __init__(self, module: nn.Module):
        self.module = module
        self.flags: list[tuple[nn.Module, bool]] = []

    def __enter__(self):
        self.flags = [(m, m.training) for m in self.module.modules()]
        self.module.eval()
        return self.module

    def __exit__(self, *exc):
        for m, flag in self.flags:
            m.training = flag
        return False


def _tensors(out) -> list[torch.Tensor]:
    """Flatten a (nested) tensor / tuple / list / dict output into a list of tensors."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        return [t for k in sorted(out, key=str) for t in _tensors(out[k])]
    if isinstance(out, (tuple, list)):
        return [t for item in out for t in _tensors(item)]
    return []
