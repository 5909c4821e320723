"""Tests of the Profiler's call groups (pyfxprof.loop.call_groups): signatures and analysis copies."""

import inspect
import threading

import pytest
import torch

from pyfxprof.errors import PyfxprofError
from pyfxprof.capture.inputs import BoundInputs, bind_inputs
from pyfxprof.loop.call_groups import (analysis_copy, args_key, capture_group, next_variant,
                                       primary_shape, signature_key)
from tests.models import CachedModel, GrowingCache


def _forward(input_ids, past=None, mask=None, use_cache=False, **kwargs):
    return input_ids


SIGNATURE = inspect.signature(_forward)


def _key(*args, **kwargs):
    return signature_key(bind_inputs(SIGNATURE, args, kwargs))


def test_positional_and_keyword_calls_of_one_signature_share_a_key():
    ids = torch.zeros(1, 8, dtype=torch.long)
    assert _key(ids, mask=torch.ones(1, 8)) == _key(mask=torch.ones(1, 8), input_ids=ids)
    assert _key(ids, extra=3) == ((0, "int64", (1, 8)), (1, None), (2, None), (3, False),
                                  ("extra", "int"))


def test_decode_steps_share_a_key_while_the_prompt_differs():
    prompt = _key(torch.zeros(1, 8, dtype=torch.long), mask=torch.ones(1, 8))
    steps = {_key(torch.zeros(1, 1, dtype=torch.long), mask=torch.ones(1, 8 + k))
             for k in range(1, 5)}
    assert len(steps) == 1 and prompt not in steps
    assert primary_shape(prompt) == (1, 8) and primary_shape(next(iter(steps))) == (1, 1)


def test_flags_count_by_value_and_objects_by_type():
    ids = torch.zeros(2, 3)
    assert _key(ids, use_cache=True) != _key(ids, use_cache=False)
    assert _key(ids, past=[1]) == _key(ids, past=[2, 3]) != _key(ids, past=(1,))
    assert primary_shape(signature_key(BoundInputs((None, 3), {}))) is None


def test_calls_sharing_an_args_key_share_a_signature_key():
    ids, mask = torch.zeros(1, 8, dtype=torch.long), torch.ones(1, 8)
    calls = [(ids,), (ids.clone(),), (ids.float(),), (torch.zeros(1, 9, dtype=torch.long),),
             (ids, mask), (ids, torch.ones(1, 12)), (ids, torch.ones(12)), (ids, None),
             (ids, True), (ids, False), (ids, 1), (ids, 2.0), (None, ids), (ids, ids),
             (mask, ids), (3,), (True,), ([ids],), ((ids,),), ()]
    for first in calls:
        for second in calls:
            same_args = args_key(first) == args_key(second)
            same_signature = (signature_key(BoundInputs(first, {}))
                              == signature_key(BoundInputs(second, {})))
            assert same_signature or not same_args, (first, second)
    # what keeps a decode loop on the hot path: a mask growing by one position
    assert args_key((ids[:, :1], torch.ones(1, 9))) == args_key((ids[:, :1], torch.ones(1, 10)))
    assert args_key((ids,)) != args_key((ids.float(),)) != args_key((ids[:, :4].float(),))


class _Cache:
    def __init__(self):
        self.layers = [torch.zeros(2)]


def test_analysis_copies_share_no_state_with_the_callers_arguments():
    cache, x = _Cache(), torch.ones(2, requires_grad=True)
    y = x * 2  # a non-leaf tensor: deepcopy alone would refuse it
    copied = analysis_copy(((y,), {"past": cache, "flags": [True, None]}))
    copied[1]["past"].layers[0].add_(1)
    copied[0][0].add_(1)
    assert cache.layers[0].tolist() == [0.0, 0.0] and y.tolist() == [2.0, 2.0]
    assert copied[1]["flags"] == [True, None] and not copied[0][0].requires_grad


def test_a_tensor_passed_twice_is_copied_once():
    ids = torch.ones(2, 3)  # model(input_ids=ids, labels=ids): Dynamo guards the aliasing
    copied = analysis_copy({"input_ids": ids, "labels": ids, "other": ids.clone()})
    assert copied["input_ids"] is copied["labels"] and copied["labels"] is not ids
    assert copied["other"] is not copied["labels"]


def test_an_argument_that_cannot_be_copied_is_a_one_line_error():
    with pytest.raises(PyfxprofError, match="cannot copy a lock argument"):
        analysis_copy({"lock": threading.Lock()})


def test_a_group_is_analysed_on_its_own_inputs():
    model = torch.nn.Sequential(torch.nn.Linear(4, 2))
    group = capture_group(model, (torch.zeros(3, 4),), {}, ("key",), 5)
    assert (group.index, group.key, group.label) == (5, ("key",), "([3, 4] float32)")
    assert group.frame["input_shapes"].tolist() == ["([3, 4] float32)"]
    assert group.flops == 3 * 4 * 2 * 2 and not group.hooks


def test_next_variant_numbers_the_captures_of_one_signature():
    key = _key(torch.zeros(1, 1))
    assert next_variant(key) == (*key, ("guard variant", 2))
    assert next_variant(next_variant(key))[-1] == ("guard variant", 3)


def test_a_dynamo_group_makes_the_models_calls_and_accepts_what_its_guards_accept():
    model = CachedModel().eval()
    cache = GrowingCache(2)
    with torch.no_grad():
        group = capture_group(model, (torch.ones(1, 3), cache), {}, (), 0, model.forward)
        assert group.capture.mode == "dynamo" and not group.hooks
        assert cache.keys.shape == (2, 3)  # capture and analysis ran on copies
        for length in (2, 5):
            mine, theirs = GrowingCache(length), GrowingCache(length)
            args = (torch.ones(1, 3), mine)
            inputs = group.inputs(args, {}, bind_inputs(model, args))
            assert group.accepts(inputs)
            out, returned = group.run(inputs)
            expected, _ = model(torch.ones(1, 3), theirs)
            assert returned is mine and torch.equal(out, expected)
            assert torch.equal(mine.keys, theirs.keys)
        refused = (torch.ones(1, 3), GrowingCache(4, append=False))
        assert not group.accepts(group.inputs(refused, {}, bind_inputs(model, refused)))
    assert group.executor.timings().intervals.shape == (2, len(group.frame))


class _DropoutCachedModel(CachedModel):
    def __init__(self) -> None:
        super().__init__()
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x, cache):
        y, cache = super().forward(x, cache)
        return self.drop(y), cache


def test_a_model_in_training_mode_is_captured_by_dynamo_with_its_flags_and_random_state():
    model = _DropoutCachedModel().train()
    model.lin.eval()  # a mixed state is captured and left as the user set it
    flags, rng = [m.training for m in model.modules()], torch.get_rng_state()
    group = capture_group(model, (torch.ones(4, 3), GrowingCache(2)), {}, (), 0, model.forward)
    assert group.capture.mode == "dynamo" and "dropout" in group.capture.graph_module.code
    assert [m.training for m in model.modules()] == flags
    assert torch.equal(torch.get_rng_state(), rng)  # capture and analysis drew no mask
    args = (torch.ones(4, 3), GrowingCache(2))
    torch.manual_seed(3)
    out, _ = group.run(group.inputs(args, {}, bind_inputs(model, args)))
    torch.manual_seed(3)
    assert torch.equal(out, model(torch.ones(4, 3), GrowingCache(2))[0])
