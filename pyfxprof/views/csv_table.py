"""The node table (Profile.to_dataframe) as CSV: one row per node, times in ns.

Example:
    >>> export_csv(prof, "nodes.csv")   # doctest: +SKIP
"""

from __future__ import annotations

from ..data.persist import open_output


def export_csv(profile, path) -> None:
    """Write ``profile.to_dataframe()`` to ``path`` as CSV (gzip when it ends in .gz); the
    module stack is one "/"-joined cell.

    >>> export_csv(prof, "nodes.csv.gz")   # doctest: +SKIP
    """
    frame = profile.to_dataframe()
    frame["module_stack"] = frame["module_stack"].map("/".join)
    with open_output(path) as stream:
        frame.to_csv(stream, index=False)
