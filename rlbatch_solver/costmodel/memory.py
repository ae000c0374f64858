"""Per-GPU memory of each phase of one RL step, term by term.

``estimate_memory(plan)`` returns a ``MemoryReport``: for every phase that runs, the
bytes each term takes on one GPU at that phase's peak. Formulas and sources are in
``docs/cost-model.md``; the constants in ``constants.py``. Plain float arithmetic
with per-model numbers cached, because the solver tables call this thousands of
times.
"""

from __future__ import annotations

import math
import functools
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from .phase import MEMORY_PHASES, Phase
from ..identity_cache import by_identity
from . import constants as C
from .plan import Plan

if TYPE_CHECKING:  # pragma: no cover
    from ..catalog.models import ModelCard

PHASES = MEMORY_PHASES

# Term names (shown to users).
T_PARAMS = "params (sharded)"
T_GRADS = "gradients (sharded)"
T_OPTIM = "optimizer states (sharded)"
T_GATHER = "FSDP all-gathered layers"
T_ACT = "activations"
T_ACT_CKPT = "activations (grad ckpt)"
T_ACT_FWD = "activations (forward)"
T_LOGITS = "logits"
T_LOGITS_ENT = "logits+entropy"
T_ACTOR_RES = "actor params+optimizer (resident)"
T_CRITIC_RES = "critic params+optimizer (resident)"
T_REF_RES = "ref params (resident)"
T_RM_RES = "reward model params (resident)"
T_ENGINE_ASLEEP = "rollout engine (kept between rollouts)"
T_GRAPHS = "CUDA graphs (outside budget)"  # SGLang; vLLM >= 0.21 counts them inside its budget
T_NO_FIT = "engine budget too small for weights (rollout cannot start)"
T_SYNC_RECV = "weight-sync receive buffer (outside budget)"
T_SYNC_LOAD = "actor loaded for the weight sync (its excess over KV cache + activations)"
T_SYNC_GATHER = "params gathered in 16 bits for the weight sync (ZeRO-3; its excess over this phase's transients)"


# ----------------------------------------------------------------------------- model constants
@dataclass(frozen=True)
class ModelConsts:
    """Numbers derived once per model card."""

    layers: int
    hidden: int
    vocab: int
    heads: int
    q_dim: int  # width of the attention queries (heads * qk head dim)
    kv_dim: int  # width of the keys (= values for GQA; MLA: heads * v head dim)
    params: int  # total (weights)
    active: int  # per token (compute)
    critic_params: int  # value model: lm_head replaced by a hidden -> 1 head
    embed: int
    lm_head: int
    largest_unit: int  # largest FSDP unit: a decoder layer or the (untied) embedding / lm_head
    layer_unit: int  # largest decoder layer (the unit a layer-wise FSDP wrap policy gathers)
    routed_expert_params: int  # all routed experts (MoE), 0 for dense
    expert_hit_fraction: float  # top-k / experts
    decode_weight_params: int  # params read per decode step (all but the embedding table when untied)
    act_all_layers: int  # training activation bytes per token, all layers, no checkpointing
    act_max_layer: int  # one layer's training activation bytes per token (the largest)
    act_tail: int  # final norm + lm_head input, bytes per token
    engine_act_fixed: int  # inference forward transient per token, not split by TP
    engine_act_split: int  # inference forward transient per token, split by TP
    attn_flops_coeff: int  # forward attention FLOPs per sequence = coeff * s^2
    act_all_layers_mcore: int = 0  # the same per token, as megatron-core saves it (bf16 norms, fused SwiGLU)
    act_trained_norms: int = 0  # one layer's extra bytes per token when its RMSNorm weights train (full fine-tune)
    # megatron-core selective recompute: bytes per token each recompute module drops from one MoE / one dense layer
    # of ``act_all_layers_mcore`` ((module, bytes) pairs; ``mcore_recompute_drop``)
    mcore_drops_moe: tuple = ()
    mcore_drops_dense: tuple = ()
    moe_topk: int = 0  # routed experts per token (num_experts_per_tok), 0 for dense
    # which decoder layers are MoE (a card with first_k_dense_replace / decoder_sparse_step mixes the two), one dense
    # and one MoE layer's megatron-core activation bytes per token, and their parameters: (dense layer, MoE layer
    # less its routed experts, the routed experts of one MoE layer); a pipeline stage prices its own layers with them
    moe_layer_flags: tuple = ()
    act_layer_mcore: tuple = (0, 0)
    layer_params_kinds: tuple = (0, 0, 0)
    # vision tower of a vision-language card (ModelCard.vision_*; 0 for a text model): its parameters (tower without
    # merger, and merger), and the training activation bytes per ViT patch: one block's (the LM layer's terms at the
    # ViT's widths), the extra of its trained norms, and the merger's
    vision_tower_params: int = 0
    vision_merger_params: int = 0
    vision_depth: int = 0
    vision_hidden: int = 0
    vision_block_act: int = 0
    vision_block_trained_norms: int = 0
    vision_merger_act: int = 0

    @functools.cached_property
    def moe_layers(self) -> int:
        """How many decoder layers are MoE (``moe_layer_flags``)."""
        return sum(self.moe_layer_flags)

    def stage_moe_layers(self, bounds: list[int], stage: int) -> int:
        """How many of pipeline ``stage``'s own decoder layers are MoE, for the layer bounds ``stage_layer_bounds``
        gives (megatron-core gpt_layer_specs.py get_gpt_decoder_block_spec slices the moe_layer_freq pattern by the
        stage's layer offset, transformer_layer.py get_transformer_layer_offset)."""
        return sum(self.moe_layer_flags[bounds[stage]:bounds[stage + 1]])


_CONSTS: dict = {}


def model_consts(model: "ModelCard") -> ModelConsts:
    """Cached per card object (by identity: cards are immutable and the catalog caches them)."""
    return by_identity(_CONSTS, model, lambda: _compute_consts(model))


def _compute_consts(m: "ModelCard") -> ModelConsts:
    h, L, V, a = m.hidden_size, m.num_hidden_layers, m.vocab_size, m.num_attention_heads
    if m.is_mla:
        qk = m.qk_nope_head_dim + m.qk_rope_head_dim
        q_dim, k_dim, v_dim = a * qk, a * qk, a * m.v_head_dim
        out_dim = a * m.v_head_dim
        latent = m.q_lora_rank + m.kv_lora_rank + m.qk_rope_head_dim
        # latent projections' outputs (bf16) and their RMSNorm fp32 inputs
        attn_extra = C.BF16 * latent + C.ACT_NORM_BYTES_PER_HIDDEN * (m.q_lora_rank + m.kv_lora_rank)
    else:
        q_dim = a * m.head_dim
        k_dim = v_dim = m.num_key_value_heads * m.head_dim
        out_dim = q_dim
        attn_extra = 0
    # --- training activations per token per layer (Korthikanti-style, see constants.py)
    attn = (C.BF16 * h + C.BF16 * (q_dim + k_dim + v_dim) + C.BF16 * out_dim
            + C.ACT_LSE_BYTES_PER_HEAD * a + attn_extra)
    norms = m._norms_per_layer() * C.ACT_NORM_BYTES_PER_HIDDEN * h
    if m.qk_norm:
        norms += C.ACT_NORM_BYTES_PER_HIDDEN * (q_dim + k_dim)
    # a trained RMSNorm weight's `weight * x` also keeps x in bf16 (ACT_TRAINED_NORM_BYTES_PER_HIDDEN): every
    # norm of the layer, the q/k norms and MLA's latent norms included
    trained_norms = C.ACT_TRAINED_NORM_BYTES_PER_HIDDEN * (
        m._norms_per_layer() * h + ((q_dim + k_dim) if m.qk_norm else 0)
        + ((m.q_lora_rank + m.kv_lora_rank) if m.is_mla else 0))
    dense_mlp = C.BF16 * h + 4 * C.BF16 * m.intermediate_size
    shared = m.shared_expert_intermediate_size or m.moe_intermediate_size
    moe_mlp = (C.BF16 * h + C.ACT_ROUTER_BYTES_PER_EXPERT * m.num_experts
               + m.num_experts_per_tok * (C.BF16 * h + 4 * C.BF16 * m.moe_intermediate_size)
               + m.num_shared_experts * 4 * C.BF16 * shared)
    # megatron-core (Transformer Engine): LayerNormLinear keeps its bf16 input (2h per norm); the gated
    # MLP keeps fc1's output (2 x ffn) and the SwiGLU output (ffn), bf16: 6 B per ffn unit
    # (megatron/core/transformer/mlp.py MLP.forward), where HF keeps 4 tensors (8 B).
    mc_norms = m._norms_per_layer() * C.BF16 * h + (C.BF16 * (q_dim + k_dim) if m.qk_norm else 0)
    mc_dense = C.BF16 * h + C.MCORE_MLP_BYTES_PER_FFN * m.intermediate_size
    mc_moe = (C.BF16 * h + C.ACT_ROUTER_BYTES_PER_EXPERT * m.num_experts
              + m.num_experts_per_tok * (C.BF16 * h + C.MCORE_MLP_BYTES_PER_FFN * m.moe_intermediate_size)
              + m.num_shared_experts * C.MCORE_MLP_BYTES_PER_FFN * shared)
    drops_moe, drops_dense = _mcore_recompute_drops(m, h, q_dim + k_dim + v_dim, mc_moe, mc_dense, shared)
    mcore_total = 0
    per_layer = []
    ffn_eff_max = 0
    routed = 0
    layer_params_max = 0
    kinds = [0, 0, 0]
    for i in range(L):
        if m.is_moe_layer(i):
            kinds[2] = m.num_experts * m._gated_mlp(m.moe_intermediate_size)
            kinds[1] = m.layer_params(i) - kinds[2]
        else:
            kinds[0] = m.layer_params(i)
        mcore_total += attn + mc_norms + (mc_moe if m.is_moe_layer(i) else mc_dense)
        if m.is_moe_layer(i):
            per_layer.append(attn + norms + moe_mlp)
            ffn_eff = m.num_experts_per_tok * m.moe_intermediate_size + m.num_shared_experts * shared
            routed += m.num_experts * m._gated_mlp(m.moe_intermediate_size)
        else:
            per_layer.append(attn + norms + dense_mlp)
            ffn_eff = m.intermediate_size
        ffn_eff_max = max(ffn_eff_max, ffn_eff)
        layer_params_max = max(layer_params_max, m.layer_params(i))
    total = m.total_params()
    embed, lm_head = m.embedding_params(), m.lm_head_params()
    return ModelConsts(
        layers=L,
        hidden=h,
        vocab=V,
        heads=a,
        q_dim=q_dim,
        kv_dim=max(k_dim, v_dim),
        params=total,
        active=m.active_params(),
        critic_params=total - lm_head + h,
        embed=embed,
        lm_head=lm_head,
        largest_unit=max(layer_params_max, embed, lm_head),
        layer_unit=layer_params_max,
        routed_expert_params=routed,
        expert_hit_fraction=(m.num_experts_per_tok / m.num_experts) if m.is_moe else 1.0,
        decode_weight_params=total - (embed if lm_head else 0),
        act_all_layers=sum(per_layer),
        act_max_layer=max(per_layer),
        act_tail=(C.ACT_NORM_BYTES_PER_HIDDEN + C.BF16) * h,
        engine_act_fixed=C.ENGINE_ACT_RESIDUAL_COPIES * C.BF16 * h,
        engine_act_split=C.BF16 * (2 * q_dim + k_dim + v_dim) + C.BF16 * 3 * ffn_eff_max,
        attn_flops_coeff=4 * q_dim * L,
        act_all_layers_mcore=mcore_total,
        act_trained_norms=trained_norms,
        mcore_drops_moe=drops_moe,
        mcore_drops_dense=drops_dense,
        moe_topk=m.num_experts_per_tok if m.is_moe else 0,
        moe_layer_flags=tuple(m.is_moe_layer(i) for i in range(L)),
        act_layer_mcore=(attn + mc_norms + mc_dense, attn + mc_norms + mc_moe),
        layer_params_kinds=tuple(kinds),
        **_vision_consts(m),
    )


def _vision_consts(m: "ModelCard") -> dict[str, int]:
    """The ViT's numbers (``ModelConsts.vision_*``); none for a text model, whose constants stay as they were.

    A Qwen2_5_VLVisionBlock (transformers models/qwen2_5_vl/modeling_qwen2_5_vl.py) is a pre-norm transformer layer
    over patches: norm1 (RMSNorm), attention with one qkv Linear(d, 3d) and proj Linear(d, d) (flash/SDPA kernels
    keep q, k, v, the output and the softmax statistics), norm2 and a gated MLP Qwen2_5_VLMLP (gate, up, down, SiLU):
    priced with the LM layer's per-token terms (``_compute_consts``, constants.py ACT_*) at the ViT's widths
    (d = vision hidden, q = k = v = d, ``vision_num_heads`` heads, ffn = vision intermediate). Window and
    full-attention blocks keep the same tensors per patch (the window blocks only cut cu_seqlens: no attention matrix
    with the flash/SDPA kernels). The merger (Qwen2_5_VLPatchMerger) keeps ln_q's fp32 input and its two Linear and
    GELU inputs, d bytes per patch each in bf16 (the 4d-wide rows are spatial_merge_size^2 = 4 patches).

    Qwen2-VL's Qwen2VLVisionBlock (transformers models/qwen2_vl/modeling_qwen2_vl.py, 4.51.3 and 4.52.4; the card's
    ``vision_plain_mlp``): the same attention; norm1, norm2 and the merger's ln_q are torch LayerNorms, which keep
    their bf16 input (the per-row mean and rstd are a rounding); VisionMlp keeps fc1's input (d), and of the ffn-wide
    rows QuickGELU's input and its sigmoid (activations.py QuickGELUActivation: ``input * sigmoid(1.702 * input)``)
    and fc2's input, the product: three."""
    if not m.has_vision:
        return {}
    d, ffn, heads = m.vision_hidden_size, m.vision_intermediate_size, m.vision_num_heads
    attn = C.BF16 * d + C.BF16 * 3 * d + C.BF16 * d + C.ACT_LSE_BYTES_PER_HEAD * heads
    if m.vision_plain_mlp:
        return dict(
            vision_tower_params=m.vision_tower_params(),
            vision_merger_params=m.vision_merger_params(),
            vision_depth=m.vision_depth,
            vision_hidden=d,
            vision_block_act=attn + 2 * C.BF16 * d + C.BF16 * d + 3 * C.BF16 * ffn,
            vision_block_trained_norms=0,
            vision_merger_act=(C.BF16 + 3 * C.BF16) * d,
        )
    norms = 2 * C.ACT_NORM_BYTES_PER_HIDDEN * d
    mlp = C.BF16 * d + 4 * C.BF16 * ffn
    return dict(
        vision_tower_params=m.vision_tower_params(),
        vision_merger_params=m.vision_merger_params(),
        vision_depth=m.vision_depth,
        vision_hidden=d,
        vision_block_act=attn + norms + mlp,
        vision_block_trained_norms=C.ACT_TRAINED_NORM_BYTES_PER_HIDDEN * 2 * d,
        vision_merger_act=(C.ACT_NORM_BYTES_PER_HIDDEN + 3 * C.BF16) * d,
    )


def _mcore_recompute_drops(m: "ModelCard", h: int, qkv_dim: int, mc_moe: int, mc_dense: int,
                           shared: int) -> tuple[tuple, tuple]:
    """What each megatron-core selective recompute module drops from one MoE layer's and one dense layer's saved
    activations (bytes per token, of ``act_all_layers_mcore``), read from megatron-core 0.13.0 (0.12.2 the same;
    0.14.0 adds shared_experts) with the Transformer Engine layer spec verl and ms-swift build
    (models/gpt/gpt_layer_specs.py get_gpt_layer_with_transformer_engine_spec: the norm before attention and a dense
    MLP's norm are fused into their first linear, IdentityOp in the layer; a MoE layer's pre-MLP norm and an MLA
    layer's input norm are separate TENorms):

    - ``moe`` (transformer/moe/moe_layer.py MoELayer.forward: tensor_parallel.checkpoint of route, dispatch, experts
      and combine): the layer keeps only its input, the pre-MLP norm's output; router, permuted tokens, the experts'
      fc1/SwiGLU outputs and the shared experts go (``mc_moe - 2h``).
    - ``moe_act`` (moe/experts.py TEGroupedMLP.forward, CheckpointWithoutOutput): the routed experts' SwiGLU outputs.
    - ``shared_experts`` (0.14.0 moe_layer.py, tensor_parallel.checkpoint of the shared experts): their fc1/SwiGLU.
    - ``mlp`` (transformer_layer.py TransformerLayer._forward_mlp; dense MLPs only, not a MoELayer): the checkpoint
      keeps the MLP's input, which the fused norm keeps anyway; the norm's output and fc1/SwiGLU outputs go.
    - ``layernorm`` (TransformerLayer._forward_attention / _forward_mlp, CheckpointWithoutOutput on input_layernorm
      and pre_mlp_layernorm unless IdentityOp): the separate norms' bf16 outputs (a MoE layer's pre-MLP norm, MLA's
      input norm); a fused norm has none to drop.
    - ``mla_up_proj`` (multi_latent_attention.py MLASelfAttention.get_query_key_value_tensors,
      CheckpointWithoutOutput): q, k and v after the up projections and RoPE.
    - ``core_attn`` (attention.py Attention._checkpointed_attention_forward): nothing, as selective recompute always
      was here: the flash kernel saves q, k, v, its output and the softmax statistics; the checkpoint keeps q, k, v
      and linear_proj keeps the output, so only the statistics go (4 B per head, a rounding).

    ``tensor_parallel.checkpoint`` saves its inputs and reruns the function in backward; ``CheckpointWithoutOutput``
    frees its output's storage, every saved reference to it, until the consumer's backward
    (core/tensor_parallel/random.py CheckpointFunction, CheckpointWithoutOutput)."""
    norm_out = C.BF16 * h
    mla_in = norm_out if m.is_mla else 0
    up_proj = C.BF16 * qkv_dim if m.is_mla else 0
    moe = {
        "moe": mc_moe - norm_out,
        "moe_act": m.num_experts_per_tok * C.MCORE_SWIGLU_OUT_BYTES_PER_FFN * m.moe_intermediate_size,
        "shared_experts": m.num_shared_experts * C.MCORE_MLP_BYTES_PER_FFN * shared,
        "layernorm": norm_out + mla_in,
        "mla_up_proj": up_proj,
    }
    dense = {"mlp": mc_dense, "layernorm": mla_in, "mla_up_proj": up_proj}
    moe_layers = any(m.is_moe_layer(i) for i in range(m.num_hidden_layers))
    return (tuple((k, v) for k, v in moe.items() if v > 0 and moe_layers),
            tuple((k, v) for k, v in dense.items() if v > 0))


def _mcore_drops_per_layer(mc: ModelConsts, modules) -> tuple[float, float]:
    """Bytes per token the selective recompute of ``modules`` drops from one MoE layer and from one dense layer."""
    chosen = set(modules)
    if "moe" in chosen:
        chosen -= {"moe_act", "shared_experts"}
    return (sum(v for k, v in mc.mcore_drops_moe if k in chosen),
            sum(v for k, v in mc.mcore_drops_dense if k in chosen))


def mcore_recompute_drop(mc: ModelConsts, modules) -> tuple[float, float]:
    """Bytes per token that megatron-core's selective recompute of ``modules`` drops: over all layers, and the most
    one layer drops (what its backward recomputes). ``moe`` checkpoints the whole MoE layer, so ``moe_act`` and
    ``shared_experts`` drop nothing more beside it."""
    moe, dense = _mcore_drops_per_layer(mc, modules)
    n_dense = mc.layers - mc.moe_layers
    return moe * mc.moe_layers + dense * n_dense, max(moe if mc.moe_layers else 0, dense if n_dense else 0)


# ----------------------------------------------------------------------------- report
@dataclass
class MemoryReport:
    """Per-GPU bytes by phase and term (only the phases that run)."""

    capacity_bytes: int
    margin_bytes: float
    phases: dict[str, dict[str, float]] = field(default_factory=dict)
    kv_cache_tokens: int = 0  # KV capacity of one rollout engine (replica), tokens
    kv_cache_bytes: float = 0.0  # per GPU
    engine_budget_bytes: float = 0.0  # vLLM: util x total; SGLang: mem_fraction x free
    rollout_fits_weights: bool = True  # weights (+ activations + one sequence of KV) fit the budget
    engine_shortfall_bytes: float = 0.0  # how much more the engine budget needs, when it does not fit
    # vLLM: the engine sizes its KV cache to fill util x total after profiling its own peak (and, since vLLM
    # 0.21, its CUDA graphs), so its budget is one reservation, not allocator churn
    engine_self_sized: bool = False

    @property
    def usable_bytes(self) -> float:
        return self.capacity_bytes - self.margin_bytes

    def usable_for(self, phase: str) -> float:
        """The line a phase's peak must stay under. Every phase: capacity less the safety margin. The rollout
        phase of a vLLM engine: capacity less the margin's fixed part (CUDA contexts, NCCL buffers) only. The
        fragmentation allowance is for the caching allocator's churn; vLLM's budget is measured and reserved
        whole at start-up (vLLM itself refuses to start when util x total exceeds the free memory), and
        what the trainer keeps resident meanwhile is allocated once (docs/cost-model.md section 3)."""
        if phase == Phase.ROLLOUT and self.engine_self_sized:
            return self.hard_bytes
        return self.usable_bytes

    @property
    def hard_bytes(self) -> float:
        """Capacity less the fixed part of the margin (driver reserve, CUDA contexts, NCCL buffers): a peak
        above it cannot run; one between the usable memory and this eats the fragmentation allowance and
        may run or not (``tight``)."""
        return self.capacity_bytes - min(self.margin_bytes, C.MARGIN_FIXED_BYTES)

    def verdict(self, phase: str) -> str:
        """"yes" (within the usable memory), "tight" (inside the safety margin: may OOM) or "no"."""
        peak = self.peak(phase)
        return "yes" if peak <= self.usable_for(phase) else "tight" if peak <= self.hard_bytes else "no"

    def peak(self, phase: str) -> int:
        return int(math.ceil(sum(self.phases[phase].values())))

    def largest_terms(self, phase: str, k: int = 3) -> list[tuple[str, float]]:
        items = [(n, b) for n, b in self.phases[phase].items() if b > 0]
        items.sort(key=lambda nb: nb[1], reverse=True)
        return items[:k]

    def fits(self, phase: str) -> bool:
        return self.peak(phase) <= self.usable_for(phase)

    def summary(self) -> dict[str, int]:
        return {p: self.peak(p) for p in self.phases}


# ----------------------------------------------------------------------------- helpers
def margin_bytes(capacity: float) -> float:
    """Safety margin per GPU: CUDA contexts, NCCL buffers, fragmentation (constants.py)."""
    return C.MARGIN_FIXED_BYTES + C.MARGIN_FRACTION * capacity


def logits_tensor_bytes(tokens: float, vocab: int, dtype_bytes: int = C.FP32) -> float:
    """One [tokens, vocab] tensor (verl #2828: fp32 [24.6k, 152064] = 13.91 GiB)."""
    return tokens * vocab * dtype_bytes


def _pos(x: float) -> float:
    return x if x > 0.0 else 0.0


def _mp(plan: Plan) -> int:
    return max(1, plan.tp) * max(1, plan.pp)


def _state_bytes(plan: Plan, params: float, kind: str = "") -> tuple[float, float, float]:
    """(weights, grads, optimizer) bytes per GPU of a trained model, fully resident; ``kind``: the
    ``C.STATE_BYTES`` row to price them at where it is not the plan's trainer's."""
    wb, gb, ob = C.STATE_BYTES.get(kind or plan.trainer, C.STATE_BYTES["fsdp"])
    if plan.optimizer_8bit and (kind or plan.trainer) in DDP_TRAINERS:
        ob = C.ADAM_8BIT_STATE_BYTES  # bitsandbytes' 8-bit AdamW moments (Plan.optimizer_8bit)
    n = max(1, plan.shard_degree)
    z = plan.zero_stage
    p = params / _mp(plan)
    w = wb * p / (n if z >= 3 else 1)
    g = gb * p / (n if z >= 2 else 1)
    o = ob * p / (n if (z >= 1 or plan.distributed_optimizer) else 1)
    return w, g, o


def _trained_params(mc: ModelConsts, plan: Plan, critic: bool) -> float:
    p = float(mc.critic_params if critic else mc.params)
    if plan.ep > 1 and mc.routed_expert_params:
        p -= mc.routed_expert_params * (1.0 - 1.0 / plan.ep)
    return p - frozen_vision_params(plan, mc)


def frozen_vision_params(plan: Plan, mc: ModelConsts) -> float:
    """The vision parts a full fine-tune leaves frozen (``Plan.vision_tower_frozen`` / ``vision_merger_frozen``): they
    keep their weights but get no gradient or optimizer state. ms-swift freezes them by name
    (swift/llm/argument/tuner_args.py TunerArguments._init_multimodal_full: --freeze_vit adds the model arch's
    vision_tower, --freeze_aligner its aligner, to freeze_parameters; for qwen2_5_vl model_arch.py MultiModelKeys
    qwen2_vl: vision_tower 'visual', aligner 'visual.merger'). 0 for a text model."""
    return (float(mc.vision_tower_params) * plan.vision_tower_frozen
            + float(mc.vision_merger_params) * plan.vision_merger_frozen)


# ----------------------------------------------------------------------------- Megatron / DeepSpeed states
def megatron_stage_layers(plan: Plan, layers: int) -> list[float]:
    """Decoder layers on each pipeline stage, as megatron-core builds them
    (megatron/core/transformer/transformer_block.py:get_num_layers_to_build): ``num_layers_in_first/
    last_pipeline_stage`` pin the edge stages and the rest split evenly; ``account_for_embedding/
    loss_in_pipeline_split`` count the embedding and the loss as one layer each of the first and last
    stage, so those stages build one decoder layer fewer. A split that does not divide is reported by the
    framework's rules (verl.megatron.layers_divisible_by_pp); here it is spread evenly."""
    pp = max(1, plan.pp)
    if pp == 1:
        return [float(layers)]
    first, last = plan.pp_first_layers, plan.pp_last_layers
    if first is not None or last is not None:
        mid_stages = pp - (first is not None) - (last is not None)
        mid = max(0.0, layers - (first or 0) - (last or 0)) / max(1, mid_stages)
        split = [mid] * pp
        if first is not None:
            split[0] = float(first)
        if last is not None:
            split[-1] = float(last)
        return split
    emb, loss = int(plan.pp_account_embedding), int(plan.pp_account_loss)
    per = (layers + emb + loss) / pp
    return [per - emb] + [per] * (pp - 2) + [per - loss]


def stage_layer_bounds(mc: ModelConsts, split: tuple[float, ...] | list[float]) -> list[int] | None:
    """First decoder layer of each pipeline stage and the end, when the stages split the layers into whole numbers
    (megatron-core transformer_layer.py get_transformer_layer_offset: a stage's layers follow the earlier stages'); None
    for a split that does not divide (spread evenly, ``megatron_stage_layers``) or a card whose layers are all of one
    kind (the average layer is every layer)."""
    flags = mc.moe_layer_flags
    if not flags or all(flags) or not any(flags):
        return None
    if any(abs(n - round(n)) > 1e-9 for n in split) or round(sum(split)) != len(flags):
        return None
    bounds = [0]
    for n in split:
        bounds.append(bounds[-1] + int(round(n)))
    return bounds


def megatron_shard_params(mc: ModelConsts, tp: int, pp: int, ep: int, etp: int,
                          critic: bool = False, plan: Plan | None = None,
                          stage: int | None = None) -> tuple[float, float]:
    """(dense, routed-expert) parameters on one GPU of pipeline ``stage`` (None: the most loaded).

    Megatron-LM megatron/training/theoretical_memory_usage.py:compute_weight_and_optimizer_memory:
    "(1/pp_size transformer layers + 1 embedding layer) / tp_size", plus the output layer when
    untied and pp == 1. The first stage holds the embedding, the last the output layer; a stage's
    layers come from ``megatron_stage_layers`` (even when ``plan`` is None). Routed experts are split
    by EP x ETP within a stage (megatron-core MoE layer).
    """
    tp, pp, ep, etp = max(1, tp), max(1, pp), max(1, ep), max(1, etp)
    split = tuple(megatron_stage_layers(plan, mc.layers)) if plan is not None and pp > 1 else None
    # interleaved (VPP): a stage holds every PP-th chunk of layers, not one run of them: the average layer
    by_kind = plan is None or max(1, plan.vpp) == 1
    return _shard_params(mc, tp, pp, ep, etp, critic, split, stage, by_kind)


@functools.lru_cache(maxsize=4096)
def _shard_params(mc: ModelConsts, tp: int, pp: int, ep: int, etp: int, critic: bool,
                  split: tuple[float, ...] | None, stage: int | None, by_kind: bool = True) -> tuple[float, float]:
    """``megatron_shard_params`` of a stage split (None: the even one), remembered: a cost table asks for the same few
    layouts row after row (the 64-GPU MoE of benchmarks/bench_recommend.py: 50,000 calls, 0.17 s)."""
    head = mc.hidden if critic else mc.lm_head  # the critic's value head is hidden -> 1
    total = mc.critic_params if critic else mc.params
    routed = mc.routed_expert_params
    block = (total - mc.embed - head - routed) / max(1, mc.layers)
    split = split or (mc.layers / pp,) * pp

    bounds = stage_layer_bounds(mc, split) if by_kind else None
    dense_layer, moe_rest, moe_routed = mc.layer_params_kinds
    # what the decoder layers leave of ``block`` (the final norm, a vision tower): spread over the layers as before
    rest = block - (sum(dense_layer if not f else moe_rest for f in mc.moe_layer_flags) / max(1, mc.layers))

    def on(i: int) -> tuple[float, float]:
        edge = (mc.embed if i == 0 else 0.0) + (head if i == pp - 1 else 0.0)
        if bounds is None:
            return (block * split[i] + edge) / tp, routed / max(1, mc.layers) * split[i] / (ep * etp)
        # the stage's own layers, dense or MoE
        n_moe = mc.stage_moe_layers(bounds, i)
        n_dense = split[i] - n_moe
        own = n_dense * dense_layer + n_moe * moe_rest + rest * split[i]
        return (own + edge) / tp, moe_routed * n_moe / (ep * etp)

    if stage is not None:
        return on(stage)
    return max((on(i) for i in range(pp)), key=sum)


def _megatron_states(plan: Plan, mc: ModelConsts, critic: bool,
                     stage: int | None = None) -> tuple[float, float, float]:
    """bf16 params (2 B), fp32 grad buffer (4 B), fp32 master + Adam moments (12 B) of a GPU of pipeline
    ``stage`` (None: the most loaded); the distributed optimizer shards the 12 B over the data-parallel (x CP) ranks of the dense
    part and the expert-data-parallel ranks of the experts (Megatron's "6 + 12/dp" bytes/param)."""
    tp, pp = max(1, plan.tp), max(1, plan.pp)
    ep, etp = max(1, plan.ep), max(1, plan.etp or plan.tp)
    dense, expert = megatron_shard_params(mc, tp, pp, ep, etp, critic, plan, stage)
    wb, gb, ob = C.STATE_BYTES["mixed"]
    w, g = wb * (dense + expert), gb * (dense + expert)
    if plan.distributed_optimizer:
        dp_dense = max(1, plan.n_gpus // (tp * pp))  # data x context parallel ranks
        dp_expert = max(1, plan.n_gpus // (ep * etp * pp))
        o = ob * (dense / dp_dense + expert / dp_expert)
    else:
        o = ob * (dense + expert)
    if plan.cpu_optimizer:  # megatron/core/optimizer/cpu_offloading HybridDeviceOptimizer
        o *= 1.0 - min(1.0, max(0.0, plan.optimizer_offload_fraction))
    return w, g, o


def deepspeed_states(params: float, n: int, stage: int, grad_accum_fp32: bool = False) -> tuple[float, float, float]:
    """DeepSpeed ZeRO bytes per GPU that live through the update (no offload), read from DeepSpeed 0.19.6.

    Its estimators (stage_1_and_2.py estimate_zero2_model_states_mem_needs: "2 * total_params +
    18 * total_params / total_gpus", stage3.py estimate_zero3_model_states_mem_needs: "18 * total_params /
    total_gpus"; 18 = 2 16-bit grads + 4 fp32 grads + 4 fp32 params + 8 Adam moments) are upper bounds: the
    code keeps the gradients in the model's dtype (engine.get_data_types: grad_accum_dtype = model_dtype
    unless configured) and makes their fp32 copy only inside the optimizer step, one partition (stages 1-2,
    stage_1_and_2.py step: flat_grad_partition.to(fp32)) or one sub-group (stage 3,
    _prepare_fp32_grad_for_sub_group) at a time, after the backward's activations are gone
    (``deepspeed_step_bytes``). So: 16-bit params (2, sharded at stage 3), 16-bit grads (2: whole at stage 1,
    whose gradients are reduced into the partition only at the step; sharded at stages 2-3), fp32 master and
    moments (12, sharded from stage 1). Stage 0 (BF16_Optimizer, engine._configure_bf16_optimizer) keeps fp32
    gradients too: the estimator's 2 + 18 unpartitioned; so does stage 1 when the config sets
    ``data_types.grad_accum_dtype`` fp32 (``grad_accum_fp32``: engine._do_optimizer_sanity_check picks the
    BF16_Optimizer then), with the optimizer states still partitioned. With offload the update leaves 2 * total_params
    (stages 1-2) or 2 * total_params / total_gpus (stage 3) on the GPU, as the estimators say.
    """
    n = max(1, n)
    if stage >= 3:
        return C.BF16 * params / n, C.BF16 * params / n, 3 * C.FP32 * params / n
    if stage == 0:
        return C.BF16 * params, (C.BF16 + C.FP32) * params, 3 * C.FP32 * params
    if stage == 1 and grad_accum_fp32:
        return C.BF16 * params, (C.BF16 + C.FP32) * params, 3 * C.FP32 * params / n
    return C.BF16 * params, C.BF16 * params / (n if stage >= 2 else 1), 3 * C.FP32 * params / n


def deepspeed_step_bytes(params: float, n: int, stage: int) -> float:
    """The optimizer step's fp32 copy of the gradients (stages 1-3): the whole partition, or at stage 3 one
    sub-group of at most ``sub_group_size`` (zero/config.py default 1e9) elements."""
    if stage < 1:
        return 0.0
    part = params / max(1, n)
    return C.FP32 * (min(part, C.DEEPSPEED_SUB_GROUP_SIZE) if stage >= 3 else part)


def _states(plan: Plan, mc: ModelConsts, critic: bool) -> tuple[float, float, float]:
    """(weights, grads, optimizer) bytes per GPU of the actor or critic, whatever the trainer."""
    if plan.lora_params and not critic:
        return _lora_states(plan, mc)
    if plan.trainer == "megatron":
        return _megatron_states(plan, mc, critic)
    frozen = frozen_vision_params(plan, mc)
    if plan.trainer == "deepspeed":
        w, g, o = deepspeed_states(_trained_params(mc, plan, critic) / _mp(plan), plan.shard_degree, plan.zero_stage,
                                   plan.deepspeed_grad_accum_fp32)
        if frozen:  # frozen weights in 16 bits, partitioned at stage 3 as every parameter zero.Init builds
            w += deepspeed_states(frozen / _mp(plan), plan.shard_degree, plan.zero_stage)[0]
        return w, g, o
    w, g, o = _state_bytes(plan, _trained_params(mc, plan, critic))
    if frozen:
        w += _state_bytes(plan, frozen)[0]
    return w, g, o


def _lora_states(plan: Plan, mc: ModelConsts) -> tuple[float, float, float]:
    """LoRA: the frozen base in the dtype the trainer loads weights in (bf16; verl's FSDP engine loads a trained
    model in fp32, transformer_impl._build_module, and casts the adapter to it), sharded as the trainer shards
    weights (ZeRO-3 / FSDP, Megatron's TP x PP x EP layout), and the adapter's weights, grads and optimizer
    states as the trainer keeps a trained model's."""
    lora = float(plan.lora_params)
    if plan.trainer == "megatron":
        dense, expert = megatron_shard_params(mc, plan.tp, plan.pp, plan.ep, plan.etp or plan.tp, False, plan)
        f = lora / max(1.0, float(mc.params))  # the adapters are this share of the model, split as their layers
        w, g, o = _megatron_states(plan, mc, False)
        return C.BF16 * (dense + expert) + w * f, g * f, o * f
    # the whole base, a vision-language model's ViT and merger included, frozen or not
    frozen = (_trained_params(mc, plan, False) + frozen_vision_params(plan, mc)) / _mp(plan)
    sharded = plan.zero_stage >= 3 or plan.trainer in ("fsdp", "mixed")
    weight_bytes = C.STATE_BYTES["fsdp"][0] if plan.trainer == "fsdp" else max(C.BF16, plan.model_dtype_bytes)
    base = weight_bytes * frozen / (max(1, plan.shard_degree) if sharded else 1)
    if plan.base_weight_bytes:
        base = quantized_base_bytes(plan, mc) / (max(1, plan.shard_degree) if sharded else 1)
    if plan.trainer == "deepspeed":
        w, g, o = deepspeed_states(lora / _mp(plan), plan.shard_degree, plan.zero_stage)
    elif plan.trainer in DDP_TRAINERS and plan.lora_dtype_bytes:
        # the adapter in its own dtype (Plan.lora_dtype_bytes: peft's fp32 upcast, or a framework's bf16 cast), its
        # gradients and torch AdamW's two moments in the same dtype, as a DDP trainer keeps a model of that dtype
        w, g, o = _state_bytes(plan, lora, "fp32" if plan.lora_dtype_bytes >= C.FP32 else "bf16")
    else:
        w, g, o = _state_bytes(plan, lora)
    return base + w, g, o


def quantized_base_bytes(plan: Plan, mc: ModelConsts) -> float:
    """A quantized frozen base (``Plan.base_weight_bytes``) on one GPU: the decoder layers' weights quantized, the
    embedding and lm_head in the load dtype, 16 bits at least (bitsandbytes leaves them unquantized: transformers' bnb
    integration skips the output embedding, and the input embedding is no Linear; TRL >= 1.0 loads them in fp32 unless
    told, ModelConfig dtype "float32")."""
    return quantized_model_bytes(mc, plan.base_weight_bytes, max(C.BF16, plan.model_dtype_bytes)) / _mp(plan)


def quantized_model_bytes(mc: ModelConsts, per_weight: float, dense_bytes: float, critic: bool = False) -> float:
    """A whole model whose decoder weights take ``per_weight`` bytes each and whose embedding and lm_head (or, with
    ``critic``, value head) take ``dense_bytes`` (bitsandbytes quantizes linear layers only, and none of the output
    embedding)."""
    decoder = float(mc.params - mc.embed - mc.lm_head)
    total = float(mc.critic_params if critic else mc.params)
    return per_weight * decoder + dense_bytes * (total - decoder)


def _resident_states(plan: Plan, mc: ModelConsts, critic: bool, param_off: bool, opt_off: bool) -> float:
    """What a trained model keeps on the GPU while another phase runs. Megatron's DDP keeps its
    fp32 grad buffer allocated (verl releases it with param_offload: offload_megatron_model_to_cpu)."""
    w, g, o = _states(plan, mc, critic)
    keep_g = plan.trainer == "megatron" and not param_off
    return (0.0 if param_off else w) + (g if keep_g else 0.0) + (0.0 if opt_off else o)


def _ref_param_bytes(plan: Plan, mc: ModelConsts, critic: bool = False) -> float:
    """A forward-only bf16 model (reference, or the reward model with ``critic``) on one GPU; quantized as the
    actor's frozen base (``Plan.base_weight_bytes``) where the framework loads every model so (OpenRLHF's
    ``--ds.load_in_4bit``: frameworks/openrlhf/cost.py)."""
    if plan.trainer == "megatron":
        # the actor's layout (verl's megatron_ref.yaml reads the actor's megatron section): its stage split, and the
        # average layer under VPP, as the actor's own states
        dense, expert = megatron_shard_params(mc, plan.tp, plan.pp, plan.ep, plan.etp or plan.tp, critic, plan)
        return C.REF_PARAM_BYTES * (dense + expert)
    params = mc.critic_params if critic else mc.params
    shard = max(1, plan.shard_degree) if plan.zero_stage >= 3 or plan.trainer in ("fsdp", "mixed") else 1
    dtype_bytes = max(C.REF_PARAM_BYTES, plan.model_dtype_bytes)
    if plan.base_weight_bytes:
        return quantized_model_bytes(mc, plan.base_weight_bytes, dtype_bytes, critic) / _mp(plan) / shard
    return dtype_bytes * params / _mp(plan) / shard


def megatron_layer_activation_bytes(plan: Plan, mc: ModelConsts) -> float:
    """Saved activation bytes per token of one average decoder layer on one GPU (Korthikanti et
    al. 2022, Table 2): sequence parallel splits every term by TP; without it only 24 of the 34
    units are split; full recompute keeps the layer input (2 B x h, split by TP with SP); selective
    recompute drops what its ``recompute_modules`` drop (``mcore_recompute_drop``)."""
    tp = max(1, plan.tp)
    sp = plan.sequence_parallel or tp == 1
    if plan.recompute == "full":
        return C.ACT_CKPT_BYTES_PER_HIDDEN * mc.hidden / (tp if sp else 1)
    total = mc.act_all_layers_mcore
    if plan.recompute == "selective":
        total -= mcore_recompute_drop(mc, plan.recompute_modules)[0]
    layer = total / max(1, mc.layers)
    return _megatron_split(plan, layer)


def megatron_stage_activation_bytes(plan: Plan, mc: ModelConsts, split: list[float], stage: int) -> float:
    """Saved activation bytes per token of one micro batch over pipeline ``stage``'s own decoder layers: a card that
    mixes dense and MoE layers (DeepSeek-V3's first three are dense) prices the stage's layers by their kind
    (megatron-core gpt_layer_specs.py get_gpt_decoder_block_spec slices the moe_layer_freq pattern by the stage's
    layer offset, transformer_layer.py get_transformer_layer_offset); otherwise the average layer
    (``megatron_layer_activation_bytes``) times the stage's layers."""
    # interleaved (VPP): a stage holds every PP-th chunk of layers, not one run of them: the average layer
    bounds = stage_layer_bounds(mc, split) if max(1, plan.vpp) == 1 else None
    if bounds is None or plan.recompute == "full":  # full recompute keeps each layer's input alike
        return megatron_layer_activation_bytes(plan, mc) * split[stage]
    n_moe = mc.stage_moe_layers(bounds, stage)
    n_dense = split[stage] - n_moe
    dense, moe = mc.act_layer_mcore
    if plan.recompute == "selective":
        drop_moe, drop_dense = _mcore_drops_per_layer(mc, plan.recompute_modules)
        dense, moe = dense - drop_dense, moe - drop_moe
    return _megatron_split(plan, n_dense * dense + n_moe * moe)


def _megatron_split(plan: Plan, per_token: float) -> float:
    """One GPU's share of per-token layer activations under TP: all of them split with sequence parallel, only 24
    of Korthikanti's 34 units without."""
    tp = max(1, plan.tp)
    return per_token / tp if plan.sequence_parallel or tp == 1 else per_token * (10 + 24 / tp) / 34


def megatron_recomputed_layer_bytes(plan: Plan, mc: ModelConsts) -> float:
    """Bytes per token of the one layer a Megatron backward recomputes on top of the saved activations: the whole
    largest layer with full recompute, the most one layer's selective modules drop, nothing without recompute."""
    if plan.recompute == "full":
        return mc.act_max_layer / max(1, plan.tp)
    if plan.recompute == "selective":
        return _megatron_split(plan, mcore_recompute_drop(mc, plan.recompute_modules)[1])
    return 0.0


def megatron_pipeline_factor(plan: Plan) -> float:
    """Layers' worth of one micro batch's activations on PP stage 0, over the whole model.

    1F1B: stage 0 holds PP micro batches of its L/PP layers (= L layers) when a mini batch has at
    least PP micro batches, else min(1, n_mb/PP); interleaved (VPP) multiplies by
    1 + (PP-1)/(PP*VPP) (theoretical_memory_usage.py:compute_activation_memory)."""
    pp, vpp = max(1, plan.pp), max(1, plan.vpp)
    in_flight = pp if plan.pp_in_flight is None else max(1, min(pp, plan.pp_in_flight))
    factor = in_flight / pp
    if vpp > 1 and pp > 1:
        factor = 1.0 + (pp - 1) / (pp * vpp)
    return factor


def _gather_bytes(plan: Plan, mc: ModelConsts, backward: bool, critic: bool = False) -> float:
    """Unsharded units in flight under ZeRO-3 / FSDP. In backward a trained unit also has its unsharded gradient;
    under LoRA the base weights are frozen (peft tuners/tuners_utils.py BaseTuner._mark_only_adapters_as_trainable),
    so the largest unit (a decoder layer's base weights, the embedding or lm_head) is gathered for the input
    gradient but gets no gradient of its own: FSDP reduce-scatters only parameters that received one
    (torch/distributed/fsdp/_runtime_utils.py _post_backward_hook; FSDP2 FSDPParamGroup.post_backward), and the
    adapters' gradients are rank-sized.

    With ``Plan.fsdp_root`` the wrap policy is known: the parameters no policy wraps sit in the ROOT unit, which
    stays gathered from the forward's start to the backward's end (FSDP1 torch/distributed/fsdp/_runtime_utils.py
    _post_forward_reshard returns early for the root; FSDP2 fully_shard leaves the root unresharded after forward),
    beside the wrapped units in flight (_root_and_units)."""
    if plan.zero_stage < 3 or max(1, plan.shard_degree) <= 1:
        return 0.0
    mp = _mp(plan)
    root, in_flight = _root_and_units(plan, mc, critic)
    b = C.BF16 * (root + in_flight) / mp
    if backward and not plan.lora_params:
        if plan.fsdp_root_known:
            b += fsdp_head_grad_bytes(plan, mc, critic) + C.FSDP_BWD_GRAD_BYTES * mc.layer_unit / mp
        else:
            b += C.FSDP_BWD_GRAD_BYTES * mc.largest_unit / mp
    return b


def fsdp_head_grad_bytes(plan: Plan, mc: ModelConsts, critic: bool = False) -> float:
    """Under verl's wrap policies (``Plan.fsdp_root``) the head's gradient, made by the lm_head's backward at the start
    of the backward (the tied embedding's weight when the model ties them; the critic's value head), is held unsharded
    in bf16 to the end of the backward: the root unit's gradient is only complete, and reduce-scattered, once the
    embedding's backward has run, the last of all. FSDP1 builds the root's flat gradient from its parameters' views
    (torch/distributed/fsdp/_flat_param.py FlatParamHandle._use_unsharded_views; the post-backward hook sits on the
    flat parameter's AccumulateGrad, _runtime_utils.py _register_post_backward_hook); FSDP2 reduces the root's group
    (and an untied embedding's, whose module has no input that needs a gradient) in the root's final callback
    (fully_shard's FSDPState._root_post_backward_final_callback). A decoder layer's unsharded gradient and its fp32
    cast (``FSDP_BWD_GRAD_BYTES``) come and go with that layer's backward."""
    head = mc.hidden if critic else (mc.lm_head or mc.embed)
    return C.BF16 * head / _mp(plan)


def fsdp_root_reduce_bytes(plan: Plan, mc: ModelConsts, critic: bool = False) -> float:
    """The gradients verl's wrap policies reduce at the very end of the backward (``fsdp_head_grad_bytes``): the
    embedding's and the untied lm_head's (the critic's embedding), unsharded in bf16 with their fp32 cast for the fp32
    reduce-scatter (reduce_dtype=fp32: ``FSDP_BWD_GRAD_BYTES``), when the activations, the logits and the layers'
    gradients are gone. 0 under LoRA (the base weights are frozen) or without a known policy."""
    if not plan.fsdp_root_known or plan.lora_params or plan.zero_stage < 3 \
            or max(1, plan.shard_degree) <= 1:
        return 0.0
    params = mc.embed + (0 if critic else mc.lm_head)
    return C.FSDP_BWD_GRAD_BYTES * params / _mp(plan)


def _root_and_units(plan: Plan, mc: ModelConsts, critic: bool) -> tuple[float, float]:
    """(root unit's params, params of the ``FSDP_UNITS_IN_FLIGHT`` wrapped units gathered at once) under the FSDP
    wrap policy ``Plan.fsdp_root`` names.

    "fsdp1": verl's get_fsdp_wrap_policy (verl/utils/fsdp_utils.py, read at 0.2.0, 0.5.0, 0.6.1) wraps the
    ``_no_split_modules`` decoder layers (and, with LoRA, the trainable adapter leaves) only, so the embedding and an
    untied lm_head stay in the root; two decoder layers are in flight. "fsdp2": verl's apply_fsdp2 (same file) also
    shards an untied ``nn.Embedding`` on its own (``not model.config.tie_word_embeddings``), so only the lm_head (or,
    tied, the shared embedding) stays in the root and the embedding is in flight with the first layer. The critic's
    head is hidden -> 1 (no lm_head). "" (a wrap policy not read): no root, two units of the largest of layer,
    embedding and lm_head in flight (the bound for any layer-wise policy)."""
    pair = C.FSDP_UNITS_IN_FLIGHT
    if not plan.fsdp_root_known:
        return 0.0, float(pair * mc.largest_unit)
    head = 0 if critic else mc.lm_head
    layers = float(pair * mc.layer_unit)
    if plan.fsdp_root == "fsdp2" and mc.lm_head:  # untied: the embedding is a unit of its own
        return float(head), max(layers, float(mc.embed + (pair - 1) * mc.layer_unit))
    return float(mc.embed + head), layers


def _seq_len(plan: Plan) -> int:
    return max(1, plan.prompt_len) + max(0, plan.response_len)


def micro_tokens(plan: Plan, micro: int, budget: int | None, share_samples: float | None = None) -> float:
    """Tokens one GPU holds in its largest micro batch (after Ulysses SP).

    ``share_samples``: sequences of the batch being split that one data-parallel rank holds; with a
    token budget and ``Plan.budget_capped_by_batch``, a micro batch holds at most all of them.
    """
    sp = max(1, plan.sp) * max(1, plan.cp)
    if budget:
        # verl's dynamic batching packs up to the per-GPU token budget (times sp per SP group).
        tokens = float(max(1, budget))
        if plan.budget_capped_by_batch and share_samples:
            if plan.packed_sum_z is None and plan.peak_length_fraction >= 1.0:
                return balanced_split_tokens(plan, budget, share_samples)
            tokens = min(tokens, packed_tokens(plan, max(1.0, share_samples)) / sp)
        return tokens
    return packed_tokens(plan, max(1, micro)) / sp


def balanced_split_tokens(plan: Plan, budget: int, share_samples: float) -> float:
    """Tokens one GPU holds in the largest micro batch verl's dynamic batching makes of ``share_samples`` sequences
    at the priced lengths (every one at ``peak_length_fraction`` of the limits), under a per-GPU budget of ``budget``.

    verl/utils/seqlen_balancing.py rearrange_micro_batches (the same in 0.2.0.post2, 0.3.0.post1, 0.4.0, 0.5.0,
    0.6.1, 0.7.1 and 0.9.0, and in the forks of January 2025) does not fill micro batches up to the budget: it takes
    ``k = ceil(total tokens / max_token_len)`` micro batches (at most one per sequence; ``max_token_len`` is the
    per-GPU budget times the Ulysses or context-parallel size) and spreads the sequences over them with
    get_seqlen_balanced_partitions(..., equal_size=False), Karmarkar-Karp's differencing method. Of ``n`` sequences of
    one length that gives ``ceil(n / k)`` sequences to the largest micro batch, which can exceed the budget: 64
    sequences of 9,216 tokens at 32,768 make 18 micro batches, the largest of 4 sequences (36,864 tokens). Priced at
    the limits only (``micro_tokens``: every sequence at its maximum, the partition's worst case); at shorter lengths
    (``peak_length_fraction`` < 1, check's typical peaks) the sequences' spread lets the differencing method hold
    about the budget, so the budget stays the cap there, as before. The split
    counts a sequence's tokens (its attention mask); a padded micro batch (no remove_padding) holds each at the full
    width (``packed_tokens``). With an interleaved pipeline (Megatron, ``vpp`` > 1) the count is rounded up to a
    multiple of the pipeline size (0.5.0 to 0.7.1 workers/actor/megatron_actor.py forward_backward_batch and 0.9.0
    workers/engine/megatron/transformer_impl.py pass num_batches_divided_by=microbatch_group_size_per_vp_stage,
    which megatron-core's ModelParallelConfig sets to the pipeline size when unset). verl 0.9.1 adds micro batches
    until each is within the budget (the same function's "hard limit" loop); its pack, the 0.9 series', judges 0.9.0
    configs as well (and configs that name no release), so the 0.9.0 split is priced there too: for a 0.9.1 run, at
    most one sequence over what it holds."""
    sp = max(1, plan.sp) * max(1, plan.cp)
    n = max(1, math.ceil(share_samples - 1e-9))
    effective = float(_seq_len(plan)) * min(1.0, max(0.0, plan.peak_length_fraction))
    k = min(n, max(1, math.ceil(n * max(1.0, effective) / (max(1, budget) * sp))))
    if plan.trainer == "megatron" and plan.vpp > 1 and plan.pp > 1:
        k = math.ceil(k / plan.pp) * plan.pp
    return packed_tokens(plan, math.ceil(n / k)) / sp


def packed_tokens(plan: Plan, n: float) -> float:
    """Tokens of ``n`` sequences in one micro batch, before sequence parallelism: padded, n x (max prompt + max
    response); packed (``remove_padding``), each at ``peak_length_fraction`` of the limits, and with
    ``packed_sum_z`` at most that quantile of the sum at the data's mean lengths (lengths.packed_sum_tokens)."""
    seq = float(_seq_len(plan))
    if not plan.remove_padding:
        return n * seq
    tokens = n * max(1.0, seq * min(1.0, max(0.0, plan.peak_length_fraction)))
    if plan.packed_sum_z is not None:
        from .lengths import packed_sum_tokens
        from .time import _lengths

        prompt, response, max_response = _lengths(plan)
        tokens = min(tokens, max(1.0, packed_sum_tokens(n, prompt, response, max(1, plan.prompt_len),
                                                        max_response, plan.packed_sum_z)))
    return tokens


def _dp_share(plan: Plan, batches: int = 1) -> float:
    """Sequences one data-parallel rank holds of the step (``batches`` = 1) or of one mini-batch."""
    dp = max(1, plan.n_gpus // (max(1, plan.sp) * max(1, plan.cp) * _mp(plan)))
    return plan.samples_per_step / max(1, batches) / dp


def _norms_train(plan: Plan, critic: bool) -> bool:
    """Do the RMSNorm weights train? Yes in a full fine-tune; no under LoRA, where PEFT trains the adapters only
    (peft tuners/tuners_utils.py BaseTuner._mark_only_adapters_as_trainable) — the actor's, as ``_states`` reads it."""
    return critic or not plan.lora_params


def _activations(plan: Plan, mc: ModelConsts, tokens: float, ckpt: bool, logits: float = 0.0,
                 critic: bool = False) -> float:
    """Training activations of a micro batch of ``tokens`` tokens.

    With gradient checkpointing, ``logits`` (the logits-related bytes of the same pass) and the one
    recomputed layer are never alive together: the logits and their gradient are freed by the lm_head's
    backward, which runs before the last decoder layer is recomputed (torch/utils/checkpoint.py,
    non-reentrant checkpoint: the forward is re-run when backward first unpacks a saved tensor; verl
    passes use_reentrant=False, workers/engine/fsdp/transformer_impl.py FSDPEngine._build_module). The
    peak is ``checkpoints + max(logits, recomputed layer)``: this term holds the checkpoints and only the
    recomputed layer's excess over the logits term counted beside it (ACT_RECOMPUTE_OVERLAPS_LOGITS). When the
    norm weights train (``_norms_train``), each layer also keeps its norms' bf16 inputs (``act_trained_norms``)."""
    split = max(1, plan.tp)  # Megatron TP with sequence parallel splits every term
    norms = mc.act_trained_norms if _norms_train(plan, critic) else 0
    if ckpt:
        # offloaded (Plan.ckpt_offload): the checkpoints are in host RAM but the one in transit, the next layer's
        # input copied back (unsloth_zoo/gradient_checkpointing.py Unsloth_Offloaded_Gradient_Checkpointer: forward
        # saves the layer's input to the CPU, backward copies it back and recomputes the layer)
        ckpts = _checkpoint_bytes(plan, mc, tokens)
        layer = tokens * (mc.act_max_layer + norms) / split
        if C.ACT_RECOMPUTE_OVERLAPS_LOGITS:
            return ckpts + layer
        return ckpts + max(0.0, layer - logits)
    return tokens * ((mc.act_all_layers + mc.layers * norms) / split + mc.act_tail)


def _checkpoint_bytes(plan: Plan, mc: ModelConsts, tokens: float) -> float:
    """The activation checkpoints a gradient-checkpointed pass of ``tokens`` keeps on the GPU: every decoder layer's
    input (one, in transit, when offloaded: ``Plan.ckpt_offload``) and the tail after the last layer."""
    on_gpu = 1 if plan.ckpt_offload else mc.layers
    return tokens * (on_gpu * C.ACT_CKPT_BYTES_PER_HIDDEN * mc.hidden / max(1, plan.tp) + mc.act_tail)


def offloaded_checkpoint_bytes(plan: Plan) -> float:
    """Host bytes of one rank's activation checkpoints offloaded to the CPU (``Plan.ckpt_offload``: every decoder
    layer's input of the update's largest micro batch, the GPU keeping one of them)."""
    if not (plan.ckpt_offload and plan.grad_ckpt):
        return 0.0
    mc = model_consts(plan.model)
    tokens = micro_tokens(plan, plan.train_micro, plan.train_token_budget, _dp_share(plan, plan.mini_batches))
    return tokens * (mc.layers - 1) * C.ACT_CKPT_BYTES_PER_HIDDEN * mc.hidden / max(1, plan.tp)


def _forward_activations(plan: Plan, mc: ModelConsts, tokens: float, logits: float = 0.0) -> float:
    """A no-grad forward's activations: one layer's tensors at a time plus the residual stream. ``logits``, the
    bytes of the loss's logits terms counted beside this one: a layer's tensors are freed before the lm_head runs,
    so only their excess over the logits adds to the peak (measured on one H200, benchmarks/gpu_step_probe.py: the
    forward's peak is the logits and the residual stream, Qwen2.5-0.5B to 14B, docs/accuracy.md)."""
    residual = tokens * 2 * C.BF16 * mc.hidden
    layer = tokens * mc.act_max_layer / max(1, plan.tp)
    return residual + max(0.0, layer - logits)


def _logit_rows(plan: Plan, tokens: float) -> float:
    """Token positions whose logits the loss holds: every token, or the response's share of them."""
    return _response_rows(plan, tokens) if plan.logits_response_only else tokens


def _response_rows(plan: Plan, tokens: float) -> float:
    """The response's share of ``tokens`` positions (response length over the sequence's)."""
    return tokens * max(1, plan.response_len) / _seq_len(plan)


def _verl_logprob_rows(plan: Plan, tokens: float) -> float:
    """verl FSDP: the logit rows its log-probs and entropy work on. The packed path (use_remove_padding) and the
    engine's padded path ("all") use every token's; the legacy actor's padded path ("response") first slices the
    logits to the response positions (verl 0.1 to 0.7.1 workers/actor/dp_actor.py
    DataParallelPPOActor._forward_micro_batch, ``logits[:, -response_length - 1 : -1]``), so only those rows get the
    cross-entropy's copy and the entropy's temporaries; the logits themselves hold every token's row."""
    return _response_rows(plan, tokens) if plan.verl_padded_logprobs == "response" else tokens


def fused_linear_cross_entropy_bytes(plan: Plan, mc: ModelConsts, tokens: float, update: bool) -> float:
    """verl's fused linear cross-entropy on Megatron ("megatron-fused", constants.py): per-token fp32 outputs and
    per-vocab-split partials in the forward; in the update's backward, the reused bf16 d_logits slice, d_hidden and
    the lm_head shard's bf16 d_weight. Every token of the micro batch goes through the kernel."""
    tp = max(1, plan.tp)
    v = mc.vocab / tp
    splits = math.ceil(v / C.FUSED_LCE_VOCAB_PER_SPLIT)
    gathered = tokens * C.BF16 * mc.hidden if tp > 1 else 0.0  # sequence parallel: hidden states gathered
    out = tokens * C.FUSED_LCE_OUT_BYTES_PER_TOKEN
    partials = tokens * splits * C.FP32 * (C.FUSED_LCE_SPLIT_PARTIALS + (1 if tp > 1 else 0))
    forward = gathered + out + partials
    if not update:
        return forward
    backward = (gathered + out + tokens * (C.FUSED_LCE_DLOGITS_COLUMNS + mc.hidden) * C.BF16
                + v * mc.hidden * C.BF16)
    return max(forward, backward)


def verl_fused_ppo_bytes(plan: Plan, mc: ModelConsts, tokens: float, update: bool) -> float:
    """verl FSDP's fused log-probs, torch backend ("verl-fused-torch", constants.py VERL_FUSED_PPO_*): one chunk of
    512 rows' fp32 tensors at a time; in the update's backward also the hidden states' gradient, one chunk's
    contribution to the lm_head's gradient and, when the lm_head is trained, that gradient."""
    rows = min(tokens, C.VERL_FUSED_PPO_CHUNK_ROWS)
    if not update:
        return rows * mc.vocab * C.VERL_FUSED_PPO_FWD_BYTES_PER_LOGIT
    per_logit = (C.VERL_FUSED_PPO_BWD_ENTROPY_BYTES_PER_LOGIT if plan.entropy_in_update
                 else C.VERL_FUSED_PPO_BWD_BYTES_PER_LOGIT)
    # each chunk's [vocab, h] product is computed whether or not the lm_head is trained; its accumulator only when it is
    weight_grad = (1 if plan.lora_params else 2) * mc.vocab * mc.hidden * C.BF16
    return rows * mc.vocab * per_logit + tokens * mc.hidden * C.BF16 + weight_grad


def liger_grpo_loss_bytes(plan: Plan, mc: ModelConsts, rows: float) -> float:
    """Liger's chunked GRPO loss in the update (``Plan.liger_grpo_loss``, constants.py LIGER_GRPO_*): one
    sequence's completion logits at a time, the lm_head weight's gradient and a chunk's (in the weight's dtype),
    and the hidden states' gradients, listed and concatenated."""
    chunk = min(rows, max(1, plan.response_len))
    weight = C.LIGER_GRPO_WEIGHT_GRAD_COPIES * mc.vocab * mc.hidden * plan.model_dtype_bytes
    inputs = C.LIGER_GRPO_INPUT_GRAD_COPIES * rows * mc.hidden * plan.model_dtype_bytes
    return chunk * mc.vocab * C.LIGER_GRPO_BYTES_PER_LOGIT + weight + inputs


def _logits_forward(plan: Plan, mc: ModelConsts, tokens: float, entropy: bool) -> float:
    """Logits (and entropy) of a forward-only pass: old log-prob (entropy) or reference."""
    if plan.logits_impl in ("megatron-fused", "verl-fused-triton"):
        return fused_linear_cross_entropy_bytes(plan, mc, tokens, update=False)
    if plan.logits_impl == "verl-fused-torch":
        return verl_fused_ppo_bytes(plan, mc, tokens, update=False)
    v = mc.vocab / max(1, plan.tp)
    all_tokens = tokens
    tokens = _logit_rows(plan, tokens)
    if plan.logits_impl == "trl-fused":
        return C.FUSED_LM_HEAD_TILE_BYTES
    if plan.logits_impl == "unsloth-chunked":
        return unsloth_chunk_rows(tokens, mc.vocab) * v * C.FP32
    if plan.logits_impl == "unsloth-sequence":
        return 0.0  # hidden states, no logits (constants.py UNSLOTH_SEQUENCE_*)
    if plan.logits_impl in C.LOGIT_BYTES:
        fwd, fwd_entropy, _, _ = C.LOGIT_BYTES[plan.logits_impl]
        per_logit = max(fwd_entropy if entropy else fwd, _temperature_copy_bytes(plan))
        return tokens * v * per_logit + _sliced_off_logits(plan, mc, all_tokens)
    if plan.logits_impl == "verl-fsdp":
        # verl 0.9.1 FSDP engine (constants.py, docs/cost-model.md section 2); on the padded path the log-prob's
        # copy of its rows, made and freed on the other side of the entropy (no grad: nothing saved)
        base = tokens * v * C.LOGITS_BF16_BYTES_PER_LOGIT
        rows = _verl_logprob_rows(plan, tokens)
        copy = rows * v * C.BF16 if plan.verl_padded_logprobs else 0.0
        if not entropy:
            return base + copy
        if plan.entropy_chunking:
            return base + max(copy, min(rows, C.ENTROPY_CHUNK_ROWS) * v * C.ENTROPY_CHUNK_BYTES_PER_LOGIT)
        extra = (C.ENTROPY_COMPILED_FWD_EXTRA_BYTES_PER_LOGIT if plan.use_torch_compile
                 else C.ENTROPY_EAGER_FWD_EXTRA_BYTES_PER_LOGIT)
        return base + max(copy, rows * v * extra)
    if not entropy:
        return tokens * v * C.LOGITS_FWD_BYTES_PER_LOGIT
    if plan.entropy_chunking:
        rows = min(tokens, C.ENTROPY_CHUNK_ROWS)
        return tokens * v * C.LOGITS_FWD_BYTES_PER_LOGIT + rows * v * C.ENTROPY_CHUNK_BYTES_PER_LOGIT
    return tokens * v * C.ENTROPY_FWD_BYTES_PER_LOGIT


def _temperature_copy_bytes(plan: Plan) -> float:
    """Bytes per response logit of a forward-only pass while the logits and their out-of-place temperature quotient
    are both alive (``Plan.logits_temperature_copy``, constants.TEMPERATURE_COPY_FWD_BYTES_PER_LOGIT); 0 without."""
    if not plan.logits_temperature_copy:
        return 0.0
    return C.TEMPERATURE_COPY_FWD_BYTES_PER_LOGIT.get(plan.logits_impl, 0.0)


def _sliced_off_logits(plan: Plan, mc: ModelConsts, tokens: float) -> float:
    """The logits of the positions before the response that a whole-sequence forward computes and slices off
    (``Plan.logits_whole_sequence``), at the impl's forward bytes per logit: in a forward-only pass the model's
    logits tensor of every position, in the update also its full-size gradient, which the slice's backward
    allocates (zeros of the whole tensor's shape) before the lm_head's backward reads it."""
    if not (plan.logits_whole_sequence and plan.logits_response_only and plan.logits_impl in C.LOGIT_BYTES):
        return 0.0
    v = mc.vocab / max(1, plan.tp)
    return (tokens - _response_rows(plan, tokens)) * v * C.LOGIT_BYTES[plan.logits_impl][0]


def _logits_update(plan: Plan, mc: ModelConsts, tokens: float) -> float:
    """Logits-related bytes at the peak of the actor update's loss forward and backward."""
    if plan.logits_impl in ("megatron-fused", "verl-fused-triton"):
        return fused_linear_cross_entropy_bytes(plan, mc, tokens, update=True)
    if plan.logits_impl == "verl-fused-torch":
        return verl_fused_ppo_bytes(plan, mc, tokens, update=True)
    v = mc.vocab / max(1, plan.tp)
    all_tokens = tokens
    tokens = _logit_rows(plan, tokens)
    if plan.logits_impl == "trl-fused":
        head_grad = 0.0 if plan.lora_params else C.FUSED_LM_HEAD_GRAD_BYTES_PER_WEIGHT * mc.vocab * mc.hidden
        return C.FUSED_LM_HEAD_TILE_BYTES + head_grad
    if plan.logits_impl == "unsloth-chunked":
        return unsloth_chunk_rows(tokens, mc.vocab) * v * C.UNSLOTH_LOGPROB_BYTES_PER_LOGIT
    if plan.logits_impl == "unsloth-sequence":
        return unsloth_sequence_loss_bytes(plan, mc, tokens)
    if plan.liger_grpo_loss:
        return liger_grpo_loss_bytes(plan, mc, tokens)
    if plan.logits_impl in C.LOGIT_BYTES:
        _, _, upd, upd_entropy = C.LOGIT_BYTES[plan.logits_impl]
        return tokens * v * (upd_entropy if plan.entropy_in_update else upd) + _sliced_off_logits(plan, mc, all_tokens)
    if plan.logits_impl == "verl-fsdp":
        base = tokens * v * C.LOGITS_BF16_BYTES_PER_LOGIT  # packed: the gradient overwrites the logits
        rows = _verl_logprob_rows(plan, tokens)
        if plan.verl_padded_logprobs:
            # padded: the cross-entropy works on its own bf16 copy of its rows, with the gradient in place or beside
            base += rows * v * C.BF16 * (1 if plan.ce_inplace_backward else 2)
        elif plan.entropy_in_update:
            base += tokens * v * C.LOGITS_GRAD_BYTES_PER_LOGIT  # cross-entropy grad, not in place
        if not plan.entropy_in_update:
            return base
        if plan.entropy_chunking:
            return (base + rows * v * C.ENTROPY_CHUNKED_UPDATE_EXTRA_BYTES_PER_LOGIT
                    + min(rows, C.ENTROPY_CHUNK_ROWS) * v * C.ENTROPY_CHUNK_BYTES_PER_LOGIT)
        extra = (C.ENTROPY_COMPILED_UPDATE_EXTRA_BYTES_PER_LOGIT if plan.use_torch_compile
                 else C.ENTROPY_EAGER_UPDATE_EXTRA_BYTES_PER_LOGIT)
        return base + rows * v * extra  # entropy_checkpointing: same peak (constants.py)
    base = tokens * v * C.LOGITS_UPDATE_BYTES_PER_LOGIT
    if not plan.entropy_in_update:
        return base
    if plan.entropy_chunking:
        transient = min(tokens, C.ENTROPY_CHUNK_ROWS) * v * C.ENTROPY_CHUNK_BYTES_PER_LOGIT
        saved = tokens * v * C.ENTROPY_SAVED_CHUNKED_BYTES_PER_LOGIT
    else:
        transient = tokens * v * (C.ENTROPY_FWD_BYTES_PER_LOGIT - C.LOGITS_FWD_BYTES_PER_LOGIT)
        saved = tokens * v * C.ENTROPY_SAVED_BYTES_PER_LOGIT
    # entropy_checkpointing drops the saved tensors; the recompute is transient
    return base + (transient if plan.entropy_checkpointing else max(transient, saved))


def unsloth_sequence_loss_bytes(plan: Plan, mc: ModelConsts, rows: float) -> float:
    """Unsloth 2025.9's loss (``logits_impl = "unsloth-sequence"``, constants.py UNSLOTH_SEQUENCE_*): one sequence's
    completion logits at a time, with their gradient, and the old and reference policies' logits of the same
    sequence where the loss reads them (``Plan.loss_old_logits``, ``Plan.need_ref``)."""
    chunk = min(rows, max(1, plan.response_len))
    copies = int(plan.loss_old_logits) + int(plan.need_ref)
    per_logit = C.UNSLOTH_SEQUENCE_LOSS_BYTES_PER_LOGIT + copies * C.UNSLOTH_SEQUENCE_POLICY_COPY_BYTES_PER_LOGIT
    return chunk * mc.vocab / max(1, plan.tp) * per_logit


def unsloth_chunk_rows(rows: float, vocab: int) -> int:
    """Rows of one chunk of Unsloth's chunked log-probs (unsloth_zoo/fused_losses/chunked_logprob.py
    chunked_logprob_rows: logits of 2 GiB at 8 bytes each, at most max(512, rows/8), never more than there are)."""
    cap = int(C.UNSLOTH_LOGPROB_CHUNK_BYTES / (max(1, vocab) * C.UNSLOTH_LOGPROB_BYTES_PER_LOGIT))
    per_eighth = max(C.UNSLOTH_LOGPROB_MIN_ROWS, math.ceil(rows / 8))
    return max(2, min(cap, per_eighth, math.ceil(rows)))


def sync_receive_bytes(plan: Plan, mc: ModelConsts) -> float:
    """The largest buffer an engine rank receives whole at the weight sync (``Plan.engine_receives_whole_weights``):
    the largest weight, the embedding or the lm_head ([vocab, hidden] in bf16, the largest tensor of the dense and MoE
    cards we carry), or a flat bucket of weights where the trainer sends buckets (``engine_sync_bucket_bytes``)."""
    return max(plan.engine_sync_bucket_bytes, C.BF16 * max(mc.embed, mc.lm_head))


def _sync_load_excess(plan: Plan, mc: ModelConsts, generation_only: float) -> float:
    """The weight sync's excess over generation (``Plan.sync_loads_trainer``). verl's Megatron sharding manager
    (workers/sharding_manager/megatron_vllm.py MegatronVLLMShardingManager.__enter__) loads an offloaded actor back
    to the GPU (load_megatron_model_to_gpu), wakes the engine's weights only (``wake_up(tags=["weights"])``), streams
    the weights into it, offloads the actor again and only then wakes the KV cache. verl 0.5.0 loads the params and
    the fp32 grad buffer (``load_grad`` default True); verl PR #2678 (0.6.0 on) passes ``load_grad=False``. While
    the KV cache sleeps the sync adds only what exceeds the generation's own KV cache and activations
    (``generation_only``); with ``free_cache_engine=False`` the engine never sleeps and the load adds whole."""
    a_param = plan.param_offload if plan.actor_param_offload is None else plan.actor_param_offload
    if not plan.sync_loads_trainer or not (plan.colocated and plan.actor_colocated and a_param):
        return 0.0
    w, g, _ = _states(plan, mc, False)
    loaded = w + (g if plan.sync_loads_trainer == "params+grads" else 0.0)
    return loaded if not plan.free_cache_engine else max(0.0, loaded - generation_only)


def sync_gather_bytes(plan: Plan, mc: ModelConsts) -> float:
    """The parameters a ZeRO-3 training rank holds gathered at once while it syncs the weights to vLLM
    (``Plan.sync_gather_groups``), in 16 bits, on top of its own shard: every parameter (adapter included), the
    largest group of N: ceil(layers / N) decoder layers, or the embedding with the final norm and lm_head (ms-swift
    rollout_mixin.py ``split_batches``: a parameter named with a layer index goes to group index // ceil(layers / N),
    any other to the embedding's group), or one parameter at a time: the largest, the embedding or lm_head.

    With the parameters offloaded to the CPU (ZeRO-3 ``offload_param``, ``Plan.param_offload``) a gather of more than
    one parameter also holds each one's own partition copied to the GPU until it returns (DeepSpeed 0.18.4
    runtime/zero/partition_parameters.py ``_allgather_params_coalesced``: ``local_tensors.append(
    param.ds_tensor.to(device))`` beside the whole ``flat_tensor`` it gathers into; a single parameter goes through
    ``_allgather_params``, which copies its partition straight into the gathered tensor): 1/N more of the group."""
    if not plan.sync_gather_groups or plan.trainer != "deepspeed" or plan.zero_stage < 3 or plan.engine != "vllm":
        return 0.0
    if plan.sync_gather_groups < 0:
        return C.BF16 * float(max(mc.embed, mc.lm_head))
    whole = float(mc.params + plan.lora_params)
    if plan.sync_gather_groups == 1:
        group = whole
    else:
        layers = math.ceil(mc.layers / plan.sync_gather_groups)
        group = min(whole, float(max(layers * mc.layer_unit, mc.embed + mc.lm_head)))
    own_partitions = group / max(1, plan.shard_degree) if plan.param_offload else 0.0
    return C.BF16 * (group + own_partitions)


def _sync_gather_excess(plan: Plan, mc: ModelConsts, transients: float, restored: float = 0.0) -> float:
    """The weight sync's gather (``sync_gather_bytes``) beyond what the phase it shares its residents with holds only
    for itself (``transients``: the forward's activations and logits, or a sleeping engine's KV cache and
    activations), plus the states that phase has offloaded but the sync still finds on the GPU (``restored``)."""
    gathered = sync_gather_bytes(plan, mc)
    return _pos(gathered + restored - transients) if gathered else 0.0


def cuda_graph_bytes(plan: Plan, mc: ModelConsts) -> float:
    if plan.enforce_eager:
        return 0.0
    return C.CUDA_GRAPH_FIXED_BYTES + C.CUDA_GRAPH_PER_LAYER_BYTES * mc.layers


def engine_activation_bytes(plan: Plan, mc: ModelConsts) -> float:
    """Torch peak of the engine's profile forward at max_num_batched_tokens + sampler."""
    tp = max(1, plan.rollout_tp)
    tokens = max(1, plan.max_num_batched_tokens)
    rows = min(max(1, plan.max_num_seqs), tokens)
    fwd = tokens * (mc.engine_act_fixed + mc.engine_act_split / tp)
    return fwd + rows * mc.vocab * C.ENGINE_SAMPLER_BYTES_PER_LOGIT


def engine_weight_bytes(plan: Plan, mc: ModelConsts) -> float:
    if plan.engine_shares_weights:  # the trainer's frozen base is the engine's weights (quantized or 16-bit)
        if plan.base_weight_bytes:
            return quantized_base_bytes(plan, mc) / max(1, plan.rollout_tp)
        return C.BF16 * mc.params / max(1, plan.rollout_tp)
    if plan.engine_base_bytes:  # the engine quantizes its own copy while loading it (vLLM's in-flight bitsandbytes)
        return quantized_model_bytes(mc, plan.engine_base_bytes, C.ROLLOUT_PARAM_BYTES) / max(1, plan.rollout_tp)
    return C.ROLLOUT_PARAM_BYTES * mc.params / max(1, plan.rollout_tp)


_KV_TOK: dict[tuple[int, int], tuple[object, int]] = {}


def kv_bytes_per_token(plan: Plan) -> int:
    """KV bytes per token on one rank at the rollout TP (``ModelCard.kv_bytes_per_token``), cached."""
    tp = max(1, int(plan.rollout_tp))
    hit = _KV_TOK.get((id(plan.model), tp))
    if hit is not None and hit[0] is plan.model:
        return hit[1]
    v = plan.model.kv_bytes_per_token(tp, C.KV_DTYPE_BYTES)
    _KV_TOK[(id(plan.model), tp)] = (plan.model, v)
    return v


def trainer_resident_at_rollout(plan: Plan, mc: ModelConsts) -> dict[str, float]:
    """Trainer state on each GPU while the engine generates (colocated only)."""
    if not plan.colocated:
        return {}
    out: dict[str, float] = {}
    a_param = _actor_param_offload_at_rollout(plan)
    a_opt = plan.optimizer_offload if plan.actor_optimizer_offload is None else plan.actor_optimizer_offload
    if plan.actor_colocated:
        out[T_ACTOR_RES] = _resident_states(plan, mc, False, a_param, a_opt)
    if plan.need_critic and plan.critic_colocated:
        out[T_CRITIC_RES] = _resident_states(plan, mc, True, plan.critic_param_offload,
                                             plan.critic_optimizer_offload)
    if plan.need_ref and not plan.ref_param_offload and not plan.ref_in_actor and plan.ref_colocated:
        out[T_REF_RES] = _ref_param_bytes(plan, mc)
    if plan.reward_model:
        out[T_RM_RES] = _ref_param_bytes(plan, mc, critic=True)
    return out


def _actor_param_offload_at_rollout(plan: Plan) -> bool:
    """Are the actor's params off the GPU while the colocated engine starts and generates? Its param_offload flag,
    unless the workers keep them there then (``Plan.actor_params_through_rollout``, verl 0.1-0.2)."""
    if plan.actor_params_through_rollout:
        return False
    return bool(plan.param_offload if plan.actor_param_offload is None else plan.actor_param_offload)


def _resident_at_engine_start(plan: Plan, mc: ModelConsts) -> float:
    """What the trainer holds on each GPU when a colocated engine starts: the models' weights, no optimizer state yet
    (torch's Adam allocates its moments at the first step). verl 0.1-0.2 build the critic, the reference and the actor
    before the rollout (verl/trainer/ppo/ray_trainer.py:RayPPOTrainer.init_workers, the actor's rollout last)."""
    if not plan.colocated:
        return 0.0
    a_param = _actor_param_offload_at_rollout(plan)
    out = _resident_states(plan, mc, False, a_param, True) if plan.actor_colocated else 0.0
    if plan.need_critic and plan.critic_colocated:
        out += _resident_states(plan, mc, True, plan.critic_param_offload, True)
    if plan.need_ref and not plan.ref_param_offload and not plan.ref_in_actor and plan.ref_colocated:
        out += _ref_param_bytes(plan, mc)
    if plan.reward_model:
        out += _ref_param_bytes(plan, mc, critic=True)
    return out


@dataclass
class EngineBudget:
    budget: float  # bytes the engine may use for weights + KV (+ activations for vLLM)
    weights: float
    activations: float  # inside the budget for vLLM, outside for SGLang
    non_torch: float
    kv_bytes: float
    kv_tokens: int
    fits: bool
    shortfall: float
    graphs: float


def engine_budget(plan: Plan, mc: ModelConsts, resident: float) -> EngineBudget:
    """The rollout engine's memory budget and KV capacity on one GPU.

    vLLM (v1 gpu_worker.determine_available_memory): budget = util * total; KV = budget -
    weights - profile activations - non-torch increase - CUDA graphs (inside since v0.21). SGLang (model_runner_kv_cache_mixin
    profile_max_num_token): KV = free_after_load - free_before_load * (1 - frac), i.e.
    budget = frac * (total - what others hold), KV = budget - weights; activations and
    CUDA graphs live in the remaining (1 - frac). vLLM in verl 0.1-0.2 (``engine_kv_of_free_memory``): KV = util *
    (total - the trainer's models at start-up - weights - profile activations - non-torch). vLLM 0.6.5-0.7.2 on a GPU
    other than its process's current one (``engine_kv_of_total``): KV = util * total, everything else on top.
    """
    cap = float(plan.gpu.memory_bytes)
    util = min(1.0, max(0.0, float(plan.gpu_memory_utilization)))
    weights = engine_weight_bytes(plan, mc)
    act = engine_activation_bytes(plan, mc)
    non_torch = C.ENGINE_NON_TORCH_BYTES
    graphs = cuda_graph_bytes(plan, mc)
    kv_tok = kv_bytes_per_token(plan)
    if plan.engine == "sglang":
        budget = util * _pos(cap - resident)
        kv = budget - weights
    elif plan.engine_kv_of_total:
        # KV = util x total: the profile, read on another GPU, saw no weights, activations or non-torch memory
        kv = util * cap
        budget = weights + act + non_torch + kv
    elif plan.engine_kv_of_free_memory:
        # KV = util x (free memory after the trainer's models at start-up, the engine's weights and its profile run)
        kv = util * (cap - _resident_at_engine_start(plan, mc) - weights - act - non_torch)
        budget = weights + act + non_torch + _pos(kv)
    else:
        budget = util * cap
        kv = budget - weights - act - non_torch - (graphs if plan.engine_graphs_in_budget else 0.0)
    need = C.ENGINE_MIN_SEQS_IN_KV * (plan.engine_max_len or _seq_len(plan)) * kv_tok
    fits = kv >= need
    shortfall = 0.0 if fits else need - kv  # kv < 0 when the weights alone overflow the budget
    kv = _pos(kv)
    return EngineBudget(budget, weights, act, non_torch, kv, int(kv // kv_tok), fits, shortfall, graphs)


# ----------------------------------------------------------------------------- phases
def hf_generate_batch(plan: Plan) -> int:
    """Sequences one process generates at once with the trained model's own ``generate`` (TRL 1.16
    GRPOTrainer._generate_single_turn, and ms-swift's transformers engine: the process's whole share of the
    generation batch), or ``Plan.hf_generate_micro`` of them per call when the trainer generates chunk by chunk."""
    local = _hf_generate_share(plan)
    return min(local, max(1, plan.hf_generate_micro)) if plan.hf_generate_micro else local


def hf_generate_calls(plan: Plan) -> int:
    """``generate`` calls one process makes per step (one unless ``Plan.hf_generate_micro`` chunks its share)."""
    return math.ceil(_hf_generate_share(plan) / hf_generate_batch(plan))


def _hf_generate_share(plan: Plan) -> int:
    """The sequences one process generates per step: its share of the step's samples."""
    return max(1, math.ceil(plan.samples_per_step / max(1, plan.n_gpus)))


def _hf_generate_terms(plan: Plan, mc: ModelConsts) -> dict[str, float]:
    """Generation by the trained model (no inference engine): its resident states, the ZeRO-3/FSDP params
    gathered for generation (trl unwrap_model_for_generation, ds3_gather_for_generation default True), the
    transformers KV cache (bf16, every head: no tensor parallel) of the whole local batch at full length, the
    prompt's prefill activations and the last position's logits with the sampler's fp32 copies."""
    terms = trainer_resident_at_rollout(plan, mc)
    seqs = hf_generate_batch(plan)
    n = max(1, plan.shard_degree)
    if n > 1 and (plan.zero_stage >= 3 or plan.trainer in ("fsdp", "mixed")):
        terms[T_GEN_GATHER] = C.BF16 * mc.params / _mp(plan) * (n - 1) / n
    terms[T_GEN_KV] = seqs * _seq_len(plan) * plan.model.kv_bytes_per_token(1, C.KV_DTYPE_BYTES)
    prompt = seqs * max(1, plan.prompt_len)
    # the prefill's logits of every prompt position (Plan.generate_logits_every_position), bf16: they exist once the
    # last layer's tensors are freed, so only the layers' excess over them adds (_forward_activations)
    every = prompt * mc.vocab * C.BF16 if plan.generate_logits_every_position else 0.0
    terms[T_GEN_ACT] = _forward_activations(plan, mc, prompt, every)
    if every:
        terms[T_GEN_LOGITS_ALL] = every
    terms[T_GEN_LOGITS] = seqs * mc.vocab * (C.BF16 + 2 * C.FP32)
    _add_vision_forward(terms, plan, mc, seqs, terms[T_GEN_ACT] + terms[T_GEN_LOGITS] + every)
    return terms


T_GEN_GATHER = "params gathered for generate (ZeRO-3/FSDP)"
T_GEN_KV = "generate KV cache (transformers, whole local batch)"
T_GEN_ACT = "generate prefill activations"
T_GEN_LOGITS = "generate logits (last position)"
T_GEN_LOGITS_ALL = "generate prefill logits (every prompt position)"


def _rollout_terms(plan: Plan, mc: ModelConsts, rep: MemoryReport) -> dict[str, float]:
    if plan.engine == "hf":
        return _hf_generate_terms(plan, mc)
    terms = trainer_resident_at_rollout(plan, mc)
    resident = sum(terms.values())
    eb = engine_budget(plan, mc, resident)
    name = "SGLang" if plan.engine == "sglang" else "vLLM"
    # shared with the trainer (Plan.engine_shares_weights): counted once, in the actor's resident states
    # (an engine that quantizes its own copy, Plan.engine_base_bytes: its decoder weights in NF4)
    dtype = "NF4" if plan.engine_base_bytes and not plan.engine_shares_weights else "bf16"
    terms[f"{name} weights ({dtype}, /TP)"] = 0.0 if plan.engine_shares_weights else min(eb.weights, eb.budget)
    if plan.engine == "sglang":
        terms[f"{name} KV cache"] = eb.kv_bytes
        terms[f"{name} activations (outside mem_fraction)"] = eb.activations + eb.non_torch
        terms[T_GRAPHS] = eb.graphs
    else:
        where = "on top: its profile read another GPU" if plan.engine_kv_of_total else "in budget"
        terms[f"{name} activations+workspaces ({where})"] = min(eb.activations + eb.non_torch,
                                                                 _pos(eb.budget - eb.weights))
        if not plan.engine_graphs_in_budget:  # captured after the KV cache is sized (vLLM before 0.21)
            terms[T_GRAPHS] = eb.graphs
        else:
            terms[f"{name} CUDA graphs (in budget)"] = min(eb.graphs, _pos(eb.budget - eb.weights - eb.activations
                                                                         - eb.non_torch))
        terms[f"{name} KV cache"] = eb.kv_bytes
        if plan.engine_receives_whole_weights and not plan.engine_colocated:
            terms[T_SYNC_RECV] = sync_receive_bytes(plan, mc)
        generation_only = terms[f"{name} KV cache"] + terms[f"{name} activations+workspaces ({where})"]
        excess = _sync_load_excess(plan, mc, generation_only)
        if excess > 0:
            terms[T_SYNC_LOAD] = excess
        if plan.colocated and plan.engine_colocated and plan.sync_gather_groups:
            # the sync runs before the rollout offloads the trainer's states and, with a sleeping engine, before the
            # KV cache wakes (Plan.sync_gather_groups)
            at_sync = replace(plan, actor_param_offload=plan.param_offload,
                              actor_optimizer_offload=plan.optimizer_offload, ref_param_offload=False)
            restored = sum(trainer_resident_at_rollout(at_sync, mc).values()) - resident
            gather = _sync_gather_excess(plan, mc, generation_only if plan.free_cache_engine else 0.0, restored)
            if gather > 0:
                terms[T_SYNC_GATHER] = gather
    if not eb.fits:
        # The engine refuses to start: push the phase past capacity by the shortfall.
        others = sum(terms.values())
        terms[T_NO_FIT] = _pos(rep.capacity_bytes - others) + eb.shortfall
    rep.kv_cache_tokens = eb.kv_tokens
    rep.kv_cache_bytes = eb.kv_bytes
    rep.engine_budget_bytes = eb.budget
    rep.rollout_fits_weights = eb.fits
    rep.engine_shortfall_bytes = eb.shortfall
    rep.engine_self_sized = plan.engine != "sglang"
    return terms


def _colocated_extra(plan: Plan, mc: ModelConsts, running: str) -> dict[str, float]:
    """Other models' resident state and the sleeping engine, during a training phase. The other models live on the
    training GPUs whether or not the engine does (``*_colocated``): in ms-swift's and TRL's server mode the reference
    stays beside the policy (ms-swift 4.6.0 swift/rlhf_trainers/rlhf_mixin.py RLHFTrainerMixin.__init__ prepares it on
    the training ranks: prepare_deepspeed, prepare_fsdp or accelerate); the engine counts only when it shares them
    (``colocated`` and ``engine_colocated``)."""
    if not plan.count_colocated_residents:
        return {}
    out: dict[str, float] = {}
    if running != "actor" and plan.actor_colocated:
        # In a ref or critic plan, param_offload / optimizer_offload are that model's flags,
        # so the actor's come from actor_param_offload / actor_optimizer_offload (None: kept).
        a_param = bool(plan.actor_param_offload)
        a_opt = bool(plan.actor_optimizer_offload)
        out[T_ACTOR_RES] = _resident_states(plan, mc, False, a_param, a_opt)
    if plan.need_critic and running != "critic" and plan.critic_colocated:
        out[T_CRITIC_RES] = _resident_states(plan, mc, True, plan.critic_param_offload,
                                             plan.critic_optimizer_offload)
    if (plan.need_ref and not plan.ref_param_offload and not plan.ref_in_actor and running != Phase.REF
            and (plan.trainer != "fsdp" or plan.ref_on_gpu) and plan.ref_colocated):
        out[T_REF_RES] = _ref_param_bytes(plan, mc)
    if plan.reward_model:
        out[T_RM_RES] = _ref_param_bytes(plan, mc, critic=True)
    if plan.colocated and plan.engine_colocated:
        # what an engine keeps between rollouts: asleep (free_cache_engine), its CUDA graphs; awake, its whole
        # budget (vLLM's holds its graphs; SGLang's graphs and activations live outside it). vLLM's TP
        # all-reduce buffers are in the margin's fixed part (constants.ENGINE_TP_BUFFER_BYTES)
        if plan.free_cache_engine:
            out[T_ENGINE_ASLEEP] = cuda_graph_bytes(plan, mc)
        else:
            eb = engine_budget(plan, mc, sum(out.values()))
            outside = eb.graphs + eb.activations if plan.engine == "sglang" else (
                0.0 if plan.engine_graphs_in_budget else eb.graphs)
            # verl 0.1-0.2's bundled vLLM: the sharding manager drops the weights and empties torch's cache after
            # each rollout (verl 0.2.0.post2 workers/sharding_manager/fsdp_vllm.py FSDPVLLMShardingManager.__exit__:
            # offload_model_weights, torch.cuda.empty_cache), so only the KV cache (and CUDA graphs) stay; an engine
            # sharing the trainer's weights (Unsloth) keeps none of its own (counted as the actor's)
            if plan.engine_weights_released:
                kept = eb.kv_bytes
            elif plan.engine_shares_weights:
                kept = eb.budget - eb.weights
            else:
                kept = eb.budget
            out[T_ENGINE_ASLEEP] = kept + outside
    return out


def _logprob_terms(plan: Plan, mc: ModelConsts) -> dict[str, float]:
    w, g, o = _states(plan, mc, False)
    tokens = micro_tokens(plan, plan.logprob_micro, plan.logprob_token_budget, _dp_share(plan))
    keep_w = not (plan.param_offload and plan.offload_during_compute)
    logits = _logits_forward(plan, mc, tokens, entropy=True)
    terms = {
        T_PARAMS: w if keep_w else 0.0,
        T_OPTIM: 0.0 if plan.optimizer_offload else o,
        T_GATHER: _gather_bytes(plan, mc, backward=False),
        T_ACT_FWD: _forward_activations(plan, mc, tokens, logits),
        T_LOGITS_ENT: logits,
    }
    _add_vision_forward(terms, plan, mc, tokens / _seq_len(plan), terms[T_ACT_FWD] + logits)
    # Megatron: the DDP grad buffer stays allocated, unless params are offloaded: verl's eval context then
    # loads the params alone (verl 0.9.1 workers/engine/base.py BaseEngineCtx._context_switch, mode "eval":
    # grad=False; utils/megatron_utils.py load_megatron_model_to_gpu(load_grad=False))
    if plan.trainer == "megatron" and not plan.param_offload:
        terms[T_GRADS] = g
    if not (plan.colocated and plan.engine_colocated):
        # an engine on GPUs of its own: the sync runs on the training ranks with this forward's residents, before it
        # (a colocated engine's sync is priced in the rollout, _rollout_terms)
        gather = _sync_gather_excess(plan, mc, terms[T_GATHER] + terms[T_ACT_FWD] + terms[T_LOGITS_ENT])
        if gather > 0:
            terms[T_SYNC_GATHER] = gather
    batch = batch_on_gpu_bytes(plan, Phase.OLD_LOG_PROB)
    if batch:
        terms[T_BATCH] = batch
    terms.update(_colocated_extra(plan, mc, "actor"))
    return terms


def _ref_terms(plan: Plan, mc: ModelConsts) -> dict[str, float]:
    tokens = micro_tokens(plan, plan.logprob_micro, plan.logprob_token_budget, _dp_share(plan))
    # FSDP CPUOffload and DeepSpeed ZeRO-3 param offload stream from the CPU copy; verl Megatron loads
    # offloaded params back to the GPU for the forward
    offloaded = (plan.ref_param_offload or plan.param_offload) and plan.trainer in ("fsdp", "deepspeed")
    if plan.ref_in_actor:
        # the actor's own weights, adapter disabled. Streamed from the CPU (offload during compute): none; kept on
        # the GPU between phases and counted as the actor's resident state below: not twice; offloaded between
        # phases: loaded back for this pass (verl 0.4.0 fsdp_workers.py compute_ref_log_prob -> compute_log_prob
        # -> load_fsdp_model_to_gpu; ms-swift 3.6.1 grpo_trainer.py offload_context reloads the model when the generation
        # it wraps ends, before _generate_and_score_completions' ref pass)
        counted = plan.count_colocated_residents and plan.actor_colocated
        streamed = bool(plan.actor_param_offload) and plan.offload_during_compute
        resident = counted and not plan.actor_param_offload
        params = 0.0 if streamed or resident else _states(plan, mc, False)[0]
    else:
        params = 0.0 if offloaded else _ref_param_bytes(plan, mc)
    logits = _logits_forward(plan, mc, tokens, entropy=plan.ref_entropy)
    terms = {
        T_PARAMS: params,
        T_GATHER: _gather_bytes(plan, mc, backward=False),
        T_ACT_FWD: _forward_activations(plan, mc, tokens, logits),
        (T_LOGITS_ENT if plan.ref_entropy else T_LOGITS): logits,
    }
    _add_vision_forward(terms, plan, mc, tokens / _seq_len(plan), terms[T_ACT_FWD] + logits)
    if plan.ref_beside_policy_graph:
        terms[T_POLICY_GRAPH] = _policy_graph_bytes(plan, mc, tokens)
    if plan.held_gathered_model:
        terms[T_HELD_MODEL] = C.BF16 * mc.params / _mp(plan)
    batch = batch_on_gpu_bytes(plan, Phase.REF)
    if batch:
        terms[T_BATCH] = batch
    terms.update(_colocated_extra(plan, mc, Phase.REF))
    return terms


T_POLICY_GRAPH = "policy forward's graph, kept for its backward (reference pass inside the loss)"
T_HELD_MODEL = "whole model gathered for the vLLM weight load, still held (compute_loss's state_dict)"


def _policy_graph_bytes(plan: Plan, mc: ModelConsts, tokens: float) -> float:
    """What the policy's forward of ``tokens`` keeps for its backward while another pass runs (``Plan
    .ref_beside_policy_graph``): its activation checkpoints (every activation without checkpointing) and the
    log_softmax output of every response row (TRL 0.14's per-row loop saves each row's output for its backward), in
    the trainer's logits dtype (``model_dtype_bytes``)."""
    saved = _checkpoint_bytes(plan, mc, tokens) if plan.grad_ckpt else _activations(plan, mc, tokens, False)
    return saved + _logit_rows(plan, tokens) * mc.vocab / max(1, plan.tp) * plan.model_dtype_bytes


def _computing_states(plan: Plan, w: float, g: float, o: float) -> tuple[float, float, float]:
    """States on the GPU while the model computes: offload that stays on the CPU drops its part."""
    if plan.offload_during_compute:
        if plan.param_offload:
            w = 0.0
        if plan.optimizer_offload:
            o, g = 0.0, 0.0
    return w, g, o


def _update_terms(plan: Plan, mc: ModelConsts, critic: bool) -> dict[str, float]:
    w, g, o = _computing_states(plan, *_states(plan, mc, critic))
    micro = plan.critic_micro if critic else plan.train_micro
    tokens = micro_tokens(plan, micro, plan.train_token_budget, _dp_share(plan, plan.mini_batches))
    logits = 0.0 if critic else _logits_update(plan, mc, tokens)
    terms = {
        T_PARAMS: w,
        T_GRADS: g,
        T_OPTIM: o,
        T_GATHER: _gather_bytes(plan, mc, backward=True, critic=critic),
        (T_ACT_CKPT if plan.grad_ckpt else T_ACT): _activations(plan, mc, tokens, plan.grad_ckpt, logits, critic),
    }
    if not critic:
        terms[T_LOGITS_ENT if plan.entropy_in_update else T_LOGITS] = logits
        vit = vision_activation_bytes(plan, mc, micro, sum(v for t, v in terms.items()
                                                           if t in (T_ACT, T_ACT_CKPT, T_LOGITS, T_LOGITS_ENT)))
        if vit:
            terms[T_VIT_ACT] = vit
    if plan.no_grads_at_backward and plan.trainer in DDP_TRAINERS + ("fsdp",) and g > 0:
        # no gradient exists when the backward starts (Plan.no_grads_at_backward): each is made as the backward
        # frees the activations and logits before it (FSDP: each unit's sharded gradient after its reduce-scatter),
        # so only its excess over them adds to the peak
        working = sum(v for t, v in terms.items() if t in (T_ACT, T_ACT_CKPT, T_LOGITS, T_LOGITS_ENT))
        del terms[T_GRADS]
        terms[T_GRADS_FREED] = max(0.0, g - working)
    if plan.fsdp_root_known and not plan.lora_params and terms[T_GATHER] > 0:
        # a layer's unsharded gradient and fp32 cast exist only once the logits are freed (the lm_head's backward
        # runs first): beside them only its excess over the logits adds; the embedding's and lm_head's gradients are
        # reduced at the backward's end, beside the gathered units, the states and the sharded gradients alone
        # (fsdp_root_reduce_bytes): what exceeds the activations, logits and gradients the backward freed adds
        layer_grad = C.FSDP_BWD_GRAD_BYTES * mc.layer_unit / _mp(plan)
        logit_bytes = sum(terms.get(t, 0.0) for t in (T_LOGITS, T_LOGITS_ENT))
        terms[T_GATHER] -= min(layer_grad, logit_bytes)
        working = sum(terms.get(t, 0.0) for t in (T_ACT, T_ACT_CKPT, T_LOGITS, T_LOGITS_ENT))
        working += fsdp_head_grad_bytes(plan, mc, critic) + layer_grad - min(layer_grad, logit_bytes)
        if T_GRADS_FREED in terms:  # the sharded gradients made in this backward took part of what it freed
            working -= g - terms[T_GRADS_FREED]
        end = fsdp_root_reduce_bytes(plan, mc, critic)
        if end > working:
            terms[T_ROOT_REDUCE] = end - working
    if plan.trainer in DDP_TRAINERS and plan.n_gpus > 1 and g > 0:
        # torch DDP copies every gradient into its all-reduce buckets unless gradient_as_bucket_view (default
        # False; accelerate passes DDP's defaults): "the saved memory size will be equal to the total gradients
        # size" (torch/nn/parallel/distributed.py DistributedDataParallel docstring)
        terms[T_DDP_BUCKETS] = g
    if plan.trainer == "deepspeed" and o > 0:
        # the step's fp32 gradient copy comes after the backward freed activations, logits and gathered units
        trained = float(plan.lora_params) if plan.lora_params and not critic else _trained_params(mc, plan, critic)
        step = deepspeed_step_bytes(trained / _mp(plan), plan.shard_degree, plan.zero_stage)
        working = sum(terms[t] for t in terms if t not in (T_PARAMS, T_GRADS, T_OPTIM))
        if step > working:
            terms[T_DS_STEP] = step - working
    buckets = deepspeed_bucket_bytes(plan, mc, critic)
    if buckets:
        terms[T_DS_BUCKETS] = buckets
    if plan.trainer == "megatron":
        _megatron_update_activations(plan, mc, tokens, terms, critic)
    batch = batch_on_gpu_bytes(plan, Phase.CRITIC_UPDATE if critic else Phase.ACTOR_UPDATE)
    if batch:
        terms[T_BATCH] = batch
    terms.update(_colocated_extra(plan, mc, "critic" if critic else "actor"))
    return terms


T_GRADS_FREED = "gradients (beyond the activations the backward frees; zeroed after each step)"
T_DS_BUCKETS = "DeepSpeed ZeRO-1/2 gradient buckets"


def deepspeed_bucket_bytes(plan: Plan, mc: ModelConsts, critic: bool) -> float:
    """DeepSpeed ZeRO-1/2's gradient buffers in the trained model's update (``Plan.deepspeed_reduce_bucket``): the
    reduce bucket(s), alive through the backward, and with the optimizer offloaded the GPU gradient buffer of the
    largest parameter (the embedding, or an untied lm_head), in the model's 16-bit dtype. Not at stage 0 (the
    BF16_Optimizer), nor at stage 1 with fp32 gradient accumulation (engine._do_optimizer_sanity_check picks the
    BF16_Optimizer then), nor at stage 3 (stage3.py's own buffers: the gathered-layers term)."""
    stage = plan.zero_stage
    if (plan.trainer != "deepspeed" or not plan.deepspeed_reduce_bucket or stage not in (1, 2)
            or (stage == 1 and plan.deepspeed_grad_accum_fp32)):
        return 0.0
    out = C.BF16 * plan.deepspeed_reduce_bucket
    if plan.optimizer_offload:  # ZeRO-Offload (cpu_offload), not a state moved out between phases
        # the largest parameter of the optimizer's bit16_groups, which hold the trainable parameters only
        # (stage_1_and_2.py __init__: the param groups' requires_grad params): under the actor's LoRA an adapter
        # matrix (rank x a linear layer's width), bounded by one decoder layer's adapters (lora_params / layers), not
        # the frozen embedding. The critic's LoRA is not modelled (priced as full training): its embedding.
        if plan.lora_params and not critic:
            largest = plan.lora_params / max(1, mc.layers)
        else:
            largest = max(mc.embed, 0 if critic else mc.lm_head) / _mp(plan)
        out += C.BF16 * largest
    return out
T_VIT_ACT = "vision tower activations (image patches of the micro batch)"
T_VIT_FWD = "vision tower forward over the pass's image patches (its excess over the LM's forward)"


def vision_forward_bytes(plan: Plan, mc: ModelConsts, seqs: float, lm_forward: float) -> float:
    """A forward without gradients (log-probs, reference, transformers' generate prefill) runs the ViT over every
    image patch of its sequences first (modeling_qwen2_5_vl.py Qwen2_5_VLForConditionalGeneration.forward:
    ``self.visual`` before the decoder): the residual stream and the block's input in bf16 and one block's tensors at
    a time, freed before the language model's forward starts; only its excess over that forward's activations and
    logits (``lm_forward``) adds to the phase's peak."""
    if not (mc.vision_depth and plan.vision_patches):
        return 0.0
    patches = seqs * plan.vision_patches
    vit = patches * (2 * C.BF16 * mc.vision_hidden + mc.vision_block_act) + vision_mask_bytes(plan, patches)
    return max(0.0, vit - lm_forward)


def _add_vision_forward(terms: dict[str, float], plan: Plan, mc: ModelConsts, seqs: float, lm_forward: float) -> None:
    """The no-gradient pass's vision tower term (``vision_forward_bytes``), added to its terms where it is not zero:
    the generate, log-prob and reference passes alike."""
    vit = vision_forward_bytes(plan, mc, seqs, lm_forward)
    if vit:
        terms[T_VIT_FWD] = vit


def vision_mask_bytes(plan: Plan, patches: float) -> float:
    """One ViT block's dense SDPA attention mask over the ``patches`` of a forward's images, with the additive copy
    torch makes of it (``Plan.vision_sdpa_mask``, constants.VIT_SDPA_MASK_BYTES_PER_PAIR); 0 without it."""
    return C.VIT_SDPA_MASK_BYTES_PER_PAIR * float(patches) ** 2 if plan.vision_sdpa_mask else 0.0


def vision_activation_bytes(plan: Plan, mc: ModelConsts, micro: int, lm_working: float) -> float:
    """What the trained ViT of a vision-language model keeps for its backward over the micro batch's image patches
    (``Plan.vision_patches`` a sequence). It runs before the language model (transformers
    models/qwen2_5_vl/modeling_qwen2_5_vl.py Qwen2_5_VLForConditionalGeneration.forward: ``self.visual(pixel_values,
    grid_thw=...)`` then the decoder over inputs_embeds), so what it saves lives through the LM's forward and
    backward. Frozen tower (ms-swift --freeze_vit, its default): nothing requires a gradient there and autograd
    saves nothing (the merger's few activations, when only it trains, are not priced). With gradient checkpointing
    each block keeps its input (Qwen2_5_VisionTransformerPretrainedModel.forward: ``_gradient_checkpointing_func
    (blk.__call__, ...)`` when ``self.gradient_checkpointing and self.training``; transformers' modeling_utils.py
    PreTrainedModel.gradient_checkpointing_enable sets it on every submodule that has it) and one block is
    recomputed at a time, after the LM's backward freed ``lm_working`` (its activations and logits): only the
    block's excess over them adds. Without checkpointing every block's tensors stay (``ModelConsts.vision_*``)."""
    if not (mc.vision_depth and plan.vision_patches) or plan.vision_tower_frozen or plan.lora_params:
        return 0.0
    patches = float(micro) * plan.vision_patches
    block = mc.vision_block_act + mc.vision_block_trained_norms
    merger = patches * mc.vision_merger_act
    # the recomputed (or, without checkpointing, the running) block's dense SDPA mask (vision_mask_bytes); what the
    # attention kernel saves of it for the backward without checkpointing is not priced
    mask = vision_mask_bytes(plan, patches)
    if plan.grad_ckpt:
        ckpts = patches * mc.vision_depth * C.ACT_CKPT_BYTES_PER_HIDDEN * mc.vision_hidden
        return ckpts + merger + max(0.0, patches * block + mask - lm_working)
    return patches * mc.vision_depth * block + merger + mask

T_BATCH = "the rank's batch (every key, on the GPU through the pass)"


def batch_on_gpu_bytes(plan: Plan, phase: Phase) -> float:
    """The tensors of a data-parallel rank's share of the step's batch that verl's legacy Megatron workers move to
    the GPU before a pass and keep there until it returns (``Plan.batch_on_gpu``): 0.5.0 megatron_workers.py
    ActorRolloutRefWorker.update_actor ``data.batch = data.batch.to(device)``, compute_log_prob and
    compute_ref_log_prob ``data = data.to(device)``; CriticWorker.update_critic ``data.to(device)``, to 0.7.1. Each
    tensor is padded to the maximum lengths (the rollout's TensorDict, workers/rollout/vllm_rollout/
    vllm_rollout_spmd.py generate_sequences). Counted, per sequence, what the batch holds when the pass runs
    (trainer/ppo/ray_trainer.py fit): from the rollout int64 ``input_ids``, ``attention_mask``, ``position_ids``
    (prompt + response), ``prompts``, ``responses`` and ``response_mask`` (compute_response_mask, a slice moved as
    its own tensor); the reference's pass also fp32 ``old_log_probs``; an update also ``ref_log_prob`` with a
    reference, ``values`` with a critic and ``token_level_scores``, ``advantages`` and ``returns``
    (compute_advantage). ``token_level_rewards``, the same tensor as the scores without the in-reward KL, is left
    out."""
    if not plan.batch_on_gpu:
        return 0.0
    p, r = plan.prompt_len, plan.response_len
    fp32_rows = {Phase.OLD_LOG_PROB: 0, Phase.REF: 1}.get(phase, 4 + int(plan.need_ref) + int(plan.need_critic))
    per_seq = 8 * (3 * (p + r) + p + 2 * r) + 4 * r * fp32_rows
    return per_seq * _dp_share(plan)
T_ROOT_REDUCE = "embedding/lm_head gradients reduced at the backward's end (beyond what it freed)"


T_ACT_PP = "activations (micro batches in flight on a PP stage)"
T_DDP_BUCKETS = "DDP gradient buckets (a copy of the gradients)"
DDP_TRAINERS = ("bf16", "fp32")  # plain data parallel: torch DDP, no ZeRO/FSDP sharding
T_DS_STEP = "optimizer step: fp32 gradient copy (beyond the freed activations)"
T_ACT_RECOMPUTE = "activations (full recompute)"


def _megatron_update_activations(plan: Plan, mc: ModelConsts, tokens: float, terms: dict[str, float],
                                 critic: bool) -> None:
    """The busiest pipeline stage of a Megatron update: its own states, activations and (the last stage) loss.

    1F1B (megatron/core/pipeline_parallel/schedules.py:forward_backward_pipelining_without_interleaving):
    stage ``i`` runs ``pp - i - 1`` warm-up forwards before its first backward, so it holds
    ``min(pp - i, micro batches)`` micro batches of its own layers; the last stage holds one, with the
    logits. Interleaved (VPP): stage 0 by Megatron-LM's formula (``megatron_pipeline_factor``). Each stage's
    layers and states follow megatron-core's split (``megatron_stage_layers``: the embedding or the loss
    counted as a layer leaves the edge stages one decoder layer fewer)."""
    for name in (T_ACT, T_ACT_CKPT):
        terms.pop(name, None)
    logit_names = [n for n in (T_LOGITS, T_LOGITS_ENT) if n in terms]
    logits = sum(terms.pop(n) for n in logit_names)
    pp, vpp = max(1, plan.pp), max(1, plan.vpp)
    per_layer = megatron_layer_activation_bytes(plan, mc)
    working = megatron_recomputed_layer_bytes(plan, mc)  # one layer recomputed
    split = megatron_stage_layers(plan, mc.layers)
    n_mb = pp if plan.pp_in_flight is None else max(1, min(pp, plan.pp_in_flight))
    same_states = bool(plan.lora_params) and not critic  # LoRA: the adapter states of the most loaded stage
    best = None
    for i in range(pp):
        last = i == pp - 1
        if vpp > 1 and 0 < i < pp - 1:
            continue
        if last:
            act = tokens * (megatron_stage_activation_bytes(plan, mc, split, i) + working + mc.act_tail)
        elif vpp > 1:
            act = tokens * (per_layer * mc.layers * megatron_pipeline_factor(plan) + working)
        else:
            act = tokens * (megatron_stage_activation_bytes(plan, mc, split, i) * min(pp - i, n_mb) + working)
        states = ((terms[T_PARAMS], terms[T_GRADS], terms[T_OPTIM]) if same_states
                  else _computing_states(plan, *_megatron_states(plan, mc, critic, i)))
        total = act + (logits if last else 0.0) + sum(states)
        if best is None or total > best[0]:
            best = (total, last, act, states)
    _, last, act, states = best
    terms[T_PARAMS], terms[T_GRADS], terms[T_OPTIM] = states
    if not last:
        terms[T_ACT_PP] = act
    else:
        terms[T_ACT_RECOMPUTE if plan.recompute == "full" else T_ACT] = act
        for n in logit_names:
            terms[n] = logits


def estimate_memory(plan: Plan, only: Phase | None = None) -> MemoryReport:
    """Per-GPU memory of every phase of ``plan`` that runs (``only``: of that phase alone, where it runs; each phase's
    terms are reckoned apart from the others', so its peak is the same: ``phase_peak``)."""
    mc = model_consts(plan.model)
    cap = int(plan.gpu.memory_bytes)
    rep = MemoryReport(capacity_bytes=cap, margin_bytes=margin_bytes(cap))
    phases = rep.phases
    every = only is None
    if every or only == Phase.ROLLOUT:
        phases[Phase.ROLLOUT] = _rollout_terms(plan, mc, rep)
    if every or only == Phase.OLD_LOG_PROB:
        phases[Phase.OLD_LOG_PROB] = _logprob_terms(plan, mc)
    if plan.need_ref and (every or only == Phase.REF):
        phases[Phase.REF] = _ref_terms(plan, mc)
    if every or only == Phase.ACTOR_UPDATE:
        phases[Phase.ACTOR_UPDATE] = _update_terms(plan, mc, critic=False)
    if plan.need_critic and (every or only == Phase.CRITIC_UPDATE):
        phases[Phase.CRITIC_UPDATE] = _update_terms(plan, mc, critic=True)
    offsets = {str(getattr(p, "value", p)): b for p, b in plan.efficiency.phase_memory_offsets}
    for name, terms in phases.items():
        # a calibration profile's measured excess (or shortfall) of the training phases, plus one phase's own
        offset = plan.efficiency.train_memory_offset_bytes + offsets.get(name.value, 0.0)
        if name != Phase.ROLLOUT and offset:
            terms[T_CALIBRATION] = offset
    return rep


def phase_peak(plan: Plan, phase: Phase) -> int:
    """``estimate_memory(plan).peak(phase)``, reckoning that phase alone (a cost table's row asks for one phase: the
    64-GPU Megatron MoE of benchmarks/bench_recommend.py prices 4,800 rows)."""
    return estimate_memory(plan, only=phase).peak(phase)


T_CALIBRATION = "calibration offset (measured)"
