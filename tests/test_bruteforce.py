"""enumerate returns exactly the configs the checker accepts: nothing missing, nothing extra."""

import random

import pytest

from rlbatch_solver.frameworks.verl.rules import RULESET, VARIABLES
from rlbatch_solver.frameworks.verl.rules_megatron import ANY_RULESET, MEGATRON_RULESET, MEGATRON_VARIABLES

from bruteforce import assert_enumerate_equals_checker

BASE = {name: [spec.default] for name, spec in VARIABLES.items() if spec.default is not None or spec.optional}
BASE.update({"need_critic": [False], "need_ref": [False], "group_estimator": [True],
             "num_heads": [12], "num_kv_heads": [2], "max_position_embeddings": [4096],
             "max_prompt_length": [512], "max_response_length": [1024]})

SPACES = {
    "actor sizes": {
        "gpus_per_node": [2, 3, 4, 6], "train_batch_size": [1, 2, 3, 4, 6, 8], "n": [1, 2, 3],
        "actor_mini": [1, 2, 3, 4, 8], "actor_micro_per_gpu": [None, 1, 2, 3, 4],
        "logprob_micro_per_gpu": [None, 1, 2, 4],
    },
    "parallel sizes": {
        "gpus_per_node": [1, 2, 4, 6, 8], "nnodes": [1, 2], "actor_sp": [1, 2, 3, 4], "rollout_tp": [1, 2, 3, 4],
        "rollout_dp": [1, 2], "rollout_ep": [1, 2, 4], "remove_padding": [False, True], "fsdp_size": [-1, 2, 3],
        "train_batch_size": [4, 6], "actor_mini": [2], "logprob_micro_per_gpu": [1],
    },
    "deprecated and dynamic": {
        "gpus_per_node": [2, 4], "actor_micro": [None, 1, 2, 4], "actor_micro_per_gpu": [None, 1, 2],
        "logprob_micro": [None, 2], "logprob_micro_per_gpu": [None, 2], "actor_dyn": [False, True],
        "logprob_dyn": [False, True], "actor_max_tokens": [1000, 2000], "logprob_max_tokens": [1536, 4096],
        "actor_sp": [1, 2],
    },
    "critic and ref": {
        "gpus_per_node": [2, 4], "need_critic": [False, True], "need_ref": [False, True],
        "critic_mini": [2, 4, 16], "critic_micro_per_gpu": [None, 2], "critic_micro": [None, 4],
        "ref_micro_per_gpu": [None, 1, 3], "ref_sp": [1, 2], "critic_sp": [1, 2], "critic_max_tokens": [1000, 2048],
        "ref_dyn": [False, True], "ref_max_tokens": [1000, 2048],
        "train_batch_size": [8], "actor_mini": [4], "logprob_micro_per_gpu": [1],
    },
    "model limits": {
        "gpus_per_node": [4, 8], "actor_sp": [1, 2, 4, 8], "rollout_tp": [1, 2, 4], "num_heads": [12, 16],
        "num_kv_heads": [2, 4, 6], "max_model_len": [None, 512, 2048, 8192], "max_position_embeddings": [1536, 4096],
        "rollout_gpus_per_node": [None, 2, 4], "n": [1, 2],
    },
    # the v1 trainer pads each step to a multiple of lcm(dp, actor mini*n, critic mini*n)
    "step padding": {
        "gpus_per_node": [2, 4], "train_batch_size": [3, 4, 6, 8, 12], "actor_mini": [2, 3, 4], "critic_mini": [2, 3, 4],
        "need_critic": [False, True], "n": [1, 2], "logprob_micro_per_gpu": [1, 2, 3, 4], "need_ref": [True],
        "ref_micro_per_gpu": [None, 1, 3], "critic_micro_per_gpu": [2],
    },
    "rollout layout": {
        "gpus_per_node": [4, 8], "nnodes": [1, 2], "rollout_tp": [1, 2, 3, 4], "rollout_dp": [1, 2, 3],
        "rollout_ep": [1, 2, 4], "rollout_pp": [1, 2], "rollout_gpus_per_node": [None, 2, 3], "rollout_sglang": [False, True],
        "train_batch_size": [16], "actor_mini": [16], "actor_micro_per_gpu": [1], "logprob_micro_per_gpu": [1],
    },
    "critic sequence parallel": {
        "gpus_per_node": [2, 4, 6], "need_critic": [True], "critic_sp": [1, 2, 3], "critic_cfg_sp": [1, 2],
        "critic_remove_padding": [False, True], "critic_micro": [None, 2], "critic_micro_per_gpu": [None, 2],
        "critic_max_tokens": [512, 1024], "critic_dyn": [False, True],
    },
}


@pytest.mark.parametrize("space_name", list(SPACES))
def test_enumerate_equals_checker(space_name):
    domains = dict(BASE)
    domains.update({"actor_micro_per_gpu": [2], "logprob_micro_per_gpu": [2], "actor_mini": [4],
                    "train_batch_size": [8]})
    domains.update(SPACES[space_name])
    assert_enumerate_equals_checker(RULESET, domains)


# ---------------------------------------------------------------------------------- Megatron
MG_BASE = {name: [spec.default] for name, spec in MEGATRON_VARIABLES.items() if spec.default is not None or spec.optional}
MG_BASE.update({"need_critic": [False], "need_ref": [False], "group_estimator": [True],
                "num_heads": [12], "num_kv_heads": [4], "max_position_embeddings": [4096], "num_layers": [12],
                "num_experts": [0], "max_prompt_length": [512], "max_response_length": [1024],
                "actor_micro_per_gpu": [2], "logprob_micro_per_gpu": [2], "actor_mini": [4], "train_batch_size": [8],
                "rollout_tp": [1]})

MEGATRON_SPACES = {
    "process groups": {
        "gpus_per_node": [2, 4, 6, 8], "tp": [1, 2, 3, 4], "pp": [1, 2, 3], "cp": [1, 2], "ep": [1, 2, 4],
        "etp": [None, 1, 2], "num_experts": [0, 6], "num_heads": [12, 16], "num_kv_heads": [2, 4],
        "actor_dyn": [False, True],
    },
    "batch sizes": {
        "gpus_per_node": [4, 8], "tp": [1, 2], "pp": [1, 2], "train_batch_size": [2, 3, 4, 8], "n": [1, 2, 3],
        "actor_mini": [1, 2, 4], "actor_micro_per_gpu": [None, 1, 2, 4], "logprob_micro_per_gpu": [None, 1, 2],
        "actor_dyn": [False, True], "actor_micro": [None, 2],
    },
    "pipeline stages": {
        "gpus_per_node": [4], "tp": [1], "num_layers": [10, 12, 13], "pp": [1, 2, 4], "vpp": [None, 2, 3],
        "first_stage_layers": [None, 1, 2, 3], "last_stage_layers": [None, 2, 4],
        "pp_account_embedding": [False, True], "pp_account_loss": [False, True],
    },
    "interleaved schedule, ref and critic": {
        "gpus_per_node": [8], "tp": [1, 2], "pp": [2, 4], "vpp": [None, 2], "num_layers": [16],
        "actor_micro_per_gpu": [1, 2, 4], "logprob_micro_per_gpu": [1, 2, 8], "need_ref": [False, True],
        "ref_pp": [2, 4], "ref_micro_per_gpu": [1, 3], "need_critic": [False, True], "critic_tp": [1, 2],
        "critic_micro_per_gpu": [2], "train_batch_size": [4, 8], "actor_mini": [2, 4],
    },
    "token budgets times CP": {
        "gpus_per_node": [4], "actor_dyn": [True], "logprob_dyn": [False, True], "cp": [1, 2], "ref_cp": [1, 2],
        "critic_cp": [1, 2], "need_ref": [False, True], "need_critic": [False, True], "ref_dyn": [False, True],
        "actor_max_tokens": [1000, 2000], "logprob_max_tokens": [1000, 2000], "ref_max_tokens": [800, 1600],
        "critic_max_tokens": [700, 2000], "ref_micro_per_gpu": [None, 1],
    },
}


@pytest.mark.parametrize("space_name", list(MEGATRON_SPACES))
def test_megatron_enumerate_equals_checker(space_name):
    assert_enumerate_equals_checker(MEGATRON_RULESET, {**MG_BASE, **MEGATRON_SPACES[space_name]}, time_limit_s=120)


def test_combined_rule_set_is_each_backend():
    """``verl`` (both backends) says exactly what the FSDP or the Megatron rule set says."""
    rng = random.Random(7)
    doms = {**{k: v for k, v in BASE.items()}, **{k: v for k, v in MG_BASE.items()}}
    for space in list(SPACES.values()) + list(MEGATRON_SPACES.values()):
        for k, v in space.items():
            doms[k] = sorted(set(doms.get(k, [])) | set(v), key=lambda x: (x is None, x))
    doms["critic_cfg_sp"] = [1, 2]
    names = list(doms)
    for _ in range(3000):
        values = {n: rng.choice(doms[n]) for n in names}
        for megatron, single in ((False, RULESET), (True, MEGATRON_RULESET)):
            values["megatron"] = megatron
            both = ANY_RULESET.check(values)
            one = single.check(values)
            assert [(v.rule, v.message) for v in both.violations] == \
                   [(v.rule, v.message) for v in one.violations], values
