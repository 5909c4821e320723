"""An eager profile against a profile of the model's torch.export program (capture mode
"exported"), lined up as the compiled diff is (analyses/compiled_diff.py): per module path, and per
op inside each module (the eager node against the exported aten node). See docs/capture.md.

Example:
    >>> d = pyfxprof.diff(eager_profile, exported_profile)   # doctest: +SKIP
    >>> print(d.table(top=10))                               # doctest: +SKIP
"""

from __future__ import annotations

import pandas as pd

from ..data.profile import Profile
from ..data.rungs import EXPORTED
from ..errors import PyfxprofError
from .compiled_diff import CompiledDiff

#: Exported nodes that run no op of the model: parameter reads and the program's shape guards.
_NOT_OPS = ("get_attr",)
_GUARDS = "_guards_fn"


def is_exported_profile(profile: Profile) -> bool:
    """True for a profile of a torch.export program (its aten graph timed as it is)."""
    return profile.meta.get("capture_mode") == EXPORTED


def as_sources(exported: Profile) -> Profile:
    """`exported` with the columns the compiled diff reads: each node is its own source node
    (``source_nodes``: its name, ``source_modules``: its module path), except parameter reads
    and the shape guards, which pair with no eager op (their time stays with their module).

    Example:
        >>> as_sources(exported_profile).nodes["source_nodes"].iloc[-1]   # doctest: +SKIP
        ('linear',)
    """
    nodes = exported.nodes.copy()
    own = ~nodes["op"].isin(_NOT_OPS) & (nodes["name"] != _GUARDS)
    nodes["source_nodes"] = pd.Series(
        [(name,) if keep else () for name, keep in zip(nodes["name"], own)], dtype=object)
    nodes["source_modules"] = pd.Series(
        [(path,) if keep else () for path, keep in zip(nodes["module_path"], own)], dtype=object)
    return Profile(nodes, exported.samples, exported.run_totals, dict(exported.meta))


class ExportedDiff(CompiledDiff):
    """An eager profile against its exported program's, per module path (eager time, exported
    time, saving) and per op (ops_table: each eager node against the aten node it became,
    paired inside its module). The "Kernels" columns list the exported program's aten nodes.
    A line says when the two ran in different numeric modes (autocast, dtypes, memory format,
    autograd).

    Example:
        >>> d = ExportedDiff(eager_profile, exported_profile)   # doctest: +SKIP
        >>> d.frame.columns.tolist()[:4]                          # doctest: +SKIP
        ['module', 'eager_ns', 'compiled_ns', 'saving_ns']
    """

    def __init__(self, eager: Profile, exported: Profile, labels=("eager", "exported"),
                 depth: int | None = None) -> None:
        self._check_sides(eager, exported)
        super().__init__(eager, as_sources(exported), labels, depth)
        self.compiled = exported

    @staticmethod
    def _check_sides(eager: Profile, exported: Profile, /) -> None:
        if is_exported_profile(eager) or not is_exported_profile(exported):
            raise PyfxprofError("ExportedDiff takes an eager profile first, then one of its "
                                "torch.export program")
