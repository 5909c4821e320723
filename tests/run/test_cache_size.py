"""run/cache_size.py: the last-level cache read from sysfs-like folders of any layout."""

import pytest
import torch

from pyfxprof.run.cache_size import last_level_cache_bytes


@pytest.mark.parametrize("sizes,expected", [
    ({"index0": "32K", "index1": "32K", "index2": "512K", "index3": "32768K"}, 32 << 20),
    ({"index0": "48K", "index3": "2M"}, 2 << 20),
    ({"index0": "1G"}, 1 << 30),
    ({"index0": "4096"}, 4096),
    ({"index0": "", "index1": "n/a", "index2": "64K"}, 64 << 10),
    ({}, 0),
])
def test_the_largest_listed_cache_is_the_last_level(tmp_path, sizes, expected):
    for index, text in sizes.items():
        (tmp_path / index).mkdir()
        (tmp_path / index / "size").write_text(text + "\n")
    assert last_level_cache_bytes(torch.device("cpu"), root=str(tmp_path)) == expected

