"""Source lines per node: the frames of the user's model code that created each graph node,
read from the stack trace FX (record_stack_traces) and TorchDynamo keep in node.meta, or, for
a module call timed by hooks, from the Python stack calling the module."""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
import sys
from types import FrameType
from typing import Iterable, Iterator

import torch
import torch.fx as fx

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_PYFXPROF_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
#: pyfxprof's stages that capture, run and time models (not its CLI's bundled model).
_PYFXPROF = tuple(f"{_PYFXPROF_DIR}{stage}{os.sep}"
                  for stage in ("capture", "run", "loop", "timing", "tools"))
#: Capture machinery, never model code: torch.fx's tracer and generated code, TorchDynamo,
#: pyfxprof itself (code typed at a prompt, `<stdin>` or `<ipython-input-…>`, is model code).
_MACHINERY = (*_PYFXPROF, f"{_TORCH_DIR}fx{os.sep}", f"{_TORCH_DIR}_dynamo{os.sep}",
              "<eval_with_key>", "<frozen ")
#: Path parts of library internals left out (a model's own file under transformers/models/ stays).
_TRANSFORMERS, _TRANSFORMERS_MODELS = f"{os.sep}transformers{os.sep}", \
    f"{os.sep}transformers{os.sep}models{os.sep}"
_LIBRARY_FRAMES: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "pyfxprof_library_frames", default=False)
#: The modules whose files torch.fx leaves out of a node's recorded stack trace
#: (torch.fx.experimental.symbolic_shapes.uninteresting_files), by name.
_UNINTERESTING_MODULES = (
    "torch.fx.experimental.symbolic_shapes", "torch.export._trace",
    "torch.fx.experimental.recording", "torch.fx.experimental.sym_node", "torch.fx.interpreter",
    "torch.fx._symbolic_trace", "torch", "torch._compile", "torch._dynamo.eval_frame",
    "torch._inductor.sizevars", "torch._library.custom_ops", "torch._library.fake_impl",
    "torch._subclasses.meta_utils", "torch._subclasses.fake_tensor", "torch._logging._internal",
    "torch._logging.structured")


@contextlib.contextmanager
def keeping_library_frames(enabled: bool = True) -> Iterator[None]:
    """Source lines computed inside the block keep torch's and transformers' frames
    (profile(..., library_frames=True)).

    Example:
        >>> with keeping_library_frames():
        ...     source_frames(f'File "{torch.__file__}", line 3, in relu')
        ('__init__.py:3 in relu',)
    """
    token = _LIBRARY_FRAMES.set(bool(enabled))
    try:
        yield
    finally:
        _LIBRARY_FRAMES.reset(token)


def is_machinery(path: str) -> bool:
    """A frame of torch.fx's tracer or generated code, TorchDynamo or pyfxprof: never shown.

    Example:
        >>> is_machinery("<eval_with_key>.3"), is_machinery("<stdin>")
        (True, False)
    """
    return path.startswith(_MACHINERY)


def uninteresting_files() -> set[str]:
    """The files torch.fx leaves out of a node's recorded stack trace, without importing
    TorchDynamo, Inductor and torch.export as torch's own list does (seconds): torch's list
    once Dynamo is loaded, else the files of that list's modules already imported (a
    module's code is on the stack only once it is imported), and "<string>".

    Example:
        >>> torch.__file__ in uninteresting_files()
        True
    """
    if "torch._dynamo" in sys.modules:
        from torch.fx.experimental.symbolic_shapes import uninteresting_files as torch_files
        return torch_files()
    modules = [sys.modules.get(name) for name in _UNINTERESTING_MODULES]
    modules += [module for name, module in list(sys.modules.items())
                if name.startswith("torch._higher_order_ops.")]
    files = {getattr(module, "__file__", None) for module in modules}
    return {file for file in files if isinstance(file, str)} | {"<string>"}


def is_library(path: str) -> bool:
    """A frame of torch or of transformers' machinery, not model code (shown with
    library_frames=True).

    Example:
        >>> is_library(torch.__file__), is_library("/x/transformers/models/gpt2/modeling_gpt2.py")
        (True, False)
    """
    if path.startswith(_TORCH_DIR):
        return True
    return _TRANSFORMERS in path and _TRANSFORMERS_MODELS not in path


def _shown(frames: Iterable[tuple[str, object, str]], library: bool | None) -> tuple[str, ...]:
    """(path, line, function) frames as "file.py:123 in forward", machinery left out, and
    library frames unless `library` (None: as keeping_library_frames says)."""
    library = _LIBRARY_FRAMES.get() if library is None else library
    return tuple(f"{os.path.basename(path)}:{line} in {function}"
                 for path, line, function in frames
                 if not is_machinery(path) and (library or not is_library(path)))


def source_frames(stack_trace: str | None, library: bool | None = None) -> tuple[str, ...]:
    """The frames of a node's stack trace as "file.py:123 in forward", outermost first;
    frames of the capture machinery left out, and those of torch and transformers unless
    `library` (None: as keeping_library_frames says).

    Example:
        >>> source_frames('File "/m/net.py", line 9, in forward\\n    y = self.fc(x)')
        ('net.py:9 in forward',)
    """
    return _shown(_FRAME.findall(stack_trace or ""), library)


def node_source(node: fx.Node) -> tuple[str, tuple[str, ...]]:
    """(innermost model-code frame or "", the model-code frames outermost first) of `node`."""
    frames = source_frames(node.meta.get("stack_trace"))
    return (frames[-1] if frames else ""), frames


def call_source(module: torch.nn.Module, frame: FrameType | None = None
                ) -> tuple[str, tuple[str, ...]]:
    """node_source for a module call timed by hooks, from inside its forward pre-hook: the
    Python stack from the frame calling the hook (`frame`, default the caller's caller) up to
    pyfxprof's call of the model. When no model code called the module (the model timed
    whole), its forward's definition.

    Example:
        >>> model.fc.register_forward_pre_hook(  # doctest: +SKIP
        ...     lambda module, args: print(call_source(module)[0]))
        >>> model(x)  # doctest: +SKIP
        net.py:12 in forward
    """
    frame = frame or sys._getframe(2)
    walked = []
    while frame is not None and not frame.f_code.co_filename.startswith(_PYFXPROF):
        walked.append((frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name))
        frame = frame.f_back
    frames = _shown(reversed(walked), None)
    if not any(not is_library(path) and not is_machinery(path) for path, _, _ in walked):
        code = getattr(type(module).forward, "__code__", None)
        frames = () if code is None else _shown(
            [(code.co_filename, code.co_firstlineno, code.co_name)], None)
    return (frames[-1] if frames else ""), frames


def missing_source_notes(sources: Iterable[str]) -> list[str]:
    """The capture note saying why every node's `source` is empty, when it is (none otherwise).

    Example:
        >>> missing_source_notes(["", ""])[0][:32]
        'no source lines: no node was mad'
    """
    if any(sources):
        return []
    return ["no source lines: no node was made by model code (profile(..., library_frames=True) "
            "names torch's and transformers' lines)"]
