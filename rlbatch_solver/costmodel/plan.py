"""``Plan``: everything the cost model needs to know about one RL training config.

A framework adapter (``frameworks/verl/cost.py``) turns a framework's values into a
``Plan`` per phase. All sizes are per GPU unless the name says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from .efficiency import DEFAULT_EFFICIENCY, Efficiency

if TYPE_CHECKING:  # pragma: no cover
    from ..catalog.gpus import GPU
    from ..catalog.models import ModelCard


@dataclass(frozen=True)
class Plan:
    """One config of one RL step (colocated hybrid engine unless ``colocated=False``)."""

    model: "ModelCard"
    gpu: "GPU"
    n_gpus: int  # training GPUs (and, colocated, rollout GPUs)
    gpus_per_node: int
    prompt_len: int  # max prompt length (tokens)
    response_len: int  # max response length (tokens)
    samples_per_step: int  # prompts * n per RL step
    mini_batches: int  # optimizer steps per pass over the step's samples
    train_micro: int  # per-GPU micro batch (sequences) of the model being trained in this phase
    train_token_budget: Optional[int]  # per-GPU tokens per micro batch when dynamic batching is on
    logprob_micro: int  # per-GPU micro batch of the forward-only pass (old log-prob or ref)
    logprob_token_budget: Optional[int]
    sp: int  # Ulysses sequence parallel size
    shard_degree: int  # FSDP / ZeRO shard group size
    zero_stage: int  # 3 for FSDP; 0-3 for DeepSpeed
    grad_ckpt: bool
    param_offload: bool
    optimizer_offload: bool
    remove_padding: bool
    entropy_chunking: bool
    entropy_checkpointing: bool
    need_ref: bool
    need_critic: bool
    critic_micro: int
    engine: str  # "vllm" | "sglang" | "hf" (the trained model's own generate: ms-swift/TRL without vLLM)
    rollout_tp: int
    gpu_memory_utilization: float  # vLLM: of total memory; SGLang: mem_fraction_static of free memory
    free_cache_engine: bool
    enforce_eager: bool
    max_num_seqs: int
    max_num_batched_tokens: int
    # ---- Megatron-style training parallelism (other frameworks); FSDP uses 1s.
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    distributed_optimizer: bool = False
    etp: int = 0  # Megatron expert tensor parallel (0: follows ``tp``)
    # passes of the update (of the model this phase trains) over the step's samples, each of ``mini_batches``
    # optimizer steps: verl's ppo_epochs
    update_epochs: int = 1
    vpp: int = 1  # Megatron virtual pipeline stages per PP rank (1: plain 1F1B)
    recompute: str = "none"  # Megatron recompute_granularity: "none" | "selective" | "full"
    # Megatron recompute_modules, read with recompute == "selective" (megatron-core's default: core_attn only)
    recompute_modules: tuple = ("core_attn",)
    sequence_parallel: bool = True  # Megatron sequence parallel with TP > 1 (verl and ms-swift default)
    # Megatron HybridDeviceOptimizer: share of the optimizer kept on the CPU (with optimizer_offload
    # and offload_during_compute); 1.0 = all of it
    optimizer_offload_fraction: float = 1.0
    cpu_optimizer: bool = False  # Megatron optimizer_cpu_offload: that share of the optimizer never is on the GPU
    # Megatron 1F1B: micro batches in flight on stage 0 (None: PP, megatron's worst case)
    pp_in_flight: Optional[int] = None
    # Megatron pipeline split (megatron-core get_num_layers_to_build): the embedding / the loss counted as
    # one layer of the first / last stage, or explicit first/last stage layer counts (None: even split)
    pp_account_embedding: bool = False
    pp_account_loss: bool = False
    pp_first_layers: Optional[int] = None
    pp_last_layers: Optional[int] = None
    reward_model: bool = False  # a reward model (value-head model, forward only) is kept on these GPUs
    # Separate placements (OpenRLHF, ms-swift server mode): which other models and whether the
    # inference engine share the GPUs of the phase being estimated (verl's hybrid engine: all True).
    actor_colocated: bool = True
    ref_colocated: bool = True
    critic_colocated: bool = True
    engine_colocated: bool = True
    # ---- lengths actually generated (time model) and reached (memory model)
    # mean response / max (docs/cost-model.md); None: the model family's length profile (costmodel/lengths.py)
    avg_response_fraction: Optional[float] = None
    # mean prompt / max prompt; None: the length profile's prompt where a source gives the data's, else 1.0
    avg_prompt_fraction: Optional[float] = None
    # the response-length profile a user names (--response-profile; lengths.PROFILES), and the training data the
    # config names (lengths.dataset_of): with the model's family they choose the profile (lengths.profile_for)
    response_profile: Optional[str] = None
    dataset: str = ""
    # the longest response the data reaches (tokens), where a source or a run's log states it: the length law's cap
    # for time (lengths.response_cap), at most the limit; None: the limit
    longest_response: Optional[float] = None
    # completions generated per prompt (GRPO's group: verl rollout.n, TRL/ms-swift num_generations, OpenRLHF
    # n_samples_per_prompt): the completions of one prompt share its length, so a synchronous step's longest response
    # is drawn from its prompts, not from its completions alone (lengths.straggler_factor); 1: every completion its own
    group_size: int = 1
    # Memory, with remove_padding: fraction of max prompt+response the longest micro
    # batch reaches. 1.0 = worst case (every sequence of a micro batch at the limits).
    peak_length_fraction: float = 1.0
    # Memory, with remove_padding: price a micro batch of n sequences at this quantile (a z score) of the sum of its
    # sequences' tokens at the data's mean lengths (lengths.packed_sum_tokens) instead of n x max x
    # peak_length_fraction, whichever is smaller; None: not (the verdict's worst case). check's typical peaks set it.
    packed_sum_z: Optional[float] = None
    # the memory verdict may judge a packed (remove_padding) phase at the data's lengths (commands/check.py
    # typical_peaks): False where the framework's packing code is not read to pack every term at the real lengths
    # (ms-swift: its GRPO padding_free re-pads the hidden states to the micro batch's longest before the LM head,
    # frameworks/swift/cost.py)
    data_lengths_judged: bool = True
    # Dynamic batching splits a GPU's share of the batch being split (the step for a log-prob pass,
    # one mini-batch for an update) into ceil(share's tokens / budget) micro batches balanced by
    # Karmarkar-Karp, so a micro batch never holds more than that share and, at one length, holds
    # ceil(n / k) sequences, up to one sequence over the budget (verl's prepare_dynamic_batch /
    # rearrange_micro_batches; memory.balanced_split_tokens). Set by frameworks that do this.
    budget_capped_by_batch: bool = False
    # ---- placement
    colocated: bool = True  # rollout shares the training GPUs (verl hybrid engine): their states count at rollout
    # GPUs of the engines that generate the step's samples when they are not the training GPUs (OpenRLHF's and
    # ms-swift's separate engines, verl's standalone rollout pool); None: the training GPUs
    rollout_gpus: Optional[int] = None
    # the engines generate continuously and pause in-flight samples at a weight sync instead of waiting for the
    # step's longest response (verl separate_async, fully_async with partial_rollout): no batch-1 tail
    rollout_streaming: bool = False
    # host copies of the actor's parameters per step besides the offload switches (verl separate_async's
    # decoupled PPO keeps the old policy on the CPU: trainer_separate_async.py _compute_old_log_prob)
    actor_param_host_copies: int = 0
    # ---- trainer semantics
    # "fsdp" (verl: fp32 params = master) | "fp32" (plain DDP of a model loaded in fp32: TRL's default) |
    # "mixed" (bf16 params + fp32 master) | "megatron"
    # (mixed precision on megatron-core's most loaded shard, fp32 grad buffers kept between phases)
    # | "deepspeed" (DeepSpeed ZeRO's own byte counts) | "bf16" (plain bf16 AdamW, no master copy)
    trainer: str = "fsdp"
    # Offloaded states stay on the CPU while this model computes (DeepSpeed ZeRO-Offload,
    # FSDP2 CPUOffloadPolicy). False = verl 0.9 FSDP engine: train_mode/eval_mode load
    # them back to the GPU for the phase and offload them afterwards.
    offload_during_compute: bool = False
    # The training loop waits for the GPU inside every micro batch, so a micro batch's host time (the Python layers'
    # launches, ``time.launch_s_per_layer``) adds to its GPU time instead of hiding behind it: verl's Megatron actor
    # reads each micro batch's sequence lengths back to the host before its forward (models/mcore/util.py
    # preprocess_packed_seqs: ``.tolist()``) and its loss after it (``.item()``; 0.6.1 workers/actor/megatron_actor.py
    # loss_func, 0.9.1 workers/engine/megatron/transformer_impl.py); verl's FSDP actor logs each micro batch's loss
    # (workers/actor/dp_actor.py update_policy: ``pg_loss.detach().item()``), OpenRLHF's actor its status
    # (training_step: ``actor_loss.detach().item()``) and TRL's GRPO trainer its clip ratios (_compute_loss:
    # ``.nanmean().item()``), each inside the micro-batch loop. False: the host may run ahead (the larger of the two
    # counts).
    host_syncs_per_micro: bool = True
    # The update also computes entropy (entropy_coeff != 0 or actor.calculate_entropy);
    # verl 0.9 defaults: entropy_coeff 0, calculate_entropy false.
    entropy_in_update: bool = False
    # How the logits/entropy bytes are counted (costmodel/constants.py): "verl-fsdp" = read from
    # verl 0.9.1's FSDP engine (bf16 logits under autocast, flash-attn cross-entropy, entropy under
    # torch.compile unless ``use_torch_compile`` is off); "generic" = verl's perf-tuning rule of
    # thumb, kept for the frameworks whose logits code we have not audited.
    # DeepSpeed's data_types.grad_accum_dtype is fp32 with bf16 weights (OpenRLHF 0.4's get_train_ds_config): at ZeRO-1
    # the engine then runs the BF16_Optimizer, whose fp32 gradients are whole on every rank
    # (deepspeed/runtime/engine.py _do_optimizer_sanity_check, DeepSpeed 0.14.4); ZeRO-2/3 ignore it
    deepspeed_grad_accum_fp32: bool = False
    # DeepSpeed ZeRO-1/2's gradient buffers (DeepSpeedZeroOptimizer, deepspeed/runtime/zero/stage_1_and_2.py, read at
    # 0.16.3), for a framework whose DeepSpeed config we read (0: not priced): the elements of the reduce bucket
    # (``reduce_bucket_size``, two buckets with ``overlap_comm``). With ``contiguous_gradients`` (the default)
    # ``backward`` allocates the bucket(s) in the model dtype before the loss's backward and frees them when it ends
    # (``_release_ipg_buffers``); with the optimizer offloaded (``cpu_offload``) ``__init__`` also keeps
    # ``temp_grad_buffer_for_gpu_offload``, the largest parameter's elements in the model dtype, on the GPU. Both are
    # priced in the trained model's own update (memory.T_DS_BUCKETS)
    deepspeed_reduce_bucket: float = 0.0
    # or a key of constants.LOGIT_BYTES, "trl-fused", "megatron-fused", "verl-fused-triton" (verl FSDP's
    # use_fused_kernels with the triton backend: the same kernel), "verl-fused-torch", "unsloth-chunked" or
    # "unsloth-sequence" (Unsloth 2025.9: one sequence's 16-bit logits a chunk of the loss, none in forward-only passes)
    logits_impl: str = "generic"
    # "unsloth-sequence": the loss's chunk also projects the old policy's logits (the trainer kept
    # old_per_token_logps, as hidden states: the old log-prob pass ran)
    loss_old_logits: bool = False
    # the update's loss is Liger's chunked GRPO loss (TRL's use_liger_loss / use_liger_kernel, ms-swift's
    # --use_liger_kernel; constants.py LIGER_GRPO_*): the update holds no [tokens, vocab] logits; the forward-only
    # passes keep ``logits_impl``
    liger_grpo_loss: bool = False
    # the loss's forward keeps logits for the response positions only (ms-swift: logits_to_keep = completion
    # length + 1, grpo_trainer._get_logps_via_local_forward), not for every token of the sequence
    logits_response_only: bool = False
    # with logits_response_only: the forward still computes every position's logits and slices the response's rows
    # out of them (ms-swift 3.1.1-3.4.0 under LoRA: frameworks/swift/cost.py whole_sequence_logits), so the other
    # positions' logits are alive too, at the impl's forward bytes per logit (constants.LOGIT_BYTES), in every pass
    logits_whole_sequence: bool = False
    # transformers' generate (no inference engine) computes the logits of every prompt position in its prefill: the
    # model's forward takes no ``logits_to_keep`` (transformers 4.46-4.52 Qwen2-VL / Qwen2.5-VL
    # *ForConditionalGeneration.forward: ``logits = self.lm_head(hidden_states)``; generation/utils.py passes
    # ``logits_to_keep=1`` only where the forward has it), held as one bf16 tensor beside the KV cache
    # (ms-swift 3.1-3.6 with a vision-language model: frameworks/swift/cost.py generate_logits_every_position)
    generate_logits_every_position: bool = False
    # the log-prob forward divides the response logits by the temperature out of place (TRL 0.16-0.29, ms-swift
    # 3.3.0-4.1.x: constants.TEMPERATURE_COPY_FWD_BYTES_PER_LOGIT): a forward-only pass holds the logits and their copy
    logits_temperature_copy: bool = False
    # the engine's max_model_len: the one sequence its KV cache must hold to start (None: prompt + response)
    engine_max_len: Optional[int] = None
    # verl actor_rollout_ref.actor.fsdp_config.use_torch_compile (default true): torch.compile
    # wraps the entropy function (FSDPEngine.__init__). Read only with logits_impl="verl-fsdp".
    use_torch_compile: bool = True
    # verl FSDP with use_remove_padding off (logits_impl "verl-fsdp"): "" on the packed path; "response" where the
    # legacy actor slices the logits to the response rows before its log-probs and entropy, "all" where the engine
    # computes them on every row. Either way flash-attn's cross-entropy gets a contiguous bf16 copy of its rows (the
    # legacy slice is not contiguous: logprobs_from_logits' reshape copies it; the engine concatenates the valid rows,
    # verl 0.9.1 workers/engine/fsdp/transformer_impl.py prepare_model_outputs), whose gradient it writes in place
    # (``ce_inplace_backward``: verl's logprobs_from_logits default from 0.4) or beside it (verl 0.1-0.3 call
    # flash-attn's cross_entropy_loss with its default inplace_backward=False).
    verl_padded_logprobs: str = ""
    ce_inplace_backward: bool = True
    # the reference pass computes the entropy too, without grad (verl 0.1-0.3: DataParallelPPOActor._forward_micro_batch
    # returns it on every call, the reference's compute_log_prob included)
    ref_entropy: bool = False
    # The reference model's params live on the CPU (verl 0.9 forces CPUOffload for
    # forward-only engines: transformer_impl._build_fsdp_module).
    ref_param_offload: bool = True
    # An FSDP reference that keeps its params on the GPU beside the other phases (verl 0.1: no CPUOffload on it;
    # ``ref_param_offload`` then says whether it is offloaded between its passes)
    ref_on_gpu: bool = False
    # LoRA: the actor trains ``lora_params`` adapter parameters over a frozen bf16 base (0 = full fine-tune);
    # ``ref_in_actor``: the reference log-probs come from the same model with its adapter disabled (TRL and
    # ms-swift with PEFT, verl with lora_rank > 0), so there is no separate reference model
    lora_params: int = 0
    ref_in_actor: bool = False
    # The adapter's own dtype under a plain data-parallel trainer (``memory.DDP_TRAINERS``), in bytes: 4 where peft's
    # get_peft_model upcasts it to fp32 over a bf16/fp16 base (peft >= 0.12 ``autocast_adapter_dtype=True``,
    # tuners_utils.py ``BaseTuner._cast_adapter_dtype``), 2 where the framework casts it back to bf16 (TRL >= 0.26 on a
    # quantized base); 0 = the trainer's own (``Plan.trainer``). Its gradients and torch AdamW's moments take the
    # same dtype. DeepSpeed, FSDP and Megatron trainers keep their own byte counts.
    lora_dtype_bytes: int = 0
    # bitsandbytes' 8-bit AdamW (``--optim adamw_8bit``, ``paged_adamw_8bit``) under a plain data-parallel trainer
    # (``memory.DDP_TRAINERS``): its two moments take ``C.ADAM_8BIT_STATE_BYTES`` a trained parameter
    optimizer_8bit: bool = False
    # A vision-language model (ModelCard.has_vision): ``vision_patches`` ViT patches per sequence (every image of a
    # sample, before the spatial merge; 0 = no image, or a text model), and which of its parts a full fine-tune
    # leaves frozen: the tower (ms-swift --freeze_vit) and the merger/aligner (--freeze_aligner). A frozen part keeps
    # its weights and has no gradient, optimizer state or saved activations. The defaults train the whole model, as
    # verl and EasyR1 do unless told otherwise.
    vision_patches: int = 0
    vision_tower_frozen: bool = False
    vision_merger_frozen: bool = False
    # the ViT's attention runs SDPA with a dense [1, P, P] mask over the P patches of the forward's images
    # (constants.VIT_SDPA_MASK_BYTES_PER_PAIR; ms-swift 3.1-3.6 without flash attention: frameworks/swift/cost.py
    # vit_sdpa_mask), one block's at a time
    vision_sdpa_mask: bool = False
    # FSDP wrap policy whose root unit stays gathered through forward and backward (memory._root_and_unit):
    # "fsdp1" (verl get_fsdp_wrap_policy: decoder layers only), "fsdp2" (verl apply_fsdp2: layers + untied
    # embedding), "" (policy not read: two units of the largest of layer, embedding and lm_head in flight)
    fsdp_root: str = ""
    # What a colocated trainer with offloaded params loads back beside the woken engine weights to sync them
    # (memory._sync_load_excess): "params", "params+grads" (verl Megatron <= 0.5.0 loads the fp32 grad buffer too),
    # "" (not priced)
    sync_loads_trainer: str = ""
    # The trainer's weight sync to a vLLM engine under DeepSpeed ZeRO-3 gathers parameters into whole 16-bit tensors
    # on every training rank (deepspeed.zero.GatheredParameters; memory.sync_gather_bytes): 0 not priced; -1 one
    # parameter at a time; 1 every parameter at once; N > 1 one group at a time of N layer groups (the embedding,
    # final norm and lm_head a group of their own). The sync runs before the rollout's own offloads and, with an
    # engine that sleeps between rollouts (free_cache_engine), before its KV cache wakes (ms-swift 3.12.1
    # rollout_mixin.py _fast_infer)
    sync_gather_groups: int = 0
    # bytes per weight of a model loaded but not trained (the reference model, a LoRA's frozen base) where the trainer
    # keeps the dtype it was loaded in (plain DDP; TRL loads fp32 unless told)
    model_dtype_bytes: int = 2
    # bytes per weight the checkpoint is loaded in on the CPU before the trainer casts or shards it (host memory only:
    # TRL loads fp32 unless told, DeepSpeed then casts to bf16 on the GPU)
    load_dtype_bytes: int = 2
    # vLLM counts its CUDA graphs inside ``gpu_memory_utilization`` (since 0.21: the profile includes the capture);
    # before, it captures them after sizing the KV cache, outside the budget
    engine_graphs_in_budget: bool = True
    # the trainer broadcasts each weight whole to every engine rank, which receives it into a fresh tensor of the
    # unsharded shape while its KV cache is allocated (OpenRLHF trainer/ray/vllm_worker_wrap.py
    # WorkerWrap.update_weight: torch.empty(shape), broadcast, load_weights): the largest tensor (the embedding or
    # lm_head) on top of the engine's budget, on engine GPUs of their own
    engine_receives_whole_weights: bool = False
    # ... or packs the weights into flat buckets of up to this many bytes, one received whole at a time (a weight
    # larger than a bucket goes alone): ms-swift's server mode (rlhf_trainers/utils.py _create_parameter_buckets)
    engine_sync_bucket_bytes: float = 0.0
    # vLLM sizes its KV cache as gpu_memory_utilization x the memory still *free* once the trainer's models and the
    # engine's weights and profile run are in (verl 0.1-0.2's bundled vLLM 0.3-0.6 workers,
    # verl/third_party/vllm/vllm_v_0_6_3/worker.py:Worker.determine_num_available_blocks), not of total memory
    engine_kv_of_free_memory: bool = False
    # vLLM 0.6.5-0.7.2 started by ``LLM(device="cuda:N")`` in a process whose current GPU is another one (TRL 0.14's
    # main process, training rank 0 on cuda:0): its memory profile reads the current GPU, so it sees none of its own
    # weights, profile activations or non-torch memory (vllm/executor/uniproc_executor.py local_rank 0 ->
    # worker.py Worker.init_device sets cuda:0; model_runner.py load_model DeviceMemoryProfiler() on the current GPU;
    # utils.py memory_profiling) and sizes the KV cache as util x total with all of them on top. vLLM 0.7.3 fixed
    # it (local_rank = the device's index, DeviceMemoryProfiler(self.device))
    engine_kv_of_total: bool = False
    # TRL 0.14.0 computes the reference log-probs inside compute_loss, after the policy's forward whose autograd graph
    # (checkpoints, or every activation without checkpointing, and the per-row log_softmax outputs) waits there for
    # the backward (trl/trainer/grpo_trainer.py GRPOTrainer.compute_loss): the reference pass holds it
    ref_beside_policy_graph: bool = False
    # ... and, with vLLM under ZeRO-3, the ``state_dict`` it took inside ``GatheredParameters`` of every parameter
    # for the weight load (models/utils.py unwrap_model_for_generation) is a local of compute_loss: the whole model in
    # 16 bits stays on every training rank through both forwards, until the loss returns
    held_gathered_model: bool = False
    # the backward starts with no gradient allocated: transformers' Trainer frees them after every optimizer step
    # (trainer.py Trainer._inner_training_loop: ``model.zero_grad()`` after ``optimizer.step()``; torch's
    # Module.zero_grad set_to_none=True), so with one micro batch per step (gradient_accumulation_steps 1) a plain
    # data-parallel trainer (``DDP_TRAINERS``: TRL and ms-swift without DeepSpeed or FSDP) makes each gradient as the
    # backward frees the activations before it; verl's FSDP actor and critic zero (free) their sharded gradients
    # before every mini batch (frameworks/verl/cost.py one_micro_per_mini_batch), so with one micro batch per mini
    # batch each unit's sharded gradient is made by its reduce-scatter in the backward
    no_grads_at_backward: bool = False
    # the engine drops its weights after every rollout, whatever free_cache_engine says (verl 0.1-0.2:
    # verl/workers/sharding_manager/fsdp_vllm.py:FSDPVLLMShardingManager.__exit__ offload_model_weights)
    engine_weights_released: bool = False
    # the sleeping engine backs its weights up in host RAM (vLLM sleep level 1): read by the host-memory estimate only
    engine_sleep_host_weights: bool = False
    critic_param_offload: bool = False
    critic_optimizer_offload: bool = False
    # Unsloth (frameworks/trl/unsloth.py, docs/cost-model.md "Unsloth"): ``base_weight_bytes``, the frozen base's
    # bytes per decoder weight when it is quantized (bitsandbytes NF4 with double quantization: constants.NF4_BYTES;
    # 0: the trainer's dtype), the embeddings and lm_head staying 16-bit; ``engine_shares_weights``, the colocated
    # vLLM engine and the trainer hold one copy of the weights (fast_inference: the engine's tensors are the model's);
    # ``ckpt_offload``, gradient checkpointing that moves each layer's saved input to host RAM
    # (use_gradient_checkpointing="unsloth"), so only the recomputed layer and one checkpoint in transit stay
    base_weight_bytes: float = 0.0
    # the quantized base is FP8 (Unsloth's load_in_fp8, constants.FP8_BYTES): its linears run FP8 kernels on the
    # 1-byte weights (vLLM's Fp8LinearMethod; the trainer's FP8Linear), with no 16-bit copy per decode step as
    # bitsandbytes' dequantize makes (time.decode_weight_bytes)
    fp8_base: bool = False
    # the checkpoint the trainer loads is stored pre-quantized at ``base_weight_bytes`` per decoder weight (Unsloth's
    # -bnb-4bit and -FP8 repos), so the start-up load reads those bytes into host RAM, not a 16-bit copy
    # (host._startup_load)
    prequantized_checkpoint: bool = False
    engine_shares_weights: bool = False
    # the rollout engine's own bytes per decoder weight when it quantizes the 16-bit checkpoint itself while loading
    # it (ms-swift 4.1+'s colocated vLLM with ``quantization='bitsandbytes'``: frameworks/bnb.py
    # engine_bytes_per_weight); 0: a 16-bit engine (ROLLOUT_PARAM_BYTES)
    engine_base_bytes: float = 0.0
    # the quantized base's linear layers are transformers' bitsandbytes modules, each call run from Python
    # (bitsandbytes Linear4bit.forward: TRL's, ms-swift's and OpenRLHF's QLoRA); False where the framework replaces
    # them with its own kernels (Unsloth) or an engine runs them (vLLM). Read by an eager ``generate``'s host time
    # (time.bnb_linear_host_seconds)
    bnb_eager_linears: bool = False
    ckpt_offload: bool = False
    # Count, in the training phases, what the other colocated models and the sleeping
    # inference engine keep on the GPU (CUDA graphs; everything without free_cache_engine).
    # Off by default: a framework turns it on once its phase input lists include those knobs.
    count_colocated_residents: bool = False
    # The critic's value forward is its own time phase (Phase.CRITIC_VALUES), over the experience's micro batches
    # (logprob_micro / logprob_token_budget), not part of the critic's update: a framework that runs it inside
    # make_experience beside the reference's and the actor's forwards (OpenRLHF) and says which of them it overlaps
    critic_values_apart: bool = False
    # The worker moves its whole share of the step's batch (every key, padded to the maximum prompt and response) to
    # the GPU before the update and keeps it there through it (verl's legacy Megatron workers: update_actor
    # ``data.batch = data.batch.to(device)`` up to 0.5.x, verl PRs #3011 and #3106, first in 0.6.0, moving only the
    # mini and micro batch; update_critic ``data.to(device)`` to 0.7.1): ``memory.batch_on_gpu_bytes``
    batch_on_gpu: bool = False
    # The actor's offload flags while another model computes (ref / critic phases);
    # None = ``param_offload`` / ``optimizer_offload``.
    actor_param_offload: Optional[bool] = None
    actor_optimizer_offload: Optional[bool] = None
    # An offloaded actor's params are on the GPU while the colocated engine starts and generates, whatever
    # param_offload says (verl 0.1-0.2's FSDP workers: ActorRolloutRefWorker.init_model offloads only the gradients
    # and the optimizer before it builds the rollout, "param is require during state_dict in sharding manager", and
    # generate_sequences loads the params with load_fsdp_param_and_grad before the sharding manager and offloads them
    # only at its own end, after the generation (0.2.0.post2; the old log-probs' compute_log_prob loads them again) or,
    # in the 0.1 forks, whose generate_sequences computes the old log-probs too, after those; the sharding manager's
    # __enter__ leaves them there, "TODO: offload FSDP model weights". verl 0.3 offloads them inside the sharding
    # manager, once synced.)
    actor_params_through_rollout: bool = False
    # engine "hf": sequences per ``generate`` call when the trainer calls it chunk by chunk (OpenRLHF 0.4-0.6 without
    # vLLM engines: micro_rollout_batch_size prompts at a time); None: the process's whole share at once
    hf_generate_micro: Optional[int] = None
    # engine "hf": generate runs flash-attention 2 with a padding mask, which unpads in every layer (transformers'
    # _get_unpad_data syncs the host): its decode step moves the KV cache C.HF_GENERATE_KV_PASSES times and adds the
    # host's time to the GPU's (time.hf_decode_step_seconds); False: sdpa or eager attention, the larger of the two
    hf_generate_unpads: bool = False
    # an inference engine: samples per generate call where the trainer's ranks call the engines chunk by chunk and
    # each engine serves one call at a time (OpenRLHF 0.4: micro_rollout_batch_size samples a call, each drained to
    # its longest response before the engine takes the next); None: each engine gets its whole share at once
    engine_call_samples: Optional[int] = None
    # engine "vllm": vLLM's V0 engine (the only one before vLLM 0.8, VLLM_USE_V1=0 after), whose host work between
    # decode steps the GPU waits for (time.decode_step_seconds, constants.VLLM_V0_STEP_HOST_S)
    engine_v0: bool = False
    # the named efficiencies (a calibration profile replaces the defaults: costmodel/efficiency.py)
    efficiency: Efficiency = DEFAULT_EFFICIENCY

    @property
    def fsdp_root_known(self) -> bool:
        """verl's FSDP wrap policy is known (``fsdp_root`` "fsdp1" or "fsdp2"): its root unit, the head's gradient held
        to the backward's end and the root's end-of-backward reduce are priced (memory._root_and_units,
        fsdp_head_grad_bytes, fsdp_root_reduce_bytes); otherwise the bound for any layer-wise policy."""
        return self.fsdp_root in ("fsdp1", "fsdp2")

    def replace(self, **changes: Any) -> "Plan":
        """A copy with some fields changed: ``dataclasses.replace``'s result (a Plan has no ``__post_init__`` and every
        field is an init field), without passing its hundred fields through ``__init__`` (a cost table prices a plan
        a row)."""
        unknown = changes.keys() - self.__dataclass_fields__.keys()
        if unknown:
            raise TypeError(f"Plan has no field {', '.join(sorted(unknown))}")
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new

    @classmethod
    def of(cls, **values: Any) -> "Plan":
        """``Plan(**values)`` without the frozen dataclass's ``__init__``, which sets its hundred fields one
        ``object.__setattr__`` at a time (a cost table builds a plan a row: the 64-GPU Megatron MoE of
        benchmarks/bench_recommend.py 10,500). The defaults, then ``values``."""
        defaults, names = _defaults(cls)
        new = object.__new__(cls)
        new.__dict__.update(defaults)
        new.__dict__.update(values)
        if new.__dict__.keys() != names:  # as __init__ refuses them
            unknown, missing = sorted(values.keys() - names), sorted(names - new.__dict__.keys())
            raise TypeError("Plan: " + "; ".join([*(["no field " + ", ".join(unknown)] if unknown else []),
                                                  *(["missing " + ", ".join(missing)] if missing else [])]))
        return new


def _defaults(cls: type) -> tuple[dict[str, Any], frozenset[str]]:
    """The fields' defaults (a Plan's are plain values, no factories) and every field's name, read once per class."""
    from dataclasses import MISSING, fields

    found = _DEFAULTS.get(cls)
    if found is None:
        assert all(f.default_factory is MISSING for f in fields(cls)), "Plan.of copies defaults: no factories"
        found = _DEFAULTS[cls] = ({f.name: f.default for f in fields(cls) if f.default is not MISSING},
                                  frozenset(f.name for f in fields(cls)))
    return found


_DEFAULTS: dict[type, tuple[dict[str, Any], frozenset[str]]] = {}
