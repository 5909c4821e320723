"""The plot format: a bar chart of the slowest nodes, as an image file."""

from __future__ import annotations

from ...data.files import PathLike
from ...data.profile import Profile
from ..plot import plot
from . import ExportFormat


class Plot(ExportFormat):
    """Profile.plot's bar chart written to a file (views/plot.py)."""

    name = "plot"
    title = "plot"
    suffixes = (".png", ".pdf")
    help = "a bar chart of the slowest nodes"

    @staticmethod
    def writer(profile: Profile, path: PathLike, top: int = 20) -> None:
        """Write the bar chart of the ``top`` slowest nodes to ``path``."""
        plot(profile, path, top=top)
