"""Seconds per RL step, phase by phase.

``estimate_time(plan)`` returns a ``TimeReport`` with ``phases`` (rollout,
old_log_prob, ref (if the plan needs one), actor_update, critic_update (if it needs
one), weight_sync, offload) and their ``total`` (tokens per step, and so tokens/s, have one
definition: ``tables.tokens_per_step``). Roofline-style:
compute-bound passes are FLOPs / (GPUs * peak * MFU), decode is HBM-bound; see
``docs/cost-model.md`` for every formula and source.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .phase import Phase
from . import constants as C
from .memory import ModelConsts, engine_budget, kv_bytes_per_token, model_consts, trainer_resident_at_rollout
from .plan import Plan


class LazyPhases(Mapping):
    """Phase -> seconds, each computed on first access (the solver tables read one phase
    per call, so the others are never computed there)."""

    __slots__ = ("_names", "_fns", "_vals")

    def __init__(self, fns: dict[str, Callable[[], float]]):
        self._names = tuple(fns)
        self._fns = fns
        self._vals: dict[str, float] = {}

    def __getitem__(self, name: str) -> float:
        v = self._vals.get(name)
        if v is None:
            v = self._vals[name] = self._fns[name]()  # KeyError for a phase that does not run
        return v

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self._fns else default

    def __contains__(self, name: object) -> bool:
        return name in self._fns

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __repr__(self) -> str:
        return repr(dict(self.items()))


class TimeReport:
    """Seconds per RL step by phase; ``total``; rollout details."""

    def __init__(self, phases: Mapping[str, float], rollout_info: dict[str, float]):
        self.phases = phases
        self._rollout_info = rollout_info

    @property
    def total(self) -> float:
        return sum(self.phases.values())

    def _info(self, key: str) -> float:
        if "rollout" in self.phases:
            self.phases[Phase.ROLLOUT]  # computes the rollout details
        return self._rollout_info.get(key, 0)

    @property
    def engines(self) -> int:
        return int(self._info("engines"))

    @property
    def decode_concurrency(self) -> int:
        """Sequences one engine decodes together."""
        return int(self._info("decode_concurrency"))

    @property
    def decode_steps(self) -> float:
        return float(self._info("decode_steps"))

    def as_dict(self) -> dict[str, float]:
        return dict(self.phases.items())


# ----------------------------------------------------------------------------- helpers
def _eff(mfu: float, tokens: float) -> float:
    """Efficiency of a pass whose micro batch holds ``tokens`` tokens per GPU."""
    return mfu * tokens / (tokens + C.MICRO_TOKENS_HALF_EFF)


def width_efficiency(hidden: float) -> float:
    """GEMM efficiency of a model ``hidden`` wide relative to one WIDTH_REF_HIDDEN wide (at most 1): narrow GEMMs
    fill the GPU less (MPT benchmarks, constants.WIDTH_HALF_EFF_HIDDEN)."""
    h, h0 = max(1.0, hidden), C.WIDTH_HALF_EFF_HIDDEN
    return min(1.0, h / (h + h0) * (C.WIDTH_REF_HIDDEN + h0) / C.WIDTH_REF_HIDDEN)


def gpu_compute_factor(gpu) -> float:
    """How much more of its peak a GPU's training and forward passes reach than an H100's (MFU_TRAIN, MFU_FORWARD):
    (a + ratio_H100) / (a + ratio_gpu), ratio = peak FLOPs / HBM bytes per second (constants.RIDGE_HALF_FLOP_PER_BYTE,
    from MPT's A100 and H100 benchmarks)."""
    ratio = float(gpu.bf16_tflops) * 1e12 / (float(gpu.hbm_bandwidth_gbps) * 1e9)
    return (C.RIDGE_HALF_FLOP_PER_BYTE + C.RIDGE_REF_FLOP_PER_BYTE) / (C.RIDGE_HALF_FLOP_PER_BYTE + ratio)


def pass_efficiency(mfu: float, gpu) -> float:
    """The fraction of ``gpu``'s peak a pass reaches at large micro batches: ``mfu`` (an H100's) times
    ``gpu_compute_factor``, at most what a bf16 matmul measurably reaches on that GPU (the catalog's
    ``matmul_tflops`` over its peak; the peak itself where the catalog states none). The factor's relation was
    measured between the A100 (153 FLOP/B) and the H100 (295); extrapolated to a GPU whose FLOPs its bandwidth far
    outruns (H20, 37 FLOP/B: 2.39x) it would put a training pass at 1.40 of the GPU's peak, and to the MI300X (247
    FLOP/B: 1.12x) at 0.66 of it, above the 0.51 its best matmul reaches (docs/cost-model.md section 4.1)."""
    peak = float(gpu.bf16_tflops)
    matmul = float(getattr(gpu, "matmul_tflops", 0.0) or peak)
    return min(min(matmul, peak) / peak, mfu * gpu_compute_factor(gpu))


def compute_seconds(gemm_flops: float, attn_flops: float, hidden: float, tokens_per_micro: float, peak: float,
                    mfu: float) -> float:
    """Seconds of a training or forward pass's compute on one GPU: the GEMM FLOPs at the pass's efficiency
    (``_eff``: MFU and tokens per micro batch) times the width's (``width_efficiency``), the attention FLOPs at
    ATTN_EFF_RATIO of it (docs/cost-model.md section 4.1)."""
    eff = peak * _eff(mfu, tokens_per_micro)
    return gemm_flops / (eff * width_efficiency(hidden)) + attn_flops / (eff * C.ATTN_EFF_RATIO)


def inter_node_gbps(gpu) -> float:
    """GB/s per GPU per direction between two nodes: the catalog's figure for the GPU's standard node
    (``inter_node_bandwidth_gbps``, docs/gpus.md), else INTER_NODE_BANDWIDTH_GBPS."""
    return float(getattr(gpu, "inter_node_bandwidth_gbps", 0.0) or C.INTER_NODE_BANDWIDTH_GBPS)


def _coll_bw(plan: Plan, group: int) -> float:
    """Achieved bytes/s of a collective over ``group`` GPUs. Between nodes INTER_NODE_BANDWIDTH_GBPS, not the catalog's
    figure (``inter_node_gbps``): priced at it, FSDP's gathers across nodes made the measured set's out-of-sample step
    error worse (0.306 -> 0.347, docs/cost-model.md section 4, "MoE all-to-all"), the Qwen3-30B-A3B FSDP run
    of ISEEKYAN's tables turning from 1.16x to 1.53x under its measured step: its Hugging Face MoE layers' per-expert
    loop is not priced, and the slower gathers hid it."""
    if group > max(1, plan.gpus_per_node):
        return C.INTER_NODE_BANDWIDTH_GBPS * 1e9 * C.COLLECTIVE_EFF
    return float(plan.gpu.intra_node_bandwidth_gbps) * 1e9 * C.COLLECTIVE_EFF


def expert_all_to_all_seconds(plan: Plan, mc: ModelConsts, tokens: float) -> float:
    """Seconds of one of megatron-core's token all-to-alls (dispatch or combine) of one MoE layer, ``tokens`` tokens
    on each GPU of the expert-parallel group: every token goes to its top-k experts as a bf16 row of ``hidden``
    (megatron/core/transformer/moe/token_dispatcher.py MoEAlltoAllTokenDispatcher; verl sets that dispatcher for
    every model, verl/models/mcore/config_converter.py _get_base_transformer_config, and it is ms-swift's default,
    swift/megatron/arguments MegatronArguments.moe_token_dispatcher_type; megatron-core's own default, "allgather",
    which slime inherits unless its script names one, is priced the same). The group's ranks are
    consecutive (megatron/core/parallel_state.py: experts ordered tp-ep-dp-pp, EP x ETP ranks a group): the rows
    bound for the GPU's own node cross NVLink, the others the node's network (``inter_node_gbps``), both at once;
    the slower sets the time, and a group spanning nodes pays the network's per-call latency, as a rollout engine's
    tensor-parallel group does (``_collective_latency``). An expert tensor-parallel group (ETP > 1) receives the
    rows once per group."""
    ep = max(1, plan.ep)
    if ep <= 1 or not mc.moe_layers or tokens <= 0:
        return 0.0
    topk = mc.moe_topk
    etp = max(1, plan.etp or plan.tp)  # megatron-core: expert_tensor_parallel_size unset follows the TP size
    span = ep * etp
    gpn = max(1, plan.gpus_per_node)
    local = min(ep, max(1, gpn // etp))  # group members in the GPU's node
    rows = tokens * topk * mc.hidden * C.BF16
    intra = rows * (local - 1) / ep / (float(plan.gpu.intra_node_bandwidth_gbps) * 1e9 * C.COLLECTIVE_EFF)
    inter = (rows * (ep - local) / ep / (inter_node_gbps(plan.gpu) * 1e9 * C.COLLECTIVE_EFF)
             if span > gpn else 0.0)
    return max(intra, inter) + _collective_latency(plan, span)


def _collective_latency(plan: Plan, group: int = 0) -> float:
    """Seconds one collective call costs whatever its size, by the GPUs' link (ALLREDUCE_LATENCY_S); over
    INTER_NODE_LATENCY_S where a ``group`` given spans nodes."""
    if group > max(1, plan.gpus_per_node):
        return C.INTER_NODE_LATENCY_S
    link = getattr(plan.gpu, "intra_node", "pcie")
    return C.ALLREDUCE_LATENCY_S.get(link, C.ALLREDUCE_LATENCY_S["pcie"])


def _nvlink_group(plan: Plan, group: int) -> bool:
    """Whether a collective over ``group`` GPUs stays on one node's NVLink."""
    return group <= max(1, plan.gpus_per_node) and getattr(plan.gpu, "intra_node", "pcie") == "nvlink"


def _host_bw(plan: Plan) -> float:
    return float(plan.gpu.host_link_bandwidth_gbps) * 1e9 * C.HOST_LINK_EFF


def _peak(plan: Plan) -> float:
    return float(plan.gpu.bf16_tflops) * 1e12


def _mp(plan: Plan) -> int:
    return max(1, plan.tp) * max(1, plan.pp)


def _seq_split(plan: Plan) -> int:
    return max(1, plan.sp) * max(1, plan.cp)


def _dp(plan: Plan) -> float:
    return max(1.0, plan.n_gpus / (_seq_split(plan) * _mp(plan)))


def _lengths(plan: Plan) -> tuple[float, float, float]:
    """(mean prompt, mean response, max response) in tokens."""
    r_max = float(max(0, plan.response_len))
    pfrac, frac = plan.avg_prompt_fraction, plan.avg_response_fraction
    if pfrac is None or frac is None:
        from .lengths import plan_data_prompt, plan_profile

        profile = plan_profile(plan)
        if frac is None and r_max > 0:
            # the profile's share is of the cap its law is truncated at: the limit, or the longest response the data
            # reaches where it is stated below it (Plan.longest_response; lengths.response_cap)
            stated = plan.longest_response
            cap = float(stated) if stated is not None and 0 < stated < r_max else r_max
            frac = profile.fraction(cap) * cap / r_max
        elif frac is None:
            frac = profile.fraction(r_max)
        if pfrac is None:
            known = plan_data_prompt(plan)
            tokens = known.tokens if known is not None else profile.prompt_tokens
            if tokens and plan.prompt_len > 0:
                pfrac = tokens / plan.prompt_len
            else:
                pfrac = profile.prompt_fraction if profile.prompt_fraction is not None else 1.0
    p = max(1.0, plan.prompt_len * min(1.0, max(0.0, pfrac)))
    r = r_max * min(1.0, max(0.0, frac))
    return p, r, r_max


def _gather_bytes(plan: Plan, params: float, dtype: int = C.BF16) -> float:
    """Bytes one GPU receives to all-gather the full model once (ZeRO-3 / FSDP)."""
    n = max(1, plan.shard_degree)
    if plan.zero_stage < 3 or n <= 1:
        return 0.0
    return dtype * params / _mp(plan) * (n - 1) / n


def _micro_layout(plan: Plan, samples: float, micro: int, budget: int | None, seq_tokens: float,
                  actual_tokens: float) -> tuple[float, float]:
    """(number of micro batches, tokens per GPU per micro) for ``samples`` sequences on one DP rank."""
    split = _seq_split(plan)
    samples = max(samples, 1e-9)
    if budget:
        total = samples * actual_tokens
        n = max(1, math.ceil(total / (max(1, budget) * split) - 1e-9))
        return float(n), total / split / n
    micro = max(1, micro)
    n = max(1, math.ceil(samples / micro - 1e-9))
    return float(n), min(micro, samples) * seq_tokens / split


def launch_s_per_layer(plan: Plan) -> float:
    """Host time per layer of one eager forward of the trained model: its layers are Python modules (a Hugging Face
    model's, or megatron-core's Transformer Engine modules), HF_EAGER_S_PER_LAYER as measured (docs/cost-model.md
    section 4, "Kernel launches")."""
    return C.HF_EAGER_S_PER_LAYER


class PassSeconds:
    """Seconds of a phase made of passes, as a function of the fitted scale on them (``forward_scale``,
    ``train_scale``): each pass is ``max(scale x gpu + waits, floor)`` (``gpu``: its compute and the host time its
    loop spends per micro batch; ``waits``: the collectives it waits for inside its layers, Ulysses' all-to-alls and
    Megatron's tensor-parallel all-reduces; ``floor``: FSDP's gathers, which it cannot finish before), plus ``fixed``
    seconds no scale touches (the gradient reduction and the optimizer step). MFU_TRAIN and MFU_FORWARD are one
    GPU's passes as measured (docs/cost-model.md section 5): the scale is what the measured multi-GPU runs spend beyond
    them per pass, and leaves alone the collectives (priced from NCCL's bandwidth and latency) and the AdamW step
    (measured on one GPU, HBM_EFF_OPTIMIZER)."""

    __slots__ = ("terms", "fixed")

    def __init__(self, terms: tuple[tuple[float, float, float], ...] = (), fixed: float = 0.0):
        self.terms = terms  # (gpu, waits, floor) seconds of each pass
        self.fixed = fixed

    def at(self, scale: float) -> float:
        return sum(max(scale * a + b, f) for a, b, f in self.terms) + self.fixed

    def __add__(self, other: "PassSeconds") -> "PassSeconds":
        return PassSeconds(self.terms + other.terms, self.fixed + other.fixed)

    def times(self, n: float) -> "PassSeconds":
        return PassSeconds(tuple((n * a, n * b, n * f) for a, b, f in self.terms), n * self.fixed)


def _pass_time(plan: Plan, mc: ModelConsts, params: float, active: float, samples: float, micro: int,
               budget: int | None, flops_mult: float, mfu: float, gathers_per_micro: float,
               extra_comm_per_micro: float = 0.0) -> tuple[float, float]:
    """(seconds, micro batches) of a forward (mult 1) or training (mult 3/4) pass on one GPU, no fitted scale."""
    parts, n_micro = _pass_parts(plan, mc, params, active, samples, micro, budget, flops_mult, mfu,
                                 gathers_per_micro, extra_comm_per_micro)
    return parts.at(1.0), n_micro


def _pass_parts(plan: Plan, mc: ModelConsts, params: float, active: float, samples: float, micro: int,
                budget: int | None, flops_mult: float, mfu: float, gathers_per_micro: float,
                extra_comm_per_micro: float = 0.0) -> tuple[PassSeconds, float]:
    """(PassSeconds, micro batches) of a forward (mult 1) or training (mult 3/4) pass on one GPU."""
    p, r, _ = _lengths(plan)
    actual = p + r
    seq = actual if plan.remove_padding or budget else float(max(1, plan.prompt_len) + max(0, plan.response_len))
    n_micro, tok_micro = _micro_layout(plan, samples, micro, budget, seq, actual)
    per_gpu = samples * flops_mult / (_seq_split(plan) * _mp(plan))
    compute = compute_seconds(per_gpu * 2.0 * active * seq, per_gpu * attention_flops(mc, seq), mc.hidden, tok_micro,
                              _peak(plan), pass_efficiency(mfu, plan.gpu))
    # Eager PyTorch launches every layer's kernels from the host, a backward about twice a forward's (each GEMM has
    # two gradient GEMMs): flops_mult forwards' worth per micro batch, launch_s_per_layer each. The GPU cannot
    # finish a micro batch before its kernels are launched; where the loop waits for the GPU inside every micro batch
    # (Plan.host_syncs_per_micro) the GPU's queue empties each time and the host time adds to the GPU's.
    pp = max(1, plan.pp)
    launches = n_micro * flops_mult * launch_s_per_layer(plan) * mc.layers / pp
    gpu = compute + launches if plan.host_syncs_per_micro else max(compute, launches)
    if pp > 1:
        # pipeline bubble of 1F1B: (PP-1)/n_micro of the compute idles; interleaving divides it by VPP
        # (Narayanan et al. 2021, arXiv 2104.04473, section 2.2)
        gpu *= 1.0 + (pp - 1) / (max(1, plan.vpp) * n_micro)
    waits = 0.0
    sp = max(1, plan.sp)
    if sp > 1:
        # Ulysses: 4 all-to-alls per layer (q, k, v, attention output) per forward, again in
        # backward; not overlapped with compute.
        one = (tok_micro * C.BF16 * (2 * mc.q_dim + 2 * mc.kv_dim) * mc.layers * (sp - 1) / sp
               / _coll_bw(plan, sp))
        waits = n_micro * one * (1.0 if flops_mult <= 1.0 else flops_mult - 1.0)
    tp = max(1, plan.tp)
    if tp > 1:
        # Megatron tensor parallelism: 2 all-reduces of the layer's activations ([tokens, hidden], bf16) per layer in
        # a forward, 2 more in the backward (Shoeybi et al. 2019, arXiv 1909.08053, section 3 and figure 4; with
        # sequence parallelism an all-gather and a reduce-scatter of the same bytes), not overlapped with compute
        # (megatron-core overlaps them only with tp_comm_overlap, off by default)
        calls = 2.0 * mc.layers / pp * (1.0 if flops_mult <= 1.0 else flops_mult - 1.0)
        msg = tok_micro * mc.hidden * C.BF16
        waits += n_micro * calls * (2.0 * (tp - 1) / tp * msg / _coll_bw(plan, tp) + _collective_latency(plan))
    if plan.trainer == "megatron" and plan.ep > 1 and mc.moe_layers:
        # MoE: each MoE layer's dispatch and combine all-to-alls per forward, again in the backward (their
        # gradients), not overlapped with compute (megatron-core overlaps them only with
        # overlap_moe_expert_parallel_comm, which verl does not set); the tokens of a TP rank are its sequence-
        # parallel share
        tokens = tok_micro / (tp if plan.sequence_parallel else 1)
        calls = 2.0 * mc.moe_layers / pp * (1.0 if flops_mult <= 1.0 else flops_mult - 1.0)
        waits += n_micro * calls * expert_all_to_all_seconds(plan, mc, tokens)
    gather = _gather_bytes(plan, params)
    # FSDP gathers one decoder layer at a time: a collective's latency per layer and gather
    latency = _collective_latency(plan) * mc.layers / pp if gather > 0 else 0.0
    comm = n_micro * (gathers_per_micro * (gather / _coll_bw(plan, plan.shard_degree) + latency)
                      + extra_comm_per_micro)
    return PassSeconds(((gpu, waits, comm),)), n_micro


def attention_flops(mc: ModelConsts, seq: float) -> float:
    """Forward attention FLOPs of one sequence: causal, half of the non-causal 4 * s^2 * q_dim * L
    (``ATTN_CAUSAL_FRACTION``: flash-attention computes only the blocks on and below the diagonal)."""
    return C.ATTN_CAUSAL_FRACTION * mc.attn_flops_coeff * seq * seq


def sequence_flops(mc: ModelConsts, active: float, seq: float) -> float:
    """Forward FLOPs of one sequence: 2 * active params * tokens + causal attention (``attention_flops``)."""
    return 2.0 * active * seq + attention_flops(mc, seq)


# ----------------------------------------------------------------------------- phases
def prefill_seconds(plan: Plan, mc: ModelConsts, seqs: float, prompt: float) -> float:
    """Compute-bound prefill of ``seqs`` prompts on one engine (rollout_tp GPUs)."""
    tp = max(1, plan.rollout_tp)
    return seqs * sequence_flops(mc, mc.active, prompt) / (tp * _peak(plan) * plan.efficiency.mfu_prefill)


def decode_host_seconds(plan: Plan, batch: float) -> float:
    """The host's seconds between two decode steps of ``batch`` sequences, which the GPU waits for: vLLM's V0 engine
    the larger of its per-step floor and its per-sequence work (constants.VLLM_V0_STEP_HOST_S), other engines
    DECODE_STEP_OVERHEAD_S."""
    if plan.engine == "vllm" and plan.engine_v0:
        return max(C.VLLM_V0_STEP_HOST_S, C.VLLM_V0_HOST_S_PER_SEQ * batch)
    return C.DECODE_STEP_OVERHEAD_S


def decode_weight_bytes(plan: Plan, mc: ModelConsts, weights: float, batch: float) -> float:
    """HBM bytes one decode step moves for ``weights`` parameters read. 16-bit weights are read once
    (ROLLOUT_PARAM_BYTES). A bitsandbytes-quantized base (``Plan.base_weight_bytes``) that the rollout runs on itself
    (transformers' generate on the trained model, or an engine sharing its tensors: vLLM's bitsandbytes method,
    model_executor/layers/quantization/bitsandbytes.py ``_apply_bnb_4bit``, calls the same) goes through bitsandbytes'
    ``matmul_4bit`` (bitsandbytes/autograd/_functions.py): one token row (``A.numel() == A.shape[-1]``) takes the
    fused ``gemv_4bit`` kernel, which reads the packed weights only; any larger batch takes ``MatMul4Bit``, which
    dequantizes every weight to a 16-bit copy (``F.dequantize_4bit``: reads the packed bytes, writes 2 B) and then
    multiplies with it (reads the 2 B again), every decode step. The embedding and lm_head stay 16-bit. An engine
    that quantizes its own copy while loading (``Plan.engine_base_bytes``: vLLM's in-flight bitsandbytes) runs the
    same method on those bytes. An FP8 base (``Plan.fp8_base``) is read as its bytes alone."""
    stored = plan.base_weight_bytes if plan.engine == "hf" or plan.engine_shares_weights else plan.engine_base_bytes
    if not stored:
        return C.ROLLOUT_PARAM_BYTES * weights
    quantized = min(weights, float(mc.params - mc.embed - mc.lm_head))
    per_weight = stored + (2 * C.BF16 if batch > 1 and not plan.fp8_base else 0.0)  # FP8 kernels: no 16-bit copy
    return per_weight * quantized + C.ROLLOUT_PARAM_BYTES * (weights - quantized)


def bnb_linear_host_seconds(plan: Plan, mc: ModelConsts, rows: float) -> float:
    """Host seconds one eager forward of ``rows`` token rows spends in bitsandbytes beyond the 16-bit linears it
    replaces, where the quantized base's linears are transformers' bitsandbytes 4-bit modules run from Python
    (``Plan.bnb_eager_linears``): every quantized linear (BNB_LINEARS_PER_LAYER a layer) pays
    BNB4_HOST_S_PER_LINEAR on the dequantize-and-matmul path (more than one row), BNB4_GEMV_HOST_S_PER_LINEAR on
    ``gemv_4bit`` (one row), and BNB4_DOUBLE_QUANT_HOST_S_PER_LINEAR more where the absmax are double-quantized
    (``base_weight_bytes`` NF4_BYTES). bitsandbytes' own H100 benchmark (constants' source); 8-bit not priced."""
    stored = plan.base_weight_bytes
    if not plan.bnb_eager_linears or not stored or stored >= C.INT8_BYTES:
        return 0.0
    per_linear = C.BNB4_HOST_S_PER_LINEAR if rows > 1 else C.BNB4_GEMV_HOST_S_PER_LINEAR
    if stored < C.NF4_PLAIN_BYTES:
        per_linear += C.BNB4_DOUBLE_QUANT_HOST_S_PER_LINEAR
    return per_linear * C.BNB_LINEARS_PER_LAYER * mc.layers


def decode_step_seconds(plan: Plan, mc: ModelConsts, batch: float, ctx: float, kv_tok: float) -> float:
    """One decode step of ``batch`` sequences at mean context ``ctx`` on one engine: HBM
    roofline (weights/TP + KV + sampler logits: VLLM_SAMPLER_BYTES_PER_LOGIT in vLLM) vs compute, plus 2 TP
    all-reduces per layer (over NVLink on NCCL's bandwidth ramp, NCCL_NVLINK_HALF_BW_BYTES) and, in vLLM, the
    logits' gather from the TP ranks."""
    tp = max(1, plan.rollout_tp)
    weights = float(mc.decode_weight_params)
    if mc.routed_expert_params:
        hit = 1.0 - (1.0 - mc.expert_hit_fraction) ** batch
        weights -= mc.routed_expert_params * (1.0 - hit)
    sampler = C.VLLM_SAMPLER_BYTES_PER_LOGIT if plan.engine == "vllm" else C.DECODE_SAMPLER_BYTES_PER_LOGIT
    bytes_read = (decode_weight_bytes(plan, mc, weights, batch) / tp + batch * ctx * kv_tok
                  + batch * mc.vocab * sampler)
    t_mem = bytes_read / (float(plan.gpu.hbm_bandwidth_gbps) * 1e9 * plan.efficiency.hbm_decode)
    flops = 2.0 * mc.active * batch + mc.attn_flops_coeff * batch * ctx
    if plan.engine == "vllm" and mc.routed_expert_params:
        flops += 2.0 * mc.routed_expert_params * mc.expert_hit_fraction * batch * (moe_block_padding(mc, batch) - 1.0)
    t_cmp = flops / (tp * _peak(plan) * C.MFU_DECODE)
    t = max(t_mem, t_cmp) + decode_host_seconds(plan, batch)
    if tp > 1:
        msg = batch * mc.hidden * C.BF16
        # NCCL's bandwidth ramps with the message over NVLink: half the link's at NCCL_NVLINK_HALF_BW_BYTES (nccl-tests
        # on 4 H100, constants' source), where a decode step's megabyte all-reduces sit
        ramp = C.NCCL_NVLINK_HALF_BW_BYTES if _nvlink_group(plan, tp) else 0.0
        t += 2 * mc.layers * (_collective_latency(plan, tp)
                              + 2.0 * (tp - 1) / tp * (msg + ramp) / _coll_bw(plan, tp))
        if plan.engine == "vllm":
            # the vocabulary-parallel lm_head's logits gathered from the TP ranks before sampling, once a step
            # (model_executor/layers/logits_processor.py LogitsProcessor._gather_logits: an all-gather under V1 or
            # the external launcher verl uses, platforms/interface.py Platform.use_all_gather, else a gather to rank
            # 0): each rank's bf16 [batch, vocab/TP] slice, (TP-1)/TP of the whole received
            t += _collective_latency(plan, tp) + (tp - 1) / tp * batch * mc.vocab * C.BF16 / _coll_bw(plan, tp)
    if plan.enforce_eager or (plan.engine == "vllm" and batch > C.VLLM_CUDA_GRAPH_MAX_BATCH):
        # no CUDA graph: every layer's kernels launched from the host (eager, or a batch above vLLM's largest
        # captured graph)
        t += eager_host_seconds(plan, mc)
    return t


def moe_block_padding(mc: ModelConsts, batch: float) -> float:
    """Routed-expert FLOPs vLLM's fused MoE kernel runs over the FLOPs of the routed tokens alone, for ``batch``
    tokens: each expert's tokens (Poisson with mean batch x top-k / experts) padded to a multiple of the kernel's
    row block, the smallest of constants.VLLM_MOE_BLOCK_SIZES at or above that mean."""
    experts = max(1, round(mc.moe_topk / mc.expert_hit_fraction)) if mc.moe_topk else 1
    return _moe_block_padding(max(1, int(round(batch))), mc.moe_topk, experts)


@functools.lru_cache(maxsize=4096)
def _moe_block_padding(batch: int, topk: int, experts: int) -> float:
    if not topk:
        return 1.0
    lam = batch * topk / experts
    block = next((b for b in C.VLLM_MOE_BLOCK_SIZES if b >= lam), C.VLLM_MOE_BLOCK_SIZES[-1])
    if lam > C.POISSON_EXACT_MAX_MEAN:  # exp(-lam) underflows: about half a block of padding an expert
        return 1.0 + (block - 1) / 2.0 / lam
    p, k, blocks = math.exp(-lam), 0, 0.0  # E[ceil(X / block)] for X ~ Poisson(lam)
    while k <= lam + 12.0 * math.sqrt(lam) + block:
        blocks += p * math.ceil(k / block)
        k += 1
        p *= lam / k
    return max(1.0, blocks * block / lam)


def eager_host_seconds(plan: Plan, mc: ModelConsts) -> float:
    """Host seconds of one decode step's kernel launches without CUDA graphs: EAGER_LAUNCH_S_PER_LAYER a layer (a dense
    layer's EAGER_DENSE_LAYER_HOST_OPS operations); in vLLM, each MoE layer's extra operations and Triton launches
    (VLLM_MOE_LAYER_EXTRA_HOST_OPS, counted in vLLM 0.8.5's fused_moe path: layer.py FusedMoE.forward, fused_moe.py
    fused_topk and fused_experts_impl, moe_align_block_size.py), DeepSeek's latent attention's and MoE block's
    (VLLM_MLA_LAYER_EXTRA_HOST_OPS, VLLM_DEEPSEEK_MOE_EXTRA_HOST_OPS), Qwen3's query and key norms
    (VLLM_QK_NORM_HOST_OPS) and, with TP, the host operations of every layer's two
    all-reduces (VLLM_ALLREDUCE_HOST_OPS: parallel_state.py GroupCoordinator.all_reduce, pynccl.py
    PyNcclCommunicator.all_reduce), each operation at the dense layer's cost per operation."""
    t = C.EAGER_LAUNCH_S_PER_LAYER * mc.layers
    if plan.engine != "vllm":
        return t
    per_op = C.EAGER_LAUNCH_S_PER_LAYER / C.EAGER_DENSE_LAYER_HOST_OPS
    t += mc.moe_layers * (C.VLLM_MOE_LAYER_EXTRA_HOST_OPS * per_op
                          + C.VLLM_MOE_LAYER_TRITON_LAUNCHES * C.TRITON_LAUNCH_S)
    if plan.model.is_mla:  # DeepSeek's latent attention: VLLM_MLA_LAYER_EXTRA_HOST_OPS more than a Llama layer's
        t += mc.layers * C.VLLM_MLA_LAYER_EXTRA_HOST_OPS * per_op
    if plan.model.model_type in C.VLLM_DEEPSEEK_MOE_TYPES:  # grouped top-k routing and the shared expert
        t += mc.moe_layers * C.VLLM_DEEPSEEK_MOE_EXTRA_HOST_OPS * per_op
    if plan.model.qk_norm:  # Qwen3's per-head query and key norms, PyTorch-native
        t += mc.layers * C.VLLM_QK_NORM_HOST_OPS * per_op
    if plan.rollout_tp > 1:
        t += mc.layers * 2 * C.VLLM_ALLREDUCE_HOST_OPS * per_op
    return t


def hf_prefill_seconds(plan: Plan, mc: ModelConsts, seqs: float, prompt: float) -> float:
    """``generate``'s prefill on one GPU: the compute, or the host time of one pass of the model's Python layers
    (HF_EAGER_S_PER_LAYER, measured) when that is longer."""
    host = C.HF_EAGER_S_PER_LAYER * mc.layers + bnb_linear_host_seconds(plan, mc, seqs * prompt)
    return max(prefill_seconds(plan, mc, seqs, prompt), host)


def hf_decode_step_seconds(plan: Plan, mc: ModelConsts, batch: float, ctx: float, kv_tok: float) -> float:
    """One decode step of ``generate`` on one GPU: the GPU's work (decode_step_seconds without an engine's launch
    cost) and the host time of the model's Python layers (measured: flat from 1 to 256 sequences,
    HF_EAGER_S_PER_LAYER). With flash-attention 2 and a padding mask (``Plan.hf_generate_unpads``) the KV cache moves
    HF_GENERATE_KV_PASSES times and every layer waits for the GPU before it launches its attention
    (HF_GENERATE_KV_PASSES' source), so the two add; otherwise the larger of the two."""
    host = C.HF_EAGER_S_PER_LAYER * mc.layers + bnb_linear_host_seconds(plan, mc, batch)
    if plan.hf_generate_unpads:
        kv_tok *= C.HF_GENERATE_KV_PASSES
    gpu = decode_step_seconds(plan.replace(enforce_eager=False), mc, batch, ctx, kv_tok)
    return gpu + host if plan.hf_generate_unpads else max(gpu, host)


def _hf_generate(plan: Plan, mc: ModelConsts, info: dict[str, float]) -> float:
    """The trained model's own generate on each GPU: its whole local batch at once (or ``Plan.hf_generate_micro``
    sequences per call, one call after another), eager (each step at least HF_EAGER_S_PER_LAYER per layer of host
    time), prefill then one decode step per token, every sequence of the call in every step, until the call's longest
    response ends: transformers' generate stops when no sequence of its batch is unfinished (GenerationMixin.sample /
    greedy_search, 4.38.2: "stop when each sentence is finished", unfinished_sequences.max() == 0), so a call of
    ``seqs`` sequences runs the expected longest of ``seqs`` responses (lengths.straggler_tokens), at most the
    limit or the longest response the data reaches where it is stated (lengths.response_cap)."""
    from .lengths import response_cap, straggler_tokens
    from .memory import hf_generate_batch, hf_generate_calls

    seqs = hf_generate_batch(plan)
    p, r, _ = _lengths(plan)
    steps = straggler_tokens(r, response_cap(plan, r), max(1, int(round(seqs))), plan.group_size)
    one = plan.replace(rollout_tp=1, enforce_eager=True)
    kv_tok = float(plan.model.kv_bytes_per_token(1, C.KV_DTYPE_BYTES))
    prefill = hf_prefill_seconds(one, mc, seqs, p)
    gather = _gather_bytes(plan, mc.params) / _coll_bw(plan, max(1, plan.shard_degree))
    decode = steps * hf_decode_step_seconds(one, mc, seqs, p + steps / 2.0, kv_tok)
    calls = hf_generate_calls(plan)
    info.update(engines=plan.n_gpus, decode_concurrency=seqs, decode_steps=steps * calls)
    return calls * (gather + prefill + decode)


def length_scale(mean: float, cap: float) -> float:
    """The scale ``lam`` of the exponential response lengths whose capped mean E[min(L, cap)] = lam*(1 - e^(-cap/lam))
    is ``mean`` (inf when the mean reaches the cap: every response at the cap)."""
    if mean <= 0:
        return 0.0  # no response tokens
    if cap <= 0 or mean >= cap * (1 - 1e-9):
        return math.inf
    def capped_mean(lam: float) -> float:  # rises with lam towards the cap
        return lam * (1 - math.exp(-cap / lam))

    lo, hi = mean, mean * 64.0
    while capped_mean(hi) < mean:
        hi *= 4.0
    for _ in range(48):
        mid = (lo + hi) / 2
        if capped_mean(mid) < mean:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def drain_seconds(plan: Plan, mc: ModelConsts, active: float, total: int, p: float, r: float, r_max: float,
                  kv_tok: float) -> tuple[float, float]:
    """(seconds, decode steps) for the last ``active`` sequences of an engine to finish, once no more wait: response
    lengths exponential with the step's mean, capped at ``r_max`` (the limit, or the stated longest response:
    lengths.response_cap; C.RESPONSE_LENGTHS), so that ``active x S(t)``
    remain after ``t`` steps, at context ``prompt + t``; the step ends with its longest response, the expected
    largest of the step's ``total`` samples (the straggler engine holds it): ``lam x lengths.straggler_factor``
    (H_n, the expected largest of n exponentials, where each prompt's group of completions shares its prompt's
    length), at most the cap."""
    from .lengths import straggler_factor

    lam = length_scale(r, r_max)
    if lam <= 0:
        return 0.0, 0.0
    end = r_max if math.isinf(lam) else min(r_max, lam * straggler_factor(total, plan.group_size))
    bins = C.DRAIN_INTEGRATION_BINS
    seconds = 0.0
    for k in range(bins):
        t = (k + 0.5) * end / bins
        alive = active if math.isinf(lam) else active * math.exp(-t / lam)
        seconds += end / bins * decode_step_seconds(plan, mc, max(1.0, alive), p + t, kv_tok)
    return seconds, end


def engine_kv_concurrency(plan: Plan, kv_tokens: float, p: float, r: float, r_max: float) -> int:
    """Sequences one engine's KV cache runs at once while others wait. vLLM (the V1 scheduler, and V0's block
    manager) allocates blocks as tokens come and admits while blocks are free, so a live sequence holds its prompt
    plus its age so far: ``kv_tokens / lengths.live_sequence_tokens`` (the prompt plus ``E[L^2]/2E[L]`` of the
    response; docs/cost-model.md derives it). SGLang's scheduler admits a request only while the free cache covers
    a share (its new-token ratio) of the limit the running ones may still generate (sglang/srt/managers/
    schedule_policy.py ``PrefillAdder``), a different rule not derived here: priced as the whole mean length held,
    ``prompt + mean response``."""
    from .lengths import live_sequence_tokens

    held = live_sequence_tokens(p, r, r_max) if plan.engine == "vllm" else p + r
    return max(1, int(kv_tokens // max(1.0, held)))


def _rollout(plan: Plan, mc: ModelConsts, info: dict[str, float]) -> float:
    """Prefill, then continuous-batching decode at the engine's concurrency while sequences wait; a synchronous step
    then drains its last sequences to the longest response (``drain_seconds``). A streaming rollout (partial
    rollout) pauses the unfinished ones at the weight sync and goes on with new ones: it decodes at full
    concurrency throughout. Where the engines are called chunk by chunk (``Plan.engine_call_samples``), each engine
    runs its calls one after another, each its own prefill and decode drained to the call's longest response."""
    if plan.engine == "hf":
        return _hf_generate(plan, mc, info)
    tp = max(1, plan.rollout_tp)
    gpus = plan.rollout_gpus or plan.n_gpus
    engines = max(1, int(gpus) // tp)
    seqs = max(1, math.ceil(plan.samples_per_step / engines))
    calls, total = 1, plan.samples_per_step  # generate calls per engine; the samples whose longest ends a call
    if plan.engine_call_samples:
        per_call = max(1, min(seqs, plan.engine_call_samples))
        calls, seqs = math.ceil(seqs / per_call), per_call
        total = per_call
    from .lengths import response_cap

    p, r, _ = _lengths(plan)
    r_max = response_cap(plan, r)
    resident = sum(trainer_resident_at_rollout(plan, mc).values()) if plan.engine == "sglang" else 0.0
    eb = engine_budget(plan, mc, resident)
    kv_tok = float(kv_bytes_per_token(plan))
    conc = max(1, min(int(plan.max_num_seqs), engine_kv_concurrency(plan, eb.kv_tokens, p, r, r_max), seqs))
    if plan.engine == "vllm" and plan.max_num_batched_tokens > 0:
        # every running sequence takes one token of the step's budget (scheduler.py Scheduler.schedule: the
        # running requests are scheduled while token_budget > 0)
        conc = min(conc, int(plan.max_num_batched_tokens))
    prefill = prefill_seconds(plan, mc, seqs, p)
    if plan.rollout_streaming:
        steps = seqs * r / conc
        decode = steps * decode_step_seconds(plan, mc, conc, p + r / 2.0, kv_tok)
    else:
        queued = max(0.0, seqs - conc) * r / conc  # steps at full concurrency while sequences wait
        decode = queued * decode_step_seconds(plan, mc, conc, p + r / 2.0, kv_tok)
        drain, end = drain_seconds(plan, mc, conc, total, p, r, r_max, kv_tok)
        decode += drain
        steps = queued + end
    info.update(engines=engines, decode_concurrency=conc, decode_steps=steps * calls)
    return calls * (prefill + decode)


def _old_log_prob(plan: Plan, mc: ModelConsts) -> PassSeconds:
    samples = plan.samples_per_step / _dp(plan)
    t, _ = _pass_parts(plan, mc, mc.params, mc.active, samples, plan.logprob_micro, plan.logprob_token_budget,
                       1.0, plan.efficiency.mfu_forward, 1.0)
    return t


def _ref(plan: Plan, mc: ModelConsts) -> PassSeconds:
    samples = plan.samples_per_step / _dp(plan)
    h2d = 0.0
    if plan.ref_param_offload or plan.param_offload:
        # CPU-offloaded FSDP streams its shard to the GPU every forward
        h2d = C.REF_PARAM_BYTES * mc.params / _mp(plan) / max(1, plan.shard_degree) / _host_bw(plan)
    t, _ = _pass_parts(plan, mc, mc.params, mc.active, samples, plan.logprob_micro, plan.logprob_token_budget,
                       1.0, plan.efficiency.mfu_forward, 1.0, h2d)
    return t


def _update(plan: Plan, mc: ModelConsts, critic: bool) -> PassSeconds:
    params = float(mc.critic_params if critic else mc.params)
    active = float(mc.active - (mc.lm_head - mc.hidden if critic else 0))
    samples = plan.samples_per_step / _dp(plan)
    mini = max(1, plan.mini_batches)
    micro = plan.critic_micro if critic else plan.train_micro
    mult = 4.0 if plan.grad_ckpt else 3.0
    # one mini batch, times the number of mini batches
    t_mini, n_micro = _pass_parts(plan, mc, params, active, samples / mini, micro, plan.train_token_budget, mult,
                                  plan.efficiency.mfu_train, 2.0)
    grad_sync, adam = _grad_sync_and_adam(plan, mc, params, critic)  # once per mini batch
    micro_grads = _deepspeed_micro_grads(plan, params, n_micro)
    if micro_grads is not None:
        grad_sync = micro_grads
    # every epoch (verl's ppo_epochs) passes over all the mini batches again, each with its optimizer step
    total = (t_mini + PassSeconds(fixed=grad_sync + adam)).times(mini * max(1, plan.update_epochs))
    if critic and not plan.critic_values_apart:  # the critic's value forward over the batch (compute_values)
        t_val, _ = _pass_parts(plan, mc, params, active, samples, micro, plan.train_token_budget, 1.0,
                               plan.efficiency.mfu_forward, 1.0)
        total = total + t_val
    return total


def _critic_values(plan: Plan, mc: ModelConsts) -> PassSeconds:
    """The critic's value forward as a phase of its own (``Plan.critic_values_apart``): a forward of the critic (no
    LM head) over the step's samples on its GPUs, in the experience's micro batches."""
    active = float(mc.active - (mc.lm_head - mc.hidden))
    samples = plan.samples_per_step / _dp(plan)
    t, _ = _pass_parts(plan, mc, float(mc.critic_params), active, samples, plan.logprob_micro,
                       plan.logprob_token_budget, 1.0, plan.efficiency.mfu_forward, 1.0)
    return t


def _deepspeed_micro_grads(plan: Plan, params: float, n_micro: float) -> float | None:
    """Seconds one mini batch of ``n_micro`` micro batches spends on its gradients under DeepSpeed ZeRO stage 2 or 3,
    or None where the trainer reduces once per mini batch (``_grad_sync_and_adam``). DeepSpeed's engine reduces the
    partitioned gradients at EVERY micro batch, not at the accumulation boundary only (deepspeed/runtime/engine.py
    ``DeepSpeedEngine.allreduce_gradients``: "ZeRO stage >= 2 communicates during non gradient accumulation
    boundaries as well"), in the model's 16-bit type (``communication_data_type``: bf16 when bf16 is on), not
    overlapped with the backward (``overlap_comm`` is off unless configured; OpenRLHF's
    utils/deepspeed_utils.py ``get_train_ds_config`` leaves it out). With the optimizer on the CPU (ZeRO-Offload)
    ZeRO 2: each micro batch but the last copies the GPU's gradient partition to a pinned CPU buffer of the
    parameters' dtype, and each but the first copies it back to add the new gradients
    (deepspeed/runtime/zero/stage_1_and_2.py ``async_accumulate_grad_in_cpu_via_gpu``, called from
    ``copy_grads_in_partition``): ``2 (n_micro - 1)`` 16-bit moves of the partition over the host link. ZeRO 3:
    the partition accumulates in a CPU buffer of the gradient-accumulation dtype, copied to the GPU, added to and
    copied back at every micro batch but the first, which only copies down (stage3.py ``partition_grads``,
    ``grad_partitions_flat_buffer`` on the optimizer's device): ``2 n_micro - 1`` moves."""
    if plan.trainer != "deepspeed" or plan.zero_stage < 2:
        return None
    n = max(1, plan.shard_degree)
    shard = params / _mp(plan)
    reduce = C.BF16 * shard * (n - 1) / n / _coll_bw(plan, n) if n > 1 else 0.0
    # the optimizer stays on the CPU while the model computes (ZeRO-Offload), for the actor and the critic alike
    if not (plan.optimizer_offload and plan.offload_during_compute):
        return n_micro * reduce
    if plan.zero_stage >= 3:
        moves, dtype = 2.0 * n_micro - 1.0, C.FP32 if plan.deepspeed_grad_accum_fp32 else C.BF16
    else:
        moves, dtype = 2.0 * (n_micro - 1.0), C.BF16
    return n_micro * reduce + moves * dtype * shard / n / _host_bw(plan)


def _grad_sync_and_adam(plan: Plan, mc: ModelConsts, params: float, critic: bool) -> tuple[float, float]:
    """(seconds, seconds) of one mini batch's gradient reduction over the data-parallel ranks and its AdamW step
    on one GPU. FSDP / ZeRO: the model's parameters over TP x PP, sharded over ``shard_degree`` GPUs. Megatron: the
    dense parameters over TP x PP and the routed experts over EP x ETP x PP (memory.megatron_shard_params, the
    layout the memory model holds: the most loaded stage of its split), each reduced and its optimizer sharded over its own data-parallel group (the
    dense over data x context parallel ranks, the experts over the expert-data-parallel ranks: Megatron-core's
    ``_get_param_groups``/DistributedOptimizer per group, as memory._megatron_states shards them). Megatron orders
    its ranks tensor, context, expert, data, pipeline (megatron/core/parallel_state.py ``order="tp-cp-ep-dp-pp"``),
    so both data-parallel groups span all of one pipeline stage's GPUs: they cross nodes when a stage does, whatever
    their own size (``_coll_bw`` by the group's size alone would keep a TP 4 x DP 8 group on 32 GPUs in one node)."""
    hbm = float(plan.gpu.hbm_bandwidth_gbps) * 1e9 * C.HBM_EFF_OPTIMIZER
    if plan.trainer == "megatron":
        from .memory import megatron_shard_params

        tp, pp = max(1, plan.tp), max(1, plan.pp)
        ep, etp = max(1, plan.ep), max(1, plan.etp or plan.tp)
        # the most loaded stage of the plan's split (the average layer under VPP), as memory prices its states
        dense, expert = megatron_shard_params(mc, tp, pp, ep, etp, critic, plan)
        groups = [(dense, max(1, plan.n_gpus // (tp * pp))), (expert, max(1, plan.n_gpus // (ep * etp * pp)))]
        span = _coll_bw(plan, max(1, plan.n_gpus // pp))
        sync = sum(C.FP32 * b * (n - 1) / n / span for b, n in groups if b > 0)
        shard = [n if plan.distributed_optimizer else 1 for _, n in groups]
        adam = C.ADAM_BYTES_PER_PARAM * sum(b / k for (b, _), k in zip(groups, shard)) / hbm
        return sync, adam
    n = max(1, plan.shard_degree)
    sync = C.FP32 * params / _mp(plan) * (n - 1) / n / _coll_bw(plan, n)
    shard = n if plan.zero_stage >= 1 or plan.distributed_optimizer else 1
    return sync, C.ADAM_BYTES_PER_PARAM * params / _mp(plan) / shard / hbm


def _weight_sync(plan: Plan, mc: ModelConsts) -> float:
    if plan.engine == "hf":
        return 0.0  # the trained model generates itself: nothing to load into an engine
    full = C.ROLLOUT_PARAM_BYTES * mc.params
    if plan.colocated and not plan.rollout_gpus:
        n = max(1, plan.shard_degree)
        gather = full / _mp(plan) * (n - 1) / n / _coll_bw(plan, n)
        hbm = float(plan.gpu.hbm_bandwidth_gbps) * 1e9 * plan.efficiency.hbm_decode
        load = full / max(1, plan.rollout_tp) / hbm
        return gather + load + C.WEIGHT_SYNC_FIXED_S
    return full / (C.INTER_NODE_BANDWIDTH_GBPS * 1e9 * C.COLLECTIVE_EFF) + C.WEIGHT_SYNC_FIXED_S


def _offload(plan: Plan, mc: ModelConsts) -> float:
    """Host <-> GPU moves of offloaded states per step (verl 0.9 load/offload around phases)."""
    from .memory import _states  # same sharded sizes as the memory model

    bw = _host_bw(plan)
    moved = 0.0
    w, _, o = _states(plan, mc, False)
    if plan.param_offload:
        moved += 6.0 * w  # load+offload around old_log_prob, actor update, weight sync
    if plan.optimizer_offload:
        moved += 2.0 * o  # load before the update, offload after
    moved += plan.actor_param_host_copies * w
    if plan.need_critic:
        cw, _, co = _states(plan, mc, True)
        if plan.critic_param_offload:
            moved += 4.0 * cw  # values forward, critic update
        if plan.critic_optimizer_offload:
            moved += 2.0 * co
    return moved / bw


def step_host_seconds(plan: Plan) -> float:
    """Seconds of the step's host work that no phase's model prices and no model size changes: the driver's own time
    between phases (STEP_HOST_S) and the reward and advantages of every sample (REWARD_ADV_S_PER_SAMPLE), both from
    verl's published console logs (docs/cost-model.md section 4.3). Added to the rollout, unscaled."""
    return C.STEP_HOST_S + C.REWARD_ADV_S_PER_SAMPLE * max(0, plan.samples_per_step)


def pass_seconds(plan: Plan, phase: str) -> PassSeconds | None:
    """The passes of a forward-only or update phase as a function of its fitted scale (``PassSeconds``: what
    estimate_time applies forward_scale and train_scale to); None for the other phases."""
    mc = model_consts(plan.model)
    if phase == Phase.OLD_LOG_PROB:
        return _old_log_prob(plan, mc)
    if phase == Phase.REF:
        return _ref(plan, mc)
    if phase in (Phase.ACTOR_UPDATE, Phase.CRITIC_UPDATE):
        return _update(plan, mc, critic=phase == Phase.CRITIC_UPDATE)
    if phase == Phase.CRITIC_VALUES and plan.need_critic and plan.critic_values_apart:
        return _critic_values(plan, mc)
    return None


def estimate_time(plan: Plan) -> TimeReport:
    """Seconds per RL step for every phase of ``plan`` that runs (computed lazily)."""
    mc = model_consts(plan.model)
    info: dict[str, float] = {}
    eff = plan.efficiency  # the fitted constants (costmodel/fitted.yaml) scale the derived seconds (the passes' as
    # PassSeconds says: their compute and host time, not their collectives or optimizer step)
    # rollout_scale is fitted to inference engines' rows; the trained model's own generate is host-bound at a
    # measured per-layer cost (HF_EAGER_S_PER_LAYER, docs/accuracy.md's GPU probe), which the scale would distort
    rollout_scale = eff.rollout_scale if plan.engine != "hf" else 1.0
    fns: dict[str, Callable[[], float]] = {
        Phase.ROLLOUT: lambda: _rollout(plan, mc, info) * rollout_scale + eff.step_fixed_s + step_host_seconds(plan),
        Phase.OLD_LOG_PROB: lambda: _old_log_prob(plan, mc).at(eff.forward_scale),
    }
    if plan.need_ref:
        fns[Phase.REF] = lambda: _ref(plan, mc).at(eff.forward_scale)
    fns[Phase.ACTOR_UPDATE] = lambda: _update(plan, mc, critic=False).at(eff.train_scale)
    if plan.need_critic:
        fns[Phase.CRITIC_UPDATE] = lambda: _update(plan, mc, critic=True).at(eff.train_scale)
        if plan.critic_values_apart:
            fns[Phase.CRITIC_VALUES] = lambda: _critic_values(plan, mc).at(eff.forward_scale)
    fns[Phase.WEIGHT_SYNC] = lambda: _weight_sync(plan, mc)
    fns[Phase.OFFLOAD] = lambda: _offload(plan, mc)
    return TimeReport(LazyPhases(fns), info)
