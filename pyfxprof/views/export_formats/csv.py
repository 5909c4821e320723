"""The CSV format: the node table (Profile.to_dataframe), one row per node, times in ns.

Example:
    >>> prof.export("nodes.csv")   # doctest: +SKIP
"""

from __future__ import annotations

from ...data.files import PathLike, open_output
from ...data.profile import Profile
from . import ExportFormat


class Csv(ExportFormat):
    """The node table as CSV, written by the class itself: a format is one file."""

    name = "csv"
    title = "node table"
    suffixes = (".csv", ".csv.gz")
    help = "the node table as CSV (ns)"

    @staticmethod
    def writer(profile: Profile, path: PathLike) -> None:
        """Write ``profile.to_dataframe()`` to ``path`` as CSV (gzip when it ends in .gz); the
        module stack is one "/"-joined cell.

        >>> Csv.writer(prof, "nodes.csv.gz")   # doctest: +SKIP
        """
        frame = profile.to_dataframe()
        frame["module_stack"] = frame["module_stack"].map("/".join)
        with open_output(path) as stream:
            frame.to_csv(stream, index=False)
