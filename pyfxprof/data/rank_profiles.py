"""Profiles of every rank of a distributed job, side by side: per-node medians on each rank,
the spread across ranks, stragglers (a significance test across ranks), communication and the
time ranks wait in collectives. Pure numpy/pandas/scipy: a gathered file loads anywhere.

Nodes line up across ranks by identity, ``module_path/name`` (as in diff). A node is
communication when its ``communication`` column (set at capture for collective calls) is True.
Wait in a collective: a rank's median time in it minus the smallest median across ranks — the
fast ranks wait there for the slow one (the straggler signature). See docs/distributed.md.

Example:
    >>> ranks = pyfxprof.gather(prof)          # doctest: +SKIP
    >>> print(ranks.table()); ranks.stragglers()   # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .. import served_methods
from ..errors import ArgumentError, PyfxprofError, fraction, margin, whole_number
from . import persist, validate
from .profile import Profile
from ..stats.confidence import FALSE_DISCOVERY_RATE

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .files import PathLike

FORMAT = "pyfxprof-rank-profiles"
VERSION = 1
#: Nodes table column (bool) marking collective communication calls.
COMM_COLUMN = "communication"
#: Fewest runs on a rank (and on the other ranks together) for a straggler test.
MIN_RUNS = 5


def node_keys(nodes: pd.DataFrame) -> list[str]:
    """Identity of each node across ranks: "module_path/name" (or the name at the root).

    >>> node_keys(pd.DataFrame({"module_path": ["layer1", ""], "name": ["conv", "add"]}))
    ['layer1/conv', 'add']
    """
    return [f"{path}/{name}" if path else str(name)
            for path, name in zip(nodes["module_path"], nodes["name"])]


def _communication(profile: Profile) -> np.ndarray:
    if COMM_COLUMN not in profile.nodes:
        return np.zeros(profile.n_nodes, dtype=bool)
    return profile.nodes[COMM_COLUMN].fillna(False).astype(bool).to_numpy()


def _check_profiles(profiles: dict, failures: dict) -> tuple[dict, dict]:
    if not isinstance(profiles, dict) or not all(isinstance(p, Profile) for p in profiles.values()):
        raise ArgumentError("profiles must be a dict {rank: Profile}")
    ranks = list(profiles) + list(failures)
    if any(isinstance(r, bool) or not isinstance(r, (int, np.integer)) or r < 0 for r in ranks):
        raise ArgumentError(f"ranks must be integers >= 0, got {ranks!r}")
    both = set(profiles) & set(failures)
    if both:
        raise ArgumentError(f"ranks {sorted(both)} have both a profile and a failure")
    return ({int(r): profiles[r] for r in sorted(profiles)},
            {int(r): str(failures[r]) for r in sorted(failures)})


@served_methods
class RankProfiles:
    """Every rank's Profile of one distributed job; build it with ``pyfxprof.gather``.

    Attributes: ``profiles`` ({rank: Profile}, by rank), ``failures`` ({rank: error message}
    for ranks that could not profile), ``world_size``.
    ``table``, ``export_html``, ``export_chrome_trace`` and ``export_rank_traces`` are served
    by views.rank_table and views.rank_trace (pyfxprof/__init__.py's ``_METHODS``).

    >>> ranks = RankProfiles({0: prof0, 1: prof1}, world_size=2)   # doctest: +SKIP
    >>> print(ranks.table(top=10)); ranks.stragglers()             # doctest: +SKIP
    """

    if TYPE_CHECKING:  # served through the package root's _METHODS; tests/test_typing.py
        # checks each declaration against the serving function's signature
        def save(self, path: PathLike) -> None: ...
        def table(self, sort_by: str = "spread", top: int | None = None) -> str: ...
        def export_html(self, path: PathLike, top: int | None = 50) -> None: ...
        def export_chrome_trace(self, path: PathLike, runs: Iterable[int] | None = None,
                                max_runs: int | None = 20) -> None: ...
        def export_rank_traces(self, directory: PathLike, runs: Iterable[int] | None = None,
                               max_runs: int | None = 20) -> list[Path]: ...

    def __init__(self, profiles: dict, failures: dict | None = None,
                 world_size: int | None = None):
        self.profiles, self.failures = _check_profiles(profiles, dict(failures or {}))
        every = list(self.profiles) + list(self.failures)
        self.world_size = int(world_size) if world_size is not None else max(every, default=-1) + 1
        if every and max(every) >= self.world_size:
            raise ArgumentError(f"rank {max(every)} is outside world size {self.world_size}")

    @property
    def ranks(self) -> list[int]:
        """Ranks that delivered a profile, ascending."""
        return list(self.profiles)

    # ---- per node across ranks ----------------------------------------------------------

    def _node_index(self) -> pd.DataFrame:
        """Union of node identities in first-appearance order (rank order), with their columns."""
        frames = []
        for profile in self.profiles.values():
            nodes = profile.nodes[["name", "op", "target", "module_path"]].copy()
            nodes[COMM_COLUMN] = _communication(profile)
            nodes.index = pd.Index(node_keys(profile.nodes), name="key")
            frames.append(nodes)
        if not frames:
            return pd.DataFrame(columns=["name", "op", "target", "module_path", COMM_COLUMN])
        union = pd.concat(frames)
        return union[~union.index.duplicated()]

    def _samples_by_node(self, keys: pd.Index) -> dict[int, dict[str, np.ndarray]]:
        """{rank: {key: that node's host samples (ns, one per run)}} for every rank."""
        by_rank = {}
        for rank, profile in self.profiles.items():
            columns = dict(zip(node_keys(profile.nodes), range(profile.n_nodes)))
            by_rank[rank] = {key: profile.samples[:, columns[key]]
                             for key in keys if key in columns}
        return by_rank

    def medians(self) -> pd.DataFrame:
        """Median host ns of each node (rows, by key) on each rank (columns); NaN where absent.

        >>> ranks.medians().loc["layer1/conv", 3]   # doctest: +SKIP
        2043210.0
        """
        keys = self._node_index().index
        data = {}
        for rank, profile in self.profiles.items():
            medians = (np.median(profile.samples, axis=0) if profile.n_runs
                       else np.full(profile.n_nodes, np.nan))
            data[rank] = pd.Series(medians, index=node_keys(profile.nodes)).reindex(keys)
        return pd.DataFrame(data, index=keys, columns=self.ranks, dtype=np.float64)

    def to_dataframe(self) -> pd.DataFrame:
        """One row per node (index: key "module_path/name", first-appearance order).

        Columns (ns, float): name, op, target, module_path, communication (bool);
        ``rank_<r>`` the node's median on rank r (NaN where the rank has no such node);
        min, median, max of those medians; spread (max - min) and spread_pct (spread /
        median, percent); slowest_rank (int, -1 when no rank has it); wait (sum over ranks of
        each rank's median minus the minimum, communication nodes only, else 0).

        >>> ranks.to_dataframe().sort_values("spread").tail(3)   # doctest: +SKIP
        """
        index = self._node_index()
        medians = self.medians()
        frame = index.copy()
        for rank in self.ranks:
            frame[f"rank_{rank}"] = medians[rank]
        values = medians.to_numpy()
        present = ~np.isnan(values).all(axis=1) if values.size else np.zeros(len(frame), bool)
        filled = np.where(np.isnan(values), -np.inf, values)
        with np.errstate(invalid="ignore", divide="ignore"), _quiet_nan():
            frame["min"] = np.nanmin(values, axis=1) if values.size else np.nan
            frame["median"] = np.nanmedian(values, axis=1) if values.size else np.nan
            frame["max"] = np.nanmax(values, axis=1) if values.size else np.nan
            frame["spread"] = frame["max"] - frame["min"]
            frame["spread_pct"] = 100.0 * frame["spread"] / frame["median"]
        slowest = np.array(self.ranks)[filled.argmax(axis=1)] if values.size else []
        frame["slowest_rank"] = np.where(present, slowest, -1).astype(np.int64)
        waits = self.waits()
        frame["wait"] = waits.sum(axis=1).reindex(frame.index).fillna(0.0)
        return frame

    def waits(self) -> pd.DataFrame:
        """Time each rank waits in each collective: its median minus the smallest median across
        ranks (ns; rows: communication nodes only, columns: ranks).

        >>> ranks.waits().loc["all_reduce"].idxmin()   # the straggler waits least  # doctest: +SKIP
        3
        """
        comm = self._node_index()[COMM_COLUMN].astype(bool)
        medians = self.medians().loc[comm[comm].index]
        with _quiet_nan():
            return medians.sub(medians.min(axis=1), axis=0)

    def rank_summary(self) -> pd.DataFrame:
        """One row per rank: runs, total (median run total), compute and communication (sums
        of node medians), wait (part of communication spent waiting for other ranks), all ns.

        >>> ranks.rank_summary()["wait"].idxmin()   # the straggler waits least   # doctest: +SKIP
        3
        """
        waits = self.waits().sum(axis=0)
        rows = []
        for rank, profile in self.profiles.items():
            medians = np.median(profile.samples, axis=0) if profile.n_runs else \
                np.zeros(profile.n_nodes)
            comm = _communication(profile)
            rows.append({"rank": rank, "runs": profile.n_runs,
                         "total": float(np.median(profile.run_totals)) if profile.n_runs
                         else np.nan,
                         "compute": float(medians[~comm].sum()),
                         "communication": float(medians[comm].sum()),
                         "wait": float(waits.get(rank, 0.0))})
        columns = ["rank", "runs", "total", "compute", "communication", "wait"]
        return pd.DataFrame(rows, columns=columns).set_index("rank")

    # ---- stragglers ----------------------------------------------------------------------

    def stragglers(self, alpha: float = FALSE_DISCOVERY_RATE, min_change: float = 0.2,
                   min_runs: int = MIN_RUNS) -> pd.DataFrame:
        """Compute nodes on which a rank is slower than the other ranks beyond run-to-run noise.

        For each compute node and rank: a one-sided Mann–Whitney U test of the rank's per-run
        samples against the other ranks' samples pooled, Bonferroni-corrected for the number
        of tests; a (node, rank) is a straggler when the corrected p < ``alpha`` and its median
        exceeds the reference (the median of the other ranks' medians) by at least
        ``min_change`` (a fraction). Communication nodes are left out: a fast rank waits there
        (see :meth:`waits`). Rows sorted by excess time, largest first.

        Columns: key, name, rank, median, reference, excess (ns), rel_excess (fraction),
        p_value (corrected), tests (number of tests performed).

        >>> ranks.stragglers()[["name", "rank", "excess"]]   # doctest: +SKIP
           name  rank      excess
        0  spin     3  20450938.5
        """
        _check_straggler_settings(alpha, min_change, min_runs)
        index = self._node_index()
        keys = index.index[~index[COMM_COLUMN].astype(bool).to_numpy()]
        by_rank = self._samples_by_node(keys)
        candidates = [row for key in keys for row in _node_tests(key, by_rank, min_runs)]
        columns = ["key", "name", "rank", "median", "reference", "excess", "rel_excess",
                   "p_value", "tests"]
        frame = pd.DataFrame(candidates, columns=columns[:7] + ["p_raw"])
        frame["name"] = index.loc[frame["key"], "name"].to_numpy() if len(frame) else []
        frame["p_value"] = np.minimum(1.0, frame["p_raw"] * len(frame))
        frame["tests"] = len(frame)
        hits = frame[(frame["p_value"] < alpha) & (frame["rel_excess"] >= min_change)]
        hits = hits.sort_values("excess", ascending=False, kind="stable")
        return hits[columns].reset_index(drop=True)

    def __repr__(self) -> str:
        failed = f", {len(self.failures)} failed" if self.failures else ""
        return f"<RankProfiles {len(self.profiles)} of {self.world_size} ranks{failed}>"

    def __eq__(self, other) -> bool:
        if not isinstance(other, RankProfiles):
            return NotImplemented
        return (self.world_size == other.world_size and self.failures == other.failures
                and self.profiles == other.profiles)

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value


@contextlib.contextmanager
def _quiet_nan():
    """Silence numpy's all-NaN slice warnings (absent nodes are NaN by design)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _check_straggler_settings(alpha, min_change, min_runs) -> None:
    fraction("alpha", alpha)
    margin("min_change", min_change)
    whole_number("min_runs", min_runs, minimum=2)


def _node_tests(key: str, by_rank: dict, min_runs: int) -> list[tuple]:
    """(key, None, rank, median, reference, excess, rel_excess, p) for each rank with the
    node: a one-sided Mann–Whitney U test (this rank slower) of its samples against the other
    ranks' pooled, by the normal approximation with tie and continuity corrections, as diff's
    test. The pool of one rank and the others is every rank's samples, so one ranking of
    them gives every rank's U."""
    from scipy.stats import norm, rankdata
    present = {rank: samples[key] for rank, samples in by_rank.items() if key in samples}
    if len(present) < 2:
        return []
    pool = np.concatenate(list(present.values())).astype(np.float64)
    n = len(pool)
    ranked = rankdata(pool)
    _, ties = np.unique(pool, return_counts=True)
    tie_term = float((ties ** 3 - ties).sum()) / (n * (n - 1)) if n > 1 else 0.0
    medians = {rank: float(np.median(s)) for rank, s in present.items()}
    rows, start = [], 0
    for rank, samples in present.items():
        n1, n2 = len(samples), n - len(samples)
        u = ranked[start:start + n1].sum() - n1 * (n1 + 1) / 2.0
        start += n1
        if n1 < min_runs or n2 < min_runs:
            continue
        sigma = np.sqrt(n1 * n2 / 12.0 * ((n + 1) - tie_term))
        p_value = float(norm.sf((u - n1 * n2 / 2.0 - 0.5) / sigma)) if sigma > 0 else 1.0
        reference = float(np.median([medians[r] for r in present if r != rank]))
        excess = medians[rank] - reference
        rel = excess / reference if reference > 0 else (np.inf if excess > 0 else 0.0)
        rows.append((key, None, rank, medians[rank], reference, excess, rel, p_value))
    return rows


# ---- reading ------------------------------------------------------------------------------

def from_document(doc) -> RankProfiles:
    """The RankProfiles of a version-1 document; persist.FormatError explains any problem."""
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise persist.FormatError(f"not a pyfxprof rank-profiles file (no \"format\": "
                                  f"\"{FORMAT}\" field)")
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= VERSION:
        raise persist.FormatError(f"unsupported rank-profiles version {version!r} (this "
                                  f"pyfxprof reads {VERSION}; upgrade pyfxprof if newer)")
    ranks, documents = doc.get("ranks"), doc.get("profiles")
    failures, world = doc.get("failures", {}), doc.get("world_size")
    if not (isinstance(ranks, list) and isinstance(documents, list)
            and len(ranks) == len(documents) and validate.is_str_dict(failures)
            and isinstance(world, int) and all(isinstance(r, int) for r in ranks)):
        raise persist.FormatError("'ranks' and 'profiles' must be lists of equal length, "
                                  "'failures' a dict and 'world_size' an int")
    profiles = {}
    for rank, profile_doc in zip(ranks, documents):
        try:
            profiles[rank] = persist.from_document(profile_doc)
        except persist.FormatError as error:
            raise persist.FormatError(f"rank {rank}: {error}") from None
    try:
        return RankProfiles(profiles, {int(r): m for r, m in failures.items()}, world)
    except ValueError as error:
        raise persist.FormatError(f"inconsistent rank profiles: {error}") from None


def load_rank_profiles(path: PathLike) -> RankProfiles:
    """Read a file written by :meth:`RankProfiles.save`; PyfxprofError naming ``path`` and the
    reason when it is missing, corrupt or not a rank-profiles file.

    >>> ranks = load_rank_profiles("ranks.json.gz")   # doctest: +SKIP
    """
    path = Path(path)
    try:
        return from_document(persist.read_document(path, "cannot load rank profiles"))
    except persist.FormatError as error:
        raise PyfxprofError(f"cannot load rank profiles {path}: {error}") from None


def load_profile_or_ranks(path) -> Profile | RankProfiles:
    """A saved Profile or a saved RankProfiles, whichever ``path`` holds (read once).

    >>> type(load_profile_or_ranks("ranks.json")).__name__   # doctest: +SKIP
    'RankProfiles'
    """
    path = Path(path)
    try:
        doc = persist.read_document(path, "cannot load profile")
        if isinstance(doc, dict) and doc.get("format") == FORMAT:
            return from_document(doc)
        return persist.from_document(doc)
    except persist.FormatError as error:
        raise PyfxprofError(f"cannot load profile {path}: {error}") from None
