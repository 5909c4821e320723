"""Profiling inside a torch.distributed job: the rank metadata of every Profile, and
``gather``, which collects every rank's Profile on one rank as a RankProfiles.

On the wire only tensors travel, never pickled objects: each rank's nodes table and metadata as
JSON text in a uint8 tensor (persist's document without its arrays), and its arrays (samples,
run totals, device samples, run starts, run noise) as one int64 tensor; dst validates each
rank's document as a loaded file is. A status exchange comes first (an all_gather of
a small int64 header: ok or failed, and sizes), so a rank that could not profile reports its error
and the others learn of it instead of hanging, and every wait is bounded by ``timeout``.
See docs/distributed.md.
"""

from __future__ import annotations

import datetime
import json
import os
import warnings
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from ..data import persist, validate
from ..data.profile import Profile
from ..data.rank_profiles import RankProfiles
from ..errors import PyfxprofError

#: Default bound, in seconds, on every wait of :func:`gather`.
DEFAULT_TIMEOUT = 300.0
_OK, _FAILED = 1, 2
#: Header fields, one int64 each: status, bytes of JSON, int64 values of the payload.
_HEADER = 3


def rank_meta() -> dict:
    """``{"distributed": {...}}`` for the Profile's metadata inside a distributed job, else {}.

    From torch.distributed when its default group is initialised (rank, world_size, backend),
    else from torchrun's environment variables (RANK, WORLD_SIZE); LOCAL_RANK when set.

    Example:
        >>> rank_meta() if "RANK" not in os.environ else {}
        {}
    """
    local_rank = os.environ.get("LOCAL_RANK")
    info = {}
    if dist.is_available() and dist.is_initialized():
        info = {"rank": dist.get_rank(), "world_size": dist.get_world_size(),
                "backend": str(dist.get_backend()), "source": "torch.distributed"}
    elif "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        try:
            info = {"rank": int(os.environ["RANK"]), "world_size": int(os.environ["WORLD_SIZE"]),
                    "backend": None, "source": "environment"}
        except ValueError:
            return {}
    if info and local_rank is not None and local_rank.isdigit():
        info["local_rank"] = int(local_rank)
    return {"distributed": info} if info else {}


def _encode(profile) -> tuple[np.ndarray, bytes, np.ndarray]:
    """(header, JSON bytes, int64 payload) of a Profile, or of a failure (any exception).

    The JSON is the saved profile's document with each packed array replaced by
    ``{"$payload": [offset, shape]}`` into the int64 payload.
    """
    if not isinstance(profile, Profile):
        text = (str(profile) or type(profile).__name__).encode()
        return np.array([_FAILED, len(text), 0], dtype=np.int64), text, np.zeros(0, np.int64)
    document = persist.to_document(profile)
    chunks, offset = [], 0
    for field in validate.ARRAY_FIELDS:
        array = getattr(profile, field.key)
        if array is None:
            continue
        chunks.append(np.ascontiguousarray(array, dtype=np.int64).ravel())
        document[field.key] = {"$payload": [offset, list(array.shape)]}
        offset += array.size
    text = json.dumps(document, allow_nan=False, separators=(",", ":")).encode()
    payload = np.concatenate(chunks) if chunks else np.zeros(0, np.int64)
    return np.array([_OK, len(text), payload.size], dtype=np.int64), text, payload


def _decode(header: np.ndarray, text: bytes, payload: np.ndarray):
    """The Profile of one rank's (header, JSON bytes, payload), or its error message (str).
    The arrays are packed back into the document, so it is validated as a loaded file is."""
    if int(header[0]) != _OK:
        return text.decode("utf-8", errors="replace")
    document = validate.parse_json(text.decode("utf-8"))
    for field in validate.ARRAY_FIELDS:
        slot = document.get(field.key)
        if isinstance(slot, dict) and "$payload" in slot:
            offset, shape = slot["$payload"]
            size = int(np.prod(shape))
            document[field.key] = persist.pack_array(payload[offset:offset + size].reshape(shape))
    return persist.from_document(document)


def _wait(work, timeout: float, step: str, rank: int) -> None:
    """Wait for an async collective at most ``timeout`` s; a one-line error otherwise."""
    try:
        work.wait(timeout=datetime.timedelta(seconds=timeout))
    except RuntimeError as error:
        raise PyfxprofError(
            f"rank {rank}: gather gave up after {timeout:g} s waiting for the other ranks "
            f"({step}: {str(error).splitlines()[0] if str(error) else 'timeout'}); a rank may "
            "have crashed or not called pyfxprof.gather — check its log") from None


def _gather_padded(local: np.ndarray, size: int, dtype: torch.dtype, dst: int, group,
                   is_dst: int, world: int, timeout: float, step: str, rank: int
                   ) -> list[np.ndarray] | None:
    """Every rank's 1-D ``local`` (padded to ``size``) on dst as numpy arrays, else None."""
    tensor = torch.zeros(size, dtype=dtype)
    tensor[:len(local)] = torch.from_numpy(np.ascontiguousarray(local))
    slots = [torch.zeros(size, dtype=dtype) for _ in range(world)] if is_dst else None
    _wait(dist.gather(tensor, slots, dst=dst, group=group, async_op=True), timeout, step, rank)
    return None if slots is None else [slot.numpy() for slot in slots]  # (None: not dst)


def gather(profile: Profile | BaseException, dst: int = 0, group: Any = None,
           timeout: float = DEFAULT_TIMEOUT) -> RankProfiles | None:
    """Collect every rank's Profile on rank ``dst``: a RankProfiles there, None elsewhere.

    Every rank of ``group`` (default: the world) must call it. ``profile`` is this rank's
    Profile, or the exception it got instead (it is reported to ``dst``, which lists it in
    ``failures`` and warns). Every wait is bounded by ``timeout`` seconds: a rank that never
    arrives (crashed, or took another path) makes the others raise PyfxprofError instead of
    hanging. ``dst`` is a global rank, as in torch.distributed. Without an initialised
    process group, the single Profile comes back as a one-rank RankProfiles.

    Example:
        >>> prof = pyfxprof.profile(model, (x,), runs=20)         # doctest: +SKIP
        >>> ranks = pyfxprof.gather(prof)                         # doctest: +SKIP
        >>> if ranks is not None: print(ranks.table())            # doctest: +SKIP
    """
    if not (dist.is_available() and dist.is_initialized()):
        if not isinstance(profile, Profile):
            raise PyfxprofError(f"cannot gather: this process has no profile ({profile})")
        return RankProfiles({0: profile}, world_size=1)
    members = dist.get_process_group_ranks(group or dist.group.WORLD)
    rank, world = dist.get_rank(), len(members)
    if dst not in members:
        raise PyfxprofError(f"dst {dst} is not a rank of the group (ranks {members})")
    header, text, payload = _encode(profile)
    slots = [torch.zeros(_HEADER, dtype=torch.int64) for _ in range(world)]
    work = dist.all_gather(slots, torch.from_numpy(header), group=group, async_op=True)
    _wait(work, timeout, "status exchange", rank)
    headers = np.stack([h.numpy() for h in slots])
    is_dst = rank == dst
    as_bytes = np.frombuffer(bytearray(text), dtype=np.uint8)
    texts = _gather_padded(as_bytes, int(headers[:, 1].max()), torch.uint8, dst, group, is_dst,
                           world, timeout, "metadata", rank)
    payloads = _gather_padded(payload, int(headers[:, 2].max()), torch.int64, dst, group, is_dst,
                              world, timeout, "samples", rank)
    if not is_dst:
        return None
    return _assemble(members, headers, texts, payloads, dist.get_world_size())


def _assemble(members, headers, texts, payloads, world_size: int) -> RankProfiles:
    profiles: dict[int, Profile] = {}
    failures: dict[int, str] = {}
    for member, header, text, payload in zip(members, headers, texts, payloads):
        result = _decode(header, text[:int(header[1])].tobytes(), payload)
        if isinstance(result, Profile):
            profiles[member] = result
        else:
            failures[member] = result
    for member, message in failures.items():
        warnings.warn(f"pyfxprof.gather: rank {member} could not profile: {message}",
                      RuntimeWarning, stacklevel=3)
    return RankProfiles(profiles, failures, world_size)


def barrier(timeout: float = DEFAULT_TIMEOUT, group=None) -> None:
    """Wait until every rank of ``group`` arrives, at most ``timeout`` s (PyfxprofError past
    it); nothing to wait for without an initialised process group.

    Example:
        >>> barrier(5.0) if not dist.is_initialized() else None
    """
    if dist.is_available() and dist.is_initialized():
        _wait(dist.barrier(group=group, async_op=True), timeout, "barrier", dist.get_rank())


def init_from_environment(device: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> bool:
    """Initialise the default process group from torchrun's environment (RANK, WORLD_SIZE,
    MASTER_ADDR, MASTER_PORT) when it is set and no group exists yet: NCCL for a CUDA
    device, gloo otherwise. True when this call initialised it (the caller then destroys it).

    Example:
        >>> init_from_environment() if "RANK" not in os.environ else False
        False
    """
    launched = all(k in os.environ for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))
    if not launched or not dist.is_available() or dist.is_initialized():
        return False
    backend = "nccl" if str(device or "").startswith("cuda") else "gloo"
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout))
    return True
