"""``RankProfiles.save``: every rank's profile in one versioned JSON file (gzip when the name
ends in .gz), each profile stored as persist stores one; data/rank_profiles.py reads it back.

Example:
    >>> ranks.save("ranks.json.gz")   # doctest: +SKIP
"""

from __future__ import annotations

from ..errors import PyfxprofError
from . import persist
from .files import PathLike
from .rank_profiles import FORMAT, VERSION, RankProfiles


def save_rank_profiles(ranks: RankProfiles, path: PathLike) -> None:
    """Write every rank's profile as one versioned JSON file (gzip when ``path`` ends in
    .gz); each profile is stored as in a saved profile (persist's document).

    >>> ranks.save("ranks.json.gz")   # doctest: +SKIP
    """
    document = {"format": FORMAT, "version": VERSION, "world_size": ranks.world_size,
                "ranks": ranks.ranks,
                "failures": {str(r): m for r, m in ranks.failures.items()},
                "profiles": [_document(ranks, r) for r in ranks.ranks]}
    persist.write_document(document, path, "rank profiles")


def _document(ranks: RankProfiles, rank: int) -> dict:
    try:
        return persist.to_document(ranks.profiles[rank])
    except TypeError as error:
        raise PyfxprofError(f"cannot save rank {rank}'s profile: {error}") from None
