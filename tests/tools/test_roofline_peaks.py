"""Profile.roofline on the user's side (pyfxprof/tools/roofline_peaks.py): a profile made on
this machine without peaks gets them measured, at its thread count, once; one from elsewhere
is a one-line error."""

import pytest
import torch

import pyfxprof
from pyfxprof.errors import PyfxprofError
from pyfxprof.tools import roofline_peaks
from tests.data.test_roofline import PEAKS


@pytest.fixture
def measured(monkeypatch):
    """machine_peaks replaced by one that notes the thread count it was called at."""
    threads = []

    def fake(device=None, remeasure=False):
        threads.append((device, torch.get_num_threads()))
        return {**PEAKS, "threads": torch.get_num_threads()}

    monkeypatch.setattr(roofline_peaks, "machine_peaks", fake)
    return threads


def _profile(threads: int):
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU())
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        prof = pyfxprof.profile(model, (torch.randn(4, 16),), runs=5, warmup=1, progress=False)
    finally:
        torch.set_num_threads(before)
    prof.meta.pop("machine_peaks", None)  # as on a machine never measured
    return prof


@pytest.mark.parametrize("threads", [1, 2])
def test_a_profile_made_here_gets_this_machines_peaks_at_its_thread_count(measured, threads,
                                                                          capsys):
    prof = _profile(threads)
    frame = prof.roofline()
    assert measured == [("cpu", threads)]  # measured once, at the profile's thread count
    assert {"bound", "efficiency", "headroom"} <= set(frame.columns)
    assert prof.meta["machine_peaks"]["threads"] == threads  # kept: its plot uses them
    assert "measuring this machine's peaks" in capsys.readouterr().err
    prof.roofline(group_by="module")
    assert len(measured) == 1  # not measured again


def test_a_profile_from_elsewhere_without_peaks_is_a_one_line_error(measured):
    prof = _profile(1)
    prof.meta["cpu"] = "Another CPU"
    with pytest.raises(PyfxprofError, match="no machine peaks") as error:
        prof.roofline()
    assert "\n" not in str(error.value) and measured == []
    assert {"bound"} <= set(prof.roofline(peaks=PEAKS).columns)  # given peaks: no measuring
    assert measured == []
