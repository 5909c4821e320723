"""NVTX ranges named by node (``profile(..., nvtx=True)``): Nsight Systems and Nsight Compute show
each timed call as a range named like its trace slice, pushed and popped by the native timed call
outside the timed interval (docs/gpu.md)."""

from __future__ import annotations

from typing import Any

from .native import _C
from ..errors import PyfxprofError
from .run_table import RunTable


def nvtx_available() -> tuple[bool, str]:
    """(whether pyfxprof can push NVTX ranges, why not or where its headers were found).

    Example:
        >>> isinstance(nvtx_available()[0], bool)
        True
    """
    if _C.nvtx_built:
        return True, f"NVTX v3 headers from {_C.nvtx_include_dir}"
    return False, ("pyfxprof was built without the NVTX v3 headers (nvtx3/nvToolsExt.h): "
                   "install the CUDA toolkit or a CUDA build of torch and rebuild pyfxprof")


def check_nvtx(nvtx: bool) -> bool:
    """`nvtx` when NVTX ranges can be pushed (or not asked for), else a one-line error.

    Example:
        >>> check_nvtx(False)
        False
    """
    available, why = nvtx_available()
    if nvtx and not available:
        raise PyfxprofError(f"nvtx=True: {why}")
    return bool(nvtx)


def name_ranges(executor: Any, names: list[str] | None, strict: bool = True) -> None:
    """Push an NVTX range named ``names[k]`` around the timed call of column k of the
    executor's table, or none with ``names=None`` (a cached executor is reset this way).
    The table's columns are the first rows of the nodes table, so longer ``names`` are cut.
    An executor without native timed calls (module hooks) refuses names in one line, or
    with ``strict=False`` goes without them (the Profiler loop's hooks groups).

    Example:
        >>> import torch
        >>> from .executors import CodegenExecutor
        >>> gm = torch.fx.symbolic_trace(torch.nn.ReLU())
        >>> name_ranges(CodegenExecutor(gm, 1), None)
    """
    table = getattr(executor, "table", None)
    if not isinstance(table, RunTable):
        if names is not None and strict:
            raise PyfxprofError(f"nvtx=True needs nodes timed by native calls (mode='codegen' on "
                                f"a graph capture or a compiled model); this run is timed by "
                                f"{getattr(executor, 'mode', type(executor).__name__)}")
        return
    if names is None:
        table.native.set_ranges(None)
        return
    check_nvtx(True)
    columns = table.native.nodes  # a spare column (RunTable's) has no node: no range name
    table.native.set_ranges([str(name) for name in names[:columns]]
                            + [""] * (columns - len(names[:columns])))
