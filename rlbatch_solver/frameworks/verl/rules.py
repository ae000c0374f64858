"""Every batch-size and parallelism rule verl 0.9.1 enforces on the FSDP/FSDP2 path.

Each rule cites the verl source (paths inside the ``verl`` 0.9.1 wheel) that
enforces it, and carries the stage at which a run would die. Rules marked
``Severity.WARNING`` are ours on purpose: verl does not check them, but the run
would not do what the user wants (GRPO with n=1 has zero advantages).

Sizes: ``train_batch_size`` and ``ppo_mini_batch_size`` count prompts (global);
``*_per_gpu`` sizes and token budgets count samples (responses) per GPU.

The rules fall in two groups. ``shared_rules()`` holds the ones verl applies
whatever the training backend (driver checks of the micro-batch keys, the
rollout engine, the per-step batch arithmetic); they read the backend's
parallel layout only through derived quantities (``dp``, ``seq_par``, ...),
so ``rules_megatron.py`` reuses them with Megatron's layout. ``fsdp_rules()``
holds the FSDP-only ones (Ulysses, the FSDP device mesh). The trainer is the
default v1 trainer (``trainer.use_v1=True``).
"""

from __future__ import annotations

import math
from typing import Mapping

from ...rules.base import Derived, Rule, RuleKind, RuleSet, Severity, Stage, VarSpec, is_set
from ...rules.expr import BoolVar, IntExpr, IntVar, Table, divides, exactly_one, if_then_else, maximum

VERSION = "0.9.1"

AR = "actor_rollout_ref"

# name in rules -> (native key, kind, default, optional, description)
# Variables both training backends read (the actor's parallel layout aside).
SHARED_VARS = [
    ("nnodes", "trainer.nnodes", "int", 1, False, "number of nodes"),
    ("gpus_per_node", "trainer.n_gpus_per_node", "int", 8, False, "GPUs per node"),
    ("train_batch_size", "data.train_batch_size", "int", 1024, False, "prompts per step (global)"),
    ("max_prompt_length", "data.max_prompt_length", "int", 512, False, "longest prompt, tokens"),
    ("max_response_length", "data.max_response_length", "int", 512, False, "longest response, tokens"),
    ("n", f"{AR}.rollout.n", "int", 1, False, "responses per prompt"),
    ("actor_mini", f"{AR}.actor.ppo_mini_batch_size", "int", 256, False, "prompts per actor update (global)"),
    ("actor_micro_per_gpu", f"{AR}.actor.ppo_micro_batch_size_per_gpu", "int", None, True, "samples per forward/backward per GPU"),
    ("actor_micro", f"{AR}.actor.ppo_micro_batch_size", "int", None, True, "deprecated global micro batch"),
    ("actor_dyn", f"{AR}.actor.use_dynamic_bsz", "bool", False, False, "token-budget micro batches"),
    ("actor_max_tokens", f"{AR}.actor.ppo_max_token_len_per_gpu", "int", 16384, False, "token budget per GPU (dynamic bsz)"),
    # passes of the update over the step's batch, each over all its mini batches (0.9.1 engine_workers.py
    # TrainingWorker.train_mini_batch: total_num_iterations = mini batches x epochs); the critic's follows the actor's
    ("actor_epochs", f"{AR}.actor.ppo_epochs", "int", 1, False, "passes of the actor update over the step's batch"),
    ("remove_padding", f"{AR}.model.use_remove_padding", "bool", True, False, "sequence packing"),
    ("logprob_micro_per_gpu", f"{AR}.rollout.log_prob_micro_batch_size_per_gpu", "int", None, True, "samples per old-log-prob forward per GPU"),
    ("logprob_micro", f"{AR}.rollout.log_prob_micro_batch_size", "int", None, True, "deprecated global log-prob micro batch"),
    ("logprob_dyn", f"{AR}.rollout.log_prob_use_dynamic_bsz", "bool", False, False, "token-budget log-prob batches (follows actor.use_dynamic_bsz)"),
    ("logprob_max_tokens", f"{AR}.rollout.log_prob_max_token_len_per_gpu", "int", 16384, False, "log-prob token budget per GPU (follows actor.ppo_max_token_len_per_gpu)"),
    ("ref_micro_per_gpu", f"{AR}.ref.log_prob_micro_batch_size_per_gpu", "int", None, True, "samples per ref forward per GPU"),
    ("ref_micro", f"{AR}.ref.log_prob_micro_batch_size", "int", None, True, "deprecated global ref micro batch"),
    ("ref_dyn", f"{AR}.ref.log_prob_use_dynamic_bsz", "bool", False, False, "token-budget ref batches (follows actor.use_dynamic_bsz)"),
    ("ref_max_tokens", f"{AR}.ref.log_prob_max_token_len_per_gpu", "int", 16384, False, "ref token budget per GPU (follows actor.ppo_max_token_len_per_gpu)"),
    ("rollout_tp", f"{AR}.rollout.tensor_model_parallel_size", "int", 2, False, "rollout tensor parallel"),
    ("rollout_dp", f"{AR}.rollout.data_parallel_size", "int", 1, False, "rollout data parallel inside one engine"),
    ("rollout_ep", f"{AR}.rollout.expert_parallel_size", "int", 1, False, "rollout expert parallel"),
    ("rollout_pp", f"{AR}.rollout.pipeline_model_parallel_size", "int", 1, False, "rollout pipeline parallel"),
    ("rollout_gpus_per_node", f"{AR}.rollout.n_gpus_per_node", "int", None, True, "GPUs per node for rollout replicas (unset: trainer.n_gpus_per_node)"),
    ("max_model_len", f"{AR}.rollout.max_model_len", "int", None, True, "vLLM/SGLang context length (unset: the model's max_position_embeddings)"),
    ("rollout_sync", f"{AR}.rollout.mode", "bool", False, False, "in-process (sync) rollout: rollout.mode=sync (removed in 0.7)"),
    # placement: who generates on which GPUs (docs/async.md). 0 sync (the hybrid engine: rollout and training take
    # turns on the same GPUs), 1 colocate_async and 2 separate_async (trainer.v1.trainer_mode), 3 the fully_async
    # recipe (python -m verl.experimental.fully_async_policy.fully_async_main), 4 the one_step_off recipe
    # (python -m verl.experimental.one_step_off_policy.main_ppo)
    ("async_mode", "trainer.v1.trainer_mode", "int", 0, False, "placement: 0 sync, 1 colocate_async, 2 separate_async, 3 fully_async, 4 one_step_off"),
    ("rollout_nnodes", f"{AR}.rollout.nnodes", "int", 0, False, "nodes of the standalone rollout pool (fully_async recipe: rollout.nnodes)"),
    ("hybrid_engine", f"{AR}.hybrid_engine", "bool", True, False, "rollout replicas on the training GPUs too"),
    ("ckpt_naive", f"{AR}.rollout.checkpoint_engine.backend", "bool", True, False, "weight sync backend 'naive' (else nccl, nixl, mooncake, ...)"),
    ("sync_steps", "trainer.v1.separate_async.parameter_sync_step", "int", 4, False, "trainer steps per weight sync (fully_async recipe: async_training.trigger_parameter_sync_step)"),
    ("require_batches", "async_training.require_batches", "int", 1, False, "mini batches per trainer step (fully_async recipe)"),
    ("partial_rollout", "async_training.partial_rollout", "bool", True, False, "in-flight samples pause at a weight sync and resume (fully_async recipe)"),
    ("staleness_permille", "async_training.staleness_threshold", "int", 100, False, "samples the rollout may run ahead, x1000 of a sync's worth (fully_async recipe)"),
    ("bypass_logprob", "algorithm.rollout_correction.bypass_mode", "bool", False, False, "old log-probs from the rollout engine: no old_log_prob forward"),
    ("fa_train_batch", "data.train_batch_size (fully_async recipe)", "int", 0, False, "data.train_batch_size as the fully_async config gives it (must be 0)"),
    ("cluster_gpus", "--gpus", "int", None, True, "GPUs of the Ray cluster (split placements: trainer + rollout pools; unset: not checked)"),
    ("critic_mini", "critic.ppo_mini_batch_size", "int", 256, False, "prompts per critic update (global; follows the actor's)"),
    ("critic_epochs", "critic.ppo_epochs", "int", 1, False, "passes of the critic update over the step's batch (follows the actor's)"),
    ("critic_micro_per_gpu", "critic.ppo_micro_batch_size_per_gpu", "int", None, True, "critic samples per micro batch per GPU (validated, unused by the v1 critic engine)"),
    ("critic_micro", "critic.ppo_micro_batch_size", "int", None, True, "deprecated global critic micro batch"),
    ("critic_dyn", "critic.use_dynamic_bsz", "bool", False, False, "critic token-budget batches in config validation (follows actor.use_dynamic_bsz)"),
    ("critic_max_tokens", "critic.ppo_infer_max_token_len_per_gpu", "int", 32768, False, "token budget per GPU the v1 critic engine uses for training and values (critic.ppo_max_token_len_per_gpu is not read)"),
    ("need_critic", "algorithm.adv_estimator==gae or critic.enable", "bool", False, False, "a critic is trained"),
    ("need_ref", "actor.use_kl_loss or algorithm.use_kl_in_reward", "bool", False, False, "a reference model runs"),
    ("group_estimator", "algorithm.adv_estimator in group estimators", "bool", False, False, "advantage is relative within a group of n"),
    # memory and speed knobs of the rollout engine (read by the cost model)
    ("gmu_permille", f"{AR}.rollout.gpu_memory_utilization", "int", 500, False, "vLLM/SGLang memory fraction x1000"),
    ("rollout_sglang", f"{AR}.rollout.name", "bool", False, False, "rollout engine is SGLang (else vLLM)"),
    ("free_cache_engine", f"{AR}.rollout.free_cache_engine", "bool", True, False, "release KV cache after rollout"),
    ("enforce_eager", f"{AR}.rollout.enforce_eager", "bool", False, False, "no CUDA graphs in rollout"),
    ("max_num_seqs", f"{AR}.rollout.max_num_seqs", "int", 256, False, "rollout concurrency cap"),
    ("max_num_batched_tokens", f"{AR}.rollout.max_num_batched_tokens", "int", 8192, False, "prefill token budget"),
    # the update computes the entropy with its gradient only when it enters the loss (0.4 on; 0.1-0.2 always):
    # verl 0.4.1/0.6.1 verl/workers/actor/dp_actor.py DataParallelPPOActor.update_policy and 0.6.1
    # megatron_actor.py MegatronPPOActor.update_policy (calculate_entropy = entropy_coeff != 0), 0.9.1
    # verl/trainer/ppo/ray_trainer.py _update_actor (actor.calculate_entropy or entropy_coeff != 0)
    ("entropy_loss", f"{AR}.actor.entropy_coeff != 0 or {AR}.actor.calculate_entropy", "bool", False, False, "the actor's update computes the entropy with its gradient"),
    # both engines replace the model's forward by fused log-probs (FSDP: costmodel/constants.py VERL_FUSED_PPO_*;
    # Megatron: FUSED_LCE_*), from verl 0.4.0 on FSDP, 0.5.0 on Megatron
    ("use_fused_kernels", f"{AR}.model.use_fused_kernels", "bool", False, False,
     "log-probs and entropy by verl's fused kernels (no [tokens, vocab] logits)"),
    # model constants (from the model card), present only when a model is known
    ("num_heads", "model.num_attention_heads", "int", None, False, "attention heads"),
    ("num_kv_heads", "model.num_key_value_heads", "int", None, False, "key/value heads"),
    # 0 for a MoE model, whose experts' MLPs are split otherwise (its dense MLP width is no layer's)
    ("intermediate_size", "model.intermediate_size", "int", None, False, "dense MLP width"),
    ("max_position_embeddings", "model.max_position_embeddings", "int", None, False, "model context"),
]

# Variables only the FSDP/FSDP2 backend reads.
FSDP_VARS = [
    ("actor_sp", f"{AR}.actor.ulysses_sequence_parallel_size", "int", 1, False, "Ulysses sequence parallel size (the actor engine's)"),
    ("fsdp_size", f"{AR}.actor.fsdp_config.fsdp_size", "int", -1, False, "FSDP shard group size (-1: all GPUs)"),
    ("ref_sp", f"{AR}.ref.ulysses_sequence_parallel_size", "int", 1, False, "ref Ulysses size (follows the actor's)"),
    ("critic_sp", "critic.fsdp.ulysses_sequence_parallel_size", "int", 1, False, "Ulysses size of the critic engine"),
    ("critic_cfg_sp", "critic.ulysses_sequence_parallel_size", "int", 1, False, "deprecated critic Ulysses key: read by config validation only"),
    ("grad_ckpt", f"{AR}.model.enable_gradient_checkpointing", "bool", True, False, "activation recompute"),
    ("param_offload", f"{AR}.actor.fsdp_config.param_offload", "bool", False, False, "actor params on CPU"),
    ("optimizer_offload", f"{AR}.actor.fsdp_config.optimizer_offload", "bool", False, False, "actor optimizer on CPU"),
    ("ref_param_offload", f"{AR}.ref.fsdp_config.param_offload", "bool", False, False, "ref params on CPU"),
    ("entropy_chunking", f"{AR}.actor.entropy_from_logits_with_chunking", "bool", False, False, "chunked entropy"),
    # PEFT LoRA on model.target_modules (default all-linear; workers/config/model.py HFModelConfig), the reference
    # log-probs from the actor with its adapter disabled (engine_workers.py no_lora_adapter)
    ("lora_rank", f"{AR}.model.lora_rank", "int", 0, False, "LoRA rank (0: full fine-tuning)"),
    # how a LoRA's weights first reach the engine (host memory only: costmodel/host.py, verl's host_layout)
    ("rollout_dummy_load", f"{AR}.rollout.load_format", "bool", True, False, "the engine starts from dummy weights (load_format dummy*): LoRA's first sync sends the whole base model"),
    ("layered_summon", f"{AR}.rollout.layered_summon", "bool", False, False, "LoRA sync gathers the model one layer at a time"),
    # the launch script's environment (host memory only): VLLM_USE_V1=0 runs vLLM's V0 engine, whose workers allocate a
    # CPU swap space (costmodel/host.py VLLM_V0_SWAP_BYTES; verl's host_layout)
    ("vllm_v0", "VLLM_USE_V1", "bool", False, False, "vLLM's V0 engine (VLLM_USE_V1=0 in the environment): pinned CPU swap space per rollout GPU"),
    ("ray_kill_permille", "RAY_memory_usage_threshold", "int", None, True, "Ray's memory monitor line, per mille of the node's RAM (the environment's; unset: 950)"),
    # checkpoints (host memory only: costmodel/host.py, verl's host_layout)
    ("save_freq", "trainer.save_freq", "int", -1, False, "steps between checkpoint saves (-1: none)"),
    ("fsdp2", f"{AR}.actor.strategy", "bool", False, False, "FSDP2 (actor.strategy=fsdp2): its checkpoint save copies no state dict to the CPU at once"),
    ("entropy_checkpointing", f"{AR}.actor.entropy_checkpointing", "bool", False, False, "recompute entropy"),
    # the FSDP engine reads its own fsdp_config key (FSDPEngine.__init__); actor.use_torch_compile does not reach it
    ("use_torch_compile", f"{AR}.actor.fsdp_config.use_torch_compile", "bool", True, False, "entropy under torch.compile (fused, no [tokens, vocab] fp32 copies)"),
    # FSDP's fused-kernel backend (model.fused_kernel_options.impl_backend, from 0.4.1; default "torch"): "triton"
    # runs verl's linear cross-entropy kernel, the others FusedLinearForPPO's chunks (costmodel/constants.py)
    ("fused_kernels_triton", f"{AR}.model.fused_kernel_options.impl_backend", "bool", False, False,
     "use_fused_kernels' triton backend (impl_backend=triton; default torch)"),
    ("critic_grad_ckpt", "critic.model.enable_gradient_checkpointing", "bool", True, False, "critic recompute"),
    ("critic_remove_padding", "critic.model.use_remove_padding", "bool", True, False, "critic sequence packing"),
    ("critic_param_offload", "critic.fsdp.param_offload", "bool", False, False, "critic params on CPU"),
    ("critic_optimizer_offload", "critic.fsdp.optimizer_offload", "bool", False, False, "critic optimizer on CPU"),
]


def make_variables(*rows: list) -> dict[str, VarSpec]:
    out: dict[str, VarSpec] = {}
    for table in rows:
        for name, key, kind, default, optional, desc in table:
            out[name] = VarSpec(name, key, kind, default, optional, desc)
    return out


def rule_vars(variables: Mapping[str, VarSpec]) -> dict[str, IntVar | BoolVar]:
    """Expression variables (``IntVar``/``BoolVar``) for variable specs."""
    return {name: (BoolVar(name) if spec.kind == "bool" else IntVar(name)) for name, spec in variables.items()}


VARIABLES = make_variables(SHARED_VARS, FSDP_VARS)
V = rule_vars(VARIABLES)

# Derived quantities every rule set defines (rules read them as variables).
D = {
    name: IntVar(name)
    for name in (
        "N", "dp", "ref_dp", "critic_dp", "seq_par", "ref_seq_par", "critic_seq_par", "cfg_sp", "B_n", "mini_n",
        "mini_per_gpu", "padded_prompts", "padded_B_n", "local_batch", "ref_local_batch", "L",
        "rollout_ws", "rollout_g", "critic_mini_n", "critic_mini_per_gpu", "model_len",
        "grad_accum", "fsdp_div", "waste_permille", "pad_samples", "pad_pct", "rollout_pool", "chunk_prompts",
        "chunk_n", "pool_gpus",
    )
}
N, dp, L = D["N"], D["dp"], D["L"]
dyn = V["actor_dyn"]
not_dyn = ~dyn
MODE = V["async_mode"]
# async_mode: 0 sync, 1 colocate_async, 2 separate_async, 3 fully_async, 4 one_step_off
SEPARATE_ASYNC, FULLY_ASYNC, ONE_STEP_OFF = MODE.eq(2), MODE.eq(3), MODE.eq(4)
RECIPE = MODE >= 3  # the experimental recipes: their own entry points, no hybrid engine
SPLIT = MODE >= 2  # a standalone rollout pool on GPUs of its own

# The parallel layout of the FSDP backend, as the shared rules see it.
FSDP_LAYOUT: dict[str, IntExpr] = {
    # max(1, .) keeps a broken sp from dividing by 0 (verl.fsdp.sp_divides_gpus reports that case)
    "dp": maximum(1, N // V["actor_sp"]),
    "ref_dp": maximum(1, N // V["ref_sp"]),
    "critic_dp": maximum(1, N // V["critic_sp"]),
    "seq_par": V["actor_sp"],
    "ref_seq_par": V["ref_sp"],
    "critic_seq_par": V["critic_sp"],
    "cfg_sp": V["actor_sp"],
}
LAYOUT_TEXT = {
    "dp": "actor data-parallel size (FSDP: N / ulysses sp; Megatron: N / (TP*PP*CP))",
    "ref_dp": "reference-model data-parallel size",
    "critic_dp": "critic data-parallel size",
    "seq_par": "actor sequence-parallel size that multiplies token budgets (FSDP: ulysses sp; Megatron: CP)",
    "ref_seq_par": "reference-model sequence-parallel size",
    "critic_seq_par": "critic sequence-parallel size",
    "cfg_sp": "sp that ActorConfig.validate reads (FSDP: ulysses sp; Megatron: 1)",
}


def padded_prompts(train_batch_size: int, actor_mini: int, critic_mini: int, need_critic: bool) -> int:
    """Prompts per step after the v1 trainer pads to whole mini batches (of the actor, and of the critic)."""
    m = math.lcm(actor_mini, critic_mini) if need_critic else actor_mini
    return -(-train_batch_size // m) * m


def padding_permille(train_batch_size: int, actor_mini: int, critic_mini: int, need_critic: bool) -> int:
    """Share of the padded step's samples that are synthetic padding, in permille (rounded down)."""
    padded = padded_prompts(train_batch_size, actor_mini, critic_mini, need_critic)
    return (padded - train_batch_size) * 1000 // padded if padded > 0 else 0


def shared_derived(layout: Mapping[str, IntExpr]) -> list[Derived]:
    """Derived quantities of the shared rules, given a backend's parallel layout."""
    return [
        Derived("N", V["nnodes"] * V["gpus_per_node"], "GPUs in the job"),
        *[Derived(name, layout[name], LAYOUT_TEXT[name]) for name in LAYOUT_TEXT],
        Derived("B_n", V["train_batch_size"] * V["n"], "samples per step"),
        Derived("mini_n", V["actor_mini"] * V["n"], "samples per actor mini batch"),
        Derived("mini_per_gpu", D["mini_n"] // dp, "samples per actor mini batch per GPU"),
        # v1 trainer: _balance_batch pads the step's samples to a multiple of lcm(dp, actor mini*n[, critic
        # mini*n]) (trainer/ppo/v1/trainer_base.py:_get_required_batch_multiple). Where dp divides mini*n
        # (verl.step.mini_divisible_by_dp), that is n * (the prompts padded to a multiple of lcm(actor mini,
        # critic mini)): one table over the sizes, cheaper for CP-SAT than the divisions.
        Derived("padded_prompts", Table("padded_prompts", (V["train_batch_size"], V["actor_mini"], V["critic_mini"],
                                                            V["need_critic"]), padded_prompts),
                "train_batch_size rounded up to whole actor (and critic) mini batches"),
        Derived("padded_B_n", D["padded_prompts"] * V["n"], "samples per step after the v1 trainer's padding"),
        # what fix and recommend count as waste (solver/costs.py): the synthetic samples' share of the step
        Derived("waste_permille", Table("waste_permille", (V["train_batch_size"], V["actor_mini"], V["critic_mini"],
                                                            V["need_critic"]), padding_permille),
                "synthetic padding samples per 1000 samples of the padded step"),
        Derived("pad_samples", (D["padded_prompts"] - V["train_batch_size"]) * V["n"],
                "synthetic samples the v1 trainer adds per step"),
        Derived("pad_pct", D["waste_permille"] // 10, "synthetic samples, percent of the padded step"),
        # one pass of the trainer: the (padded) step; separate_async trains one mini batch per pass
        # (trainer_base.py:PPOTrainer.step samples train_batch_size / parameter_sync_step prompts, equal to the mini
        # batch there), the fully_async recipe require_batches mini batches (fully_async_trainer.py required_samples),
        # the one_step_off recipe the unpadded step (its trainer is the legacy RayPPOTrainer)
        Derived("chunk_prompts", if_then_else(SEPARATE_ASYNC, V["actor_mini"], if_then_else(
            FULLY_ASYNC, V["actor_mini"] * V["require_batches"], if_then_else(
                ONE_STEP_OFF, V["train_batch_size"], D["padded_prompts"]))),
                "prompts of one trainer pass (sync: the padded step)"),
        Derived("chunk_n", D["chunk_prompts"] * V["n"], "samples of one trainer pass"),
        Derived("local_batch", D["chunk_n"] // dp, "samples per GPU in log-prob"),
        Derived("ref_local_batch", D["chunk_n"] // D["ref_dp"], "samples per GPU in ref log-prob"),
        Derived("L", V["max_prompt_length"] + V["max_response_length"], "longest sample, tokens"),
        Derived("rollout_ws", V["rollout_tp"] * V["rollout_dp"] * V["rollout_pp"], "GPUs per rollout replica"),
        Derived("rollout_g", if_then_else(is_set("rollout_gpus_per_node"), V["rollout_gpus_per_node"], V["gpus_per_node"]),
                "rollout GPUs per node"),
        Derived("rollout_pool", V["rollout_nnodes"] * D["rollout_g"], "GPUs of the standalone rollout pool"),
        Derived("pool_gpus", N + if_then_else(SPLIT, D["rollout_pool"], 0), "GPUs the job asks Ray for"),
        Derived("critic_mini_n", V["critic_mini"] * V["n"], "samples per critic mini batch"),
        Derived("critic_mini_per_gpu", D["critic_mini_n"] // D["critic_dp"], "samples per critic mini batch per GPU"),
        Derived("model_len", if_then_else(is_set("max_model_len"), V["max_model_len"], V["max_position_embeddings"]),
                "vLLM/SGLang max_model_len (unset: max_position_embeddings)"),
        Derived("grad_accum", D["mini_per_gpu"] // V["actor_micro_per_gpu"], "micro batches per actor mini batch"),
    ]


FSDP_DERIVED = [Derived("fsdp_div", maximum(1, V["fsdp_size"]), "fsdp_size as a divisor")]

CONFIG = "verl/utils/config.py:validate_config"
ACTOR_CFG = "verl/workers/config/actor.py"
CRITIC_CFG = "verl/workers/config/critic.py"
ROLLOUT_CFG = ("verl/workers/config/rollout.py:RolloutConfig.__post_init__ (first built in "
               "verl/workers/engine_workers.py:ActorRolloutRefWorker.init_model)")
WORKERS = "verl/workers/engine_workers.py"
INIT_MODEL = f"{WORKERS}:ActorRolloutRefWorker.init_model"
FSDP_ENGINE = "verl/workers/engine/fsdp/transformer_impl.py:FSDPEngine"
MICRO = "verl/workers/engine/utils.py:prepare_micro_batches"
SEQLEN = "verl/utils/seqlen_balancing.py:rearrange_micro_batches"
VLLM = "verl/workers/rollout/vllm_rollout/vllm_async_server.py:vLLMHttpServer"
SGLANG = "verl/workers/rollout/sglang_rollout/async_sglang_server.py"
ULYSSES = "verl/models/transformers/monkey_patch.py:apply_monkey_patch"


def shared_rules() -> list[Rule]:
    """Rules verl applies whatever the training backend."""
    r: list[Rule] = []
    add = r.append
    # ---------------- driver: utils/config.py:validate_config -----------------
    add(Rule(
        "verl.actor.micro_exactly_one",
        exactly_one(is_set("actor_micro"), is_set("actor_micro_per_gpu")),
        "set one of actor.ppo_micro_batch_size_per_gpu or the deprecated actor.ppo_micro_batch_size, not both "
        "(now {actor_micro_per_gpu} and {actor_micro})",
        Stage.DRIVER, f"{ACTOR_CFG}:ActorConfig.__post_init__", when=not_dyn,
    ))
    add(Rule(
        "verl.actor.mini_le_train",
        V["actor_mini"] <= V["train_batch_size"],
        "actor.ppo_mini_batch_size = {actor_mini} is larger than data.train_batch_size = {train_batch_size}",
        Stage.DRIVER, f"{ACTOR_CFG}:ActorConfig.validate", when=not_dyn,
    ))
    add(Rule(
        "verl.actor.global_micro_divides_mini",
        divides(V["actor_micro"], V["actor_mini"]),
        "actor.ppo_mini_batch_size = {actor_mini} is not divisible by actor.ppo_micro_batch_size = {actor_micro}",
        Stage.DRIVER, f"{ACTOR_CFG}:ActorConfig.validate", when=not_dyn & is_set("actor_micro"),
    ))
    add(Rule(
        "verl.actor.global_micro_covers_gpus",
        V["actor_micro"] * D["cfg_sp"] >= N,
        "actor.ppo_micro_batch_size*ulysses_sp = {actor_micro}*{cfg_sp} is less than the {N} GPUs",
        Stage.DRIVER, f"{ACTOR_CFG}:ActorConfig.validate", when=not_dyn & is_set("actor_micro"),
    ))
    add(Rule(
        "verl.rollout.logprob_micro_exactly_one",
        exactly_one(is_set("logprob_micro"), is_set("logprob_micro_per_gpu")),
        "set one of rollout.log_prob_micro_batch_size_per_gpu or the deprecated rollout.log_prob_micro_batch_size, and "
        "only one (now log_prob_micro_batch_size_per_gpu = {logprob_micro_per_gpu}, log_prob_micro_batch_size = "
        "{logprob_micro})",
        Stage.DRIVER, f"{CONFIG} (check_mutually_exclusive)", when=not_dyn,
    ))
    add(Rule(
        "verl.ref.logprob_micro_exactly_one",
        exactly_one(is_set("ref_micro"), is_set("ref_micro_per_gpu")),
        "the reference model runs (KL is on): set one of ref.log_prob_micro_batch_size_per_gpu or the deprecated "
        "ref.log_prob_micro_batch_size, and only one (now log_prob_micro_batch_size_per_gpu = {ref_micro_per_gpu}, "
        "log_prob_micro_batch_size = {ref_micro})",
        Stage.DRIVER, f"{CONFIG} (check_mutually_exclusive)", when=not_dyn & V["need_ref"],
    ))
    critic_on = V["need_critic"]
    critic_static = critic_on & ~V["critic_dyn"]
    add(Rule(
        "verl.critic.micro_exactly_one",
        exactly_one(is_set("critic_micro"), is_set("critic_micro_per_gpu")),
        "the algorithm trains a critic: set one of critic.ppo_micro_batch_size_per_gpu or the deprecated "
        "critic.ppo_micro_batch_size, and only one (now ppo_micro_batch_size_per_gpu = {critic_micro_per_gpu}, "
        "ppo_micro_batch_size = {critic_micro}; verl's yaml copies "
        "ppo_micro_batch_size into an unset ppo_micro_batch_size_per_gpu, so setting only the global one counts as "
        "both)",
        Stage.DRIVER, f"{CRITIC_CFG}:CriticConfig.__post_init__", when=critic_static,
        explanation="verl 0.9.1's critic yaml sets ppo_micro_batch_size_per_gpu: ${oc.select:.ppo_micro_batch_size,null}.",
    ))
    add(Rule(
        "verl.critic.mini_le_train",
        V["critic_mini"] <= V["train_batch_size"],
        "critic.ppo_mini_batch_size = {critic_mini} is larger than data.train_batch_size = {train_batch_size}",
        Stage.DRIVER, f"{CRITIC_CFG}:CriticConfig.validate", when=critic_static,
    ))
    add(Rule(
        "verl.critic.global_micro_divides_mini",
        divides(V["critic_micro"], V["critic_mini"]),
        "critic.ppo_mini_batch_size = {critic_mini} is not divisible by critic.ppo_micro_batch_size = {critic_micro}",
        Stage.DRIVER, f"{CRITIC_CFG}:CriticConfig.__post_init__", when=critic_static & is_set("critic_micro"),
    ))
    # ---------------- GPU worker init: engine_workers.py:ActorRolloutRefWorker.init_model ----------------
    add(Rule(
        "verl.worker.dynamic_bsz_consistent",
        (dyn & V["logprob_dyn"]) | (~dyn & ~V["logprob_dyn"]),
        "actor.use_dynamic_bsz = {actor_dyn} differs from rollout.log_prob_use_dynamic_bsz = {logprob_dyn}",
        Stage.WORKER_INIT, INIT_MODEL,
    ))
    add(Rule(
        "verl.worker.actor_micro_per_gpu_required",
        is_set("actor_micro_per_gpu"),
        "actor.ppo_micro_batch_size_per_gpu = {actor_micro_per_gpu}: verl 0.9.1 no longer converts the "
        "deprecated global ppo_micro_batch_size = {actor_micro}, so the worker fails",
        Stage.WORKER_INIT, INIT_MODEL, when=not_dyn,
    ))
    add(Rule(
        "verl.worker.logprob_micro_per_gpu_required",
        is_set("logprob_micro_per_gpu"),
        "rollout.log_prob_micro_batch_size_per_gpu = {logprob_micro_per_gpu}: the deprecated global "
        "log_prob_micro_batch_size = {logprob_micro} is not converted in verl 0.9.1",
        Stage.WORKER_INIT, INIT_MODEL, when=not_dyn,
    ))
    add(Rule(
        "verl.worker.rollout_world_divides_gpus",
        divides(D["rollout_ws"], N),
        "the {N} GPUs are not divisible by the rollout replica size TP*DP*PP = "
        "{rollout_tp}*{rollout_dp}*{rollout_pp} = {rollout_ws}",
        Stage.WORKER_INIT, INIT_MODEL,
        # no rollout replicas on the trainer GPUs when a split placement turns the hybrid engine off
        when=~(SPLIT & ~V["hybrid_engine"]),
    ))
    add(Rule(
        "verl.rollout.ep_equals_tp_dp",
        V["rollout_ep"].eq(V["rollout_tp"] * V["rollout_dp"]),
        "rollout.expert_parallel_size = {rollout_ep} must equal tensor_model_parallel_size*data_parallel_size "
        "= {rollout_tp}*{rollout_dp}",
        Stage.WORKER_INIT, ROLLOUT_CFG, when=V["rollout_ep"] > 1,
    ))
    add(Rule(
        "verl.rollout.sync_mode_removed",
        ~V["rollout_sync"],
        "actor_rollout_ref.rollout.mode = sync (in-process rollout = {rollout_sync}): \"Rollout mode 'sync' has "
        "been removed. Please set "
        "`actor_rollout_ref.rollout.mode=async` or remove the mode setting entirely.\"",
        Stage.WORKER_INIT, ROLLOUT_CFG,
        explanation="Scripts written for verl 0.6 and older set rollout.mode=sync (an in-process engine); since 0.7 "
                    "the rollout runs as servers only (check such a script with --framework verl==0.6.1).",
    ))
    add(Rule(
        "verl.rollout.pp_unsupported",
        V["rollout_pp"].eq(1),
        "rollout.pipeline_model_parallel_size = {rollout_pp}: pipeline parallel rollout is not supported for vllm/sglang",
        Stage.WORKER_INIT, ROLLOUT_CFG,
    ))
    add(Rule(
        "verl.rollout.replica_fits_nodes",
        # replica.py places min(rollout.n_gpus_per_node, TP*DP*PP) GPUs per node and asserts they tile the replica
        divides(D["rollout_g"], D["rollout_ws"]) | (D["rollout_ws"] <= D["rollout_g"]),
        "a rollout replica spans TP*DP*PP = {rollout_ws} GPUs, more than the {rollout_g} rollout GPUs per node "
        "(rollout.n_gpus_per_node) and not a multiple of them",
        Stage.WORKER_INIT, "verl/workers/rollout/replica.py:RolloutReplica.__init__ (built by "
        "verl/workers/rollout/llm_server.py:LLMServerManager after the workers)",
    ))
    add(Rule(
        "verl.vllm.heads_divisible_by_tp",
        divides(V["rollout_tp"], V["num_heads"]),
        "num_attention_heads = {num_heads} is not divisible by rollout.tensor_model_parallel_size = {rollout_tp}",
        Stage.WORKER_INIT, "vLLM/SGLang model loading (their error: attention heads must be divisible by tensor "
        "parallel size)",
    ))
    add(Rule(
        "verl.vllm.kv_heads_vs_tp",
        # vllm/model_executor/layers/linear.py QKVParallelLinear.__init__: divide(total_num_kv_heads, tp_size), or
        # divide(tp_size, total_num_kv_heads) to replicate the heads once TP reaches their count (divide asserts)
        divides(V["rollout_tp"], V["num_kv_heads"]) | divides(V["num_kv_heads"], V["rollout_tp"]),
        "num_key_value_heads = {num_kv_heads} must be a multiple or a divisor of rollout.tensor_model_parallel_size "
        "= {rollout_tp}",
        Stage.WORKER_INIT, "vllm/model_executor/layers/linear.py:QKVParallelLinear.__init__ (divide asserts)",
    ))
    add(Rule(
        "verl.vllm.mlp_divisible_by_tp",
        # vllm/model_executor/layers/linear.py MergedColumnParallelLinear / ColumnParallelLinear.__init__:
        # divide(output_size, tp_size) over the gate/up projections, RowParallelLinear the down projection's input
        divides(V["rollout_tp"], V["intermediate_size"]),
        "the model's MLP width intermediate_size = {intermediate_size} is not divisible by "
        "rollout.tensor_model_parallel_size = {rollout_tp}",
        Stage.WORKER_INIT, "vllm/model_executor/layers/linear.py:ColumnParallelLinear.__init__ (divide asserts)",
    ))
    add(Rule(
        "verl.vllm.model_len_le_positions",
        V["max_model_len"] <= V["max_position_embeddings"],
        "rollout.max_model_len = {max_model_len} exceeds the model's max_position_embeddings = "
        "{max_position_embeddings}",
        Stage.WORKER_INIT, f"{VLLM}._validate_configs, {SGLANG}:SGLangHttpServer.__init__",
        when=is_set("max_model_len"),
    ))
    add(Rule(
        "verl.vllm.prompt_fits_model_len",
        V["max_model_len"] > V["max_prompt_length"],
        "rollout.max_model_len = {max_model_len} leaves no room to generate after a {max_prompt_length}-token prompt",
        Stage.FIRST_STEP, f"{VLLM}.generate, {SGLANG}:SGLangHttpServer.generate", when=is_set("max_model_len"),
    ))
    add(Rule(
        "verl.vllm.dp_needs_tp_within_node",
        # the server gets min(rollout.n_gpus_per_node, TP*DP*PP) GPUs per node; TP always divides TP*DP*PP
        divides(V["rollout_tp"], D["rollout_g"]) | (D["rollout_ws"] <= D["rollout_g"]),
        "rollout.data_parallel_size = {rollout_dp} > 1 with a replica of TP*DP*PP = {rollout_ws} GPUs spread over "
        "nodes of {rollout_g} rollout GPUs: {rollout_g} is not divisible by rollout TP = {rollout_tp}",
        Stage.WORKER_INIT, f"{VLLM}.launch_server", when=(V["rollout_dp"] > 1) & ~V["rollout_sglang"],
    ))
    # ---------------- first step -------------------------------------------------
    add(Rule(
        "verl.step.mini_divisible_by_dp",
        divides(dp, D["mini_n"]),
        "ppo_mini_batch_size*rollout.n = {actor_mini}*{n} = {mini_n} is not divisible by the actor's "
        "data-parallel size dp = {dp}",
        Stage.FIRST_STEP, f"{WORKERS}:TrainingWorker.train_mini_batch",
    ))
    add(Rule(
        "verl.step.mini_divisible_by_micro",
        divides(V["actor_micro_per_gpu"], D["mini_per_gpu"]),
        "normalized ppo_mini_batch_size = ppo_mini_batch_size*n//dp = {mini_n}//{dp} = {mini_per_gpu} is not "
        "divisible by ppo_micro_batch_size_per_gpu = {actor_micro_per_gpu}",
        Stage.FIRST_STEP, MICRO, when=not_dyn & is_set("actor_micro_per_gpu"),
    ))
    mini_ok = divides(dp, D["mini_n"])  # else the padded batch is not n*lcm(minis); mini_divisible_by_dp reports it
    add(Rule(
        "verl.step.logprob_micro_divides_local_batch",
        divides(V["logprob_micro_per_gpu"], D["local_batch"]),
        "samples per GPU in log-prob = the {chunk_prompts} prompts of a trainer pass (the step's "
        "train_batch_size = {train_batch_size} padded to whole mini batches, {padded_prompts}; separate_async: one mini "
        "batch; fully_async: require_batches of them) * n = {chunk_n}, over dp = {dp}: {local_batch}, is not divisible "
        "by log_prob_micro_batch_size_per_gpu = {logprob_micro_per_gpu}",
        Stage.FIRST_STEP, MICRO, when=not_dyn & is_set("logprob_micro_per_gpu") & mini_ok & ~V["bypass_logprob"],
        explanation="The v1 trainer pads each step to a multiple of lcm(dp, mini*n) "
                    "(trainer/ppo/v1/trainer_base.py:_balance_batch) and every GPU runs its share in micro batches.",
    ))
    ref_static = V["need_ref"] & ~V["ref_dyn"]
    add(Rule(
        "verl.step.ref_micro_per_gpu_required",
        is_set("ref_micro_per_gpu"),
        "the reference model runs without dynamic batch: ref.log_prob_micro_batch_size_per_gpu = "
        "{ref_micro_per_gpu} (the deprecated global ref.log_prob_micro_batch_size = {ref_micro} is not converted "
        "in verl 0.9.1)",
        Stage.FIRST_STEP, f"{MICRO} (micro_batch_size_per_gpu is None)", when=ref_static,
    ))
    add(Rule(
        "verl.step.ref_micro_divides_local_batch",
        divides(V["ref_micro_per_gpu"], D["ref_local_batch"]),
        "samples per GPU in ref log-prob = {chunk_n}//{ref_dp} = {ref_local_batch} is not divisible by "
        "ref.log_prob_micro_batch_size_per_gpu = {ref_micro_per_gpu}",
        Stage.FIRST_STEP, MICRO, when=ref_static & is_set("ref_micro_per_gpu") & mini_ok,
    ))
    add(Rule(
        "verl.step.actor_token_budget",
        V["actor_max_tokens"] * D["seq_par"] >= L,
        "actor.ppo_max_token_len_per_gpu*sequence parallel = {actor_max_tokens}*{seq_par} is below the longest "
        "sample max_prompt_length+max_response_length = {L}",
        Stage.FIRST_STEP, SEQLEN, when=dyn,
    ))
    add(Rule(
        "verl.step.logprob_token_budget",
        V["logprob_max_tokens"] * D["seq_par"] >= L,
        "rollout.log_prob_max_token_len_per_gpu*sequence parallel = {logprob_max_tokens}*{seq_par} is below the "
        "longest sample {L}",
        Stage.FIRST_STEP, SEQLEN, when=V["logprob_dyn"],
    ))
    add(Rule(
        "verl.step.ref_token_budget",
        V["ref_max_tokens"] * D["ref_seq_par"] >= L,
        "ref.log_prob_max_token_len_per_gpu*sequence parallel = {ref_max_tokens}*{ref_seq_par} is below the "
        "longest sample {L}",
        Stage.FIRST_STEP, SEQLEN, when=V["need_ref"] & V["ref_dyn"],
    ))
    add(Rule(
        "verl.step.critic_mini_divisible_by_dp",
        divides(D["critic_dp"], D["critic_mini_n"]),
        "critic.ppo_mini_batch_size*rollout.n = {critic_mini}*{n} = {critic_mini_n} is not divisible by critic "
        "dp = {critic_dp}",
        Stage.FIRST_STEP, f"{WORKERS}:TrainingWorker.train_mini_batch", when=critic_on,
    ))
    add(Rule(
        "verl.step.critic_token_budget",
        V["critic_max_tokens"] * D["critic_seq_par"] >= L,
        "critic.ppo_infer_max_token_len_per_gpu*sequence parallel = {critic_max_tokens}*{critic_seq_par} is "
        "below the longest sample {L} (the v1 critic engine always packs by tokens with this budget)",
        Stage.FIRST_STEP, f"{SEQLEN} (budget set in verl/trainer/ppo/v1/trainer_base.py:PPOTrainer._setup)",
        when=critic_on,
    ))
    # ---------------- ours on purpose ----------------------------------------------
    add(Rule(
        "verl.advice.batch_padded",
        D["padded_prompts"] <= V["train_batch_size"],
        "data.train_batch_size = {train_batch_size} prompts are not whole mini batches (actor ppo_mini_batch_size = "
        "{actor_mini}, and the critic's when a critic trains): the v1 trainer pads every step to {padded_prompts} "
        "prompts, {pad_samples} synthetic samples, {pad_pct}% of what the log-prob and update phases process, and "
        "one mini batch holds fewer real prompts than the others; a train batch that is a multiple of the mini "
        "batch wastes nothing",
        Stage.ADVICE, "verl/trainer/ppo/v1/trainer_base.py:_balance_batch, _get_required_batch_multiple; "
        "verl/trainer/ppo/padding_utils.py:upsample_batch_to_divisible_size",
        severity=Severity.WARNING, when=~ONE_STEP_OFF,  # its legacy trainer fails instead (one_step_off rule)
        explanation="verl 0.9.1's v1 trainer does not reject a train batch that is not a multiple of the mini "
                    "batch: it appends synthetic 128-token samples with zero advantage until it is.",
    ))
    add(Rule(
        "verl.advice.group_needs_n",
        V["n"] > 1,
        "rollout.n = {n}: a group-relative estimator needs n > 1; with one response per prompt every advantage is 0",
        Stage.ADVICE, "verl/trainer/ppo/core_algos.py:compute_grpo_outcome_advantage (no n > 1 check)",
        when=V["group_estimator"], severity=Severity.WARNING,
    ))
    return r


def fsdp_rules() -> list[Rule]:
    """Rules only the FSDP/FSDP2 backend has."""
    r: list[Rule] = []
    add = r.append
    sp = V["actor_sp"]
    critic_on = V["need_critic"]
    add(Rule(
        "verl.driver.batch_divisible_by_gpus",
        divides(N, D["B_n"]),
        "train_batch_size*rollout.n = {train_batch_size}*{n} = {B_n} is not divisible by "
        "n_gpus_per_node*nnodes = {N}",
        Stage.DRIVER, CONFIG, when=not_dyn,
        explanation="Every GPU must get the same number of samples; verl checks this against the total GPU count, not dp.",
    ))
    add(Rule(
        "verl.actor.sp_needs_remove_padding",
        V["remove_padding"],
        "actor.ulysses_sequence_parallel_size = {actor_sp} > 1 needs model.use_remove_padding=True "
        "(it is {remove_padding})",
        Stage.DRIVER, f"{ACTOR_CFG}:FSDPActorConfig.validate", when=sp > 1,
    ))
    add(Rule(
        "verl.critic.global_micro_covers_gpus",
        V["critic_micro"] * V["critic_cfg_sp"] >= N,
        "critic.ppo_micro_batch_size*ulysses_sp = {critic_micro}*{critic_cfg_sp} is less than the {N} GPUs",
        Stage.DRIVER, f"{CRITIC_CFG}:FSDPCriticConfig.validate",
        when=critic_on & ~V["critic_dyn"] & is_set("critic_micro"),
    ))
    add(Rule(
        "verl.fsdp.sp_divides_gpus",
        divides(sp, N),
        "the {N} GPUs are not divisible by actor.ulysses_sequence_parallel_size = {actor_sp}",
        Stage.WORKER_INIT, f"{FSDP_ENGINE}._init_device_mesh",
    ))
    add(Rule(
        "verl.fsdp.ref_sp_divides_gpus",
        divides(V["ref_sp"], N),
        "the {N} GPUs are not divisible by ref.ulysses_sequence_parallel_size = {ref_sp}",
        Stage.WORKER_INIT, f"{FSDP_ENGINE}._init_device_mesh", when=V["need_ref"],
    ))
    add(Rule(
        "verl.fsdp.critic_sp_divides_gpus",
        divides(V["critic_sp"], N),
        "the {N} GPUs are not divisible by critic.fsdp.ulysses_sequence_parallel_size = {critic_sp}",
        Stage.WORKER_INIT, f"{FSDP_ENGINE}._init_device_mesh", when=critic_on,
    ))
    add(Rule(
        "verl.fsdp.fsdp_size_divides_gpus",
        divides(D["fsdp_div"], N),
        "the {N} GPUs are not divisible by fsdp_config.fsdp_size = {fsdp_size}",
        Stage.WORKER_INIT, "verl/workers/engine/fsdp/utils.py:create_device_mesh",
        when=(V["fsdp_size"] > 0) & (V["fsdp_size"] < N),
    ))
    add(Rule(
        "verl.fsdp.critic_sp_needs_remove_padding",
        V["critic_remove_padding"],
        "critic.fsdp.ulysses_sequence_parallel_size = {critic_sp} > 1 needs critic.model.use_remove_padding=True "
        "(it is {critic_remove_padding})",
        Stage.WORKER_INIT, f"{FSDP_ENGINE}.__init__", when=critic_on & (V["critic_sp"] > 1),
    ))
    for who, sp_var, gate in (("actor", sp, None), ("ref", V["ref_sp"], V["need_ref"]), ("critic", V["critic_sp"], critic_on)):
        active = sp_var > 1 if gate is None else gate & (sp_var > 1)
        name = sp_var.name
        add(Rule(
            f"verl.ulysses.{who}_heads_divisible",
            divides(sp_var, V["num_heads"]),
            f"num_attention_heads = {{num_heads}} is not divisible by {who} ulysses_sequence_parallel_size = {{{name}}}",
            Stage.WORKER_INIT, ULYSSES, when=active,
        ))
        add(Rule(
            f"verl.ulysses.{who}_kv_heads",
            divides(sp_var, V["num_kv_heads"]) | divides(V["num_kv_heads"], sp_var),
            f"num_key_value_heads = {{num_kv_heads}} and {who} ulysses_sequence_parallel_size = {{{name}}}: "
            "one must divide the other",
            Stage.WORKER_INIT, ULYSSES, when=active,
        ))
    add(Rule(
        "verl.advice.critic_sp_key_ignored",
        V["critic_cfg_sp"].eq(V["critic_sp"]),
        "critic.ulysses_sequence_parallel_size = {critic_cfg_sp} is not passed to the critic engine in verl 0.9.1; "
        "it runs with critic.fsdp.ulysses_sequence_parallel_size = {critic_sp}",
        Stage.ADVICE, f"{CRITIC_CFG}:FSDPCriticConfig.__post_init__ (engine = critic.fsdp; no copy of the "
        "deprecated key, unlike FSDPActorConfig)",
        when=critic_on & (V["critic_cfg_sp"] > 1), severity=Severity.WARNING,
    ))
    return r


SEP_ASYNC_SRC = "verl/trainer/ppo/v1/trainer_separate_async.py:PPOTrainerSeparateAsync.__init__"
FA = "verl/experimental/fully_async_policy"
FA_ROLLOUTER = f"{FA}/fully_async_rollouter.py:FullyAsyncRollouter.__init__"
OSO = "verl/experimental/one_step_off_policy"
POOLS = "verl/experimental/separation/utils.py:create_resource_pool_manager"
LLM_SERVERS = "verl/workers/rollout/llm_server.py:LLMServerManager._initialize_llm_servers"


def async_rules() -> list[Rule]:
    """The placements that give rollout GPUs of their own (docs/async.md): the v1 trainer's separate_async mode
    and the fully_async recipe. Their trainer pool is trainer.nnodes x n_gpus_per_node (every rule above reads it
    as N); the standalone rollout pool is rollout.nnodes x rollout.n_gpus_per_node."""
    r: list[Rule] = []
    add = r.append
    add(Rule(
        "verl.async.separate_batch_is_sync_steps_of_minis",
        V["train_batch_size"].eq(V["sync_steps"] * V["actor_mini"]),
        "separate async training trains one mini batch per step between weight syncs: \"train_batch_size must equal "
        "parameter_sync_step * ppo_mini_batch_size\", but data.train_batch_size = {train_batch_size}, "
        "parameter_sync_step = {sync_steps}, ppo_mini_batch_size = {actor_mini}",
        Stage.TRAINER_INIT, SEP_ASYNC_SRC, when=SEPARATE_ASYNC,
    ))
    add(Rule(
        "verl.async.rollout_pool_needed",
        V["rollout_nnodes"] >= 1,
        "a split placement (trainer.v1.trainer_mode = separate_async, or the fully_async or one_step_off recipe) "
        "generates on a standalone rollout pool, but rollout.nnodes = {rollout_nnodes}: \"nnodes must be > 0 in "
        "separate async training\" (the recipes: \"config.rollout.nnodes must be greater than 0\")",
        Stage.TRAINER_INIT, f"{SEP_ASYNC_SRC}; {POOLS}", when=SPLIT,
    ))
    add(Rule(
        "verl.async.checkpoint_engine_not_naive",
        ~V["ckpt_naive"],
        "separate async training sends weights to the standalone rollout pool over the network: "
        "actor_rollout_ref.rollout.checkpoint_engine.backend = naive, which trainer mode {async_mode} (separate_async) "
        "refuses (\"please use nccl/nixl/mooncake, etc. backend for separate async training\")",
        Stage.TRAINER_INIT, SEP_ASYNC_SRC, when=SEPARATE_ASYNC,
    ))
    add(Rule(
        "verl.async.recipe_without_hybrid_engine",
        ~V["hybrid_engine"],
        "verl's fully_async and one_step_off recipes generate on their own pool only: actor_rollout_ref.hybrid_engine "
        "= {hybrid_engine} must be False (a bare assert in their trainers; the recipes' yaml leaves it True)",
        Stage.TRAINER_INIT, f"{FA}/fully_async_trainer.py:FullyAsyncTrainer.__init__, {FA_ROLLOUTER}, "
        f"{OSO}/ray_trainer.py:OneStepOffRayTrainer.__init__", when=RECIPE,
    ))
    add(Rule(
        "verl.async.one_step_off_train_divisible_by_mini",
        divides(V["actor_mini"], V["train_batch_size"]),
        "the one_step_off recipe trains with the legacy RayPPOTrainer, which does not pad a step to whole mini batches: "
        "data.train_batch_size = {train_batch_size} is not a multiple of ppo_mini_batch_size = {actor_mini}",
        Stage.FIRST_STEP, "verl/utils/tensordict_utils.py:make_iterator (via verl/workers/engine_workers.py:"
        "TrainingWorker.train_mini_batch, from verl/trainer/ppo/ray_trainer.py:RayPPOTrainer._update_actor)",
        when=ONE_STEP_OFF,
    ))
    add(Rule(
        "verl.async.fully_async_train_batch_zero",
        V["fa_train_batch"].eq(0),
        "the fully_async recipe counts samples by ppo_mini_batch_size x async_training.require_batches and "
        "\"train_batch_size must be zero\", but data.train_batch_size = {fa_train_batch}",
        Stage.TRAINER_INIT, FA_ROLLOUTER, when=FULLY_ASYNC,
    ))
    add(Rule(
        "verl.async.fully_async_batch_is_minis_of_steps",
        V["train_batch_size"].eq(V["actor_mini"] * V["require_batches"] * V["sync_steps"]),
        "the fully_async recipe's prompts per weight sync are ppo_mini_batch_size x require_batches x "
        "trigger_parameter_sync_step = {actor_mini} x {require_batches} x {sync_steps}, not {train_batch_size}",
        Stage.SEARCH, f"{FA}/fully_async_trainer.py:FullyAsyncTrainer.__init__ (required_samples) and the recipe's "
        "trigger_parameter_sync_step: how we read its batch (fsdp.py config_to_values)", when=FULLY_ASYNC,
        kind=RuleKind.SEARCH,
    ))
    add(Rule(
        "verl.async.fully_async_staleness_nonnegative",
        V["staleness_permille"] >= 0,
        "async_training.staleness_threshold = {staleness_permille}/1000 is negative (\"staleness_threshold must "
        "larger than 0\")",
        Stage.TRAINER_INIT, FA_ROLLOUTER, when=FULLY_ASYNC,
    ))
    add(Rule(
        "verl.async.replica_fits_rollout_pool",
        D["rollout_ws"] <= D["rollout_pool"],
        "a rollout replica takes TP*DP*PP = {rollout_ws} GPUs but the standalone pool has {rollout_pool} "
        "(rollout.nnodes*rollout.n_gpus_per_node): verl starts {rollout_pool}//{rollout_ws} = 0 replicas and "
        "nothing generates",
        # the trainer's hybrid replicas do not serve the split's generation (trainer_separate_async.py
        # get_llm_client: the standalone servers only)
        Stage.WORKER_INIT, LLM_SERVERS, when=SPLIT & (V["rollout_nnodes"] >= 1),
    ))
    add(Rule(
        "verl.async.pools_fit_cluster",
        D["pool_gpus"] <= V["cluster_gpus"],
        "the trainer pool ({N} GPUs) and the standalone rollout pool ({rollout_pool}) need {pool_gpus} GPUs but "
        "the cluster has {cluster_gpus}: \"Total available GPUs {cluster_gpus} is less than total desired GPUs "
        "{pool_gpus}\"",
        Stage.WORKER_INIT, "verl/single_controller/ray/base.py:ResourcePoolManager._check_resource_available",
        when=SPLIT & is_set("cluster_gpus"),
    ))
    add(Rule(
        "verl.advice.rollout_pool_whole_replicas",
        divides(D["rollout_ws"], D["rollout_pool"]),
        "the {rollout_pool} standalone rollout GPUs are not whole replicas of TP*DP*PP = {rollout_ws}: verl starts "
        "{rollout_pool}//{rollout_ws} replicas (floor division, no check) and the rest of the pool stays idle",
        Stage.ADVICE, LLM_SERVERS, when=SPLIT & (V["rollout_nnodes"] >= 1), severity=Severity.WARNING,
    ))
    return r


def _validated_by_driver(rule: Rule) -> bool:
    """Rules of the driver's ``validate_config`` and the config dataclasses' ``validate`` (which it calls): the
    fully_async recipe's runner never calls them (fully_async_main.py FullyAsyncTaskRunner)."""
    return rule.stage is Stage.DRIVER and (rule.source.startswith(CONFIG) or "Config.validate" in rule.source)


def skip_in_fully_async(rules: list[Rule]) -> list[Rule]:
    from dataclasses import replace

    return [replace(r, when=r.when & ~FULLY_ASYNC) if _validated_by_driver(r) else r for r in rules]


SHARED_RULES = skip_in_fully_async(shared_rules()) + async_rules()
FSDP_RULES = skip_in_fully_async(fsdp_rules())
RULES = SHARED_RULES + FSDP_RULES
DERIVED = shared_derived(FSDP_LAYOUT) + FSDP_DERIVED

RULESET = RuleSet("verl", VERSION, VARIABLES, DERIVED, RULES)
