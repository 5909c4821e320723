"""Tests of capture/storage_writes.py: every storage an op writes is seen, whatever path the
write takes, and what is only read is not."""

import pytest
import torch

from pyfxprof.capture.storage_writes import run_noting_writes, storage_key

WRITES = {
    "in_place": lambda t, o: t.add_(1),
    "through_data": lambda t, o: t.data.mul_(2),
    "through_a_view": lambda t, o: t[1:].zero_(),
    "copy_into": lambda t, o: t.copy_(o),
    "out_argument": lambda t, o: torch.add(o, o, out=t),
    "index_put": lambda t, o: t.index_put_((torch.tensor([0]),), torch.tensor([3.0])),
    "foreach": lambda t, o: torch._foreach_add_([t], 1.0),
}


@pytest.mark.parametrize("how", WRITES)
def test_a_write_by_any_path_is_seen(how):
    target, other = torch.zeros(4), torch.ones(4)
    _, written = run_noting_writes(lambda: WRITES[how](target, other))
    assert storage_key(target) in written and storage_key(other) not in written


def test_reads_and_new_tensors_are_not_writes():
    a, b = torch.ones(3), torch.ones(3)
    result, written = run_noting_writes(lambda: (a + b).relu_())
    assert torch.equal(result, torch.full((3,), 2.0))
    assert storage_key(a) not in written and storage_key(b) not in written


def test_views_share_the_key_of_their_storage():
    base = torch.zeros(6)
    assert storage_key(base[2:]) == storage_key(base.view(2, 3)) == storage_key(base)
