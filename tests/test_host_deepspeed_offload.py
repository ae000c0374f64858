"""Host RAM of DeepSpeed's offloaded optimizer (issue 25), priced buffer by buffer as DeepSpeed 0.16.4 allocates them
(costmodel/host.py _deepspeed_offloaded; docs/cost-model.md section 11.3, row "offloaded trained states") instead of
its estimators' 16-18 B per parameter x 1.5. Each expected value below is rebuilt here from the allocation list: a
pinned buffer takes the next power of two of its bytes, CPU Adam's moments are pageable."""

import memory_corpus as mc
from test_host_placement import zero3_adam_offload_rank

import rlbatch_solver as rb
from rlbatch_solver.costmodel.memory import model_consts
from rlbatch_solver.catalog.models import load_model

GIB = 2**30
ACTOR = "actor states offloaded to the CPU"
CRITIC = "critic states offloaded to the CPU"


def pow2(nbytes: float) -> float:
    return float(1 << (int(nbytes) - 1).bit_length())


def _case(name):
    return next(c for c in mc.cases() if c.name == name)


def _host(case):
    return rb.check(case.args, framework=case.framework, gpus=case.gpus, model=case.model,
                    gpu=case.gpu or mc.HOST_ONLY_GPU, length_fraction=case.length_fraction,
                    host_mem_gib=case.host_mem_gib).host


def test_zero2_adam_offload_is_the_pinned_master_and_grad_partitions_plus_pageable_moments():
    """OpenRLHF's README run (Llama-2-7B PPO, actor on 4 A100s, --zero_stage 2 --adam_offload): per rank the fp32
    master partition (pinned: stage_1_and_2.py single_partition_of_fp32_groups), its fp32 gradient partition (pinned:
    get_train_ds_config sets pin_memory), CPU Adam's two moments (pageable) and the bf16 temp buffer of the largest
    parameter (the 32000 x 4096 embedding, pinned). 6.74e9 / 4 ranks: 6.7 GB fp32 partitions take 8 GiB each; 115
    GiB on the node, where DeepSpeed's estimate (24 B per parameter) said 151."""
    case = _case("openrlhf_readme2024_llama2_7b_ray_ppo_8xa100")
    n = model_consts(load_model("llama2-7b")).params / 4
    per_rank = 2 * pow2(4 * n) + 8 * n + pow2(2 * 32000 * 4096)
    got = _host(case).steady[ACTOR]
    assert abs(got - 4 * per_rank) < 1e-3 * got, (got / GIB, 4 * per_rank / GIB)
    assert got < 0.8 * 4 * 24 * n  # the estimator's x1.5 overstated it by a quarter


def test_zero3_adam_offload_issue_332_still_caught_with_the_allocated_buffers():
    """OpenRLHF #332 (Llama-2-70B PPO, ZeRO-3 --adam_offload, actor and critic on 4 GPUs each, two 1.6 TB nodes,
    killed for host memory): per rank the fp32 master (pageable at stage 3: stage3.py _create_fp32_partitions), the
    moments, the gradient partitions (one pinned buffer: fp32 here, 69 GB -> 128 GiB) and each 1e9-element
    sub-group's fp32 gradient buffer (pinned: 4 GB -> 4 GiB). The run was OpenRLHF 0.3.1; its flags date it 0.4.0 (the
    oldest release that has them all), whose get_train_ds_config accumulates gradients in fp32 unless
    --grad_accum_dtype is given, as 0.3.6's does (openrlhf/utils/deepspeed_utils.py). 2,163 GiB at the save (1,858
    with 0.7.5's bf16 partitions; 3,226 before these buffers) against 1,520 usable: caught. The sub-groups close at
    sub_group_size elements (stage3.py _create_fp16_sub_groups; zero/config.py default 1e9): 17 full ones and the
    0.25e9 left of the rank's 17.25e9 elements, each buffer pinned on its own."""
    case = _case("openrlhf_332_llama2_70b_ppo_2x8xa800")
    host = _host(case)
    n = model_consts(load_model("llama2-70b")).params / 4
    assert 17e9 < n < 18e9
    per_rank = zero3_adam_offload_rank(n, grad_bytes=4)
    assert abs(host.steady[ACTOR] - 4 * per_rank) < 1e-3 * host.steady[ACTOR]
    assert host.fits is False and host.peak_gib > host.limit_gib > 0


SLEEP_OPENRLHF = ["--actor_num_gpus_per_node", "8", "--ref_num_gpus_per_node", "8", "--colocate_all_models",
                  "--vllm_num_engines", "8", "--vllm_tensor_parallel_size", "1", "--vllm_enable_sleep",
                  "--deepspeed_enable_sleep", "--zero_stage", "3", "--bf16", "--micro_train_batch_size", "2",
                  "--train_batch_size", "128", "--micro_rollout_batch_size", "4", "--rollout_batch_size", "128",
                  "--n_samples_per_prompt", "8", "--prompt_max_len", "1024", "--generate_max_len", "2048",
                  "--advantage_estimator", "group_norm"]
SWIFT_7B = ["NPROC_PER_NODE=8", "swift", "rlhf", "--rlhf_type", "grpo", "--model", "Qwen/Qwen2.5-7B",
            "--tuner_type", "full", "--per_device_train_batch_size", "1", "--num_generations", "8", "--use_vllm",
            "true", "--vllm_mode", "colocate", "--vllm_tensor_parallel_size", "4", "--max_completion_length", "8192",
            "--sleep_level", "1", "--offload_optimizer", "true", "--offload_model", "true"]


def test_states_moved_out_between_phases_openrlhf_pins_them_ms_swift_does_not():
    """Without ZeRO-Offload: OpenRLHF's --deepspeed_enable_sleep calls DeepSpeed's offload_states(hp_params,
    optim_states, pin_memory=True): fp32 master and both moments pinned per sub-group (7.62e9 / 8 ranks: 3.8 GB ->
    4 GiB each, 12 GiB per rank), 16-bit params left on the GPU; from DeepSpeed 0.16.5 the bf16 gradients too. ms-swift's --offload_optimizer copies the moments into
    pageable CPU tensors (8 B per element) and --offload_model the parameters (ZeRO-3: the bf16 partition; ZeRO-2:
    the whole model on every rank)."""
    n = model_consts(load_model("qwen2.5-7b")).params / 8
    orl = rb.check(SLEEP_OPENRLHF, framework="openrlhf==0.6.2", gpus=8, model="qwen2.5-7b", gpu="a100-80gb").host
    assert abs(orl.steady[ACTOR] - 8 * 3 * pow2(4 * n)) < 1e-3 * orl.steady[ACTOR]
    # OpenRLHF 0.7.5 on DeepSpeed 0.16.7 adds the bf16 gradient partitions (lp_grads, from DeepSpeed 0.16.5)
    new = rb.check(SLEEP_OPENRLHF, framework="openrlhf==0.7.5", gpus=8, model="qwen2.5-7b", gpu="a100-80gb").host
    assert abs(new.steady[ACTOR] - 8 * (3 * pow2(4 * n) + pow2(2 * n))) < 1e-3 * new.steady[ACTOR]
    z3 = rb.check(SWIFT_7B + ["--deepspeed", "zero3"], framework="swift", gpus=8, model="qwen2.5-7b",
                  gpu="a100-80gb").host
    assert abs(z3.steady[ACTOR] - 8 * (8 * n + 2 * n)) < 1e-3 * z3.steady[ACTOR]
    z2 = rb.check(SWIFT_7B + ["--deepspeed", "zero2"], framework="swift", gpus=8, model="qwen2.5-7b",
                  gpu="a100-80gb").host
    assert abs(z2.steady[ACTOR] - 8 * (8 * n + 2 * 8 * n)) < 1e-3 * z2.steady[ACTOR]


def test_trl_runs_the_deepspeed_config_accelerate_generates_whose_pin_memory_deepspeed_decides_by_release():
    """open-r1 #59's TRL run (Qwen2.5-7B, accelerate ZeRO-2 with offload_optimizer_device cpu, 4 ranks): accelerate's
    DeepSpeedPlugin writes offload_optimizer {device, nvme_path}, no pin_memory (accelerate 1.6.0 / 1.10.1
    utils/dataclasses.py DeepSpeedPlugin.__post_init__), and DeepSpeed's default is False before 0.19.5
    (runtime/zero/offload_config.py). TRL 0.14.0 accepts DeepSpeed 0.14.4 on: the fp32 master partition is pinned
    anyway (stage_1_and_2.py before 0.18.3), the gradient partition and the embedding's temp buffer are not. TRL
    1.16.0 asks for DeepSpeed 0.18.6 on: nothing pinned, and the 16-bit copy of the partition DeepSpeed keeps on the
    CPU from 0.17.0 (param_buffer_of_bit16_for_cpu_offload_groups). OpenRLHF sets pin_memory itself: the release's
    pinned DeepSpeed adds that copy, pinned, from 0.17.6 (OpenRLHF 0.8.11) on."""
    case = _case("trl_openr1_59_qwen2_5_coder_7b_grpo_zero2_offload_4xh100")
    n = model_consts(load_model("qwen2.5-7b")).params / 4
    embed = 2 * 152064 * 3584
    old = rb.check(case.args, framework="trl==0.14.0", gpus=4, model=case.model, gpu=case.gpu).host.steady[ACTOR]
    assert abs(old - 4 * (pow2(4 * n) + 4 * n + 8 * n + embed)) < 1e-3 * old
    new = rb.check(case.args, framework="trl==1.16.0", gpus=4, model=case.model, gpu=case.gpu).host.steady[ACTOR]
    assert abs(new - 4 * (4 * n + 4 * n + 8 * n + embed + 2 * n)) < 1e-3 * new
    args = ["--actor_num_gpus_per_node", "4", "--zero_stage", "2", "--adam_offload", "--bf16"]

    def openrlhf(release: str) -> float:
        return rb.check(args, framework=f"openrlhf=={release}", gpus=8, model="qwen2.5-7b",
                        gpu="a100-80gb").host.steady[ACTOR]

    assert abs(openrlhf("0.8.11") - openrlhf("0.7.5") - 4 * pow2(2 * n)) < 1e-3 * openrlhf("0.7.5")
