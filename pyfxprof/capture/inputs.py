"""Binding a call's inputs to a forward's signature: positional arguments, keyword arguments,
both mixed, and forwards that take `*args` / `**kwargs`, as one canonical (args, kwargs) pair;
the tensors in a call's inputs, in a fixed order (how a Dynamo graph finds its inputs); and
deep copies of the inputs, for capture and analysis runs that never run on the caller's.

Every capture and executor calls its target as ``target(*bound.args, **bound.kwargs)``: the
named positional parameters (defaults filled in) and `*args` contents go in `args`; keyword-only
parameters and the contents of the `**kwargs` slot go in `kwargs`. An empty `**kwargs` slot is
never passed on (not as a positional ``{}``, not at all).
"""

from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.utils._pytree as pytree

from ..errors import PyfxprofError

#: Call shapes (number of positional arguments, keyword names) a Binder keeps a plan for.
_MAX_PLANS = 64
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


@dataclass(slots=True)
class BoundInputs:
    """A call's arguments, bound: ``target(*args, **kwargs)`` makes the call. (Not frozen:
    a frozen dataclass costs ~1.3 µs more to make, and the Profiler makes one per call.)"""

    args: tuple
    kwargs: dict = field(default_factory=dict)

    def call(self, target: Callable) -> Any:
        """Call `target` with these arguments.

        Example:
            >>> BoundInputs((1,), {"b": 2}).call(lambda a, b: a + b)
            3
        """
        return target(*self.args, **self.kwargs)


def split_inputs(example_inputs: Any) -> tuple[tuple, dict]:
    """(positional, keyword) from `example_inputs`: a tuple or list of positional arguments,
    a dict of keyword arguments, a BoundInputs (both), or one value (one positional argument).

    Example:
        >>> split_inputs({"x": 1}), split_inputs([1, 2]), split_inputs(3)
        (((), {'x': 1}), ((1, 2), {}), ((3,), {}))
    """
    if isinstance(example_inputs, BoundInputs):
        return example_inputs.args, dict(example_inputs.kwargs)
    if isinstance(example_inputs, dict):
        return (), dict(example_inputs)
    if isinstance(example_inputs, (tuple, list)):
        return tuple(example_inputs), {}
    return (example_inputs,), {}


def _signature_of(forward_or_signature: Any) -> inspect.Signature:
    if isinstance(forward_or_signature, inspect.Signature):
        return forward_or_signature
    if hasattr(forward_or_signature, "forward"):  # a module: bind to its forward
        forward_or_signature = forward_or_signature.forward
    return inspect.signature(forward_or_signature)


def bind_inputs(forward_or_signature: Any, args: tuple = (),
                kwargs: dict | None = None) -> BoundInputs:
    """Bind `args` and `kwargs` to a forward (a module, a function or an inspect.Signature).

    Named positional parameters come out positional, in order, with their defaults filled in
    (so a graph with one placeholder per parameter receives every one); keyword-only
    parameters and keywords caught by `**kwargs` come out as keywords. A mismatch is a
    one-line PyfxprofError quoting the signature.

    Example:
        >>> def forward(x, mask=None, **kwargs): ...
        >>> bind_inputs(forward, (), {"x": 1})
        BoundInputs(args=(1, None), kwargs={})
        >>> bind_inputs(forward, (1,), {"output_attentions": True})
        BoundInputs(args=(1, None), kwargs={'output_attentions': True})
    """
    return _bound(_signature_of(forward_or_signature), args, kwargs or {})


class _Slot:
    """Stands for the call's positional argument `index` or keyword `name` while a plan is
    made (never a default value of a user's forward)."""

    __slots__ = ("index", "name")

    def __init__(self, index: int | None = None, name: str | None = None) -> None:
        self.index, self.name = index, name


class Binder:
    """`bind_inputs` for one signature, for calls made again and again (the Profiler's loop):
    how a call's arguments land in (args, kwargs) depends only on how many positional
    arguments it passes and the names of its keywords, so the first call of each such
    shape binds through `inspect` and leaves a plan the later ones follow (no `inspect`).

    Example:
        >>> def forward(x, mask=None, *, scale=1, **kwargs): ...
        >>> bind = Binder(inspect.signature(forward))
        >>> bind((1,), {"flag": True})
        BoundInputs(args=(1, None), kwargs={'scale': 1, 'flag': True})
        >>> bind((2,), {"flag": False})  # the plan of the first call
        BoundInputs(args=(2, None), kwargs={'scale': 1, 'flag': False})
    """

    def __init__(self, signature: inspect.Signature) -> None:
        self.signature = signature
        self._plans: dict[tuple, tuple[tuple | None, tuple]] = {}

    def __call__(self, args: tuple, kwargs: dict) -> BoundInputs:
        shape = (len(args), *kwargs)
        plan = self._plans.get(shape)
        if plan is None:
            plan = self._plan(len(args), tuple(kwargs))
            if len(self._plans) < _MAX_PLANS:
                self._plans[shape] = plan
        positional, keywords = plan
        if positional is None:  # the call's positional arguments as they are, no keywords
            return BoundInputs(args, {})
        return BoundInputs(tuple([_fill(item, args, kwargs) for item in positional]),
                           {name: _fill(item, args, kwargs) for name, item in keywords})

    def _plan(self, n_args: int, names: tuple) -> tuple[tuple | None, tuple]:
        """(what each positional argument takes, (name, what it takes) per keyword): a
        `_Slot` of the call, or a default value; (None, ()) when the call's own positional
        arguments are the bound ones and no keyword is passed on."""
        slots = tuple(_Slot(index=k) for k in range(n_args))
        bound = _bound(self.signature, slots, {name: _Slot(name=name) for name in names})
        if bound.args == slots and not bound.kwargs:
            return None, ()
        return tuple(bound.args), tuple(bound.kwargs.items())


def _fill(item: Any, args: tuple, kwargs: dict) -> Any:
    if type(item) is not _Slot:
        return item
    return args[item.index] if item.index is not None else kwargs[item.name]


def _bound(signature: inspect.Signature, args: tuple, kwargs: dict) -> BoundInputs:
    """`args` and `kwargs` bound to `signature` by `inspect` (see `bind_inputs`)."""
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as error:
        raise PyfxprofError(f"the inputs do not match forward{signature}: {error} — pass a "
                            "tuple of positional arguments or a dict of keyword "
                            "arguments") from None
    bound.apply_defaults()
    positional: list = []
    keywords: dict = {}
    for name, value in bound.arguments.items():
        kind = signature.parameters[name].kind
        if kind in _POSITIONAL:
            positional.append(value)
        elif kind == inspect.Parameter.VAR_POSITIONAL:
            positional.extend(value)
        elif kind == inspect.Parameter.KEYWORD_ONLY:
            keywords[name] = value
        else:  # VAR_KEYWORD: its contents, never the (possibly empty) dict itself
            keywords.update(value)
    return BoundInputs(tuple(positional), keywords)


def map_tensors(value: Any, change: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """`value` with `change` applied to each tensor in it (tuples, lists, dicts rebuilt).

    Example:
        >>> map_tensors((torch.ones(1), [2, {"a": torch.zeros(1)}]), lambda t: t + 1)
        (tensor([2.]), [2, {'a': tensor([1.])}])
    """
    if isinstance(value, torch.Tensor):
        return change(value)
    if isinstance(value, (list, tuple)):
        return type(value)(map_tensors(v, change) for v in value)
    if isinstance(value, dict):
        return {k: map_tensors(v, change) for k, v in value.items()}
    return value


def input_tensors(bound: BoundInputs, limit: int = 4) -> list[torch.Tensor]:
    """Every tensor in the inputs, in a fixed walk order: into tuples, lists, dicts and the
    attributes of other objects (caches), `limit` levels of objects deep.

    Example:
        >>> x = torch.zeros(1)
        >>> len(input_tensors(BoundInputs((x, [x, 3]), {"y": {"z": x}})))
        3
    """
    found: list[torch.Tensor] = []

    def walk(value: Any, depth: int) -> None:
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (tuple, list)):
            for item in value:
                walk(item, depth)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item, depth)
        elif depth < limit and hasattr(value, "__dict__") and not isinstance(value, type):
            for item in vars(value).values():
                walk(item, depth + 1)

    walk((bound.args, bound.kwargs), 0)
    return found


def copied_alike(value: Any, memo: dict | None = None) -> Any:
    """``copy.deepcopy(value, memo)`` whose tensors (those input_tensors finds) are inference
    tensors exactly where the originals are, whatever the autograd mode it is made in: a
    copy made under ``inference_mode`` would otherwise be an inference tensor, and Dynamo's
    guards (which check a tensor's dispatch keys) would then refuse the caller's own tensors.

    Example:
        >>> x = torch.ones(2)
        >>> with torch.inference_mode():
        ...     [copy] = copied_alike([x])
        >>> copy.is_inference(), torch.equal(copy, x) and copy is not x
        (False, True)
    """
    memo = {} if memo is None else memo
    for tensor in input_tensors(BoundInputs((value,))):
        if id(tensor) not in memo:
            with torch.inference_mode(tensor.is_inference()):
                memo[id(tensor)] = copy.deepcopy(tensor)
    return copy.deepcopy(value, memo)


def copied_inputs(model: torch.nn.Module, example_inputs: Any) -> BoundInputs:
    """`example_inputs` (as prepare() takes them) bound to `model`'s forward, as a deep copy.

    Example:
        >>> copied_inputs(torch.nn.ReLU(), torch.zeros(2)).args
        (tensor([0., 0.]),)
    """
    return copied_bound(bind_inputs(model, *split_inputs(example_inputs)))


def copied_bound(bound: BoundInputs) -> BoundInputs:
    """A deep copy of the inputs for capture and analysis (caches and in-place state of the
    caller's arguments stay untouched, `x += 1` in forward included). When the whole refuses
    deepcopy, each value is copied on its own (see _copied_value)."""
    try:
        return BoundInputs(*copied_alike((bound.args, bound.kwargs)))
    except Exception:  # e.g. a tensor autograd made: copy value by value
        return BoundInputs(*pytree.tree_map(_copied_value, (bound.args, bound.kwargs)))


def _copied_value(value: Any) -> Any:
    """A deep copy of one input value; a tensor autograd made (which deepcopy refuses) as a
    clone outside the caller's autograd graph, itself made by autograd as the original was;
    anything else that refuses deepcopy as it is."""
    try:
        return copy.deepcopy(value)
    except Exception:
        if isinstance(value, torch.Tensor):
            return value.detach().requires_grad_(value.requires_grad).clone()
        return value
