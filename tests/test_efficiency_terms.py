"""The width and attention terms of the pass time (docs/cost-model.md section 4.1) against MosaicML's MPT training
benchmarks (tests/data/reference/mpt_benchmarks.yaml): 96 runs of MPT 125M-30B on 8 A100 or 8 H100, sequences of
512-65,536 tokens. The same function that times our training passes (``time.compute_seconds``) predicts each run's
MFU as MPT defines it; one scale per GPU type stands for MFU_TRAIN, which calibration and the GPU change anyway."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pytest
import yaml

from rlbatch_solver.costmodel import constants as C
from rlbatch_solver.costmodel import time as T

DATA = yaml.safe_load((Path(__file__).parent / "data/reference/mpt_benchmarks.yaml").read_text())
GPUS = ("a100_80gb", "h100_80gb")


def _predicted_mfu(row: list, scale: float) -> float:
    """MPT's MFU of one benchmark row as our pass time predicts it (per token, one GPU's peak = 1)."""
    _, model, seq, micro, ckpt, params, _ = row
    width, layers = DATA["widths"][model]
    passes = 4.0 if ckpt else 3.0  # activation checkpointing recomputes the forward
    gemm = passes * 2.0 * params  # per token
    attn = passes * C.ATTN_CAUSAL_FRACTION * 4.0 * seq * width * layers
    seconds = T.compute_seconds(gemm, attn, width, micro * seq, 1.0, scale)
    mpt_flops = 3.0 * (2.0 * params + 4.0 * seq * width * layers)  # MPT counts attention non-causally
    return mpt_flops / seconds


def _median_log_error(gpu: str) -> float:
    rows = [r for r in DATA["rows"] if r[0] == gpu]
    # the one free scale (our MFU_TRAIN for this GPU): the median ratio of measured to predicted at scale 1
    scale = statistics.median(r[6] / 100.0 / _predicted_mfu(r, 1.0) for r in rows)
    return statistics.median(abs(math.log(_predicted_mfu(r, scale) / (r[6] / 100.0))) for r in rows)


def test_table_is_the_published_one():
    assert len(DATA["rows"]) == 96
    by_gpu = {g: sum(r[0] == g for r in DATA["rows"]) for g in GPUS}
    assert by_gpu == {"a100_80gb": 59, "h100_80gb": 37}
    # spot checks against the README: MPT-7B on A100 at 2K (no checkpointing) and at 64K tokens a sequence
    assert ["a100_80gb", "7b", 2048, 6, False, 6658859008, 64.23] in DATA["rows"]
    assert ["a100_80gb", "7b", 65536, 1, True, 6918905856, 46.97] in DATA["rows"]


@pytest.mark.parametrize("gpu", GPUS)
def test_width_and_attention_terms_reproduce_the_benchmarks(gpu):
    assert _median_log_error(gpu) <= 0.05


@pytest.mark.parametrize("gpu", GPUS)
def test_terms_earn_their_place(gpu, monkeypatch):
    """Without the two terms (width-independent GEMMs, attention as efficient as GEMMs) the same fit is worse."""
    with_terms = _median_log_error(gpu)
    monkeypatch.setattr(C, "ATTN_EFF_RATIO", 1.0)
    monkeypatch.setattr(T, "width_efficiency", lambda hidden: 1.0)
    without = _median_log_error(gpu)
    assert without >= 3.0 * with_terms


def test_width_efficiency_shape():
    assert T.width_efficiency(C.WIDTH_REF_HIDDEN) == pytest.approx(1.0)
    assert T.width_efficiency(8192) == 1.0  # no faster than the reference: MPT 13B and 30B on H100
    assert T.width_efficiency(1536) == pytest.approx(0.753, abs=0.002)  # Qwen2.5-1.5B
    assert T.width_efficiency(896) == pytest.approx(0.588, abs=0.002)  # Qwen2.5-0.5B
    widths = [512, 896, 1536, 2048, 3584, 4096]
    effs = [T.width_efficiency(h) for h in widths]
    assert effs == sorted(effs)


def test_small_models_pay_for_width_in_the_plan():
    """A pass of a narrow model takes longer per FLOP than one of a 4,096-wide model, by the width factor."""
    gemm, tokens = 1e15, 16384
    wide = T.compute_seconds(gemm, 0.0, 4096, tokens, 1e15, 0.35)
    narrow = T.compute_seconds(gemm, 0.0, 1536, tokens, 1e15, 0.35)
    assert narrow / wide == pytest.approx(1 / T.width_efficiency(1536))
    attn_only = T.compute_seconds(0.0, gemm, 4096, tokens, 1e15, 0.35)
    assert attn_only / wide == pytest.approx(1 / C.ATTN_EFF_RATIO)


def _tiny_plan(gpu=None, **kw):
    from test_costmodel import H100, make_plan

    from rlbatch_solver.costmodel.efficiency import DERIVED_EFFICIENCY

    # Qwen2.5-0.5B, one 64-token sequence per micro batch; the derived terms alone (no fitted scale)
    base = dict(n_gpus=8, gpus_per_node=8, prompt_len=32, response_len=32, samples_per_step=64, train_micro=1,
                logprob_micro=1, need_ref=False, efficiency=DERIVED_EFFICIENCY)
    base.update(kw)
    return make_plan("qwen2.5-0.5b", gpu or H100, **base)


def test_a_micro_batch_cannot_beat_its_kernel_launches():
    """Eager PyTorch launches each layer's kernels from the host (a Hugging Face model's Python layers:
    HF_EAGER_S_PER_LAYER a forward, measured; a backward about twice): on a fast GPU a small model's small micro
    batches are launch-bound, so their time follows the number of micro batches and layers, not the FLOPs. One GPU:
    no FSDP gathers to hide behind. A loop that runs ahead of the GPU (host_syncs_per_micro False: slime's) pays the
    larger of launches and compute; one that waits for it every micro batch (every other trainer) their sum."""
    from rlbatch_solver.costmodel.memory import model_consts

    plan = _tiny_plan(n_gpus=1, gpus_per_node=1, shard_degree=1, host_syncs_per_micro=False)
    mc = model_consts(plan.model)
    assert T.launch_s_per_layer(plan) == C.HF_EAGER_S_PER_LAYER  # an FSDP plan trains an HF model
    # megatron-core's layers are Python modules too (Transformer Engine's): the same measured host time
    assert T.launch_s_per_layer(plan.replace(trainer="megatron")) == C.HF_EAGER_S_PER_LAYER
    floor = plan.samples_per_step * C.HF_EAGER_S_PER_LAYER * mc.layers  # one sequence per micro batch
    lp = T.estimate_time(plan).phases["old_log_prob"]
    assert lp == pytest.approx(floor, rel=1e-6)  # 64 tokens of a 0.5B model take ~1.4 ms on an H100, launches 17 ms
    upd = T.estimate_time(plan).phases["actor_update"]
    assert upd >= 4 * floor  # forward, recomputed forward, backward (two forwards' worth)
    # a larger micro batch amortises the launches
    assert T.estimate_time(plan.replace(logprob_micro=8)).phases["old_log_prob"] < lp / 2
    assert T.estimate_time(plan.replace(host_syncs_per_micro=True)).phases["old_log_prob"] > floor  # the sum


def test_a_loop_that_waits_for_the_gpu_every_micro_batch_adds_its_host_time():
    """verl's Megatron actor reads the micro batch's lengths and its loss back to the host inside every micro batch
    (Plan.host_syncs_per_micro): the GPU's queue empties each time, so the launches add to the compute instead of the
    larger of the two: a launch-bound pass (a 0.5B model's 4,096-token micro batch) takes its launches free, its
    launches and its compute synced."""
    from rlbatch_solver.costmodel.memory import model_consts

    plan = _tiny_plan(n_gpus=1, gpus_per_node=1, shard_degree=1, logprob_micro=64, host_syncs_per_micro=False)
    layers = model_consts(plan.model).layers
    free = T.estimate_time(plan).phases["old_log_prob"]
    synced = T.estimate_time(plan.replace(host_syncs_per_micro=True)).phases["old_log_prob"]
    n_micro = -(-plan.samples_per_step // 64)
    launches = n_micro * C.HF_EAGER_S_PER_LAYER * layers
    assert free == pytest.approx(launches, rel=1e-6)  # launch-bound: the compute hides under the launches
    compute = synced - launches  # the sum: the compute no longer hides
    assert 0 < compute < launches
    big = plan.replace(samples_per_step=64 * 64, prompt_len=512, response_len=512)  # compute-bound now
    free, synced = (T.estimate_time(p).phases["old_log_prob"] for p in (big, big.replace(host_syncs_per_micro=True)))
    assert synced - free == pytest.approx(64 * C.HF_EAGER_S_PER_LAYER * layers, rel=1e-6)  # 64 micro batches' launches


def test_verl_megatron_and_fsdp_wait_for_the_gpu_every_micro_batch_slime_keeps_the_larger():
    """verl's Megatron actor reads lengths and loss back every micro batch, its FSDP actor the loss (Plan's comment);
    slime's loop is not known to: the larger of launches and compute."""
    from rlbatch_solver.calibration import make_run
    from rlbatch_solver.costmodel.phase import Phase

    slime = ["--actor-num-nodes", "1", "--actor-num-gpus-per-node", "8", "--colocate", "--rollout-batch-size", "32",
             "--n-samples-per-prompt", "8", "--global-batch-size", "256", "--rollout-max-prompt-len", "1024",
             "--rollout-max-response-len", "4096"]
    for framework, args, synced in (("verl-megatron", ["trainer.n_gpus_per_node=8"], True),
                                    ("verl-megatron==0.6.1", ["trainer.n_gpus_per_node=8"], True),
                                    ("verl", ["trainer.n_gpus_per_node=8"], True), ("slime", slime, False)):
        run = make_run(framework, args, gpu="h100", model="qwen2.5-7b", gpus=8)
        for phase in (Phase.OLD_LOG_PROB, Phase.ACTOR_UPDATE):
            assert run.spec.plan(run.values, phase).host_syncs_per_micro is synced, (framework, phase)


def test_fsdp_pays_a_collective_latency_per_layer(monkeypatch):
    """Each FSDP unit (a decoder layer) is gathered by its own collective: per micro batch, layers x latency."""
    from rlbatch_solver.costmodel.memory import model_consts

    plan = _tiny_plan(samples_per_step=512, logprob_micro=64)  # one micro batch per GPU
    layers = model_consts(plan.model).layers
    base = T.estimate_time(plan).phases["old_log_prob"]
    monkeypatch.setitem(C.ALLREDUCE_LATENCY_S, "nvlink", 20e-3)
    slow = T.estimate_time(plan).phases["old_log_prob"]
    assert slow >= 20e-3 * layers > base  # the gathers' latency now hides the compute and the launches
    # a single GPU gathers nothing
    one = plan.replace(n_gpus=1, gpus_per_node=1, shard_degree=1)
    assert T.estimate_time(one).phases["old_log_prob"] < 20e-3 * layers


def test_moe_all_to_all_prices_each_token_to_its_experts_over_the_nodes_network(monkeypatch):
    """Megatron's MoE layers send every token to its top-k experts and back (dispatch and combine all-to-alls,
    verl's alltoall dispatcher): bytes t x k x h bf16, the share bound for other nodes over the catalog's network
    figure, the GPU's own node over NVLink; nothing without expert parallelism or for a dense model."""
    from test_costmodel import make_plan

    from rlbatch_solver.catalog.gpus import load_gpu
    from rlbatch_solver.costmodel.efficiency import DERIVED_EFFICIENCY
    from rlbatch_solver.costmodel.memory import model_consts

    H100 = load_gpu("h100")
    kw = dict(n_gpus=16, gpus_per_node=8, prompt_len=1024, response_len=3072, samples_per_step=256, train_micro=1,
              logprob_micro=4, need_ref=False, efficiency=DERIVED_EFFICIENCY, trainer="megatron", tp=1, pp=1, ep=8,
              etp=1, shard_degree=1, zero_stage=0)
    plan = make_plan("qwen3-30b-a3b", H100, **kw)
    mc = model_consts(plan.model)
    assert (mc.moe_topk, mc.hidden, mc.moe_layers) == (8, 2048, 48)
    tokens = 4096.0
    rows = tokens * 8 * 2048 * C.BF16
    lat = C.ALLREDUCE_LATENCY_S["nvlink"]
    assert (lat, C.INTER_NODE_LATENCY_S) == (10e-6, 25e-6)
    in_node = T.expert_all_to_all_seconds(plan, mc, tokens)  # EP 8 within one node: 7/8 of the rows over NVLink
    assert in_node == pytest.approx(rows * 7 / 8 / (450e9 * C.COLLECTIVE_EFF) + lat)
    across = T.expert_all_to_all_seconds(plan.replace(ep=16), mc, tokens)  # EP 16 over two nodes: half leave it
    assert load_gpu("h100").inter_node_bandwidth_gbps == 50
    # a group spanning nodes pays the network's latency per call, as a rollout engine spanning nodes does
    assert across == pytest.approx(rows * 8 / 16 / (50e9 * C.COLLECTIVE_EFF) + 25e-6)
    assert across > 4 * in_node
    assert T.expert_all_to_all_seconds(plan.replace(ep=1), mc, tokens) == 0.0
    # an unset expert TP follows the TP size: EP 8 x ETP 2 spans two nodes, half its rows leave the node
    spread = T.expert_all_to_all_seconds(plan.replace(tp=2, etp=0), mc, tokens)
    assert spread == pytest.approx(rows * 4 / 8 / (50e9 * C.COLLECTIVE_EFF) + 25e-6)
    assert T.expert_all_to_all_seconds(plan.replace(tp=2, etp=1), mc, tokens) == pytest.approx(in_node)
    dense = make_plan("qwen2.5-7b", H100, **kw)
    assert T.expert_all_to_all_seconds(dense, model_consts(dense.model), tokens) == 0.0
    # the passes wait for them: forward 2 per MoE layer, a training pass twice that (three times with recompute)
    with_a2a = T.estimate_time(plan.replace(ep=16)).as_dict()  # computed now: the phases are lazy
    monkeypatch.setattr(T, "expert_all_to_all_seconds", lambda *a: 0.0)
    no_a2a = T.estimate_time(plan.replace(ep=16)).phases
    assert with_a2a["old_log_prob"] > no_a2a["old_log_prob"]
    assert with_a2a["actor_update"] > no_a2a["actor_update"]


def test_inter_node_bandwidth_is_the_catalogs_or_the_default():
    from rlbatch_solver.catalog.gpus import load_gpu

    assert T.inter_node_gbps(load_gpu("a100-80gb")) == 25
    assert T.inter_node_gbps(load_gpu("h800")) == 50
    assert load_gpu("rtx4090").inter_node_bandwidth_gbps == 0.0  # not stated: the model's default
    assert T.inter_node_gbps(load_gpu("rtx4090")) == C.INTER_NODE_BANDWIDTH_GBPS


def test_a_pass_never_outruns_the_gpus_measured_matmul():
    """The ridge line would put an MI300X pass at 0.585 x 1.12 = 0.66 of its peak, above the 668.4 of 1,307 TFLOP/s
    (0.51) its best bf16 matmul reaches (the catalog's matmul_tflops): held there. A GPU the catalog gives no matmul
    figure (H20) is held at its peak; an H100 pass (0.585) stays under its 0.80."""
    from rlbatch_solver.catalog.gpus import load_gpu

    mi300x, h20, h100 = load_gpu("mi300x"), load_gpu("h20"), load_gpu("h100")
    assert C.MFU_TRAIN * T.gpu_compute_factor(mi300x) > 0.6
    assert T.pass_efficiency(C.MFU_TRAIN, mi300x) == pytest.approx(668.4 / 1307.4)
    assert h20.matmul_tflops == 0.0 and T.pass_efficiency(C.MFU_TRAIN, h20) == 1.0
    assert T.pass_efficiency(C.MFU_TRAIN, h100) == pytest.approx(C.MFU_TRAIN)
    assert T.pass_efficiency(C.MFU_FORWARD, load_gpu("a100-80gb")) == pytest.approx(271.2 / 312)


def test_a_rollout_engine_spanning_nodes_pays_the_networks_latency_per_all_reduce(monkeypatch):
    """A vLLM engine whose tensor parallelism spans nodes pays INTER_NODE_LATENCY_S (25 us: nccl-tests#150's
    19.0-20.7 us between two HDR InfiniBand nodes, plus the call's launch) per all-reduce, two a layer, and per gather
    of the logits, one a step, not NVLink's 10 us; an engine within its node keeps NVLink's."""
    from test_costmodel import make_plan

    from rlbatch_solver.catalog.gpus import load_gpu
    from rlbatch_solver.costmodel.memory import kv_bytes_per_token, model_consts

    plan = make_plan("qwen2.5-32b", load_gpu("h100"), n_gpus=16, gpus_per_node=8, rollout_tp=16)
    mc = model_consts(plan.model)
    kv_tok = kv_bytes_per_token(plan)
    across = T.decode_step_seconds(plan, mc, 64, 2048, kv_tok)
    monkeypatch.setattr(C, "INTER_NODE_LATENCY_S", C.ALLREDUCE_LATENCY_S["nvlink"])
    assert across - T.decode_step_seconds(plan, mc, 64, 2048, kv_tok) == pytest.approx(
        (2 * mc.layers + 1) * (25e-6 - 10e-6))
    within = plan.replace(rollout_tp=8)
    step = T.decode_step_seconds(within, mc, 64, 2048, kv_tok)
    monkeypatch.setattr(C, "INTER_NODE_LATENCY_S", 1.0)  # not read within a node
    assert T.decode_step_seconds(within, mc, 64, 2048, kv_tok) == step


def test_generate_with_flash_attention_and_padding_adds_host_and_gpu_time():
    """OpenRLHF 0.4's actor generates itself without vLLM engines; with --flash_attn its transformers (4.38.2) unpads
    in every layer (_get_unpad_data's .item() syncs the host) and copies the KV cache: a decode step costs the host's
    time plus the GPU's, the cache moved HF_GENERATE_KV_PASSES times; without it (eager attention) the larger of the
    two, one pass. The 2024 README's 7B run (--flash_attn, 16 prompts a call) as recorded, then without the flag."""
    from rlbatch_solver.calibration import make_run
    from rlbatch_solver.costmodel.memory import model_consts
    from rlbatch_solver.costmodel.phase import Phase

    points = yaml.safe_load((Path(__file__).parent / "data/measured/points.yaml").read_text())
    point = next(p for p in points if p["name"] == "openrlhf_readme2024_llama2_7b_ray_ppo_8xa100")
    assert "--flash_attn" in point["args"]
    plans = []
    for args in (point["args"], [a for a in point["args"] if a != "--flash_attn"]):
        run = make_run(point["framework"], args, gpu=point["gpu"], model=point["model"], gpus=point["gpus"])
        plans.append(run.spec.plan(run.values, Phase.ROLLOUT))
    flash, eager = plans
    assert flash.engine == eager.engine == "hf" and flash.hf_generate_unpads and not eager.hf_generate_unpads
    mc = model_consts(flash.model)
    kv_tok = float(flash.model.kv_bytes_per_token(1, C.KV_DTYPE_BYTES))
    host = C.HF_EAGER_S_PER_LAYER * mc.layers
    one = flash.replace(enforce_eager=False)
    gpu1, gpu7 = (T.decode_step_seconds(one, mc, 16, 1500, kv_tok * k) for k in (1, C.HF_GENERATE_KV_PASSES))
    assert T.hf_decode_step_seconds(flash, mc, 16, 1500, kv_tok) == pytest.approx(gpu7 + host, rel=1e-9)
    assert T.hf_decode_step_seconds(eager, mc, 16, 1500, kv_tok) == pytest.approx(max(gpu1, host), rel=1e-9)
    assert T.estimate_time(flash).phases["rollout"] > T.estimate_time(eager).phases["rollout"]


def test_deepspeed_zero_moves_the_gradients_every_micro_batch():
    """DeepSpeed ZeRO 2/3 reduces the gradient partition at every micro batch (engine.allreduce_gradients), and
    under ZeRO-Offload carries it to the CPU and back: ZeRO 2 2 (n_micro - 1) 16-bit moves
    (stage_1_and_2.py async_accumulate_grad_in_cpu_via_gpu), ZeRO 3 2 n_micro - 1 moves of the accumulation dtype
    (stage3.py partition_grads). An FSDP trainer or ZeRO 1 reduces once a mini batch."""
    from rlbatch_solver.costmodel.memory import model_consts

    plan = _tiny_plan(trainer="deepspeed", zero_stage=2, shard_degree=8, samples_per_step=512, mini_batches=1,
                      optimizer_offload=True, offload_during_compute=True)
    params = float(model_consts(plan.model).params)
    n_micro = 512 / 8  # one sequence a micro batch, 64 on each of the 8 ranks
    host = float(plan.gpu.host_link_bandwidth_gbps) * 1e9 * C.HOST_LINK_EFF
    reduce = C.BF16 * params * 7 / 8 / T._coll_bw(plan, 8)
    two = T._deepspeed_micro_grads(plan, params, n_micro)
    assert two == pytest.approx(n_micro * reduce + 2 * (n_micro - 1) * C.BF16 * params / 8 / host)
    three = T._deepspeed_micro_grads(plan.replace(zero_stage=3, deepspeed_grad_accum_fp32=True), params, n_micro)
    assert three == pytest.approx(n_micro * reduce + (2 * n_micro - 1) * C.FP32 * params / 8 / host)
    # the optimizer on the GPU: the reductions alone; ZeRO 1 and FSDP reduce once a mini batch (None)
    assert T._deepspeed_micro_grads(plan.replace(optimizer_offload=False), params, n_micro) == pytest.approx(
        n_micro * reduce)
    assert T._deepspeed_micro_grads(plan.replace(zero_stage=1), params, n_micro) is None
    assert T._deepspeed_micro_grads(plan.replace(trainer="fsdp", zero_stage=3), params, n_micro) is None
    # the update pays it: ZeRO-Offload's moves on top of the same update with the optimizer on the GPU
    on_cpu = T.estimate_time(plan).phases["actor_update"]
    on_gpu = T.estimate_time(plan.replace(optimizer_offload=False)).phases["actor_update"]
    assert on_cpu - on_gpu == pytest.approx(2 * (n_micro - 1) * C.BF16 * params / 8 / host)


def test_an_eager_vllm_moe_layer_and_a_tp_layers_all_reduces_add_their_host_operations():
    """Without CUDA graphs a vLLM decode step pays its host operations: a dense layer EAGER_LAUNCH_S_PER_LAYER
    (EAGER_DENSE_LAYER_HOST_OPS operations), a MoE layer 15 operations more and two Triton launches (vLLM 0.8.5's
    fused_moe path), every layer of a TP engine its two all-reduces' 3 operations each; a graphed engine none of it,
    nor another engine the vLLM-counted part."""
    from test_costmodel import make_plan

    from rlbatch_solver.catalog.gpus import load_gpu
    from rlbatch_solver.costmodel.memory import kv_bytes_per_token, model_consts

    per_op = C.EAGER_LAUNCH_S_PER_LAYER / C.EAGER_DENSE_LAYER_HOST_OPS
    moe = make_plan("qwen3-30b-a3b", load_gpu("h100"), n_gpus=8, gpus_per_node=8, rollout_tp=4, enforce_eager=True)
    mc = model_consts(moe.model)
    assert mc.moe_layers == mc.layers == 48
    kv_tok = kv_bytes_per_token(moe)
    graphed = T.decode_step_seconds(moe.replace(enforce_eager=False), mc, 64, 2048, kv_tok)
    eager = T.decode_step_seconds(moe, mc, 64, 2048, kv_tok)
    moe_layer = 15 * per_op + 2 * C.TRITON_LAUNCH_S
    qk_norms = C.VLLM_QK_NORM_HOST_OPS * per_op  # Qwen3's (test_an_eager_vllm_qwen3_layer_adds_its_query_and_key_norms)
    assert eager - graphed == pytest.approx(48 * (C.EAGER_LAUNCH_S_PER_LAYER + moe_layer + qk_norms + 6 * per_op))
    assert moe_layer == pytest.approx(143e-6, abs=1e-6)
    one = moe.replace(rollout_tp=1)
    assert T.eager_host_seconds(one, mc) == pytest.approx(48 * (C.EAGER_LAUNCH_S_PER_LAYER + moe_layer + qk_norms))
    dense = make_plan("qwen2.5-7b", load_gpu("h100"), n_gpus=8, rollout_tp=1, enforce_eager=True)
    dmc = model_consts(dense.model)
    assert T.eager_host_seconds(dense, dmc) == pytest.approx(dmc.layers * C.EAGER_LAUNCH_S_PER_LAYER)
    assert T.eager_host_seconds(moe.replace(engine="sglang"), mc) == pytest.approx(48 * C.EAGER_LAUNCH_S_PER_LAYER)


def test_an_eager_vllm_deepseek_layer_adds_its_latent_attention_and_routing_operations():
    """DeepSeek-V3 in an eager vLLM engine: every layer's latent attention dispatches 26 host operations more than the
    Llama attention (34 against 8), every MoE layer 16 more than Qwen3's (grouped top-k routing 17 against fused
    top-k's 7, the shared expert's 4, the scaling and the add), counted in vLLM 0.8.5; a model of another family
    pays neither, and an engine other than vLLM none of the vLLM-counted part."""
    from test_costmodel import make_plan

    from rlbatch_solver.catalog.gpus import load_gpu
    from rlbatch_solver.costmodel.memory import model_consts

    per_op = C.EAGER_LAUNCH_S_PER_LAYER / C.EAGER_DENSE_LAYER_HOST_OPS
    assert (C.VLLM_MLA_LAYER_EXTRA_HOST_OPS, C.VLLM_DEEPSEEK_MOE_EXTRA_HOST_OPS) == (26, 16)
    dsv3 = make_plan("deepseek-v3", load_gpu("h100"), n_gpus=32, gpus_per_node=8, rollout_tp=32, enforce_eager=True)
    mc = model_consts(dsv3.model)
    assert (mc.layers, mc.moe_layers) == (61, 58)
    moe_layer = C.VLLM_MOE_LAYER_EXTRA_HOST_OPS * per_op + C.VLLM_MOE_LAYER_TRITON_LAUNCHES * C.TRITON_LAUNCH_S
    one = dsv3.replace(rollout_tp=1)
    expected = 61 * (C.EAGER_LAUNCH_S_PER_LAYER + 26 * per_op) + 58 * (moe_layer + 16 * per_op)
    assert T.eager_host_seconds(one, mc) == pytest.approx(expected)
    assert 61 * 26 * per_op == pytest.approx(11.3e-3, abs=0.1e-3)  # 186 us a layer
    qwen = make_plan("qwen3-235b-a22b", load_gpu("h100"), n_gpus=8, rollout_tp=1, enforce_eager=True)
    qmc = model_consts(qwen.model)
    assert T.eager_host_seconds(qwen, qmc) == pytest.approx(qmc.layers * (C.EAGER_LAUNCH_S_PER_LAYER
                                                                          + C.VLLM_QK_NORM_HOST_OPS * per_op)
                                                            + qmc.moe_layers * moe_layer)
    assert T.eager_host_seconds(one.replace(engine="sglang"), mc) == pytest.approx(61 * C.EAGER_LAUNCH_S_PER_LAYER)


def test_an_eager_vllm_qwen3_layer_adds_its_query_and_key_norms():
    """Qwen3's per-head query and key RMSNorms run PyTorch-native in vLLM 0.8.5 (8 operations each): 16 host
    operations a layer more in an eager engine; a model without them (Qwen2.5) pays none."""
    from test_costmodel import make_plan

    from rlbatch_solver.catalog.gpus import load_gpu
    from rlbatch_solver.costmodel.memory import model_consts

    per_op = C.EAGER_LAUNCH_S_PER_LAYER / C.EAGER_DENSE_LAYER_HOST_OPS
    assert C.VLLM_QK_NORM_HOST_OPS == 16
    qwen3 = make_plan("qwen3-8b", load_gpu("h100"), n_gpus=8, rollout_tp=1, enforce_eager=True)
    mc = model_consts(qwen3.model)
    assert qwen3.model.qk_norm and mc.moe_layers == 0
    assert T.eager_host_seconds(qwen3, mc) == pytest.approx(mc.layers * (C.EAGER_LAUNCH_S_PER_LAYER + 16 * per_op))
    qwen2 = make_plan("qwen2.5-7b", load_gpu("h100"), n_gpus=8, rollout_tp=1, enforce_eager=True)
    assert not qwen2.model.qk_norm
    q2 = model_consts(qwen2.model)
    assert T.eager_host_seconds(qwen2, q2) == pytest.approx(q2.layers * C.EAGER_LAUNCH_S_PER_LAYER)


def test_vllm_fused_moe_pads_each_experts_tokens_to_its_row_block(monkeypatch):
    """vLLM's fused MoE kernel runs each expert's tokens in blocks of rows (moe_align_block_size pads every expert's
    list to a multiple): Qwen3-30B-A3B (128 experts, top-8) at 839 tokens gives an expert 52.4 on average, a 64-row
    block, so 1.28x the routed FLOPs; at 256 tokens (16 an expert) the 16-row block. The padded FLOPs make an H20's
    compute-bound decode step slower and leave an HBM-bound H100 step as it was; a dense model and SGLang pay none."""
    from test_costmodel import make_plan

    from rlbatch_solver.catalog.gpus import load_gpu
    from rlbatch_solver.costmodel.memory import model_consts

    h20 = make_plan("qwen3-30b-a3b", load_gpu("h20"), n_gpus=4, rollout_tp=4)
    mc = model_consts(h20.model)
    assert T.moe_block_padding(mc, 839) == pytest.approx(1.283, abs=0.002)
    lam = 256 * 8 / 128  # 16 tokens an expert: the 16-row block, padded where an expert gets more than 16
    assert T.moe_block_padding(mc, 256) == pytest.approx(
        sum(math.exp(-lam) * lam ** k / math.factorial(k) * math.ceil(k / 16) for k in range(120)) * 16 / lam)
    assert T.moe_block_padding(mc, 1e6) == pytest.approx(1.0 + 127 / 2 / (1e6 * 8 / 128))
    dense = model_consts(make_plan("qwen2.5-7b", load_gpu("h20"), n_gpus=4, rollout_tp=4).model)
    assert T.moe_block_padding(dense, 839) == 1.0

    def step(plan, batch):
        return T.decode_step_seconds(plan, mc, batch, 903.0, 1.0)

    h100 = h20.replace(gpu=load_gpu("h100"))
    padded = (step(h20, 839), step(h100, 839), step(h20.replace(engine="sglang"), 839))
    monkeypatch.setattr(T, "moe_block_padding", lambda mc, batch: 1.0)
    unpadded = (step(h20, 839), step(h100, 839), step(h20.replace(engine="sglang"), 839))
    routed = 2.0 * mc.routed_expert_params * mc.expert_hit_fraction * 839 * (1.283 - 1.0)
    assert padded[0] - unpadded[0] == pytest.approx(routed / (4 * 148e12 * C.MFU_DECODE), rel=0.01)
    assert padded[1:] == pytest.approx(unpadded[1:])  # the H100 step reads HBM longer than it computes


def test_vllm_decode_pays_its_samplers_passes_and_the_logits_gather(monkeypatch):
    """vLLM's sampler reads and writes the [batch, vocab] logits 54 B a logit at verl's sampling (vLLM 0.8.5
    v1/sample/sampler.py, counted in constants.VLLM_SAMPLER_BYTES_PER_LOGIT), other engines 12 B; at TP > 1 a vLLM
    engine also gathers the TP ranks' logit slices once a step (logits_processor.py LogitsProcessor._gather_logits):
    (TP - 1) / TP of the bf16 logits at the TP link, plus one collective's latency."""
    from test_costmodel import make_plan

    from rlbatch_solver.catalog.gpus import load_gpu
    from rlbatch_solver.costmodel.memory import kv_bytes_per_token, model_consts

    assert C.VLLM_SAMPLER_BYTES_PER_LOGIT == 54
    h100 = load_gpu("h100")
    plan = make_plan("qwen2.5-7b", h100, n_gpus=8, rollout_tp=1)
    mc = model_consts(plan.model)
    kv_tok = kv_bytes_per_token(plan)
    hbm = h100.hbm_bandwidth_gbps * 1e9 * plan.efficiency.hbm_decode
    batch, ctx = 256, 4096  # HBM-bound: the KV cache's reads outweigh the compute
    vllm = T.decode_step_seconds(plan, mc, batch, ctx, kv_tok)
    sglang = T.decode_step_seconds(plan.replace(engine="sglang"), mc, batch, ctx, kv_tok)
    assert vllm - sglang == pytest.approx(batch * mc.vocab * (54 - C.DECODE_SAMPLER_BYTES_PER_LOGIT) / hbm)
    monkeypatch.setattr(C, "VLLM_SAMPLER_BYTES_PER_LOGIT", C.DECODE_SAMPLER_BYTES_PER_LOGIT)
    tp4 = plan.replace(rollout_tp=4)
    gather = T.decode_step_seconds(tp4, mc, batch, ctx, kv_tok) - T.decode_step_seconds(
        tp4.replace(engine="sglang"), mc, batch, ctx, kv_tok)
    link = h100.intra_node_bandwidth_gbps * 1e9 * C.COLLECTIVE_EFF
    assert gather == pytest.approx(C.ALLREDUCE_LATENCY_S["nvlink"] + 0.75 * batch * mc.vocab * 2 / link)
    assert T.decode_step_seconds(plan, mc, batch, ctx, kv_tok) == pytest.approx(sglang)  # TP 1: no gather


def test_an_engines_nvlink_all_reduces_sit_on_nccls_bandwidth_ramp(monkeypatch):
    """A decode step's tensor-parallel all-reduces over NVLink pay the ring's bytes of (the message +
    NCCL_NVLINK_HALF_BW_BYTES) at the link's bandwidth: nccl-tests on 4 H100 (NCCL 2.26.2, constants' source) times
    1-16 MiB all-reduces at 28.1-104.4 us, which the formula meets within 8% and the link's bandwidth alone prices
    14-47% short;
    an engine over PCIe or across nodes keeps the plain ring."""
    from test_costmodel import make_plan

    from rlbatch_solver.catalog.gpus import load_gpu
    from rlbatch_solver.costmodel.memory import kv_bytes_per_token, model_consts

    h100 = load_gpu("h100")
    link = h100.intra_node_bandwidth_gbps * 1e9 * C.COLLECTIVE_EFF
    table = {2**20: 28.06e-6, 2**21: 32.05e-6, 2**22: 45.05e-6, 2**23: 65.19e-6, 2**24: 104.4e-6}
    for size, measured in table.items():
        ours = C.ALLREDUCE_LATENCY_S["nvlink"] + 1.5 * (size + C.NCCL_NVLINK_HALF_BW_BYTES) / link
        assert ours == pytest.approx(measured, rel=0.10), size
        plain = C.ALLREDUCE_LATENCY_S["nvlink"] + 1.5 * size / link  # the link's bandwidth alone: short of every row
        assert plain < 0.9 * measured and abs(ours - measured) < abs(plain - measured), size
    plan = make_plan("qwen2.5-7b", h100, n_gpus=8, rollout_tp=4)
    mc = model_consts(plan.model)
    kv_tok = kv_bytes_per_token(plan)
    ramped = T.decode_step_seconds(plan, mc, 256, 2048, kv_tok)
    monkeypatch.setattr(C, "NCCL_NVLINK_HALF_BW_BYTES", 0.0)
    plain = T.decode_step_seconds(plan, mc, 256, 2048, kv_tok)
    assert ramped - plain == pytest.approx(2 * mc.layers * 1.5 * 3.05e6 / link)
    pcie = make_plan("qwen2.5-7b", load_gpu("l40s"), n_gpus=8, rollout_tp=4)
    plain = T.decode_step_seconds(pcie, mc, 256, 2048, kv_tok)
    monkeypatch.undo()
    assert T.decode_step_seconds(pcie, mc, 256, 2048, kv_tok) == pytest.approx(plain)
