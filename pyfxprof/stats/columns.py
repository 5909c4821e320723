"""Some columns of a runs x nodes array without copying it: row sums over the columns a mask
keeps, column medians a block of columns at a time, and a column added in reserved room."""

from __future__ import annotations

import numpy as np

#: Bytes of a block of columns a median copies at once (np.median partitions a copy).
BLOCK_BYTES = 1 << 22


def kept_spans(mask: np.ndarray) -> list[tuple[int, int]]:
    """The [start, stop) spans of consecutive True entries of `mask`, in order.

    Example:
        >>> kept_spans(np.array([True, True, False, True]))
        [(0, 2), (3, 4)]
    """
    edges = np.diff(np.concatenate([[0], np.asarray(mask, dtype=np.int8), [0]]))
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist()))


def masked_row_sums(samples: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Each row's sum over the columns `mask` keeps, read through views (no copy of the
    kept columns, as ``samples[:, mask]`` makes).

    Example:
        >>> masked_row_sums(np.array([[1, 2, 4], [8, 16, 32]]), np.array([True, False, True]))
        array([ 5, 40])
    """
    total = np.zeros(samples.shape[0], dtype=np.result_type(samples.dtype, np.int64))
    for start, stop in kept_spans(mask):
        total += samples[:, start:stop].sum(axis=1)
    return total


def column_medians(samples: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """The median of each column `mask` keeps (every column without one), in order, computed
    over blocks of at most BLOCK_BYTES of columns: the copy np.median partitions is one block,
    never the array.

    Example:
        >>> column_medians(np.array([[1, 5, 9], [3, 7, 11]]), np.array([True, False, True]))
        array([ 2., 10.])
    """
    keep = np.ones(samples.shape[1], dtype=bool) if mask is None else np.asarray(mask, bool)
    width = max(1, BLOCK_BYTES // max(1, samples.shape[0] * samples.itemsize))
    parts = [np.median(samples[:, block:min(block + width, stop)], axis=0)
             for start, stop in kept_spans(keep) for block in range(start, stop, width)]
    return np.concatenate(parts) if parts else np.empty(0)


def widened(samples: np.ndarray, column: np.ndarray, spare: np.ndarray | None = None
            ) -> np.ndarray:
    """`samples` with `column` as one more last column: written into `spare` in place when
    `samples` is exactly `spare`'s first columns (room reserved beside them before they were
    written), else a new array (a copy of the samples).

    Example:
        >>> spare = np.array([[1, 2, -1], [3, 4, -1]])
        >>> wide = widened(spare[:, :2], np.array([5, 6]), spare)
        >>> wide.tolist(), wide is spare
        ([[1, 2, 5], [3, 4, 6]], True)
        >>> widened(np.array([[1], [3]]), np.array([5, 6])).tolist()
        [[1, 5], [3, 6]]
    """
    if (spare is not None and spare.shape == (samples.shape[0], samples.shape[1] + 1)
            and spare.dtype == samples.dtype and spare.strides == samples.strides
            and spare.__array_interface__["data"][0] == samples.__array_interface__["data"][0]):
        spare[:, -1] = column
        return spare
    return np.hstack([samples, np.asarray(column, dtype=samples.dtype)[:, None]])
