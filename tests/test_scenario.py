"""Scenario schema: GPU layout defaults and framework versions."""

import pytest

from rlbatch_solver.errors import InputError
from rlbatch_solver.scenario import Scenario, scenario_from_dict


@pytest.mark.parametrize("gpus,nnodes,per_node", [(4, 1, 4), (8, 1, 8), (16, 2, 8), (64, 8, 8), (12, 1, 12)])
def test_more_than_eight_gpus_become_nodes_of_eight(gpus, nnodes, per_node):
    sc = Scenario(gpus=gpus)
    assert (sc.nnodes, sc.per_node, sc.total_gpus) == (nnodes, per_node, gpus)


def test_an_explicit_layout_is_kept():
    sc = Scenario(gpus=16, gpus_per_node=16)
    assert (sc.nnodes, sc.per_node) == (1, 16)
    sc = scenario_from_dict({"gpus": 16, "nnodes": 4})
    assert (sc.nnodes, sc.per_node) == (4, 4)


def test_framework_version_is_stored_as_the_bare_name():
    assert Scenario(framework="verl==0.9.1", gpus=4).framework == "verl"
    with pytest.raises(InputError) as e:
        Scenario(framework="openrlhf==0.10.0", gpus=4)
    assert e.value.field == "framework" and "0.11.2" in str(e.value)
