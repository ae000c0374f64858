"""Model cards: the architecture numbers we need from a model's ``config.json``.

A card is a small YAML file in the repo-root ``models/`` directory (packaged as
``rlbatch_solver.model_cards``). Each one records where its numbers were read
(``config_source``) and the parameter count its authors publish, so that
``total_params()`` can be checked against it (see ``docs/models.md``).

Parameter counts are computed from the architecture, the way the Hugging Face
``transformers`` modules for Qwen2/Qwen3/Qwen3-MoE, Llama, Mistral, Gemma 2 and
DeepSeek-V3 lay out their weights (our own arithmetic; no framework code).
"""

from __future__ import annotations

import functools
import importlib.resources
import importlib.util
import math
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping

from .. import safe_input
from ..errors import InputError, did_you_mean, shown
from ..identity_cache import by_identity

# Fields every card (or config.json) must provide.
REQUIRED_FIELDS = (
    "num_hidden_layers",
    "hidden_size",
    "num_attention_heads",
    "intermediate_size",
    "vocab_size",
)
# HF model types whose config defaults to tied input/output embeddings.
_TIED_BY_DEFAULT = {"gemma", "gemma2", "gemma3_text"}
# HF model types with bias on the q/k/v projections and no ``attention_bias`` key.
_QKV_BIAS_TYPES = {"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl", "qwen2_5_vl_text"}
# HF model types whose ``vision_config`` we read (the Qwen2.5-VL ViT and Qwen2-VL's: ModelCard.vision_*)
_VISION_TYPES = {"qwen2_vl", "qwen2_5_vl"}
# Qwen2-VL's ViT (transformers models/qwen2_vl/modeling_qwen2_vl.py, 4.51.3 and 4.52.4): LayerNorms, a plain GELU MLP
# (VisionMlp fc1/fc2, width embed_dim x mlp_ratio) and full attention in every block; its vision_config names the
# ViT's width embed_dim and the merger's output (the language model's width) hidden_size
QWEN2_VL_VIT = "qwen2_vl"
# The first transformers release whose vision-language model class's forward takes ``logits_to_keep`` (computes the
# lm_head on the kept positions only; ModelCard.logits_to_keep_since): Qwen2_5_VLForConditionalGeneration.forward
# from 4.54.0 (4.53.3's has none: ``logits = self.lm_head(hidden_states)``), Qwen2VLForConditionalGeneration.forward
# from 5.0.0 (4.55.4, 4.56.2 and 4.57.6 models/qwen2_vl/modeling_qwen2_vl.py: no such parameter, only **kwargs, and
# ``logits = self.lm_head(hidden_states)`` on every position; 5.0.0: ``logits_to_keep: int | torch.Tensor = 0`` and
# ``self.lm_head(hidden_states[:, slice_indices, :])``). A text model's forward takes it in every release priced.
LOGITS_TO_KEEP_SINCE = {"qwen2_5_vl": "4.54.0", QWEN2_VL_VIT: "5.0.0"}
_VISION_KEYS = (("vision_depth", ("depth",)), ("vision_hidden_size", ("hidden_size",)),
                ("vision_intermediate_size", ("intermediate_size",)), ("vision_num_heads", ("num_heads",)),
                ("vision_out_hidden_size", ("out_hidden_size",)), ("vision_patch_size", ("patch_size",)),
                ("vision_temporal_patch_size", ("temporal_patch_size",)),
                ("vision_in_channels", ("in_channels", "in_chans")),
                ("vision_spatial_merge_size", ("spatial_merge_size",)), ("vision_window_size", ("window_size",)))
# HF model types with per-head RMSNorm on q and k (``q_norm`` / ``k_norm``).
_QK_NORM_TYPES = {"qwen3", "qwen3_moe"}


# ModelCard.lora_params per rank, by card and target modules (identity_cache.by_identity)
_LORA_PER_RANK: dict = {}


@dataclass(frozen=True)
class ModelCard:
    """Architecture of one decoder-only transformer (dense, MoE and/or MLA)."""

    name: str
    num_hidden_layers: int
    hidden_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    hf_id: str = ""
    config_source: str = ""
    published_params: float = 0.0  # 0 = unknown
    published_params_source: str = ""
    model_type: str = ""  # HF ``model_type`` (e.g. "qwen2", "gemma2")
    tie_word_embeddings: bool = False
    max_position_embeddings: int = 0
    attention_bias: bool = False
    qk_norm: bool = False
    # MoE (0 = dense)
    num_experts: int = 0
    num_experts_per_tok: int = 0
    moe_intermediate_size: int = 0
    num_shared_experts: int = 0
    shared_expert_intermediate_size: int = 0  # per shared expert; 0 = moe_intermediate_size
    first_k_dense_replace: int = 0
    decoder_sparse_step: int = 1  # Qwen-MoE: layer i is MoE when (i + 1) % step == 0
    # MLA (DeepSeek-V3); 0 = standard (GQA) attention
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    # Vision tower of a vision-language model (0 = text-only): the HF config.json ``vision_config`` of Qwen2.5-VL
    # (transformers models/qwen2_5_vl/configuration_qwen2_5_vl.py Qwen2_5_VLVisionConfig), read by
    # modeling_qwen2_5_vl.py Qwen2_5_VisionTransformerPretrainedModel: a Conv3d patch embedding, ``vision_depth``
    # Qwen2_5_VLVisionBlock's (windowed attention but the ``vision_fullatt_blocks`` full-attention ones) and the
    # Qwen2_5_VLPatchMerger that folds spatial_merge_size^2 patches into one LM token of ``vision_out_hidden_size``.
    vision_depth: int = 0
    vision_hidden_size: int = 0
    vision_intermediate_size: int = 0
    vision_num_heads: int = 0
    vision_out_hidden_size: int = 0
    vision_patch_size: int = 0
    vision_temporal_patch_size: int = 0
    vision_in_channels: int = 0
    vision_spatial_merge_size: int = 0
    vision_window_size: int = 0
    vision_fullatt_blocks: int = 0  # len(fullatt_block_indexes)
    aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _validate(self)

    # ------------------------------------------------------------------ kind
    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def has_vision(self) -> bool:
        return self.vision_depth > 0

    def is_moe_layer(self, i: int) -> bool:
        """True when decoder layer ``i`` (0-based) has a routed-expert MLP."""
        return (
            self.is_moe
            and i >= self.first_k_dense_replace
            and (i + 1) % self.decoder_sparse_step == 0
        )

    # ------------------------------------------------------------ parameters
    def embedding_params(self) -> int:
        """Input embedding: vocab x hidden."""
        return self.vocab_size * self.hidden_size

    def lm_head_params(self) -> int:
        """Output projection; 0 when it shares the input embedding's weights."""
        return 0 if self.tie_word_embeddings else self.vocab_size * self.hidden_size

    def attention_params(self) -> int:
        """One layer's attention block: projections, their biases and q/k norms."""
        h, n = self.hidden_size, self.num_attention_heads
        if self.is_mla:
            # DeepSeek-V3 multi-head latent attention (HF DeepseekV3Attention):
            # q: hidden -> q_lora (+RMSNorm) -> heads*(nope+rope), or hidden -> heads*(nope+rope);
            # kv: hidden -> kv_lora + rope (+RMSNorm on kv_lora) -> heads*(nope+v); o: heads*v -> hidden.
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            if self.q_lora_rank:
                q = h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * n * qk
            else:
                q = h * n * qk
            kv = (
                h * (self.kv_lora_rank + self.qk_rope_head_dim)
                + self.kv_lora_rank
                + self.kv_lora_rank * n * (self.qk_nope_head_dim + self.v_head_dim)
            )
            return q + kv + n * self.v_head_dim * h
        q_dim = n * self.head_dim
        kv_dim = self.num_key_value_heads * self.head_dim
        params = h * q_dim + 2 * h * kv_dim + q_dim * h  # q, k, v, o weights
        if self.attention_bias:
            params += q_dim + 2 * kv_dim  # q/k/v bias (o_proj has none in these models)
        if self.qk_norm:
            params += 2 * self.head_dim  # q_norm and k_norm weights (per head_dim)
        return params

    def _norms_per_layer(self) -> int:
        # Gemma 2 has pre- and post-norms around both attention and MLP.
        return 4 if self.model_type == "gemma2" else 2

    def _gated_mlp(self, intermediate: int) -> int:
        return 3 * self.hidden_size * intermediate  # gate, up, down (no bias)

    def _shared_params(self) -> int:
        size = self.shared_expert_intermediate_size or self.moe_intermediate_size
        return self.num_shared_experts * self._gated_mlp(size)

    def _router_params(self) -> int:
        params = self.num_experts * self.hidden_size
        if self.model_type == "deepseek_v3":
            params += self.num_experts  # e_score_correction_bias of the noaux_tc router
        return params

    def mlp_params(self, i: int, active_only: bool = False) -> int:
        """MLP of layer ``i``: dense, or router + routed experts + shared experts."""
        if not self.is_moe_layer(i):
            return self._gated_mlp(self.intermediate_size)
        experts = self.num_experts_per_tok if active_only else self.num_experts
        return (
            self._router_params()
            + experts * self._gated_mlp(self.moe_intermediate_size)
            + self._shared_params()
        )

    def _attention_linears(self) -> list[tuple[int, int, int]]:
        """(in, out, count) of the attention block's linear layers, the output projection last (HF shapes):
        q, k, v (k and v as one entry of count 2) and o; or MLA's q (low-rank or not), kv_a, kv_b and o."""
        h, n = self.hidden_size, self.num_attention_heads
        if self.is_mla:
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            q = ([(h, self.q_lora_rank, 1), (self.q_lora_rank, n * qk, 1)] if self.q_lora_rank else [(h, n * qk, 1)])
            return q + [(h, self.kv_lora_rank + self.qk_rope_head_dim, 1),
                        (self.kv_lora_rank, n * (self.qk_nope_head_dim + self.v_head_dim), 1), (n * self.v_head_dim, h, 1)]
        q_dim, kv_dim = n * self.head_dim, self.num_key_value_heads * self.head_dim
        return [(h, q_dim, 1), (h, kv_dim, 2), (q_dim, h, 1)]

    def _linear_shapes(self, i: int) -> list[tuple[int, int, int]]:
        """(in, out, count) of every linear layer of decoder layer ``i`` (HF module shapes)."""
        h = self.hidden_size
        attn = self._attention_linears()
        if not self.is_moe_layer(i):
            return attn + [(h, self.intermediate_size, 2), (self.intermediate_size, h, 1)]
        ffn, shared = self.moe_intermediate_size, self.shared_expert_intermediate_size or self.moe_intermediate_size
        return attn + [(h, self.num_experts, 1), (h, ffn, 2 * self.num_experts), (ffn, h, self.num_experts),
                       (h, shared, 2 * self.num_shared_experts), (shared, h, self.num_shared_experts)]

    def lora_params(self, rank: int, modules: str = "all-linear") -> int:
        """LoRA adapter parameters: each targeted linear layer gets A (in x r) and B (r x out) (peft
        lora/layer.py ``LoraLayer.update_layer``, no bias). ``all-linear``: every linear layer of every decoder
        layer (attention, MLP, router, experts; not lm_head), peft tuners/tuners_utils.py
        ``_maybe_include_all_linear_layers``. ``q_v``: the query and value projections, peft's default targets
        for Llama/Qwen/Mistral-style models (utils/constants.py
        ``TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING``), used when no target modules are given."""
        if not rank:
            return 0
        # the cost tables ask once per row: the sum over layers is kept
        return rank * by_identity(_LORA_PER_RANK, self, lambda: self._lora_params_per_rank(modules), modules)

    def _lora_params_per_rank(self, modules: str) -> int:
        if modules == "q_v":
            attn = self._attention_linears()
            # MLA has no q_proj/v_proj: the latent attention's projections but the output one
            targets = attn[:-1] if self.is_mla else [attn[0], attn[1][:2] + (1,)]  # q, and v (one of k, v)
            return sum((a + b) * k for a, b, k in targets) * self.num_hidden_layers
        return sum((a + b) * k for i in range(self.num_hidden_layers) for a, b, k in self._linear_shapes(i))

    def layer_params(self, i: int) -> int:
        """All parameters of decoder layer ``i`` (attention, MLP/MoE, norms)."""
        self._check_layer(i)
        return self.attention_params() + self.mlp_params(i) + self._norms_per_layer() * self.hidden_size

    # ---------------------------------------------------------- vision tower
    @property
    def logits_to_keep_since(self) -> str | None:
        """The first transformers release whose forward of this vision-language model takes ``logits_to_keep``
        (``LOGITS_TO_KEEP_SINCE``); None: a text model, or a type not read."""
        return LOGITS_TO_KEEP_SINCE.get(self.model_type) if self.has_vision else None

    @property
    def vision_plain_mlp(self) -> bool:
        """The ViT is Qwen2-VL's (``QWEN2_VL_VIT``): LayerNorms and a two-Linear GELU MLP, not Qwen2.5-VL's RMSNorms
        and gated MLP."""
        return self.has_vision and self.model_type == QWEN2_VL_VIT

    def vision_block_params(self) -> int:
        """One Qwen2_5_VLVisionBlock (transformers modeling_qwen2_5_vl.py): norm1 and norm2 (RMSNorm weights),
        attention qkv Linear(d, 3d, bias) and proj Linear(d, d, bias), and the gated MLP Qwen2_5_VLMLP(bias=True):
        gate_proj and up_proj Linear(d, i) and down_proj Linear(i, d), all with bias. Qwen2-VL's Qwen2VLVisionBlock
        (modeling_qwen2_vl.py): the same attention, norm1 and norm2 LayerNorm (weight and bias), VisionMlp fc1
        Linear(d, i) and fc2 Linear(i, d), both with bias."""
        d, i = self.vision_hidden_size, self.vision_intermediate_size
        attention = (d * 3 * d + 3 * d) + (d * d + d)
        if self.vision_plain_mlp:
            return 4 * d + attention + (2 * d * i + i + d)
        return 2 * d + attention + (3 * d * i + 2 * i + d)

    def vision_tower_params(self) -> int:
        """The ViT without its merger: Qwen2_5_VisionPatchEmbed's Conv3d(in_channels, d, kernel [t, p, p],
        bias=False) and every block (the rotary embedding has no parameters)."""
        if not self.has_vision:
            return 0
        patch = self.vision_in_channels * self.vision_temporal_patch_size * self.vision_patch_size ** 2
        return patch * self.vision_hidden_size + self.vision_depth * self.vision_block_params()

    def vision_merger_params(self) -> int:
        """Qwen2_5_VLPatchMerger (the aligner): ln_q RMSNorm(d), Linear(d*m^2, d*m^2) and Linear(d*m^2,
        out_hidden_size), both with bias (m = spatial_merge_size); Qwen2-VL's PatchMerger: ln_q LayerNorm(d) (weight
        and bias), the same Linears."""
        if not self.has_vision:
            return 0
        wide = self.vision_hidden_size * self.vision_spatial_merge_size ** 2
        norm = 2 * self.vision_hidden_size if self.vision_plain_mlp else self.vision_hidden_size
        return norm + wide * wide + wide + wide * self.vision_out_hidden_size + \
            self.vision_out_hidden_size

    def vision_params(self) -> int:
        """Every parameter of the vision side (tower and merger); 0 for a text model."""
        return self.vision_tower_params() + self.vision_merger_params()

    def largest_layer_params(self) -> int:
        return max(self.layer_params(i) for i in range(self.num_hidden_layers))

    def total_params(self) -> int:
        """Embeddings + untied lm_head + every decoder layer + final norm (+ the vision tower and merger of a
        vision-language card: ``vision_params``, what its published count includes).

        DeepSeek-V3: this is the main model only. Its published 671B excludes the
        14B multi-token-prediction (MTP) module that ships in the same checkpoint
        (685B on Hugging Face), and so do we.
        """
        layers = sum(self.layer_params(i) for i in range(self.num_hidden_layers))
        return self.embedding_params() + self.lm_head_params() + layers + self.hidden_size + self.vision_params()

    def active_params(self) -> int:
        """Parameters touched per token: as total, with top-k routed experts only."""
        norms = self._norms_per_layer() * self.hidden_size
        layers = sum(
            self.attention_params() + self.mlp_params(i, active_only=True) + norms
            for i in range(self.num_hidden_layers)
        )
        return self.embedding_params() + self.lm_head_params() + layers + self.hidden_size

    # ---------------------------------------------------------------- KV cache
    def kv_bytes_per_token(self, tp: int = 1, dtype_bytes: int = 2) -> int:
        """KV-cache bytes one token takes on one tensor-parallel rank, all layers.

        Follows vLLM v1 ``vllm/v1/kv_cache_interface.py`` ``page_size_bytes`` divided
        by ``block_size``: standard attention stores K and V,
        ``2 * kv_heads_per_rank * head_dim * dtype`` per layer, with
        ``kv_heads_per_rank = max(1, kv_heads // tp)`` (heads are replicated when
        tp > kv_heads, as vLLM's ``ModelConfig.get_num_kv_heads`` in
        ``vllm/config/model.py`` does). MLA stores one latent of
        ``kv_lora_rank + qk_rope_head_dim`` per layer, not split by tp.
        """
        if not isinstance(tp, int) or isinstance(tp, bool) or tp < 1:
            raise InputError("tp", f"tensor-parallel size must be a positive integer, got {tp!r}.",
                             "Use tp >= 1.")
        if not isinstance(dtype_bytes, int) or isinstance(dtype_bytes, bool) or dtype_bytes < 1:
            raise InputError("dtype_bytes", f"must be a positive integer, got {dtype_bytes!r}.",
                             "Use 2 for bf16/fp16 KV cache, 1 for fp8.")
        layers = self.num_hidden_layers
        if self.is_mla:
            return layers * (self.kv_lora_rank + self.qk_rope_head_dim) * dtype_bytes
        heads = max(1, self.num_key_value_heads // tp)
        return 2 * layers * heads * self.head_dim * dtype_bytes

    def _check_layer(self, i: int) -> None:
        if not isinstance(i, int) or not 0 <= i < self.num_hidden_layers:
            raise InputError("layer", f"index {i!r} is out of range for {self.name} "
                             f"({self.num_hidden_layers} layers).",
                             f"Use 0..{self.num_hidden_layers - 1}.")


# ---------------------------------------------------------------- validation
# In declaration order, so the first bad field reported is stable.
_INT_FIELDS = [f.name for f in fields(ModelCard) if f.type in ("int", int)]
_BOOL_FIELDS = [f.name for f in fields(ModelCard) if f.type in ("bool", bool)]
_POSITIVE = set(REQUIRED_FIELDS) | {"num_key_value_heads", "head_dim", "decoder_sparse_step"}


def _validate(card: ModelCard) -> None:
    where = f"model {card.name!r}"
    for name in _INT_FIELDS:
        value = getattr(card, name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise InputError(name, f"{where}: must be an integer, got {value!r}.",
                             f"Set {name} to a whole number.")
        if name in _POSITIVE and value <= 0:
            raise InputError(name, f"{where}: must be positive, got {value}.",
                             f"Copy {name} from the model's config.json.")
        if value < 0:
            raise InputError(name, f"{where}: must not be negative, got {value}.",
                             f"Use 0 when {name} does not apply.")
    for name in _BOOL_FIELDS:
        if not isinstance(getattr(card, name), bool):
            raise InputError(name, f"{where}: must be true or false, got {getattr(card, name)!r}.",
                             f"Write {name}: true or {name}: false.")
    if not isinstance(card.published_params, (int, float)) or card.published_params < 0:
        raise InputError("published_params", f"{where}: must be a non-negative number, "
                         f"got {card.published_params!r}.", "Write it like 7.61e9, or 0 if unknown.")
    if card.num_attention_heads % card.num_key_value_heads:
        raise InputError("num_key_value_heads", f"{where}: {card.num_key_value_heads} does not divide "
                         f"num_attention_heads={card.num_attention_heads}.",
                         "Copy both from the model's config.json.")
    if card.is_moe:
        if not 0 < card.num_experts_per_tok <= card.num_experts:
            raise InputError("num_experts_per_tok", f"{where}: must be in 1..num_experts="
                             f"{card.num_experts}, got {card.num_experts_per_tok}.",
                             "Copy num_experts_per_tok from config.json.")
        if card.moe_intermediate_size <= 0:
            raise InputError("moe_intermediate_size", f"{where}: must be positive for an MoE model.",
                             "Copy moe_intermediate_size from config.json.")
    if card.has_vision:
        for name, _ in _VISION_KEYS:
            # Qwen2-VL's ViT has no windows (every block attends over the whole image): its window size is 0
            if getattr(card, name) <= 0 and not (name == "vision_window_size" and card.model_type == QWEN2_VL_VIT):
                raise InputError(name, f"{where}: a vision tower (vision_depth > 0) needs {name} > 0.",
                                 "Copy it from config.json's vision_config.")
    if card.is_mla and (card.qk_rope_head_dim <= 0 or card.qk_nope_head_dim <= 0 or card.v_head_dim <= 0):
        raise InputError("kv_lora_rank", f"{where}: MLA needs qk_rope_head_dim, qk_nope_head_dim "
                         "and v_head_dim > 0.", "Copy them from config.json.")


# ---------------------------------------------------------------- from config.json
def _get(config: Mapping[str, Any], *keys: str, default: Any = None) -> Any:
    """First key present with a non-null value."""
    for key in keys:
        if config.get(key) is not None:
            return config[key]
    return default


def _size(config: Mapping[str, Any], key: str, value: Any, *, allow_zero: bool = False) -> int:
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or (isinstance(value, float) and not math.isfinite(value)) or value != int(value)):
        raise InputError(key, f"config.json value must be an integer, got {value!r}.",
                         "Fix the config.json or pass a catalog model name.")
    value = int(value)
    if value < 0 or (value == 0 and not allow_zero):
        raise InputError(key, f"config.json value must be {'>= 0' if allow_zero else 'positive'}, "
                         f"got {value}.", "Fix the config.json or pass a catalog model name.")
    return value


def _qwen2_vl_vision(vc: Mapping[str, Any]) -> dict[str, int]:
    """Qwen2-VL's ``vision_config`` (transformers models/qwen2_vl/configuration_qwen2_vl.py Qwen2VLVisionConfig) as the
    card's vision fields: the ViT's width is ``embed_dim``, its MLP ``embed_dim x mlp_ratio`` wide
    (modeling_qwen2_vl.py Qwen2VLVisionBlock: ``int(config.embed_dim * config.mlp_ratio)``), and ``hidden_size`` the
    merger's output (PatchMerger(dim=config.hidden_size)); every block attends over the whole image (no window)."""
    width = _size(vc, "embed_dim", _get(vc, "embed_dim"))
    ratio = _get(vc, "mlp_ratio")
    if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or ratio <= 0:
        raise InputError("mlp_ratio", f"vision_config.mlp_ratio must be a positive number, got {ratio!r}.",
                         "Copy it from config.json's vision_config.")
    depth = _size(vc, "depth", _get(vc, "depth"))
    return {"vision_depth": depth, "vision_hidden_size": width, "vision_intermediate_size": int(width * ratio),
            "vision_num_heads": _size(vc, "num_heads", _get(vc, "num_heads")),
            "vision_out_hidden_size": _size(vc, "hidden_size", _get(vc, "hidden_size")),
            "vision_patch_size": _size(vc, "patch_size", _get(vc, "patch_size")),
            "vision_temporal_patch_size": _size(vc, "temporal_patch_size", _get(vc, "temporal_patch_size")),
            "vision_in_channels": _size(vc, "in_channels", _get(vc, "in_channels", "in_chans")),
            "vision_spatial_merge_size": _size(vc, "spatial_merge_size", _get(vc, "spatial_merge_size")),
            "vision_window_size": 0, "vision_fullatt_blocks": depth}


def from_hf_config(config: Mapping[str, Any], name: str) -> ModelCard:
    """Build a card from a Hugging Face ``config.json`` dict.

    Understands Qwen2/2.5, Qwen3, Qwen3-MoE (``num_experts``, ``moe_intermediate_size``,
    ``decoder_sparse_step``; ``norm_topk_prob`` does not change sizes), Llama, Mistral,
    Mixtral (``num_local_experts``), Gemma 2 and DeepSeek-V3 (``n_routed_experts``,
    ``n_shared_experts``, ``first_k_dense_replace``, MLA ranks) key names.
    """
    if not isinstance(config, Mapping):
        raise InputError("model", f"config for {name!r} is not a JSON object.",
                         "Pass the model's config.json.")
    if "num_hidden_layers" not in config and isinstance(config.get("text_config"), Mapping):
        # the language model's keys only under text_config (newer transformers' layout: Qwen2.5-VL's text_config is
        # model_type qwen2_5_vl_text): the top level keeps the ViT (vision_config) and the model's own type, and what
        # the top level sets the text config leaves unset (tie_word_embeddings)
        top = config
        config = {**{k: top[k] for k in ("vision_config", "tie_word_embeddings") if k in top}, **top["text_config"],
                  "_name_or_path": top.get("_name_or_path")}
        if str(top.get("model_type") or "") in _VISION_TYPES:
            config["model_type"] = top["model_type"]
    for key in REQUIRED_FIELDS:
        if config.get(key) is None:
            raise InputError(key, f"missing from the config.json of {name!r}.",
                             "Pass a complete Hugging Face config.json (decoder-only LLM).")
    model_type = str(config.get("model_type") or "")
    size = functools.partial(_size, config)
    layers = size("num_hidden_layers", config["num_hidden_layers"])
    hidden = size("hidden_size", config["hidden_size"])
    heads = size("num_attention_heads", config["num_attention_heads"])
    kv_heads = size("num_key_value_heads", _get(config, "num_key_value_heads", default=heads))

    # MLA (DeepSeek-V3)
    kv_lora = size("kv_lora_rank", _get(config, "kv_lora_rank", default=0), allow_zero=True)
    rope = size("qk_rope_head_dim", _get(config, "qk_rope_head_dim", default=0), allow_zero=True)
    nope = size("qk_nope_head_dim", _get(config, "qk_nope_head_dim", default=0), allow_zero=True)
    if kv_lora:
        # The q/k head width; the config's head_dim (if any) is not used by MLA sizes.
        head_dim = nope + rope
    elif config.get("head_dim") is not None:
        head_dim = size("head_dim", config["head_dim"])
    else:
        if hidden % heads:
            raise InputError("head_dim", f"config.json of {name!r} has no head_dim and hidden_size="
                             f"{hidden} is not a multiple of num_attention_heads={heads}.",
                             "Add head_dim to the config.json.")
        head_dim = hidden // heads

    # MoE
    experts = size("num_experts", _get(config, "num_experts", "n_routed_experts", "num_local_experts",
                                       default=0), allow_zero=True)
    moe_inter = _get(config, "moe_intermediate_size")
    if moe_inter is None and experts:
        moe_inter = config["intermediate_size"]  # Mixtral: experts use intermediate_size
    shared_inter = size("shared_expert_intermediate_size",
                        _get(config, "shared_expert_intermediate_size", default=0), allow_zero=True)
    n_shared = _get(config, "n_shared_experts", default=1 if shared_inter else 0)
    if config.get("mlp_only_layers"):
        raise InputError("mlp_only_layers", f"{name!r} mixes dense layers in via mlp_only_layers, "
                         "which we do not model.", "Use a model without mlp_only_layers.")
    if experts and _get(config, "moe_layer_freq", default=1) != 1:
        raise InputError("moe_layer_freq", f"{name!r} has moe_layer_freq != 1, which we do not model.",
                         "Use a model with an MoE MLP in every layer after first_k_dense_replace.")

    vision: dict[str, int] = {}
    if model_type == QWEN2_VL_VIT and isinstance(config.get("vision_config"), Mapping):
        vision = _qwen2_vl_vision(config["vision_config"])
    elif model_type in _VISION_TYPES and isinstance(config.get("vision_config"), Mapping):
        vc = config["vision_config"]
        for field_name, keys in _VISION_KEYS:
            vision[field_name] = _size(vc, keys[0], _get(vc, *keys))
        vision["vision_fullatt_blocks"] = len(vc.get("fullatt_block_indexes") or ())
    tied = config.get("tie_word_embeddings")
    if tied is None:
        tied = model_type in _TIED_BY_DEFAULT
    bias = config.get("attention_bias")
    if bias is None:
        bias = model_type in _QKV_BIAS_TYPES
    return ModelCard(
        name=name,
        hf_id=str(config.get("_name_or_path") or name),
        config_source="config.json",
        model_type=model_type,
        num_hidden_layers=layers,
        hidden_size=hidden,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=size("intermediate_size", config["intermediate_size"]),
        vocab_size=size("vocab_size", config["vocab_size"]),
        tie_word_embeddings=bool(tied),
        max_position_embeddings=size("max_position_embeddings",
                                     _get(config, "max_position_embeddings", default=0), allow_zero=True),
        attention_bias=bool(bias),
        qk_norm=model_type in _QK_NORM_TYPES,
        num_experts=experts,
        num_experts_per_tok=size("num_experts_per_tok", _get(config, "num_experts_per_tok", default=0),
                                 allow_zero=True) if experts else 0,
        moe_intermediate_size=size("moe_intermediate_size", moe_inter) if experts else 0,
        num_shared_experts=size("n_shared_experts", n_shared, allow_zero=True) if experts else 0,
        shared_expert_intermediate_size=shared_inter if experts else 0,
        first_k_dense_replace=size("first_k_dense_replace", _get(config, "first_k_dense_replace", default=0),
                                   allow_zero=True) if experts else 0,
        decoder_sparse_step=size("decoder_sparse_step", _get(config, "decoder_sparse_step", default=1)),
        q_lora_rank=size("q_lora_rank", _get(config, "q_lora_rank", default=0), allow_zero=True),
        kv_lora_rank=kv_lora,
        qk_rope_head_dim=rope if kv_lora else 0,
        qk_nope_head_dim=nope if kv_lora else 0,
        v_head_dim=size("v_head_dim", _get(config, "v_head_dim", default=0), allow_zero=True)
        if kv_lora else 0,
        **vision,
    )


# ---------------------------------------------------------------- cards on disk
def cards_dir() -> Path:
    """Directory of the bundled card YAMLs (installed package, else repo ``models/``)."""
    try:
        found = importlib.resources.files("rlbatch_solver.model_cards")
        if isinstance(found, Path) and found.is_dir():
            return found
        # Namespace or editable installs: ask the import system where the package lives.
        spec = importlib.util.find_spec("rlbatch_solver.model_cards")
        for location in (spec.submodule_search_locations or []) if spec else []:
            if Path(location).is_dir():
                return Path(location)
    except (ImportError, TypeError, ValueError, AttributeError):
        pass
    return Path(__file__).resolve().parents[2] / "models"


def _card_from_mapping(data: Any, source: str) -> ModelCard:
    if not isinstance(data, Mapping):
        raise InputError("model", f"{source} is not a YAML mapping of card fields.",
                         "See models/qwen2.5-7b.yaml for the format.")
    known = {f.name for f in fields(ModelCard)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise InputError(unknown[0], f"unknown field in {source}.{did_you_mean(unknown[0], known)}",
                         "Remove it or fix its spelling.")
    for key in ("name", *REQUIRED_FIELDS, "num_key_value_heads"):
        if data.get(key) is None:
            raise InputError(key, f"missing from {source}.", f"Add {key}: <value> (see docs/models.md).")
    values = dict(data)
    values["name"] = str(values["name"])
    values.setdefault("head_dim", None)
    if values["head_dim"] is None:  # config.json convention: hidden / heads
        h, n = values["hidden_size"], values["num_attention_heads"]
        values["head_dim"] = h // n if isinstance(h, int) and isinstance(n, int) and n > 0 else 0
    if isinstance(values.get("published_params"), str):  # YAML 1.1 reads "7.61e9" as text
        try:
            values["published_params"] = float(values["published_params"])
        except ValueError:
            raise InputError("published_params", f"not a number in {source}: "
                             f"{values['published_params']!r}.", "Write it like 7.61e+9.") from None
    values["aliases"] = tuple(str(a) for a in values.get("aliases") or ())
    return ModelCard(**values)


_MODEL_FILE = "a model name (rlbatch catalog models), a HF config.json or a model card YAML"


def load_card_file(path: str | Path) -> ModelCard:
    """Load one card YAML file."""
    path = Path(path)
    data = safe_input.load_yaml_file(path, "model", _MODEL_FILE)
    return _card_from_mapping(data, str(path))


def load_hf_config_file(path: str | Path, name: str | None = None) -> ModelCard:
    """Load a Hugging Face ``config.json`` (or a directory that holds one)."""
    path = Path(path)
    if path.is_dir():
        path = path / "config.json"
        if not path.is_file():
            raise InputError("model", f"{path.parent} has no config.json.",
                             "Point at a Hugging Face model directory or its config.json.")
    text = safe_input.read_text(path, "model", safe_input.MAX_CONFIG_BYTES, _MODEL_FILE)
    config = safe_input.load_json(text, "model", str(path))
    card_name = name or (path.parent.name if path.name == "config.json" else path.stem)
    return from_hf_config(config, card_name.lower())


@functools.lru_cache(maxsize=None)
def _catalog() -> dict[str, Path]:
    """Card name -> YAML path for every bundled card."""
    directory = cards_dir()
    return {p.stem.lower(): p for p in sorted(directory.glob("*.yaml"))}


@functools.lru_cache(maxsize=None)
def _catalog_card(name: str) -> ModelCard:
    path = _catalog()[name]
    return _card_from_mapping(safe_input.load_package_yaml(path.read_text(encoding="utf-8")), str(path))


def list_models() -> list[str]:
    """Names of the bundled model cards, sorted."""
    return sorted(_catalog())


def _canonical(text: str) -> str:
    """Normalise a HF-style model id to our card-name style.

    "Qwen/Qwen2.5-7B-Instruct" -> "qwen2.5-7b"; "meta-llama/Meta-Llama-3.1-8B-Instruct"
    -> "llama3.1-8b"; "google/gemma-2-9b-it" -> "gemma2-9b";
    "mistralai/Mistral-7B-Instruct-v0.3" -> "mistral-7b".
    Only suffixes that do not change the architecture are dropped.
    """
    s = text.strip().lower().rsplit("/", 1)[-1].replace("_", "-")
    s = re.sub(r"^meta-", "", s)
    s = re.sub(r"^(llama|gemma)-(\d)", r"\1\2", s)
    s = re.sub(r"-v0\.3(?=-|$)", "", s) if s.startswith("mistral-7b") else s
    s = re.sub(r"-(instruct|chat|base|it|hf)(?=-|$)", "", s)
    return s


@functools.lru_cache(maxsize=None)
def _alias_index() -> dict[str, str]:
    index: dict[str, str] = {}
    for name in _catalog():
        card = _catalog_card(name)
        for key in (name, card.hf_id, *card.aliases):
            if key:
                index.setdefault(key.lower(), name)
                index.setdefault(_canonical(key), name)
    return index


def nearest_models(name: str, n: int = 3) -> list[str]:
    """The catalog names nearest a model name the catalog lacks (its HF id read as ``_canonical`` reads one)."""
    close = did_you_mean(_canonical(name), list_models(), n=n)
    return [c.strip() for c in close.removeprefix(" Did you mean: ").removesuffix("?").split(",")] if close else []


def launch_id(name_or_path: str | Path) -> str:
    """The model a printed launch command loads: a Hugging Face id as the user gave it (Qwen/Qwen2.5-7B-Instruct is
    priced as the catalog's qwen2.5-7b, the same architecture, but the run must load the model asked for), else the
    card's id (a catalog name, a card YAML or config.json path)."""
    given = str(name_or_path).strip()
    if re.fullmatch(r"[\w.-]+/[\w.-]+", given) and not Path(given).expanduser().exists():
        return given
    try:
        card = load_model(given)
    except InputError:
        return given
    return card.hf_id or given


def load_model(name_or_path: str | Path) -> ModelCard:
    """A card by catalog name / HF id / alias, or from a card YAML or config.json path."""
    text = str(name_or_path).strip()
    if not text:
        raise InputError("model", "no model given.", "Pass a catalog name such as qwen2.5-7b.")
    path = Path(text).expanduser()
    looks_like_path = path.suffix.lower() in (".json", ".yaml", ".yml") or text.startswith((".", "/", "~"))
    try:
        exists = path.exists()
    except (OSError, ValueError):  # a name too long for a path, or one with a NUL byte: not a file
        exists = False
    if exists or looks_like_path:
        if not exists:
            raise InputError("model", f"file {shown(text, 60)!r} does not exist.", "Check the path.")
        if path.suffix.lower() in (".yaml", ".yml"):
            return load_card_file(path)
        return load_hf_config_file(path)
    index = _alias_index()
    name = index.get(text.lower()) or index.get(_canonical(text))
    if name is None:
        raise InputError(
            "model",
            f"unknown model {shown(text, 60)!r}.",
            "Use a catalog name (list them with `rlbatch catalog models`) or the path to a "
            "Hugging Face config.json." + did_you_mean(_canonical(text), list_models()),
        )
    return _catalog_card(name)
