"""RankProfiles.save (data/rank_files.py): every rank in one versioned JSON file, read back by
data/rank_profiles.py."""

import gzip
import json

from pyfxprof.data.rank_files import save_rank_profiles
from pyfxprof.data.rank_profiles import RankProfiles, load_profile_or_ranks, load_rank_profiles
from tests.data.test_rank_profiles import straggling_world


def test_save_load_round_trips_including_failures(tmp_path):
    ranks = RankProfiles(straggling_world().profiles, failures={5: "boom"}, world_size=6)
    for name in ("ranks.json", "ranks.json.gz"):
        ranks.save(tmp_path / name)
        loaded = load_rank_profiles(tmp_path / name)
        assert loaded == ranks and loaded.failures == {5: "boom"} and loaded.world_size == 6
    assert isinstance(load_profile_or_ranks(tmp_path / "ranks.json"), RankProfiles)
    ranks.profiles[0].save(tmp_path / "one.json")
    assert load_profile_or_ranks(tmp_path / "one.json") == ranks.profiles[0]
    document = json.loads((tmp_path / "ranks.json").read_text())
    assert document["format"] == "pyfxprof-rank-profiles" and document["version"] == 1
    assert gzip.decompress((tmp_path / "ranks.json.gz").read_bytes()).startswith(b"{")


def test_the_served_method_is_the_function(tmp_path):
    ranks = RankProfiles(straggling_world().profiles)
    save_rank_profiles(ranks, tmp_path / "a.json")
    ranks.save(tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
