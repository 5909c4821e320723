"""pyfxprof.schedule against torch.profiler.schedule: same actions, same argument checks."""

import itertools
import warnings

import pytest
import torch.profiler

from pyfxprof.loop.schedule import ProfilerAction, checked_action, record_every_step, schedule
from pyfxprof.errors import PyfxprofError

STEPS = range(40)


def _quiet(factory, **counts):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return factory(**counts)


@pytest.mark.parametrize("skip_first,skip_first_wait", [(0, 0), (1, 0), (3, 0), (2, 1), (0, 1)])
def test_actions_equal_torch_profiler_schedule_over_a_grid(skip_first, skip_first_wait):
    for wait, warmup, active, repeat in itertools.product((0, 1, 2), (0, 1, 2), (1, 2, 3),
                                                          (0, 1, 2)):
        counts = dict(wait=wait, warmup=warmup, active=active, repeat=repeat,
                      skip_first=skip_first, skip_first_wait=skip_first_wait)
        ours = _quiet(schedule, **counts)
        theirs = _quiet(torch.profiler.schedule, **counts)
        assert [ours(s) for s in STEPS] == [theirs(s) for s in STEPS], counts


def test_actions_are_torch_profiler_actions():
    s = schedule(wait=1, warmup=1, active=2, repeat=1)
    assert [s(k) for k in range(5)] == [
        torch.profiler.ProfilerAction.NONE, torch.profiler.ProfilerAction.WARMUP,
        torch.profiler.ProfilerAction.RECORD, torch.profiler.ProfilerAction.RECORD_AND_SAVE,
        torch.profiler.ProfilerAction.NONE]
    assert ProfilerAction is torch.profiler.ProfilerAction


def test_repeat_zero_cycles_forever():
    s = schedule(wait=1, warmup=1, active=1)
    assert s(3 * 10_000 + 2) == torch.profiler.ProfilerAction.RECORD_AND_SAVE


@pytest.mark.parametrize("counts", [
    dict(wait=-1, warmup=1, active=1), dict(wait=0, warmup=-1, active=1),
    dict(wait=0, warmup=1, active=0), dict(wait=0, warmup=1, active=-2),
    dict(wait=0, warmup=1, active=1, repeat=-1), dict(wait=0, warmup=1, active=1, skip_first=-1),
])
def test_invalid_counts_are_refused_where_torch_refuses_them(counts):
    with pytest.raises(AssertionError):
        torch.profiler.schedule(**counts)
    with pytest.raises(PyfxprofError, match="invalid schedule"):
        schedule(**counts)


def test_non_integer_counts_are_refused():
    with pytest.raises(PyfxprofError, match="active must be an integer"):
        schedule(wait=0, warmup=1, active=1.5)


def test_warmup_zero_warns_like_torch():
    with pytest.warns(UserWarning, match="won't be using warmup"):
        schedule(wait=1, warmup=0, active=1)


def test_negative_step_is_refused():
    with pytest.raises(PyfxprofError, match="non-negative"):
        schedule(wait=0, warmup=1, active=1)(-1)


def test_checked_action_refuses_what_a_schedule_may_not_return():
    assert checked_action(torch.profiler.ProfilerAction.RECORD, 3).name == "RECORD"
    for bad in (torch.profiler.ProfilerAction.DEVICE_STOPPED, 2, None):
        with pytest.raises(PyfxprofError, match="for step 3"):
            checked_action(bad, 3)


def test_without_a_schedule_every_step_records():
    assert {record_every_step(k) for k in range(10)} == {
        torch.profiler.ProfilerAction.RECORD}
