"""The ZeRO-3 gather of ms-swift's weight sync to vLLM, priced as each release's code does it
(frameworks/swift/cost.py ``sync_gather``; costmodel/memory.py ``sync_gather_bytes``)."""

from __future__ import annotations

import math

import pytest

import memory_corpus as mc
from rlbatch_solver import api
from rlbatch_solver.catalog.gpus import load_gpu
from rlbatch_solver.catalog.models import load_model
from rlbatch_solver.costmodel.memory import (T_ACT_FWD, T_ACTOR_RES, T_GATHER, T_LOGITS_ENT, T_PARAMS, T_SYNC_GATHER,
                                             model_consts, sync_gather_bytes)
from rlbatch_solver.costmodel.phase import Phase
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.swift.cost import sync_gather

MIB = 2**20
# ms-swift #7926: examples/train/grpo/external/moe_full.sh (Qwen3-30B-A3B full, ZeRO-3 offload, --move_model_batches
# 5, a `swift rollout` server) ran on 3.10.1 and ran out of memory on 3.12.1 on the same machine
CASE = "swift_7926_qwen3_30b_a3b_grpo_full_server_moe_full_example_8xppu96g_v3_12_1"


def _case() -> mc.Case:
    return next(c for c in mc.cases() if c.name == CASE)


def _check(framework: str):
    case = _case()
    return api.check(case.args, framework=framework, gpus=case.gpus, model=case.model, gpu=case.gpu,
                     length_fraction=case.length_fraction)


def _plan(framework: str, phase: str):
    case = _case()
    r = _check(framework)
    fw = get_framework(framework)
    return fw.cost_spec(load_model(case.model), load_gpu(case.gpu)).plan(r.values, phase)


@pytest.mark.parametrize("release, lora, external, how", [
    ("3.12.0", False, False, "all"), ("3.12.1", False, True, "all"), ("3.12.5", True, False, "all"),
    ("3.12.6", False, True, "groups"), ("3.11.3", False, True, "groups"), ("3.10.1", False, True, "groups"),
    ("4.6.0", True, True, "groups"),
    ("3.9.0", False, True, "param"), ("3.5.0", True, False, "groups"),
    ("3.4.0", False, True, "param"), ("3.4.0", True, True, "all"), ("3.4.0", False, False, "groups"),
    ("3.2.0", False, False, ""),
])
def test_each_release_gathers_as_its_code_does(release, lora, external, how):
    assert sync_gather(release, lora, external) == how


def test_a_named_3_12_patch_is_judged_by_3_12_6_and_priced_by_its_own_code():
    fw = get_framework("swift==3.12.1")
    assert fw.version == "3.12.6" and fw.code_release == "3.12.1"
    assert _plan("swift==3.12.1", Phase.OLD_LOG_PROB).sync_gather_groups == 1
    assert _plan("swift==3.12.6", Phase.OLD_LOG_PROB).sync_gather_groups == 5


def test_7926_on_3_12_1_gathers_the_whole_model_on_every_training_rank():
    """Server mode: the sync runs on the training ranks with the old-log-prob forward's residents; 3.12.1 gathers
    every parameter of Qwen3-30B-A3B (57 GiB in bf16) whatever --move_model_batches 5 says, and the phase adds what
    that exceeds of the forward's own transients."""
    r = _check("swift==3.12.1")
    terms = r.memory.phases[Phase.OLD_LOG_PROB]
    mcon = model_consts(load_model(_case().model))
    whole = 2 * mcon.params / MIB
    transients = terms[T_GATHER] + terms[T_ACT_FWD] + terms[T_LOGITS_ENT]
    # --deepspeed zero3_offload: each rank's own partitions (1/7 of the model) are copied from the CPU for the gather
    # and held beside it until it returns (test_offloaded_partitions_are_copied_to_the_gpu_for_a_coalesced_gather)
    assert terms[T_SYNC_GATHER] == pytest.approx(whole * (1 + 1 / 7) - transients, abs=4)
    assert terms[T_SYNC_GATHER] > 40 * 1024
    # not enough alone to call the OOM on a 96 GB card: the phase stays under its line (docs/accuracy.md)
    assert r.memory.peaks[Phase.OLD_LOG_PROB] < r.memory.capacity_of(Phase.OLD_LOG_PROB)


@pytest.mark.parametrize("framework", ["swift==3.12.6", "swift==3.11.3", "swift==3.10.1"])
def test_7926_on_releases_that_gather_by_groups_pays_one_group(framework):
    """3.10-3.11 and 3.12.6 (#8091) gather one of the 5 groups at a time: ceil(48 / 5) = 10 decoder layers, not the
    whole model; the phase adds what that group exceeds of the forward's transients."""
    plan = _plan(framework, Phase.OLD_LOG_PROB)
    mcon = model_consts(plan.model)
    # the group and, params offloaded (zero3_offload), the rank's own partitions of it copied to the GPU (1/7)
    group = 2 * math.ceil(mcon.layers / 5) * mcon.layer_unit * (1 + 1 / 7)
    assert sync_gather_bytes(plan, mcon) == pytest.approx(group) and group < 0.25 * 2 * mcon.params
    terms = _check(framework).memory.phases[Phase.OLD_LOG_PROB]
    whole = _check("swift==3.12.1").memory.phases[Phase.OLD_LOG_PROB]
    assert whole[T_SYNC_GATHER] - terms.get(T_SYNC_GATHER, 0) == pytest.approx(
        (2 * mcon.params * (1 + 1 / 7) - group) / MIB, abs=4)


def test_offloaded_partitions_are_copied_to_the_gpu_for_a_coalesced_gather():
    """ms-swift #7926 (--deepspeed zero3_offload, 7 training ranks): ZeRO-3 keeps each parameter's partition on the
    CPU, and DeepSpeed's coalesced gather (GatheredParameters over more than one parameter) copies every partition
    to the GPU and holds the copies beside the gathered tensors until it returns (DeepSpeed 0.18.4
    partition_parameters.py _allgather_params_coalesced, local_tensors); a single parameter's gather copies its
    partition straight into the gathered tensor (_allgather_params). Without offload the partitions are already on
    the GPU, inside the trainer's sharded states: nothing more."""
    import dataclasses
    plan = _plan("swift==3.12.1", Phase.OLD_LOG_PROB)
    mcon = model_consts(plan.model)
    assert plan.param_offload and plan.shard_degree == 7
    whole = 2 * mcon.params
    assert sync_gather_bytes(plan, mcon) == pytest.approx(whole * (1 + 1 / 7))
    assert sync_gather_bytes(dataclasses.replace(plan, param_offload=False), mcon) == pytest.approx(whole)
    one = dataclasses.replace(plan, sync_gather_groups=-1)
    assert sync_gather_bytes(one, mcon) == 2 * max(mcon.embed, mcon.lm_head)


COLOCATE = ["NPROC_PER_NODE=8", "swift", "rlhf", "--rlhf_type", "grpo", "--model", "Qwen/Qwen2.5-7B-Instruct",
            "--train_type", "full", "--use_vllm", "true", "--vllm_mode", "colocate", "--deepspeed", "zero3",
            "--per_device_train_batch_size", "2", "--num_generations", "8", "--move_model_batches", "7"]


@pytest.mark.parametrize("framework, whole", [("swift==3.12.1", True), ("swift==3.12.6", False)])
def test_colocated_sync_is_priced_in_the_rollout_beside_the_awake_engine(framework, whole):
    """Colocate mode: the sync runs before the rollout's offloads and, at --sleep_level 0 (the default), beside the
    engine's whole share: the gathered parameters add whole to the rollout, the largest group where they go by
    groups."""
    r = api.check(COLOCATE, framework=framework, gpus=8, model="qwen2.5-7b", gpu="h100")
    mcon = model_consts(load_model("qwen2.5-7b"))
    gathered = r.memory.phases[Phase.ROLLOUT][T_SYNC_GATHER]
    # 7 groups of 4 layers; the embedding and lm_head (untied in Qwen2.5-7B), a group of their own, are the largest
    group = max(math.ceil(mcon.layers / 7) * mcon.layer_unit, mcon.embed + mcon.lm_head)
    expected = 2 * (mcon.params if whole else group) / MIB
    assert gathered == pytest.approx(expected, abs=2)


def test_3361_lora_reference_pass_counts_the_policy_weights_once():
    """ms-swift #3361 (Qwen2.5-7B LoRA, vLLM on the next GPU, --vllm_device): the reference pass is the policy with
    its adapter disabled (no reference model under LoRA), so the policy's weights are on the trainer's GPU once, as
    its resident state, though the engine does not share that GPU. They were priced twice (30.0 of 21.8 GiB)."""
    case = next(c for c in mc.cases() if c.name == "swift_3361_qwen2_5_7b_grpo_lora_vllm_device_1proc_4x24gb")
    r = api.check(case.args, framework=case.framework, gpus=case.gpus, model=case.model, gpu=case.gpu,
                  length_fraction=case.length_fraction)
    terms = r.memory.phases[Phase.REF]
    bf16_weights = 2 * model_consts(load_model(case.model)).params / MIB
    assert terms[T_PARAMS] == 0
    assert terms[T_ACTOR_RES] >= 0.95 * bf16_weights
    assert r.memory.peaks[Phase.REF] < r.memory.capacity_of(Phase.REF)


@pytest.mark.parametrize("framework", ["swift==3.12.1", "swift==3.10.1"])
def test_7926_zero3_offload_reference_params_stay_on_the_cpu(framework):
    """--deepspeed zero3_offload (ms-swift's ds_config/zero3_offload.json: offload_param cpu): the reference model is
    prepared with a copy of the trainer's DeepSpeed config, stage 3 and offload_param kept (trl 0.24
    models/utils.py prepare_deepspeed), and DeepSpeed builds a ZeRO-3 model without an optimizer as
    DeepSpeedZeRoOffload with that offload config: its partitions are on the CPU, not resident beside the policy's
    passes (they were priced at 8.1 GiB, 1/7 of the bf16 model, in the old-log-prob and update phases)."""
    from rlbatch_solver.costmodel.memory import T_REF_RES
    r = _check(framework)
    for phase in (Phase.OLD_LOG_PROB, Phase.ACTOR_UPDATE):
        assert r.memory.phases[phase].get(T_REF_RES, 0) == 0
    assert _plan(framework, Phase.OLD_LOG_PROB).ref_param_offload


def test_zero3_without_offload_keeps_the_reference_partition_resident():
    """The same demo at plain --deepspeed zero3: the reference's 1/7 partition stays on the GPU beside the policy."""
    from rlbatch_solver.costmodel.memory import T_REF_RES
    case = _case()
    args = ["zero3" if a == "zero3_offload" else a for a in case.args]
    r = api.check(args, framework="swift==3.12.1", gpus=case.gpus, model=case.model, gpu=case.gpu)
    mcon = model_consts(load_model(case.model))
    assert r.memory.phases[Phase.OLD_LOG_PROB][T_REF_RES] == pytest.approx(2 * mcon.params / 7 / MIB, rel=0.02)
