"""BenchGrid: several Measurements laid out as one grid, rows and columns by parameter, each
cell marked when its median differs significantly from its left neighbour's (docs/bench.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import served_methods
from .measurement import Measurement

#: Column key of measurements without parameters.
NO_PARAMS = "median"


def value_text(value) -> str:
    """A parameter value as a cell title: torch.float32 -> "float32", 1024 -> "1024".

    Example:
        >>> value_text(1024), value_text("torch.float32")
        ('1024', 'float32')
    """
    return str(value).removeprefix("torch.")


@served_methods
@dataclass(eq=False)
class BenchGrid:
    """Measurements as one table: a row per value of every parameter but the last (and per
    label, when they differ), a column per value of the last parameter, in first-seen order.
    A cell is marked when the 95% intervals of its median and of the median of the cell to
    its left do not overlap (``Measurement.differs_from``). ``str()`` is the text table,
    ``_repr_html_`` an HTML one (views/bench_text.py).

    Example:
        >>> import numpy as np
        >>> ms = [Measurement("add", np.full((8, 2), t), np.full(8, 2 * t), params={"n": n, "dtype": d})
        ...       for n, d, t in [(1, "f32", 100), (1, "f64", 100), (2, "f32", 200)]]
        >>> c = BenchGrid(ms)
        >>> c.row_keys, c.column_keys, c.marked(ms[1]), c.cell(("2",), "f64")
        ([('1',), ('2',)], ['f32', 'f64'], False, None)
    """

    if TYPE_CHECKING:  # served through the package root's _METHODS; tests/test_typing.py
        # checks each declaration against the serving function's signature
        def __str__(self) -> str: ...
        def _repr_html_(self) -> str: ...

    measurements: list[Measurement]

    def __post_init__(self) -> None:
        self.measurements = list(self.measurements)

    @property
    def row_names(self) -> list[str]:
        """The titles of the row key's parts: the label (when labels differ) and the
        parameters but the last."""
        names = self._parameter_names()[:-1]
        return (["label"] if self._label_in_rows() else []) + names

    @property
    def column_name(self) -> str:
        """The last parameter's name (NO_PARAMS without parameters)."""
        names = self._parameter_names()
        return names[-1] if names else NO_PARAMS

    def _parameter_names(self) -> list[str]:
        names: list[str] = []
        for m in self.measurements:
            names += [name for name in m.params if name not in names]
        return names

    def _label_in_rows(self) -> bool:
        """The label is part of a row's key when labels differ or no parameter names rows."""
        several = len({m.label for m in self.measurements}) > 1
        return several or len(self._parameter_names()) < 2

    def row_key(self, m: Measurement) -> tuple[str, ...]:
        """The row `m` is in."""
        names = self._parameter_names()[:-1]
        label = (m.label,) if self._label_in_rows() else ()
        return label + tuple(value_text(m.params.get(name, "-")) for name in names)

    def column_key(self, m: Measurement) -> str:
        """The column `m` is in."""
        names = self._parameter_names()
        return value_text(m.params.get(names[-1], "-")) if names else NO_PARAMS

    @property
    def row_keys(self) -> list[tuple[str, ...]]:
        return list(dict.fromkeys(self.row_key(m) for m in self.measurements))

    @property
    def column_keys(self) -> list[str]:
        return list(dict.fromkeys(self.column_key(m) for m in self.measurements))

    def cell(self, row: tuple[str, ...], column: str) -> Measurement | None:
        """The measurement at (row, column) (the last one given there), or None."""
        found = None
        for m in self.measurements:
            if self.row_key(m) == row and self.column_key(m) == column:
                found = m
        return found

    def marked(self, m: Measurement) -> bool:
        """Whether `m` differs significantly from the cell to its left (False in the first
        column or beside an empty cell)."""
        columns = self.column_keys
        at = columns.index(self.column_key(m))
        left = self.cell(self.row_key(m), columns[at - 1]) if at else None
        return left is not None and m.differs_from(left)
