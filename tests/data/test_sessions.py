import numpy as np
import pandas as pd
import pytest

from pyfxprof.data.profile import Profile
from pyfxprof.data.sessions import merge_sessions


def profile(names, runs, value):
    nodes = pd.DataFrame({"index": range(len(names)), "name": names, "op": "call_function",
                          "target": "f", "module_path": "", "module_type": "M",
                          "module_stack": [()] * len(names)})
    samples = np.full((runs, len(names)), value)
    return Profile(nodes, samples, samples.sum(axis=1), {"model": "m", "ab": {"pair": "p"}})


def test_merged_runs_keep_their_session():
    merged = merge_sessions([profile(["a", "b"], 2, 10), profile(["a", "b"], 3, 20)])
    assert merged.meta["sessions"] == [0, 0, 1, 1, 1]
    assert merged.samples[:, 0].tolist() == [10, 10, 20, 20, 20]
    assert merged.run_totals.tolist() == [20, 20, 40, 40, 40]
    assert "ab" not in merged.meta  # no longer one interleaved run


def test_one_profile_is_itself_and_other_nodes_are_refused():
    one = profile(["a"], 2, 1)
    assert merge_sessions([one]) is one
    with pytest.raises(ValueError, match="profile 2 of one side has other nodes"):
        merge_sessions([one, profile(["b"], 2, 1)])
