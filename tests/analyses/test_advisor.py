"""Tests of pyfxprof.analyses.advisor (and advice): advise, the rule registry, sorting and
rendering. The built-in rules: tests/analyses/test_advisor_rules.py."""

import pytest

from pyfxprof.analyses.advisor import (RULES, SEVERITIES, Advice, Suggestion, advise,
                                       build_context, register_rule, unregister_rule)
from pyfxprof.data.units import format_ns
from tests.advisor_profiles import conv_bn_specs, make_profile, only

# ---------------------------------------------------------------------------------------------
# registry, sorting, rendering


@pytest.fixture
def scratch_rules():
    """Names registered by a test, removed afterwards."""
    names = []
    yield names
    for name in names:
        if name in RULES:
            unregister_rule(name)


def test_custom_rule_is_registered_and_run(scratch_rules):
    @register_rule("test_relus")
    def relus(profile, context):
        rows = context.stats.index[context.stats["target"] == "torch.relu"]
        return [Suggestion("test_relus", "low", "ReLUs", context.cite_many(rows), "fuse them",
                           None, context.names(rows))]
    scratch_rules.append("test_relus")
    prof = make_profile(conv_bn_specs())
    assert "test_relus" in [s.rule for s in advise(prof)]
    item = only(advise(prof, "test_relus"), "test_relus")
    assert item.evidence == ["relu (torch.relu) median 50.0 µs, 5.0%"]
    with pytest.raises(ValueError, match="'test_relus' is already registered"):
        register_rule("test_relus")(relus)


def test_bad_rules_are_refused(scratch_rules):
    prof = make_profile(conv_bn_specs())
    with pytest.raises(ValueError, match=r"unknown advisor rules \['nope'\]"):
        advise(prof, ["nope"])
    register_rule("test_bad")(lambda profile, context: ["not a suggestion"])
    scratch_rules.append("test_bad")
    with pytest.raises(TypeError, match="'test_bad' returned a str"):
        advise(prof, ["test_bad"])
    with pytest.raises(ValueError, match="severity must be one of"):
        Suggestion("r", "urgent", "t", [], "a")


def test_sorted_by_severity_then_saving(scratch_rules):
    def make(severity, saving):
        return Suggestion("test_order", severity, f"{severity} {saving}", [], "a", saving)
    register_rule("test_order")(lambda profile, context: [
        make("low", 5.0), make("high", 1.0), make("info", None), make("high", 9.0),
        make("low", None)])
    scratch_rules.append("test_order")
    advice = advise(make_profile(conv_bn_specs()), ["test_order"])
    assert [s.title for s in advice] == ["high 9.0", "high 1.0", "low 5.0", "low None",
                                         "info None"]


def test_default_advice_is_sorted_and_rendered():
    prof = make_profile(conv_bn_specs(), noise=0.01)
    advice = advise(prof)
    assert isinstance(advice, Advice) and {"fusible_conv_bn", "hotspots"} <= {
        s.rule for s in advice}
    ranks = [SEVERITIES.index(s.severity) for s in advice]
    assert ranks == sorted(ranks)
    text = str(advice)
    assert text.startswith(f"Advice for toy on cpu: {len(advice)} suggestions (median run ")
    assert "1. [high] Fold 1 eval-mode BatchNorm into" in text
    assert "   evidence:\n     - 1 Conv→BatchNorm pair: " in text
    assert "   action: pyfxprof.fuse_conv_bn(model)" in text
    assert "expected saving: not estimated" in text  # hotspots
    saving = advice[0].expected_saving_ns
    pct = f"{saving / build_context(prof).total_ns * 100:.1f}%"
    assert f"expected saving: {format_ns(saving)} ({pct})" in text


def test_empty_profile_gives_empty_advice():
    prof = make_profile(conv_bn_specs(), runs=0)
    advice = advise(prof)
    assert list(advice) == [] and "0 suggestions" in str(advice)


def test_a_row_of_glue_is_cited_by_its_label_once():
    from tests.outside_profiles import outside_profile
    prof = outside_profile()
    context = build_context(prof)
    outside = list(context.stats["name"]).index("(Python outside the graph)")
    cited = context.cite(outside)
    assert cited.startswith("Python outside the graph (module calls, glue) median "), cited
    assert context.cite(0).startswith("mm (torch.mm) median ")
