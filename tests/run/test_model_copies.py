import threading

import pytest
import torch

from pyfxprof.errors import PyfxprofError
from pyfxprof.run.model_copies import (COPIES_MEMORY, DEFAULT_COPIES, copies_of_sides,
                                       default_copies)


class Uncopyable(torch.nn.Linear):
    """A module holding a lock: copy.deepcopy cannot copy it."""

    def __init__(self):
        super().__init__(2, 2)
        self.lock = threading.Lock()


def test_default_copies_fit_in_the_memory_budget():
    small = torch.nn.Linear(4, 4)
    assert default_copies([small, small]) == DEFAULT_COPIES
    # both models together 40% of the budget: two more copies fit, three do not
    part = torch.nn.Linear(COPIES_MEMORY // 4 // 5, 1, bias=False, device="meta")
    assert default_copies([part, part]) == 3
    huge = torch.nn.Linear(COPIES_MEMORY // 4, 2, bias=False, device="meta")
    assert default_copies([huge, huge]) == 1
    assert default_copies([torch.nn.ReLU(), torch.nn.ReLU()]) == DEFAULT_COPIES  # no weights


def test_sides_are_the_model_and_its_deep_copies():
    control, test = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    sides = copies_of_sides([control, test], 3)
    assert [len(side) for side in sides] == [3, 3]
    assert sides[0][0] is control and sides[1][0] is test
    assert sides[0][1] is not control
    assert torch.equal(sides[0][2].weight, control.weight)
    assert sides[0][2].weight.data_ptr() != control.weight.data_ptr()


def test_a_model_that_cannot_be_copied_is_one_copy_by_default_and_one_line_if_asked():
    models = [Uncopyable(), Uncopyable()]
    with pytest.warns(UserWarning, match="cannot copy the control model .*one copy of each"):
        assert [len(side) for side in copies_of_sides(models, None)] == [1, 1]
    with pytest.raises(PyfxprofError, match=r"cannot copy the control model \(TypeError"):
        copies_of_sides(models, 2)
    assert [len(side) for side in copies_of_sides(models, 1)] == [1, 1]
