"""A node's call as plain JSON text (tensors by shape, dtype, stride, device and integer range;
literals as they are), recorded by the analysis run, and fresh inputs rebuilt from it."""

from __future__ import annotations

import json
from typing import Any

import torch

from .model_state import dtype_name

#: torch objects kept by name (dtype, layout, memory format), rebuilt with getattr(torch, ...).
_TORCH_NAMED = (torch.dtype, torch.layout, torch.memory_format)


def _tensor_spec(value: torch.Tensor) -> dict:
    """A tensor as shape, dtype, stride, device, and for integer and bool ones its range."""
    spec: dict[str, Any] = {"tensor": list(value.shape),
                            "dtype": dtype_name(value.dtype),
                            "stride": list(value.stride()), "device": str(value.device)}
    if not value.is_floating_point() and not value.is_complex() and value.numel():
        spec["range"] = [int(value.min()), int(value.max())]
    return spec


def encode(value: Any) -> Any:
    """`value` as JSON-able data: tensors by their spec, tuples as {"tuple": [...]}, an
    unknown object as {"opaque": its type name}.

    Example:
        >>> encode((torch.zeros(2, 3), 1, None))
        {'tuple': [{'tensor': [2, 3], 'dtype': 'float32', 'stride': [3, 1], 'device': 'cpu'}, 1, None]}
    """
    if isinstance(value, torch.Tensor):
        return _tensor_spec(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        items = [encode(v) for v in value]
        return {"tuple": items} if isinstance(value, tuple) else items
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {"dict": {k: encode(v) for k, v in value.items()}}
    if isinstance(value, _TORCH_NAMED):
        return {"torch": str(value).replace("torch.", "")}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    if isinstance(value, slice):
        return {"slice": [encode(value.start), encode(value.stop), encode(value.step)]}
    if value is Ellipsis:
        return {"ellipsis": True}
    return {"opaque": type(value).__name__}


def call_spec(args: tuple, kwargs: dict) -> str:
    """The call `(args, kwargs)` as JSON text, the nodes table's ``call_args`` column.

    Example:
        >>> call_spec((torch.zeros(1, dtype=torch.int64),), {"dim": 0})
        '{"args": [{"tensor": [1], "dtype": "int64", "stride": [1], "device": "cpu", "range": [0, 0]}], "kwargs": {"dim": 0}}'
    """
    return json.dumps({"args": [encode(a) for a in args],
                       "kwargs": {k: encode(v) for k, v in kwargs.items()}})


def opaque_types(value: Any) -> list[str]:
    """Type names of the objects a spec could not record (they cannot be rebuilt).

    Example:
        >>> opaque_types({"args": [{"opaque": "Foo"}, 1], "kwargs": {}})
        ['Foo']
    """
    if isinstance(value, dict):
        if "opaque" in value:
            return [value["opaque"]]
        return [t for v in value.values() for t in opaque_types(v)]
    if isinstance(value, list):
        return [t for v in value for t in opaque_types(v)]
    return []


def fresh_tensor(spec: dict, generator: torch.Generator | None = None) -> torch.Tensor:
    """A tensor of the spec's shape, dtype, stride and device with random values: normal
    floats, integers within the recorded range, random bools.

    Example:
        >>> t = fresh_tensor({"tensor": [2, 3], "dtype": "int64", "stride": [1, 2],
        ...                   "device": "cpu", "range": [4, 6]})
        >>> t.shape, t.stride(), bool(((t >= 4) & (t <= 6)).all())
        (torch.Size([2, 3]), (1, 2), True)
    """
    dtype = getattr(torch, spec["dtype"])
    tensor = torch.empty_strided(spec["tensor"], spec["stride"], dtype=dtype,
                                 device=spec["device"])
    if dtype == torch.bool:
        return tensor.copy_(torch.rand(tensor.shape, generator=generator) < 0.5)
    if tensor.is_floating_point() or tensor.is_complex():
        return tensor.copy_(torch.randn(tensor.shape, generator=generator, dtype=dtype))
    low, high = spec.get("range", [0, 0])
    return tensor.copy_(torch.randint(low, high + 1, tensor.shape, generator=generator))


def decode(value: Any, generator: torch.Generator | None = None) -> Any:
    """The value `encode` described, with fresh random tensors in place of recorded ones.

    Example:
        >>> decode(encode((torch.zeros(2), [3, None])))[0].shape
        torch.Size([2])
    """
    if isinstance(value, list):
        return [decode(v, generator) for v in value]
    if not isinstance(value, dict):
        return value
    if "tensor" in value:
        return fresh_tensor(value, generator)
    if "tuple" in value:
        return tuple(decode(v, generator) for v in value["tuple"])
    if "dict" in value:
        return {k: decode(v, generator) for k, v in value["dict"].items()}
    if "torch" in value:
        return getattr(torch, value["torch"])
    if "device" in value:
        return torch.device(value["device"])
    if "slice" in value:
        return slice(*(decode(v, generator) for v in value["slice"]))
    if "ellipsis" in value:
        return Ellipsis
    raise ValueError(f"cannot rebuild a {value.get('opaque', 'value')!r} from a recorded call")
