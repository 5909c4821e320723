"""stats/confidence.py: the one confidence level and the default false discovery rate agree."""

import inspect

import pytest

from pyfxprof.stats.confidence import CONFIDENCE, FALSE_DISCOVERY_RATE


def test_the_default_false_discovery_rate_is_one_minus_the_confidence():
    assert FALSE_DISCOVERY_RATE == pytest.approx(1 - CONFIDENCE)


@pytest.mark.parametrize("where", ["pyfxprof.run.compare:compare", "pyfxprof.analyses.diff:diff",
                                   "pyfxprof.data.rank_profiles:RankProfiles.stragglers"])
def test_every_public_default_rate_is_the_constant(where):
    import importlib
    module, _, name = where.partition(":")
    target = importlib.import_module(module)
    for part in name.split("."):
        target = getattr(target, part)
    assert inspect.signature(target).parameters["alpha"].default == FALSE_DISCOVERY_RATE
