"""Source lines per node: the frames of the user's model code that created each graph node,
read from the stack trace FX (record_stack_traces) and TorchDynamo keep in node.meta."""

from __future__ import annotations

import os
import re

import torch
import torch.fx as fx

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_PYFXPROF_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
#: Path parts of library internals left out (a model's own file under transformers/models/ stays).
_TRANSFORMERS, _TRANSFORMERS_MODELS = f"{os.sep}transformers{os.sep}", \
    f"{os.sep}transformers{os.sep}models{os.sep}"


def is_internal(path: str) -> bool:
    """A frame of torch, pyfxprof, transformers' machinery or generated code, not model code.

    Example:
        >>> is_internal(torch.__file__), is_internal("/x/transformers/models/gpt2/modeling_gpt2.py")
        (True, False)
    """
    if path.startswith("<") or path.startswith((_TORCH_DIR, _PYFXPROF_DIR)):
        return True
    return _TRANSFORMERS in path and _TRANSFORMERS_MODELS not in path


def source_frames(stack_trace: str | None, internal: bool = False) -> tuple[str, ...]:
    """The frames of a node's stack trace as "file.py:123 in forward", outermost first; frames
    of library internals left out unless `internal`.

    Example:
        >>> source_frames('File "/m/net.py", line 9, in forward\\n    y = self.fc(x)')
        ('net.py:9 in forward',)
    """
    frames = []
    for path, line, function in _FRAME.findall(stack_trace or ""):
        if internal or not is_internal(path):
            frames.append(f"{os.path.basename(path)}:{line} in {function}")
    return tuple(frames)


def node_source(node: fx.Node) -> tuple[str, tuple[str, ...]]:
    """(innermost model-code frame or "", the model-code frames outermost first) of `node`."""
    frames = source_frames(node.meta.get("stack_trace"))
    return (frames[-1] if frames else ""), frames
