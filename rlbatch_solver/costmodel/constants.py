"""Every byte count and efficiency factor of the cost model, with its source.

Units: bytes, seconds, FLOP/s. ``GiB`` = 2**30. Where a number is our own
assumption rather than a published figure, the comment says so and why; the
same list, with the reasoning, is in ``docs/cost-model.md``.
"""

from __future__ import annotations

GIB = 2**30
MIB = 2**20
GB = 10**9

# --------------------------------------------------------------------------- dtypes
BF16 = 2
FP32 = 4

# --------------------------------------------------------------------------- training states
# Bytes per parameter of (weights, gradients, optimizer states), by trainer.
#
# "fsdp" = verl 0.9 FSDP/FSDP2 engine: the trained module is built in fp32
#   (verl/workers/engine/fsdp/transformer_impl.py, FSDPEngine._build_module:
#   "if it is training, we force torch_dtype to fp32"), so the sharded parameter
#   *is* the fp32 master copy; MixedPrecision(param_dtype=bf16, reduce_dtype=fp32)
#   only casts the all-gathered copy. Gradients land in the fp32 sharded params'
#   .grad (4 B); AdamW keeps exp_avg and exp_avg_sq in the parameter dtype (2 x 4 B).
#   Total 16 B/param, sharded over the FSDP group.
# "mixed" = classic mixed precision (DeepSpeed ZeRO, Megatron, llm-analysis):
#   bf16 weights (2) + fp32 gradients (4) + fp32 master copy and two Adam moments
#   (12) = 18 B/param (llm-analysis analysis.py; Megatron
#   theoretical_memory_usage.py "18"; DeepSpeed estimate_zero3_model_states_mem_needs
#   "18 * total_params / total_gpus").
# "bf16" = a bf16 model trained by plain DDP + torch AdamW (ms-swift without --deepspeed): the
#   moments take the parameter dtype and there is no master copy: 2 + 2 + 2 x 2 = 8 B/param
#   (accelerate estimate-memory's "Training using Adam" 8 B/param for half precision).
STATE_BYTES = {
    "fsdp": (FP32, FP32, 2 * FP32),
    "fp32": (FP32, FP32, 2 * FP32),
    "mixed": (BF16, FP32, 3 * FP32),
    "bf16": (BF16, BF16, 2 * BF16),
}
# A forward-only model (verl's reference policy) is built in bf16:
# transformer_impl.py "torch_dtype = torch.float32 if not forward_only else torch.bfloat16".
REF_PARAM_BYTES = BF16
# The inference engine holds bf16 weights (verl rollout.yaml ``dtype: bfloat16``).
ROLLOUT_PARAM_BYTES = BF16
KV_DTYPE_BYTES = BF16

# FSDP working set: all-gathered (unsharded) bf16 copies of the unit being computed
# and the one being prefetched (FSDP1 ``limit_all_gathers`` / FSDP2 default keep at
# most two in flight), plus in backward the unsharded bf16 gradient of one unit and
# its fp32 cast for the fp32 reduce-scatter (reduce_dtype=fp32). A unit is one
# decoder layer, or the (untied) embedding / lm_head; under verl's wrap policies the root
# unit's gradient is reduced at the backward's end (memory.fsdp_root_reduce_bytes).
FSDP_UNITS_IN_FLIGHT = 2
FSDP_BWD_GRAD_BYTES = BF16 + FP32

# --------------------------------------------------------------------------- activations
# Per decoder layer, bytes per token, for a HF decoder with flash attention and no
# dropout (RL fine-tuning runs with dropout 0). Korthikanti et al. 2022
# (arXiv 2205.05198) Table 2 counts 34*s*b*h per layer (+5as^2b without flash);
# we count the same saved tensors for GQA + SwiGLU + RMSNorm:
#   attention: LN output feeding q/k/v (2h) + Q, K, V kept for flash-attn backward
#              (2*(q_dim + 2*kv_dim)) + attention output feeding o_proj (2*q_dim)
#              + flash-attn's fp32 log-sum-exp (4 per head);
#   MLP:       LN output feeding gate/up (2h) + gate, up, SiLU(gate), product
#              (4 tensors of width ffn, 2 B each = 8*ffn);
#   RMSNorm:   HF RMSNorm upcasts its input to fp32 and keeps it (4h per norm),
#              as llm-analysis counts layernorm inputs in fp32 (4sbh per norm).
ACT_LSE_BYTES_PER_HEAD = FP32
ACT_NORM_BYTES_PER_HIDDEN = FP32
# A trained RMSNorm weight: HF's `self.weight * hidden_states.to(input_dtype)` keeps the bf16 normalized input for
# the weight's gradient (2h per norm), saved only when the weight trains (full fine-tune; frozen under LoRA).
# Measured (benchmarks/saved_activations.py, Llama-3.1-8B layer, transformers 5.24.0): 200,840 B per token per
# layer with every weight trained, 184,456 B with the norms frozen; the 16,384 B between them is 2 norms x 2 x 4,096.
ACT_TRAINED_NORM_BYTES_PER_HIDDEN = BF16
# MoE routing: router logits in bf16 and fp32 softmax (2 + 4 per expert per token),
# and one dispatched bf16 copy of the token's hidden state per selected expert.
ACT_ROUTER_BYTES_PER_EXPERT = BF16 + FP32
# HF gradient checkpointing (per decoder layer) keeps each layer's bf16 input (2h
# per token, Korthikanti "full recompute: 2sbh") and recomputes one layer at a time.
ACT_CKPT_BYTES_PER_HIDDEN = BF16
# The ViT's dense attention mask under SDPA (Plan.vision_sdpa_mask): transformers 4.49.0 and 4.52.4
# models/qwen2_5_vl/modeling_qwen2_5_vl.py Qwen2_5_VLVisionSdpaAttention.forward builds ``torch.zeros([1, seq_length,
# seq_length], dtype=torch.bool)`` over every patch of the forward's images (seq_length: all of them, cu_seqlens marks
# each image's block) in each block's attention, and torch's scaled_dot_product_attention turns a bool mask into an
# additive one of the query's dtype (aten/src/ATen/native/transformers/attention.cpp convert_boolean_attn_mask:
# ``at::where(...)`` in bf16 here) before its kernel runs: 1 + 2 bytes per (query patch, key patch) pair, freed
# after the block's attention (older torch also makes a ``logical_not`` bool copy on the way: not priced).
VIT_SDPA_MASK_BYTES_PER_PAIR = 1 + BF16
# With checkpointing, is the one recomputed layer alive at the same time as the logits of the pass? No:
# the loss's backward and the lm_head's backward consume and free the logits and their gradient before
# the last decoder layer is recomputed (torch/utils/checkpoint.py, non-reentrant checkpointing re-runs a
# layer's forward when its backward first needs a saved tensor; the logits are the output of the last
# module, so their backward comes first). The update's peak is checkpoints + max(logits, one layer).
ACT_RECOMPUTE_OVERLAPS_LOGITS = False
# megatron-core's gated MLP saves fc1's output (gate and up, 2 x ffn) and the SwiGLU output (ffn)
# in bf16 (megatron/core/transformer/mlp.py MLP.forward): 6 bytes per ffn unit per token.
MCORE_MLP_BYTES_PER_FFN = 3 * BF16
# Of those, the SwiGLU output (bf16, ffn): what megatron-core's ``moe_act`` selective recompute discards for the
# routed experts (megatron/core/transformer/moe/experts.py TEGroupedMLP.forward: CheckpointWithoutOutput around
# the activation, its output freed after linear_fc2 and recomputed in backward; fc1's output stays saved).
MCORE_SWIGLU_OUT_BYTES_PER_FFN = BF16
# megatron-core selective recompute_modules (TransformerConfig.recompute_modules; default ["core_attn"]; 0.12-0.13
# allow the first six, 0.14 adds "shared_experts"): the names a config may give, in the bit order of the
# frameworks' module-set variable (verl ``megatron_recompute_modules``).
MCORE_RECOMPUTE_MODULES = ("core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts")

# --------------------------------------------------------------------------- logits / entropy
# Bytes per logit (one entry of the [tokens, vocab/tp] logits of a micro batch).
#
# Per framework, read from its loss code (docs/cost-model.md section 2.3), bytes per logit as
# (forward, forward with entropy, update, update with entropy); the forward figures are exact reads
# of the dtypes, the update's backward peaks come from the autograd formulas:
# - "megatron" (verl 0.9.1 megatron engine _lm_head_logits_processor; ms-swift 4.6.0
#   megatron/trainers/vocab_parallel_utils.py): bf16 vocab-parallel logits, megatron-core's
#   vocab_parallel_cross_entropy takes an fp32 copy (calculate_logits_max: .float()) and works in
#   place: 2 + 4 forward; with entropy verl clones the logits and _VocabParallelEntropy's softmax is
#   bf16: 2 + 2 + 4; the update saves the fp32 softmax (4) and its backward adds the bf16 cast (2);
#   with entropy the saved logits and softmax (2 + 2) and the CE's fp32 softmax (4) and grad (2).
# - "openrlhf" (0.11.2 models/actor.py forward -> log_probs_from_logits): bf16 logits cast to fp32
#   (2 + 4 while both live); flash-attn is a dependency of every release since 0.5, so the log-probs take
#   flash_attn/ops/triton/cross_entropy.py cross_entropy_loss (its ImportError fallback never runs). The
#   update holds the fp32 logits (trainer/ray/ppo_actor.py training_step keeps `output`, return_output=True,
#   until strategy.backward), the cross-entropy's fp32 gradient (CrossEntropyLoss.backward: empty_like(logits),
#   inplace_backward False by default) and the bf16 gradient the .to(torch.float32) cast hands to the lm_head
#   (4 + 4 + 2); entropy (compute_entropy, torch.compile'd, only when --actor.entropy_coef is set) one more
#   fp32 gradient (4).
# - "openrlhf-0.5" (0.5.9 models/utils.py log_probs_from_logits, no flash-attn cross-entropy): the same bf16 -> fp32
#   cast forward (2 + 4; its per-row logsumexp loop keeps one row's temporaries); the update holds the fp32 logits,
#   the gather's fp32 gradient and, at the stack/unbind of the per-row logsumexp, the rows' fp32 gradients and their
#   stacked copy (4 + 4 + 4 + 4). No entropy term in 0.5.9.
# - "openrlhf-0.5-packed" (the same with --packing_samples): the micro batch is one row of all its samples' tokens
#   (trainer/ppo_trainer.py training_step_actor: torch.cat(...).unsqueeze(0); experience_maker.py likewise), so the
#   "loop to reduce peak mem consumption" runs once over the whole [tokens, vocab] and torch's logsumexp holds its
#   difference at full size beside the fp32 logits (aten/src/ATen/native/ReduceOps.cpp logsumexp_out_impl:
#   `(self - maxes).exp_()`, the exp in place since at::amax replaced at::max_values; only torch <= 1.6 had
#   at::exp(self - maxes) with both alive, and 0.5.9 runs vLLM 0.7's torch 2.5): 4 + 4 forward, measured 8.0 B per
#   logit at 2,048-16,384 tokens (benchmarks/gpu_logits_probe.py "forward: fp32 logsumexp", one H200,
#   benchmarks/results/h200-2026-11-26); the update as unpacked.
# - "openrlhf-0.4" (0.4.0: transformers 4.43.1's LlamaForCausalLM/Qwen2ForCausalLM.forward upcast the logits,
#   `logits = logits.float()`, and log_probs_from_logits is F.log_softmax over the whole tensor): forward the fp32
#   logits and their fp32 log_softmax (4 + 4); the update the fp32 logits, the saved log_softmax, the gather's fp32
#   gradient and log_softmax's fp32 input gradient (4 + 4 + 4 + 4). No entropy term.
# - "swift-deepspeed" / "swift-ddp" (ms-swift 4.6.0 grpo_trainer._get_logps_via_local_forward with
#   trl 0.29.1's selective_log_softmax, as ms-swift pins trl<1.0): under DeepSpeed the logits stay
#   bf16 (2; the per-row log_softmax saved, 2, and its gradients, up to 4, in the update); under
#   DDP/FSDP with bf16, accelerate's convert_outputs_to_fp32 makes them fp32 (2 + 4 forward; the update
#   16: fp32 logits, the gather's fp32 gradient and the per-row logsumexp's fp32 gradients with their stacked
#   copy, 4 + 4 + 4 + 4, the same code and count as "openrlhf-0.5"). Measured: benchmarks/gpu_logits_probe.py's
#   "update: fp32 logsumexp" (gather minus logsumexp on fp32 logits, one H200, benchmarks/results/h200-2026-11-26)
#   holds 14.5, 15.6 and 15.8 B per logit at 2,048, 8,192 and 16,384 tokens (the 12 read before missed the
#   backward's second full-size fp32 tensor). Entropy: trl's entropy_from_logits saves its chunks' log_softmax
#   and exp, in the logits' dtype (2 + 2 or 4 + 4), on top of the same log-prob backward (16 + 8 = 24).
# - "hf-labels" (transformers loss_utils.py ForCausalLMLoss: `logits.float()` then F.cross_entropy; no RL framework's
#   log-probs, the loss of benchmarks/gpu_step_probe.py): forward 2 + 4; the update the saved fp32 log_softmax, the
#   nll's fp32 gradient and log_softmax's (4 + 4 + 4), measured 10.5-11.8 B per logit on one H200
#   (benchmarks/gpu_logits_probe.py "update: HF labels loss (fp32)", benchmarks/results/h200-2026-11-26).
# - "skyrl" (skyrl-train 0.3.1 model_wrapper.py HFModelWrapper.forward -> utils/torch_utils.py logprobs_from_logits):
#   the bf16 logits go to flash-attn's Triton cross_entropy_loss with inplace_backward (2: the gradient overwrites
#   them); chunked_entropy_from_logits works in chunks of rows without grad (transient), and with grad
#   (trainer.algorithm.use_entropy_loss) saves each chunk's log_softmax and exp and adds their gradient (2 + 2 + 2).
LOGIT_BYTES = {
    "megatron": (BF16 + FP32, BF16 + BF16 + FP32, FP32 + BF16, BF16 + BF16 + FP32 + BF16),
    "openrlhf": (BF16 + FP32, BF16 + FP32, FP32 + FP32 + BF16, 3 * FP32 + BF16),
    "openrlhf-0.5": (BF16 + FP32, BF16 + FP32, 4 * FP32, 4 * FP32),
    "openrlhf-0.5-packed": (2 * FP32, 2 * FP32, 4 * FP32, 4 * FP32),
    "openrlhf-0.4": (2 * FP32, 2 * FP32, 4 * FP32, 4 * FP32),
    "swift-deepspeed": (BF16, BF16, 4 * BF16, 6 * BF16),
    "swift-ddp": (BF16 + FP32, BF16 + FP32, 4 * FP32, 6 * FP32),
    "skyrl": (BF16, BF16, BF16, 4 * BF16),
    "hf-labels": (BF16 + FP32, BF16 + FP32, 3 * FP32, 3 * FP32),
}
# The out-of-place temperature division of the response logits (``Plan.logits_temperature_copy``): TRL 0.16.0 to
# 0.29.x (trl/trainer/grpo_trainer.py ``_get_per_token_logps`` in 0.16.0/0.16.1, ``_get_per_token_logps_and_entropies``
# in 0.29.1: ``logits = logits / self.temperature``; 1.0.0 divides in place, ``logits.div_``) and ms-swift 3.3.0 to
# 4.1.x (3.3.0 trainers/rlhf_trainer/grpo_trainer.py ``_get_per_token_logps``; 4.0.4 and 4.1.0
# rlhf_trainers/grpo_trainer.py ``_get_logps_via_local_forward``: ``logits[:, -(logits_to_keep + 1):-1, :] /
# self.temperature``; 4.2.0 to 4.6.0 ``logits.div_(self.temperature)``). The quotient is a second tensor of the
# logits' size in their dtype while the logits are alive: a forward-only pass peaks at logits + copy, 2 + 2 B per
# logit under DeepSpeed (bf16) and 4 + 4 under DDP (fp32 after accelerate's convert_outputs_to_fp32, whose bf16 input
# is gone by then); the model's logits are freed once divided (the slice and the lm_head save no output for the
# backward), so the update's peak, later in its backward, is the LOGIT_BYTES update row unchanged.
TEMPERATURE_COPY_FWD_BYTES_PER_LOGIT = {"swift-deepspeed": BF16 + BF16, "swift-ddp": FP32 + FP32}
# TRL 1.16.0 GRPO never builds [tokens, vocab] logits: GRPOTrainer.__init__ patches the model with
# add_fused_lm_head (trl/trainer/utils.py) and trl/kernels/chunked_logprob.py projects in tiles of
# 4096 tokens x 32768 vocab in bf16 (one reused buffer: 256 MiB); its backward accumulates the
# lm_head weight's gradient in fp32 and returns it cast to bf16 (4 + 2 bytes per weight) when the
# lm_head is trained (full fine-tuning; PEFT's q/v LoRA leaves it frozen).
FUSED_LM_HEAD_TILE_BYTES = 4096 * 32768 * BF16
FUSED_LM_HEAD_GRAD_BYTES_PER_WEIGHT = FP32 + BF16
# Unsloth 2026.10.9 GRPO ("unsloth-chunked") never builds [tokens, vocab] logits either: its log-probs go through
# unsloth_zoo/fused_losses/chunked_logprob.py (unsloth_chunked_logprobs; rl_replacements.py
# chunked_hidden_states_selective_log_softmax calls it), which projects a chunk of rows at a time to fp32 logits and,
# in the backward, their fp32 gradient: chunked_logprob_rows sizes a chunk to 2 GiB at 8 bytes per logit
# (_CHUNK_GB 2.0, _BYTES_PER_LOGIT 8.0), at most max(512, rows/8) rows (_MIN_ROWS). A forward-only pass holds the
# fp32 logits of one chunk (4 of the 8 bytes).
UNSLOTH_LOGPROB_CHUNK_BYTES = 2 * 1024**3
UNSLOTH_LOGPROB_BYTES_PER_LOGIT = 8
UNSLOTH_LOGPROB_MIN_ROWS = 512
# Unsloth 2025.9.6 GRPO ("unsloth-sequence", unsloth_zoo 2025.9.7 rl_replacements.py): grpo_accumulated_loss cuts the
# micro batch into n_chunks = bsz chunks (unsloth_num_chunks -1), one sequence each, and UnslothEfficientGRPO.forward's
# compute_loss, under torch.compile with torch.func.grad_and_value, projects the chunk's completion positions to
# logits in the autocast dtype (new_logits), with old_logits and ref_logits from the old and reference policies'
# hidden states when the trainer kept them; the backward's gradient of new_logits is of new_logits' dtype. A logit
# of the chunk: new_logits and its gradient, plus one 16-bit copy for each of old_logits and ref_logits there. The
# old and reference passes (_get_per_token_logps under UNSLOTH_RETURN_HIDDEN_STATES) return hidden states: no logits.
UNSLOTH_SEQUENCE_LOSS_BYTES_PER_LOGIT = BF16 + BF16
UNSLOTH_SEQUENCE_POLICY_COPY_BYTES_PER_LOGIT = BF16
# bitsandbytes NF4 with double quantization (Unsloth's load_in_4bit: unsloth/models/loader.py
# FastLanguageModel.from_pretrained, bnb_4bit_use_double_quant=True, bnb_4bit_quant_type "nf4"): 4 bits per weight,
# one 8-bit absmax per 64 weights and one fp32 constant per 256 absmax (bitsandbytes' default blocksizes)
NF4_BYTES = 0.5 + (1 + FP32 / 256) / 64
# the same without double quantization (bnb_4bit_use_double_quant False: TRL's ModelConfig use_bnb_nested_quant
# default, trl/trainer/model_config.py): one fp32 absmax per 64-weight block (bitsandbytes functional.py quantize_4bit,
# blocksize 64)
NF4_PLAIN_BYTES = 0.5 + FP32 / 64
# bitsandbytes' 8-bit AdamW (transformers' --optim adamw_8bit / adamw_bnb_8bit / paged_adamw_8bit), bytes a trained
# parameter for its two moments: uint8 state1 and state2 with an fp32 absmax per 256-element block each
# (bitsandbytes 0.50.2 optim/optimizer.py Optimizer2State.init_state: ``torch.uint8``, ``blocksize = 256``,
# ``absmax1``/``absmax2`` float32; tensors under ``min_8bit_size`` 4096 elements keep 32-bit states, left out: a
# norm weight, never a LoRA factor of a priced model). Paged states are counted on the GPU.
ADAM_8BIT_STATE_BYTES = 2 * (1 + FP32 / 256)
# bitsandbytes LLM.int8 (load_in_8bit, Int8Params): one byte per weight (its per-row fp32 scales are negligible)
INT8_BYTES = 1.0
# FP8 (Unsloth's load_in_fp8: unsloth/models/loader.py FastLanguageModel.from_pretrained): each linear weight one
# float8_e4m3fn byte, with one fp32 scale per output row ('row', the default) or per 128x128 block ('block')
# (unsloth/models/loader_utils.py _get_fp8_mode_and_check_settings; unsloth_zoo/vllm_utils.py reads vLLM's fp8
# weight and weight_scale into the trainer's FP8Linear): the scales are negligible. Embeddings, lm_head and norms
# stay 16-bit (FP8 checkpoints and vLLM's Fp8LinearMethod quantize Linear layers only)
FP8_BYTES = 1.0
# verl Megatron with actor_rollout_ref.model.use_fused_kernels=True ("megatron-fused") never builds
# [tokens, vocab] logits either: verl/models/mcore/model_forward_fused.py patches the GPT model's
# output layer with verl/utils/kernel/linear_cross_entropy.py (the same code in verl 0.6.1 to 0.9.1),
# whose Triton kernels (verl/utils/kernel/kernels.py) work per token on the rank's vocab shard:
# - forward (efficient_entropy_forward): outputs logprobs, entropy, maximum and accumulate +
#   entropy_b, five fp32 values per token (20 B, the last three saved for the backward); per
#   vocab split of 1024 columns three fp32 partials (_max, _accu, _entropy_b), plus a clone of
#   _max (_max_backup) when the vocab is split over TP ranks;
# - backward (efficient_entropy_backward, default BackwardEnum._Split_Dlogits_N): a bf16 d_logits
#   buffer of [tokens, 9504] reused for every vocab slice, the bf16 d_hidden [tokens, h] and the
#   bf16 d_weight [vocab shard, h];
# - with sequence parallel (TP > 1) the hidden states are first gathered to every token
#   (gather_from_sequence_parallel_region): one bf16 [tokens, h] copy.
FUSED_LCE_OUT_BYTES_PER_TOKEN = 5 * FP32
FUSED_LCE_VOCAB_PER_SPLIT = 1024
FUSED_LCE_SPLIT_PARTIALS = 3
FUSED_LCE_DLOGITS_COLUMNS = 9504
# verl FSDP with actor_rollout_ref.model.use_fused_kernels=True (read in verl 0.4.0 to 0.9.1: the legacy workers
# workers/fsdp_workers.py ActorRolloutRefWorker.init_model set it on the actor's and the reference's configs, and
# workers/actor/dp_actor.py DataParallelPPOActor._forward_micro_batch takes the model's log_probs/entropy outputs;
# from 0.8.0 workers/engine_workers.py TrainingWorker.__init__ copies it into both engines' configs, and
# workers/engine/fsdp/transformer_impl.py prepare_model_outputs reads them, packed or padded). The actor's update,
# its old log-probs and the reference all go through it; the critic (a value head) does not. The model's forward
# is replaced (models/transformers/monkey_patch.py patch_forward_with_backends) by one of two backends of
# model.fused_kernel_options.impl_backend (from 0.4.1; 0.4.0 has the torch one only):
# - "triton": verl/utils/kernel/linear_cross_entropy.py, the kernel priced above ("megatron-fused") on one rank's
#   whole vocabulary (no TP, no gather);
# - "torch" (the default): verl/utils/experimental/torch_functional.py FusedLinearForPPO, chunks of 512 rows
#   (FusedLinearForPPO.__init__ chunk_size). A chunk's forward (_fused_linear_for_ppo_fwd, no grad) holds its fp32
#   logits, softmax and log_softmax and one fp32 temporary of logsumexp or probs*logits: 4 x 4 B per logit (0.8.0
#   and 0.9.1 replace the log_softmax by flash-attn's cross_entropy_loss where it imports: 3 x 4; we count the
#   larger). A chunk's backward
#   (_fused_linear_for_ppo_bwd) recomputes the fp32 logits and softmax and holds the one-hot, (one_hot - probs) and
#   the product: 5 x 4 B; with the entropy's gradient (dentropy: entropy in the loss) the one-hot, dlogits,
#   log_softmax, probs*(log_softmax + entropy) and its product by -dentropy stay beside the logits and softmax:
#   7 x 4 B. The backward's outputs: dhidden_states (zeros_like the [tokens, h] bf16 hidden states), each chunk's
#   [vocab, h] bf16 product dlogits.t() @ hidden_states (computed whether or not the weight is trained) and, when the
#   lm_head is trained (not with LoRA), dvocab_weights, zeros_like the [vocab, h] bf16 weight, that it is added
#   into. Read from the code, not measured.
# - "liger" (0.9.1 only, whose fsdp extra pins liger-kernel>=0.8.2): LigerFusedLinearScaledCrossEntropyFunction, or
#   FusedLinearForPPO when liger-kernel is not installed (FusedLinearForPPO.forward). liger-kernel 0.8.2
#   ops/fused_linear_scaled_cross_entropy.py runs, on any GPU but sm90, _FusedLinearPPOFallbackFunction, adapted from
#   FusedLinearForPPO with the same 512-row chunks (_FALLBACK_CHUNK_SIZE); on sm90 (H100, H200) a CuTe-DSL kernel we
#   have not read. Priced as the torch backend (on sm90 an upper bound).
VERL_FUSED_PPO_CHUNK_ROWS = 512
VERL_FUSED_PPO_FWD_BYTES_PER_LOGIT = 4 * FP32
VERL_FUSED_PPO_BWD_BYTES_PER_LOGIT = 5 * FP32
VERL_FUSED_PPO_BWD_ENTROPY_BYTES_PER_LOGIT = 7 * FP32
# Liger's chunked GRPO loss (liger_kernel/chunked_loss/fused_linear_ppo.py LigerFusedLinearPPOBase.forward,
# liger-kernel 0.5.10 and 0.6.4 the same): TRL's GRPOTrainer.compute_liger_loss (with use_liger_loss from TRL 0.17.0
# to 0.24; with use_liger_kernel, or the deprecated use_liger_loss, from 0.25.0 to 1.12: trl/versions.py
# liger_loss_flags) and ms-swift's
# (--use_liger_kernel, from 3.5.0: trainers/rlhf_trainer/grpo_trainer.py _prepare_liger_loss, 4.6.0
# rlhf_trainers/grpo_trainer.py) hand it the last hidden states of the completion positions and the lm_head
# weight instead of the logits. Neither passes chunk_size: LigerFusedLinearGRPOLoss's default 1, one sequence per
# chunk, whose logits (bf16, 2 B), fp32 copy and log_softmax (4 + 4) and, in the backward run in the same pass by
# torch.func.grad_and_value, the log_softmax's fp32 gradient (4) and the logits' bf16 one (2) are counted at once:
# 16 B per logit (eager; TRL leaves compiled=True, ms-swift passes compiled=False). grad_and_value differentiates
# the weight whatever its requires_grad (LoRA too): grad_weight, zeros_like the [vocab, h] weight, plus each
# chunk's gradient before it is added in; the chunks' input gradients are kept in a list and concatenated (2 x
# [rows, h]). Only the policy's update: the old and reference log-probs still come from the whole logits
# (TRL _get_per_token_logps; ms-swift _get_per_token_logps_and_entropies). Read from the code, not measured.
LIGER_GRPO_BYTES_PER_LOGIT = BF16 + FP32 + FP32 + FP32 + BF16
LIGER_GRPO_WEIGHT_GRAD_COPIES = 2
LIGER_GRPO_INPUT_GRAD_COPIES = 2
#
# "generic" accounting, for a framework whose logits code we have not audited: verl docs/perf/perf_tuning.rst ("Memory optimization for
# entropy calculation from logits") counts tokens*vocab*(4 + 2 + 1) bytes for entropy; logits
# plus a temperature-scaled copy (bf16) without entropy; those plus their gradient in the update.
ENTROPY_FWD_BYTES_PER_LOGIT = 4 + 2 + 1
LOGITS_FWD_BYTES_PER_LOGIT = BF16 + BF16
LOGITS_UPDATE_BYTES_PER_LOGIT = 3 * BF16
ENTROPY_SAVED_BYTES_PER_LOGIT = 2 * BF16
ENTROPY_SAVED_CHUNKED_BYTES_PER_LOGIT = 2 * FP32
# entropy_from_logits_with_chunking (verl/utils/torch_functional.py) works on chunks of 2048 rows
# (``entropy_from_logits_chunk_size`` default, trainer/config/engine/fsdp.yaml): per chunk an fp32
# copy, its fp32 softmax and one more fp32 chunk-sized temporary (logsumexp's shifted input, then
# the product softmax*logits): 3 x 4 B. Shared by both accountings.
ENTROPY_CHUNK_ROWS = 2048
ENTROPY_CHUNK_BYTES_PER_LOGIT = 3 * FP32
#
# "verl-fsdp" accounting, read from verl 0.9.1 (docs/cost-model.md section 2 has the derivation):
# verl/workers/engine/fsdp/transformer_impl.py FSDPEngineWithLMHead.forward_step runs the model
# and prepare_model_outputs under torch.autocast(bf16), so the lm_head's logits are bf16 (2 B)
# and stay alive through the pass. _scale_logits_by_temperature skips the division when the
# temperature is the scalar 1.0 (verl's default rollout.temperature; other temperatures add one
# bf16 copy, not modelled). Log-probs come from flash-attn's Triton cross-entropy
# (utils/torch_functional.py logprobs_from_logits; flash-attn is pinned by verl's fsdp extra):
# no [tokens, vocab] buffer in forward, and in backward it writes the gradient into the logits
# (inplace_backward=True) unless entropy is also computed.
LOGITS_BF16_BYTES_PER_LOGIT = BF16
# Old log-prob pass (no_grad, calculate_entropy=True from ray_trainer._compute_old_log_prob), entropy
# by verl_F.entropy_from_logits, beyond the bf16 logits:
# - wrapped in torch.compile (FSDPEngine.__init__, engine_config.use_torch_compile, default true):
#   Inductor fuses the fp32 upcast, softmax, logsumexp and sum(p*logits) into row reductions, no
#   [tokens, vocab] intermediate (the same fusion allenai/open-instruct PR #584 and verl PR #3852
#   measured for log_softmax + gather): 0 B.
# - eager (use_torch_compile false): autocast runs softmax in fp32 (an fp32 output, 4), the product
#   softmax*logits promotes the bf16 logits to an fp32 copy (4) and writes an fp32 product (4), all alive
#   at once: 12 B beyond the logits (verl #2828's failed 13.91 GiB fp32 [24.6k, 152064] allocation is
#   one of these 4 B tensors). Measured on one H200 (benchmarks/gpu_logits_probe.py, "verl forward: eager
#   entropy", 2,048-16,384 tokens x 151,936 vocab): 14.0 B per logit with the logits; compiled 2.0, chunked
#   2 + 12 x 2048/t exactly (docs/accuracy.md). It was 8, from reading the code, before that measurement.
ENTROPY_COMPILED_FWD_EXTRA_BYTES_PER_LOGIT = 0
ENTROPY_EAGER_FWD_EXTRA_BYTES_PER_LOGIT = 3 * FP32
# Update pass (grad). Without entropy (verl 0.9.1 default: entropy_coeff 0, calculate_entropy
# false) the cross-entropy gradient overwrites the logits: 2 B in all. With entropy the
# cross-entropy keeps the logits and writes a separate bf16 gradient (2 B) and the entropy adds:
# - compiled: the AOTAutograd partitioner saves only the bf16 logits and per-row reductions and
#   recomputes the softmax inside the fused backward, whose output is one bf16 gradient: 2 B;
# - eager: the saved fp32 softmax output and fp32 logits copies (of the product and of logsumexp's
#   autocast) and the backward's fp32 gradients of the product, the softmax and logsumexp before they are
#   summed into the bf16 gradient: measured on one H200 (benchmarks/gpu_logits_probe.py, "verl update:
#   eager entropy", the entropy's own loss): 22.5-23.8 B per logit beyond the logits at 2,048-16,384
#   tokens, 24 B = 6 fp32 (it was 12, from reading the code, before that measurement); compiled: 1.6-1.8
#   beyond the logits (2, the bf16 gradient, as read); chunked: 24.5 at 2,048 tokens, 10.6 at 8,192, 9.3 at
#   16,384, about what the formula below gives (24 / 15 / 13.5);
# - chunked (entropy_from_logits_with_chunking; torch.compile specializes on the loop's token
#   count and falls back to eager after its recompile limit, so we count the eager chunks): every
#   chunk's fp32 copy and fp32 softmax are saved (8), slicing's backward builds a full-size bf16
#   gradient per chunk (2), plus one chunk's transient (ENTROPY_CHUNK_BYTES_PER_LOGIT x rows).
# entropy_checkpointing recomputes the entropy at the start of backward, when the model's
# activations are still all alive, so it does not lower this peak (it frees the saved tensors only
# between forward and backward).
LOGITS_GRAD_BYTES_PER_LOGIT = BF16
ENTROPY_COMPILED_UPDATE_EXTRA_BYTES_PER_LOGIT = BF16
ENTROPY_EAGER_UPDATE_EXTRA_BYTES_PER_LOGIT = 6 * FP32
ENTROPY_CHUNKED_UPDATE_EXTRA_BYTES_PER_LOGIT = 2 * FP32 + BF16

# --------------------------------------------------------------------------- rollout engine
# The vLLM the frameworks pin: verl 0.9.1's extra `vllm==0.24.0`, OpenRLHF 0.11.2's `vllm==0.29.0`
# (their wheels' METADATA). vLLM 0.24 v1/worker/gpu_worker.py determine_available_memory:
# KV = ceil(total*gpu_memory_utilization) - (weights + torch peak of profile_run + non-torch increase
# + the CUDA-graph estimate, VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS default 1 since v0.21).
# The profile run is a forward at max_num_batched_tokens; per token it holds the layer
# input/output and residual (3 x 2h), the q/k/v and attention outputs (2*(2*q_dim + 2*kv_dim)/tp)
# and the gate_up and SiLU*up outputs (2*3*ffn/tp). Then the dummy sampler run
# (gpu_model_runner._dummy_sampler_run) on min(max_num_seqs, max_num_batched_tokens) rows of the
# full vocabulary (logits are all-gathered on every TP rank): the bf16 logits, Sampler.forward's fp32
# copy, the fp32 probabilities and the fp32 exponential noise of random_sample (top-k/top-p runs as an
# in-place Triton kernel for 8 rows and more: no sort, no int64 indices): 2 + 4 + 4 + 4 bytes.
ENGINE_ACT_RESIDUAL_COPIES = 3
ENGINE_SAMPLER_BYTES_PER_LOGIT = BF16 + 3 * FP32
# Non-torch memory vLLM counts inside the budget: only its increase during loading and profiling
# (cuBLAS and attention workspaces). A vLLM startup log (gateway-api-inference-extension PR #550,
# TP1, 79 GiB GPU) shows "non_torch_memory takes 0.16GiB"; a v1 log of Qwen3-8B-FP8, 0.02 GiB.
ENGINE_NON_TORCH_BYTES = 0.16 * GIB
# TP > 1: the NCCL communicators and all-reduce buffers are made by init_worker_distributed_environment
# *before* the start-up memory snapshot ("This ensures NCCL buffers are allocated before we measure"),
# so they sit outside the budget: the custom all-reduce IPC buffer and the symmetric-memory all-reduce
# buffer, 64 + 64 MiB at TP 2 on sm90 (vllm/distributed/device_communicators/all_reduce_utils.py,
# CUSTOM_ALL_REDUCE_MAX_SIZES, SYMM_MEM_ALL_REDUCE_MAX_SIZES), at most that at larger TP: inside the
# safety margin's fixed part (MARGIN_FIXED_BYTES: CUDA contexts and NCCL buffers), not a term of its own.
ENGINE_TP_BUFFER_BYTES = 128 * MIB
# CUDA graphs: inside vLLM's budget since v0.21 (the estimate above: profile_cudagraph_memory, the
# first capture plus one per further graph); kept while the engine sleeps (verl rollout.yaml
# "cudagraph in inference engine can not be offloaded during update policy"). verl 0.9.1 captures
# FULL_AND_PIECEWISE (vllm_async_server.py): 51 piecewise + 35 full graphs at max_num_seqs 256.
# Logged pools of that capture set: 0.65 GiB (32-layer 9B, vLLM 0.19), 0.55 GiB (32-layer 4B, 0.22),
# 0.68 GiB (36-layer Qwen3-8B): a fixed part plus a per-layer part through them (docs/cost-model.md).
CUDA_GRAPH_FIXED_BYTES = 256 * MIB
CUDA_GRAPH_PER_LAYER_BYTES = 12 * MIB
# vLLM refuses to start unless the KV cache holds one max_model_len sequence ("To serve at least
# one request with the model's max seq len ..."): verl 0.9.1 leaves an unset rollout.max_model_len at
# the model's max_position_embeddings (vllm_async_server.py _validate_configs), other frameworks pass
# prompt + response (Plan.engine_max_len); SGLang raises "Not enough memory" when the pool is empty.
# We require one such sequence for both.
ENGINE_MIN_SEQS_IN_KV = 1

# --------------------------------------------------------------------------- safety margin
# Memory the cost model does not itemise, per GPU: two CUDA contexts (trainer process
# and inference-engine process; verl 0.9 runs vLLM/SGLang as a separate server
# process) of ~0.3-0.5 GiB each with CUDA lazy loading, NCCL communicator buffers of
# the FSDP, Ulysses and rollout-TP groups, plus allocator fragmentation. The fixed
# part is 1 GiB; fragmentation is 5% of capacity (verl turns on
# expandable_segments for training, which keeps it low; SGLang's docs advise leaving
# 5-8 GB on an 80 GB GPU, which our 1 GiB + 5% = 5 GiB on 80 GiB matches).
MARGIN_FIXED_BYTES = 1 * GIB
# DeepSpeed ZeRO-3 steps the optimizer one sub-group at a time (deepspeed/runtime/zero/config.py
# sub_group_size default 1e9 elements; stage3.py _prepare_fp32_grad_for_sub_group).
DEEPSPEED_SUB_GROUP_SIZE = 1_000_000_000
# DeepSpeed ZeRO's reduce bucket: deepspeed/runtime/zero/config.py ``reduce_bucket_size`` default pp_int(5e8) elements
# (0.16.3); a config's "auto" is dropped by DeepSpeedConfigModel (runtime/config_utils.py: ``v != "auto"``), so the
# default stands where the config leaves it "auto" (OpenRLHF get_train_ds_config, 0.4.0-0.11.2)
DEEPSPEED_REDUCE_BUCKET_SIZE = 500_000_000
MARGIN_FRACTION = 0.05

# --------------------------------------------------------------------------- time
# Model FLOPs utilisation of one GPU's pass at large micro batches, on an H100 SXM (the GPU catalog's 989 TFLOPs bf16
# dense). Measured (benchmarks/gpu_step_probe.py on one H100 80GB HBM3, torch 2.11, transformers 5.17, SDPA attention,
# random-weight Qwen2.5-1.5B/3B/7B; benchmarks/results/h100-2026-11-26): the MFU at which compute_seconds (with the
# micro-batch, width and attention efficiencies below) reproduces each measured pass, median over the micro batches
# of 4,096 tokens or more: 0.585 for forward + backward (9 rows, 0.51-0.66), 0.633 for a forward alone (9 rows,
# 0.46-0.72). Counted plainly (6ND + causal attention at 989 TFLOPs) the 7B passes ran at 0.52-0.53 and 0.56. They
# were 0.35 and 0.40, read from multi-GPU RL runs (verl #965's ~0.33 actor MFU on H100; OpenRLHF's benchmark,
# 0.17-0.37 on A800), which priced one GPU's pass 1.6-1.7x slow; what a multi-GPU run spends beyond its GPUs' passes
# is the fitted forward_scale / train_scale (costmodel/time.py PassSeconds, docs/accuracy.md).
MFU_TRAIN = 0.585
MFU_FORWARD = 0.633
# Prefill in the inference engine (compute-bound, large fused GEMMs): 0.5, under
# torchao roofline_utils.py's achievable bf16 GEMM fraction (0.69 on H100).
MFU_PREFILL = 0.50
# Decode at large batch can become compute-bound; same ceiling as prefill.
MFU_DECODE = 0.50
# Causal attention does half of the score and value work: flash-attention skips the blocks above the diagonal
# (FlashAttention-2, Dao 2023, section 3.1.1 "Causal masking": "about half of the blocks" need no computation;
# its benchmarks count causal FLOPs as half the non-causal ones), as Megatron-LM counts it
# (megatron/training/training.py num_floating_point_operations: causal self-attention factor 0.5).
ATTN_CAUSAL_FRACTION = 0.5
# Decode is HBM-bound: llm-analysis warns HBM efficiency "0.6-0.7" in inference;
# torchao's achievable HBM fraction (0.92) is the copy-kernel ceiling.
HBM_EFF_DECODE = 0.70
# Elementwise optimizer step (AdamW reads p, g, m, v and writes p, m, v in fp32: 28 B a parameter at least). PyTorch's
# default AdamW (foreach kernels, what verl's FSDP and the HF trainers build) makes several passes over the states:
# measured on one H200 (benchmarks/gpu_step_probe.py, benchmarks/results/), one step over Qwen2.5-1.5B's 1.54e9 fp32
# parameters took 36.6 ms, 1.18 TB/s of the 28 B count against the card's 4.8 TB/s: 0.25.
HBM_EFF_OPTIMIZER = 0.25
ADAM_BYTES_PER_PARAM = 7 * FP32
# Micro-batch size efficiency: eff = MFU * t / (t + T_HALF), t = tokens per GPU per micro batch. A GEMM of t rows
# runs as ceil(t/128) x ceil(N/128) output tiles spread over the GPU's SMs (NVIDIA Deep Learning Performance Guide,
# "Matrix Multiplication Background", tile and wave quantization; Anthony et al. 2024, arXiv 2401.14489, section IV):
# one full wave needs t = 128^2 x SMs / N rows, 160-430 tokens for a 7-8B model's projections (N = 4,096-11,008)
# on an A100's 108 SMs, 200-530 on an H100's 132. Below a wave the GPU idles in proportion, so half the efficiency
# at 256 tokens is the order of magnitude, not a fit (MPT's benchmarks, whose micro batches hold 4K-98K tokens,
# cannot fit it): 89% at 2K, 97% at 8K. Larger micro batches and token-budget packing are faster, as verl's guides
# say, without dominating the step time.
MICRO_TOKENS_HALF_EFF = 256
# Model width and attention (docs/cost-model.md section 4.1). MosaicML's MPT training benchmarks
# (llm-foundry scripts/train/benchmarking/README.md at 495218376830947dce625efabc4d86be7c47cc45: 96 runs on 8
# A100-80GB or 8 H100-80GB, MPT 125M-30B, FSDP FULL_SHARD, sequences 512-65,536) measure MFU against width and length.
# Counting their attention causally, as we do, the runs fit (median |log error| 0.047 on A100, 0.036 on H100; 0.22 and
# 0.21 without these two terms; tests/test_efficiency_terms.py pins the table and recomputes both):
# - GEMM efficiency grows with the model width h as h / (h + WIDTH_HALF_EFF_HIDDEN), relative to a 4,096-wide model
#   (MFU_TRAIN and MFU_FORWARD describe a 7-8B model, width 3,584-4,096) and no higher above it (MPT 13B and 30B on
#   H100 are no more efficient than 7B): 0.59 at Qwen2.5-0.5B's 896, 0.75 at 1.5B's 1,536, 0.97 at 7B's 3,584.
WIDTH_HALF_EFF_HIDDEN = 1000
WIDTH_REF_HIDDEN = 4096
# - Attention (flash-attention forward and backward, counted causally) runs at 0.32 of the GEMMs' efficiency (the
#   fit's per-GPU optimum: 0.40 on A100, 0.28 on H100, FlashAttention-2 being less efficient on Hopper): it is why
#   MPT-7B's MFU falls from 62% at 2K tokens a sequence to 30% at 64K on A100.
ATTN_EFF_RATIO = 0.32
# - A GPU whose FLOPs outrun its memory bandwidth reaches less of its peak: MPT's 37 runs on both GPUs (the same model,
#   length, micro batch and checkpointing) reached a median 0.68 of their A100 MFU on H100 (0.57-0.90), H100's peak /
#   bandwidth being 295 FLOP/B against A100's 153 (the work that does not scale with tensor-core FLOPs: norms,
#   elementwise, softmax, communication). Taking 1/MFU linear in that ratio, a + b x ratio (the form of a step that is
#   part compute-bound, part bandwidth-bound), the two GPUs give a/b = 149 FLOP/B; MFU_TRAIN and MFU_FORWARD describe
#   an H100, so a GPU's training and forward passes run at (149 + 295) / (149 + its ratio) of them
#   (``time.gpu_compute_factor``): A100 1.47, H200 1.25, H20 (148 TFLOPs, 4.0 TB/s: 37 FLOP/B) 2.39. Against
#   measurement: verl's logged actor MFU (its own FLOP count over its peak) in one contributor's tables of the same
#   jobs (ISEEKYAN/verl_megatron_practice dapo7b.csv) is 0.78-0.83 on H20 and 0.27-0.44 on H100, about 2.1x.
#   A pass is held at what a bf16 matmul measurably reaches on the GPU (the catalog's matmul_tflops), else at its
#   peak (``time.pass_efficiency``): on the H20, 2.39 x 0.585 would be 1.40 of it; on the MI300X 0.66, its matmul 0.51.
RIDGE_HALF_FLOP_PER_BYTE = 149.0
RIDGE_REF_FLOP_PER_BYTE = 989.0 / 3.35  # H100 SXM5: 989 TFLOPs bf16, 3.35 TB/s
# Collectives: achieved bus bandwidth as a fraction of the link's (NCCL ring).
COLLECTIVE_EFF = 0.70
# Between nodes: 200 Gb/s InfiniBand per GPU (DGX A100: 8x HDR) = 25 GB/s; the GPU
# catalog has no inter-node field.
INTER_NODE_BANDWIDTH_GBPS = 25.0
# Host <-> GPU copies of pinned memory (offload) reach ~80% of the PCIe link.
HOST_LINK_EFF = 0.80
# Latency of one collective call whatever its size, by intra-node link: vLLM's TP all-reduces per decode layer and
# FSDP's per-layer all-gathers. NVLink: nccl-tests report 3.5 us for a 1 KiB all-reduce on 4 H800 without CUDA graphs
# (NVIDIA/nccl#1984) and ~6 us on 2 H100 (NVIDIA/nccl#1259); with the host's launch of the call, 10 us. Over PCIe
# without P2P the data goes through host memory: 40 us, an assumption, as is Infinity Fabric's 12 us.
ALLREDUCE_LATENCY_S = {"nvlink": 10e-6, "infinity-fabric": 12e-6, "pcie": 40e-6}
# NCCL's all-reduce reaches the link's bandwidth only with large messages, and an engine's decode all-reduces (a
# [batch, hidden] bf16 activation, 1-8 MB at the batches verl's engines run) sit on the ramp. nccl-tests all_reduce_perf
# on 4 H100 80GB HBM3 of one node (NV18, NCCL 2.26.2; github.com/dudeperf3ct/dudeperf3ct.github.io
# content/posts/distributed_communication_part1.md, "Distributed communication for GPUs (part 1)", 2025-09-09) times an
# out-of-place all-reduce of 1, 2, 4, 8 and 16 MiB at 28.1, 32.1, 45.1, 65.2 and 104.4 us. Priced as
# ALLREDUCE_LATENCY_S plus the ring's 2(n-1)/n of (the message + a half-bandwidth size) at COLLECTIVE_EFF of the link
# (315 GB/s on the H100): the link's bandwidth times m / (m + that size). The five rows give 2.74, 2.53, 3.17, 3.20 and
# 3.05 MB; their median, 3.05 MB: half the bandwidth at 3 MB, 73% at 8 MiB, 85% at 16 MiB (the table's 1 GiB row
# runs at 356 GB/s of bus bandwidth, COLLECTIVE_EFF's 315 within 12%). Applied to an engine's tensor-parallel
# all-reduces over NVLink (time.decode_step_seconds). The table's floor for small messages (23-26 us up to 256 KiB, one
# process driving the four GPUs) is not read as a latency: ALLREDUCE_LATENCY_S's per-process figures stand.
NCCL_NVLINK_HALF_BW_BYTES = 3.05e6
# A collective whose group spans nodes (an engine's tensor parallelism, a Megatron expert-parallel group over more
# GPUs than a node holds) crosses the InfiniBand fabric: nccl-tests report 19.0-20.7 us for an 8-128 byte all-reduce
# between two A100 nodes over HDR InfiniBand (NVIDIA/nccl-tests#150, all_reduce_perf, one GPU a node); with the
# host's launch of the call as for NVLink (10 us there for 3.5-6 us measured), 25 us.
INTER_NODE_LATENCY_S = 25e-6
# Sampling per decode step touches the [batch, vocab] logits: fp32 write, softmax read
# and write (verl's default rollout sampling, temperature 1 / top_p 1 / top_k -1, skips
# vLLM's top-k/top-p sort). Our count: 12 bytes per logit.
DECODE_SAMPLER_BYTES_PER_LOGIT = 3 * FP32
# vLLM's sampler, counted in vLLM 0.8.5's code for verl's rollout sampling (temperature 1, top_p 1, top_k -1, no
# penalties, ``logprobs=0``: verl 0.5.0 vllm_rollout_spmd.py vLLMRollout.__init__), each [batch, vocab] pass at its
# reads and writes: V1 (v1/sample/sampler.py Sampler.forward) computes the raw log-probabilities first
# (compute_logprobs: log_softmax of the bf16 logits into fp32, 2 + 4 B), casts the logits to fp32 (2 + 4), divides
# them by the temperature in place (4 + 4; apply_temperature: the batch is all random, no greedy argmax), takes their
# softmax (4 + 4; ops/topk_topp_sampler.py forward_native or forward_cuda, no top-k/top-p mask), draws the exponential
# noise (random_sample: q.exponential_, 4), divides the probabilities by it in place (8 + 4) and takes the argmax (4),
# then ranks the sampled token (gather_logprobs: ``(logprobs >= token_logprobs).sum(-1)``, 4 + 1, and the sum's
# read of the 1-byte mask, 1): 54 B. V0's sampler (model_executor/layers/sampler.py Sampler.forward, _multinomial,
# _get_logprobs, _get_ranks) makes the same passes in another order (the fp32 cast, the temperature's division,
# softmax, log_softmax, the noise, the division and the argmax: 50 B) and, where the caller asks for log-probabilities,
# a rank count through int64 (22 B more): 50-72 B, priced at V1's 54. It was 12 B, the fp32 write and one softmax.
VLLM_SAMPLER_BYTES_PER_LOGIT = (2 + 4) + (2 + 4) + (4 + 4) + (4 + 4) + 4 + (8 + 4) + 4 + (4 + 1 + 1)
# Host-side cost per decode step (scheduling, input preparation, the sampled tokens' copy back and their output
# processing), during which the GPU idles: 1.5 ms, an assumption for current engines. The published measurements
# are of vLLM's V0 engine: its multi-step scheduling RFC (vllm-project/vllm#6854, July 2024, vLLM 0.5 on H100)
# profiles "about 4ms of GPU bubble" per decode step ("5-13ms" over its runs), and vLLM's v0.6.0 performance blog
# (blog.vllm.ai 2024-09-05) puts scheduling at 29% of Llama-3-8B's time on one H100 against 38% on the GPU, ~4 ms at
# an 8B model's ~5 ms GPU step (vLLM V1 alpha blog, 2025-01-27: "as low as ~5ms"). V1 engines (vLLM >= 0.8) overlap
# part of it with the GPU; we found no published per-step figure for them. Priced at V0's 4 ms, the measured set's
# out-of-sample step error rose (0.377 -> 0.397, docs/accuracy.md item 10), so 1.5 ms stays.
DECODE_STEP_OVERHEAD_S = 1.5e-3
# vLLM's V0 engine (every vLLM before 0.8; VLLM_USE_V1=0 up to 0.10): the host's work between two decode steps, which
# the GPU waits for, is at least 4 ms (vllm-project/vllm#6854: "about 4ms of GPU bubble" per decode step profiled on
# H100) and grows with the running sequences: sampling, input preparation, output processing and scheduling "when BS
# is 200, all this together can be 20ms" (vllm-project/vllm#6801, 2024-08-08), 100 us a sequence. A V0 engine's step
# pays the larger of the two instead of DECODE_STEP_OVERHEAD_S.
VLLM_V0_STEP_HOST_S = 4e-3
VLLM_V0_HOST_S_PER_SEQ = 20e-3 / 200
# Without CUDA graphs (enforce_eager) each layer's kernels are launched from Python every step. Measured: one decode
# step of Llama-3.1-8B (32 layers) on an H100 SXM5 takes 8.4 ms eager and 5.1 ms as a CUDA graph
# (https://cloudai.pt/tag/cuda-graphs/, "CUDA Graphs + torch.compile: 1.65x LLM Decode Speedup"): 3.3 ms / 32 layers,
# ~100 us per layer, in line with the ~5-25 us of CPU dispatch per PyTorch op times a layer's ~10-15 ops. (It was
# 60 us, an assumption: eager engines in the measured set ran 2-4x slower than we predicted, docs/accuracy.md.)
EAGER_LAUNCH_S_PER_LAYER = 100e-6
# The host operations one such layer dispatches, counted in vLLM 0.8.5's Llama decoder layer (the kind of layer the
# 100 us were measured on; vllm/model_executor/models/llama.py LlamaDecoderLayer.forward, LlamaAttention.forward,
# LlamaMLP.forward, V1 flash-attention): two RMSNorms, the QKV projection and its split, rotary embedding, the
# attention's output buffer, custom-op call, KV-cache write and flash-attention kernel, the output projection, the
# gate-up projection, SiLU's output buffer and kernel, the down projection: 14, so ~7 us a host operation.
EAGER_DENSE_LAYER_HOST_OPS = 14
# An eager vLLM MoE layer dispatches more than the dense MLP it replaces (4 operations), counted in vLLM 0.8.5
# (vllm/model_executor/models/qwen3_moe.py Qwen3MoeSparseMoeBlock.forward; layers/fused_moe/layer.py FusedMoE.forward,
# the moe_forward custom op; fused_moe.py fused_topk and vllm_topk_softmax, the inplace_fused_experts custom op,
# fused_experts_impl; moe_align_block_size.py moe_align_block_size): the router projection, the moe_forward call,
# three top-k buffers, the router logits' fp32 copy, topk_softmax, the renormalisation's sum and division, the
# inplace_fused_experts call, two intermediate buffers, moe_align_block_size's four buffers and its kernel,
# silu_and_mul and moe_sum: 19, 15 more than the dense MLP; and two Triton kernels (fused_moe_kernel, the gate-up
# and the down projection) launched through Triton's Python launcher.
VLLM_MOE_LAYER_EXTRA_HOST_OPS = 19 - 4
VLLM_MOE_LAYER_TRITON_LAUNCHES = 2
# An eager vLLM MLA attention layer (DeepSeek-V2/V3) dispatches more than the Llama attention of
# EAGER_DENSE_LAYER_HOST_OPS (8 of its 14: the QKV projection and split, rotary, the output buffer, the custom-op
# call, the KV-cache write, flash-attention, the output projection), counted the same way (views not counted) in vLLM
# 0.8.5's decode path (models/deepseek_v2.py DeepseekV2MLAAttention.forward; v1/attention/backends/mla/common.py
# MLACommonImpl.forward, _q_proj_and_k_up_proj, _v_up_proj_and_o_proj; mla/flashmla.py _forward_decode;
# layers/rotary_embedding.py DeepseekScalingRotaryEmbedding.forward, _rotate_gptj): q_a_proj, q_a_layernorm,
# kv_a_proj_with_mqa, its split, kv_c's contiguous copy, kv_a_layernorm, the output buffer, the attention custom op,
# q_proj, its split, the W_UK bmm, q_pe's contiguous copy, the rotary embedding's 13 (the cache index, two
# repeat_interleave, and for the query and the key each a multiply, the rotation's negation and stack, a multiply and
# an add), the write-backs of q_pe and k_pe, concat_and_cache_mla, torch.cat, flash_mla_with_kvcache, the W_UV bmm,
# its reshape copy, o_proj and the output's copy: 34, 26 more.
VLLM_MLA_LAYER_EXTRA_HOST_OPS = 34 - 8
# vLLM 0.8.5's DeepSeek MoE block (models/deepseek_v2.py DeepseekV2MoE.forward, the model types of
# VLLM_DEEPSEEK_MOE_TYPES) beyond the Qwen3 block of VLLM_MOE_LAYER_EXTRA_HOST_OPS: grouped_topk (layers/fused_moe/
# fused_moe.py: sigmoid, the correction bias's add, the groups' top-2 and its sum, the groups' top-k, zeros_like,
# scatter_, the mask's reshape copy, bool, not, masked_fill, the experts' top-k, gather, the renormalisation's sum and
# division, the two dtype casts: 17) in place of fused_topk's 7, the shared expert's MLP (4, as a dense layer's), the
# routed output's scaling and the shared output's add: 16 more.
VLLM_DEEPSEEK_MOE_EXTRA_HOST_OPS = 17 - 7 + 4 + 2
VLLM_DEEPSEEK_MOE_TYPES = ("deepseek_v2", "deepseek_v3")
# A Qwen3 attention layer (the catalog's qk_norm) normalises its queries and keys per head with RMSNorm's PyTorch-native
# path in vLLM 0.8.5 (models/qwen3.py Qwen3Attention.forward and models/qwen3_moe.py Qwen3MoeAttention.forward call
# q_norm.forward_native and k_norm.forward_native; layers/layernorm.py RMSNorm.forward_native: the fp32 cast, pow,
# mean, the epsilon's add, rsqrt, the multiply, the cast back and the weight's multiply, 8 operations), 16 host
# operations a layer the Llama layer of EAGER_DENSE_LAYER_HOST_OPS does not have (its views not counted). Later vLLM
# calls the norm modules (self.q_norm(q_by_head): the fused CUDA kernel, 1 operation each); priced for every release,
# as the counts above are (docs/accuracy.md item 38).
VLLM_QK_NORM_HOST_OPS = 2 * 8
# Host time of one launch of a compiled Triton kernel from Python: 18 us after triton-lang/triton#3648 ("Faster
# jit", April 2024: 49 -> 18 us on the benchmark of triton-lang/triton#3619; 108 us before #3638), in every Triton
# since 3.0 (vLLM 0.8.5 runs torch 2.6's Triton 3.2).
TRITON_LAUNCH_S = 18e-6
# vLLM's fused MoE kernel multiplies each expert's tokens in blocks of BLOCK_SIZE_M rows: moe_align_block_size
# (vLLM 0.8.5 model_executor/layers/fused_moe/moe_align_block_size.py) pads every expert's token list to a multiple
# of the block, and fused_moe_kernel runs its tensor-core tiles over the padded rows (masked loads; fused_moe.py).
# The block is the tuned table's for the batch (fused_moe.py try_get_optimal_moe_config; configs/E=*.json): in the
# bf16 tables the release ships, the tuner's block is at or above the mean tokens an expert gets (128 experts, top-8:
# 16-32 rows at M = 256, 16 an expert; 64 at 512, 32 an expert; 64-128 at 1024, 64 an expert; Mixtral's 8 experts,
# top-2: 32 at 64, 16 an expert), so priced as the smallest of the sizes it tunes (16, 32, 64, 128) at or above it.
VLLM_MOE_BLOCK_SIZES = (16, 32, 64, 128)
# Above this mean the Poisson sum's first term underflows a float: padding taken as half a block an expert.
POISSON_EXACT_MAX_MEAN = 500.0
# Each of a TP engine's two all-reduces per layer dispatches, in vLLM 0.8.5 eager, the vllm.all_reduce custom op
# (distributed/parallel_state.py GroupCoordinator.all_reduce), the out-of-place output buffer and the NCCL call
# through ctypes (device_communicators/pynccl.py PyNcclCommunicator.all_reduce; verl passes
# disable_custom_all_reduce=True, verl 0.5.0 vllm_rollout_spmd.py vLLMRollout.__init__): 3 host operations.
VLLM_ALLREDUCE_HOST_OPS = 3
# A CUDA-graph engine replays a captured graph only for batches up to its largest capture size; a larger decode batch
# runs without one, its kernels launched from the host every step (vLLM V1 gpu_model_runner: a batch above
# ``max_capture_size`` is not padded to a graph). vLLM V1's default capture sizes are [1, 2, 4] + range(8, 513, 8)
# (vllm/config.py VllmConfig._set_cudagraph_sizes, vLLM 0.8-0.10; capped at 512 since, as
# ``max_cudagraph_capture_size`` = min(2 x max_num_seqs, 512), when max_num_batched_tokens allows; the vLLM forum's
# "V1 default max CUDA graph size"): verl's max_num_seqs of 1024 lets an engine decode up to twice that batch.
VLLM_CUDA_GRAPH_MAX_BATCH = 512
# A Hugging Face transformers model's own Python code (the trainers' models outside Megatron, and `generate` when no
# inference engine is used) costs far more host time per layer than an engine's eager kernels: measured on one H200
# and one H100 machine (benchmarks/gpu_step_probe.py, torch 2.11, transformers 5.17, benchmarks/results/), a
# `generate` decode step of Qwen2.5-0.5B, 1.5B, 3B, 7B and 14B (24-48 layers) took 0.59-0.77 ms per layer on the
# H200 machine and 0.85-1.07 ms on the H100 machine whatever the batch (1 to 256 sequences; the host's CPU sets it,
# not the GPU), median 0.72 over the 20 rows, while the GPU's work is 4-15 ms a step: host time per layer per forward. It bounds both a decode step of
# `generate` and a training micro batch of an HF model (forward, and twice that per backward), from below, and is the
# host time of a megatron-core layer too (Python modules as well, Transformer Engine's; no measurement of their own),
# added to the micro batch's compute where the loop waits for the GPU in every micro batch (Plan.host_syncs_per_micro:
# verl's Megatron actor; docs/cost-model.md section 4).
HF_EAGER_S_PER_LAYER = 0.72e-3
# A bitsandbytes 4-bit linear layer run from Python (transformers' Linear4bit.forward -> bitsandbytes matmul_4bit:
# the dequantize_4bit + matmul path for more than one token row, the fused gemv_4bit for one) costs an eager
# `generate` more host time per call than the 16-bit linear it replaces. bitsandbytes' own end-to-end benchmark
# (bitsandbytes benchmarking/README.md "Results (as of v0.45.0)", transformers 4.46.3 generate through
# optimum-benchmark, torch 2.5.1, H100 80GB SXM, Llama 3.1 8B: 32 layers of 7 quantized linears, 224) gives the
# per-token latency of BF16, NF4 and NF4 with double quantization (NF4+DQ) at batch 1, 8 and 32; the BF16 steps
# (24.4-26.1 ms) are host-bound (the GPU's 16 GB a step take ~5 ms), so the NF4 step's extra time is the extra
# host work of its 224 linears: batch 8 (47.6 - 25.5 ms) / 224 = 99 us, batch 32 (48.6 - 26.1) / 224 = 100 us; one
# sequence (gemv_4bit) (33.1 - 24.4) / 224 = 39 us. Double quantization adds the absmax's own dequantization call:
# NF4+DQ batch 8 (56.6 - 25.5) / 224 = 139 us, batch 32 141 us, batch 1 75 us: +40 us (36 at batch 1).
BNB4_HOST_S_PER_LINEAR = 100e-6
BNB4_GEMV_HOST_S_PER_LINEAR = 39e-6
BNB4_DOUBLE_QUANT_HOST_S_PER_LINEAR = 40e-6
# the quantized linear layers of one decoder layer as transformers builds a dense model: q, k, v, o, gate, up, down
BNB_LINEARS_PER_LAYER = 7
# transformers' generate with flash-attention 2 and a padding mask (the trainers' generate pads its batch, and
# _update_causal_mask keeps the mask while it holds a 0), transformers 4.38.2 (OpenRLHF 0.2's pin): each decode step
# moves each layer's KV cache 7 times, not once: DynamicCache.update torch.cat()s the new token onto the cache (read
# the old, write the new: 2), LlamaFlashAttention2._upad_input reshapes the transposed cache into a contiguous copy
# (2) and gathers the unpadded rows with index_first_axis (2), then flash-attention reads them (1); and
# _upad_input's _get_unpad_data runs seqlens_in_batch.max().item() (with torch.nonzero) in every layer, so the host
# waits for the GPU in every layer: the step's host time and its GPU work follow one another, not overlap
# (time.hf_decode_step_seconds, where Plan.hf_generate_unpads: OpenRLHF's --flash_attn).
HF_GENERATE_KV_PASSES = 7
# Weight sync trainer -> engine: engine wake-up (re-map weights, re-allocate KV) and
# the bucketed transfer hand-shakes. Assumption (HybridFlow, arXiv 2409.19256 §8.4,
# measured transitions of seconds to tens of seconds for 7B-70B with its older
# resharding; verl's IPC path is faster).
WEIGHT_SYNC_FIXED_S = 1.0
# The step's host work outside its timed phases, whatever the model's size (docs/cost-model.md section 4.3): verl's
# console logs time every phase, and the step less their sum is 0.076 s in verl #1208's (96.551 - 96.475), 0.117
# and 0.147 s at steps 14 and 15 of verl's MI300 GRPO baseline log (78.501 - 78.384, 87.770 - 87.623) and 0.357 s
# in verl #7412's (1163.957 - 1163.600, whose phases include update_weights): the median of the three logs, 0.13 s.
STEP_HOST_S = 0.13
# Reward and advantage per sample (a rule-based reward and GRPO's group statistics, on the driver): verl's MI300
# GRPO baseline log (GSM8K, 1,024 prompts x 5 = 5,120 samples a step) times them together in `timing_s/adv`, 0.737
# and 0.730 s at steps 14 and 15: 0.144 ms a sample.
REWARD_ADV_S_PER_SAMPLE = 0.144e-3
# Mean generated length over max_response_length when the data's is not given (--mean-response-len, or a
# calibration profile): the median of the published RL runs that state both, 0.35. verl docs/perf/dpsk.md
# (DeepSeek-V3 GRPO): 1,960 of 9,632 = 0.20; verl #1208's console log (GSM8K): 325 of 1,024 = 0.32; verl #3727
# (Qwen3-VL-30B-A3B GSPO): 11,018 of 30,000 = 0.37; verl docs/advance/v1_async_trainer.md (Qwen3.5-35B-A3B DAPO):
# 12,720 of 32,768 = 0.39. (0.6 before: a guess from verl's advice to keep clip_ratio under ~0.1.)
DEFAULT_AVG_RESPONSE_FRACTION = 0.35
# Mean prompt over max_prompt_length when neither the data's mean (--mean-prompt-len, a calibration profile) nor the
# length profile's source gives it: the two published runs that state both, verl #1208's console log (GSM8K,
# prompt_length/mean 102.5 of 256 = 0.40) and verl's MI300 baseline logs (GSM8K, 82.6 of 512 = 0.16): 0.28. A
# limit is set to hold the longest prompt, so the mean sits well under it; timing every prompt at the limit (1.0,
# before) priced a short-response step's prefill and training tokens as if its prompts were all at the cap. The
# `limit` profile (every response at the limit, the worst case) keeps prompts at the limit too.
DEFAULT_AVG_PROMPT_FRACTION = 0.28
# Response lengths within a step: exponential with the step's mean, capped at max_response_length (the capped share
# is what DAPO's overlong filter and verl's clip ratio count); at the default mean (0.35 of the cap) 7% of responses
# reach the cap. The tail this gives (time.drain_seconds) is checked against Seer (arXiv 2511.14617): the last 10%
# of requests to finish take up to half of a synchronous rollout (docs/cost-model.md section 4).
RESPONSE_LENGTHS = "exponential, capped"
# The tokens of a packed micro batch (remove padding, packing) at the data's typical lengths (check's typical peaks):
# n prompts at the data's mean and the sum of n responses drawn from RESPONSE_LENGTHS taken at its 99.9th
# percentile, z = 3.09 of the standard normal (a sum of n independent lengths is near normal: central limit theorem),
# never above n responses at the cap. A run of a thousand micro batches reaches it about once; n x the mean (the
# typical peak before) is the median micro batch, which half of them exceed. At the default mean (0.35 of the cap) one
# sequence is at the cap, two within 0.2% of it, 8 at 1.9x the mean, 116 at 1.24x. docs/cost-model.md section 11.1.
PACKED_SUM_Z = 3.09
# bins of the drain integral (time.drain_seconds): its error against 256 bins is under 1% for every GPU and model
# of tests/test_costmodel.py
DRAIN_INTEGRATION_BINS = 16
# How far a prompt's GRPO group of completions spreads about the prompt's own length (lengths.straggler_factor): a
# completion is W x the prompt's length, W = 1 - s + s x Exp(1) (mean 1; the longest of m, 1 + s (H_m - 1)). TRL logs
# each generation batch's mean and longest completion (trl/trainer/grpo_trainer.py _generate_and_score_completions:
# completions/mean_length, completions/max_length over the gathered batch); in unslothai/notebooks' published runs
# (commit 271e6d6) whose batch is ONE prompt's 2 completions (per_device_train_batch_size 1, raised to
# num_generations 2, one accumulation step), Qwen3-VL-8B-Vision-GRPO and Qwen3_5-4B-Vision-GRPO (60 logged steps
# each, means 302 and 348 of a 1,024 limit), the median longest / mean is 1.10 and 1.09: 1 + s/2, s = 0.20 and
# 0.18. Independent exponential completions would log 1.5. Their batches of two prompts x 4, Qwen2.5-VL-7B and
# Gemma-3-4B vision, 142 and 10 steps, log 1.47 and 1.49 where this law says 1.5 x 1.21 = 1.81 and independent
# completions 2.72. Fitted on all four runs (least squares of the log ratio) s = 0.022, nearly no spread: the two-
# prompt runs sit under even the two prompts' own 1.5, so they pull s to zero rather than measure it; at 0.022 the
# out-of-sample step error is 0.252 (over the 0.25 bar; rollout 0.209 -> 0.277), so s stays at the one-prompt runs'
# value, which prices the two-prompt runs 23% long (docs/cost-model.md section 4, docs/accuracy.md item 42).
GROUP_LENGTH_SPREAD = 0.19
