"""verl FSDP values -> cost-model ``Plan`` per phase, and which variables each phase reads.

The lists below are the contract with the solver tables: a phase's memory or
time may only depend on the variables named for it (``tests/test_recommend.py``
checks the tables against the full evaluation on random configs).
"""

from __future__ import annotations

from typing import Any, Mapping

from ...costmodel.phase import Phase
from ...catalog.gpus import GPU
from ...catalog.models import ModelCard
from ...costmodel import constants as C
from ...costmodel.host import HOST_LIMIT_SHARE, VLLM_V0_SWAP_BYTES, HostLayout
from ...costmodel.memory import model_consts
from ...costmodel.plan import Plan
from ...costmodel.tables import TWO_POOLS, CostSpec
from ...rules.base import Value, bool_names, optional_names
from .rules import VARIABLES
from .rules import VERSION as NEWEST
from ..cost_common import phases_run, token_budget

_HW = ["nnodes", "gpus_per_node", "max_prompt_length", "max_response_length", "fsdp_size"]
_ROLLOUT = ["rollout_tp", "gmu_permille", "rollout_sglang", "free_cache_engine", "enforce_eager",
            "max_num_seqs", "max_num_batched_tokens", "max_model_len", "rollout_sync"]
_RESIDENT = ["param_offload", "optimizer_offload", "lora_rank"]
_COLOCATED = ["need_ref", "ref_param_offload", "need_critic", "critic_param_offload", "critic_optimizer_offload"]
# placement (docs/async.md): which GPUs generate, whether the trainer GPUs hold an engine too, whether the rollout
# streams; the weight sync crosses to a standalone pool over the network
PLACEMENT = ["async_mode", "hybrid_engine", "rollout_nnodes", "rollout_gpus_per_node", "partial_rollout"]
# separate_async's decoupled PPO copies the actor to the host around each old-log-prob pass
HOST_COPIES = ["async_mode", "sync_steps", "bypass_logprob"]

# with dynamic batching a micro batch holds at most a GPU's share of the batch it splits, so the
# batch sizes are memory inputs too (dropped by ``unread`` where no token budget can be on)
BATCH_SHARE = ["train_batch_size", "n"]
# the actor's and the reference's log-probs through verl's fused kernels (fused_logits_impl)
_FUSED = ["use_fused_kernels", "fused_kernels_triton"]
# what the other models and the sleeping engine keep on a GPU beside a training phase (memory._colocated_extra)
_BESIDE = _RESIDENT + _COLOCATED + _ROLLOUT + PLACEMENT
MEMORY_INPUTS = {
    Phase.ROLLOUT: _HW + _ROLLOUT + _RESIDENT + _COLOCATED + PLACEMENT,
    Phase.OLD_LOG_PROB: _HW + _BESIDE + BATCH_SHARE + ["logprob_micro_per_gpu", "logprob_dyn", "logprob_max_tokens",
                                                   "actor_sp", "entropy_chunking", "use_torch_compile",
                                                   "remove_padding"] + _FUSED,
    Phase.REF: _HW + _BESIDE + BATCH_SHARE + ["ref_micro_per_gpu", "ref_dyn", "ref_max_tokens", "ref_sp",
                                          "remove_padding"] + _FUSED,
    Phase.ACTOR_UPDATE: _HW + _BESIDE + BATCH_SHARE + ["actor_mini", "actor_micro_per_gpu", "actor_dyn",
                                                   "actor_max_tokens", "actor_sp", "grad_ckpt", "entropy_chunking",
                                                   "entropy_checkpointing", "use_torch_compile", "remove_padding",
                                                   "entropy_loss"] + _FUSED,
    Phase.CRITIC_UPDATE: _HW + _BESIDE + BATCH_SHARE + ["critic_mini", "critic_micro_per_gpu", "critic_sp",
                                                    "critic_grad_ckpt", "critic_max_tokens", "remove_padding"],
}
# an engine that frees its cache between rollouts keeps its CUDA graphs only: its budget's inputs are unread then
_AWAKE_ENGINE = ["rollout_tp", "gmu_permille", "rollout_sglang", "max_num_seqs", "max_num_batched_tokens",
                 "max_model_len", "rollout_sync"]
# the switch whose token budget makes a phase's memory read the batch sizes (the critic always packs)
_BUDGET_SWITCH = {Phase.OLD_LOG_PROB: "logprob_dyn", Phase.REF: "ref_dyn", Phase.ACTOR_UPDATE: "actor_dyn"}


def unread_batch_share(phase: str, kind: str, domains: Mapping[str, Any]) -> set:
    """The batch sizes a phase's memory does not read where no token budget can be on (``BATCH_SHARE``)."""
    switch = _BUDGET_SWITCH.get(phase)
    if kind != "mem" or not switch or True in domains.get(switch, [False]):
        return set()
    return set(BATCH_SHARE) | ({"actor_mini"} if phase == Phase.ACTOR_UPDATE else set())


def unread(phase: str, kind: str, domains: Mapping[str, Any]) -> set:
    """Inputs no plan of this space reads: the batch sizes in a phase's memory table when no token budget can be on;
    at rollout, the trainer states' switches where the engine's budget does not depend on them (vLLM's time) or
    where no trainer state shares the rollout GPUs (a split placement without the hybrid engine)."""
    # the FSDP update reads a GPU's share of the mini batch whatever the budget: one micro batch per mini batch starts
    # its backward without gradients (one_micro_per_mini_batch)
    out = set() if phase == Phase.ACTOR_UPDATE else unread_batch_share(phase, kind, domains)
    if kind == "mem" and phase != Phase.ROLLOUT:
        if False not in domains.get("free_cache_engine", [True]):
            out |= set(_AWAKE_ENGINE)
        if True not in domains.get("need_critic", [False]):
            out |= {"critic_param_offload", "critic_optimizer_offload"}
        if True not in domains.get("need_ref", [False]):
            out |= {"ref_param_offload"}
    if phase == Phase.ROLLOUT:
        apart = all(int(m or 0) >= 2 for m in domains.get("async_mode", [0])) and True not in [
            bool(h) and all(int(m or 0) == 2 for m in domains.get("async_mode", [0]))
            for h in domains.get("hybrid_engine", [True])]
        if apart or (kind == "time" and True not in domains.get("rollout_sglang", [False])):
            out |= set(_RESIDENT + _COLOCATED) - {"lora_rank"}
    return out
_STEP = _HW + ["train_batch_size", "n"]
TIME_INPUTS = {
    # SGLang's reservation is a share of the memory left free, which the colocated trainer states decide
    Phase.ROLLOUT: _STEP + _ROLLOUT + _RESIDENT + _COLOCATED + PLACEMENT + ["vllm_v0"],
    Phase.OLD_LOG_PROB: _STEP + ["logprob_micro_per_gpu", "logprob_dyn", "logprob_max_tokens", "actor_sp",
                             "remove_padding"],
    Phase.REF: _STEP + ["ref_micro_per_gpu", "ref_dyn", "ref_max_tokens", "ref_sp", "ref_param_offload",
                    "remove_padding"],
    # the offload switches' copies are the "offload" phase: compute reads the layout only
    Phase.ACTOR_UPDATE: _STEP + ["actor_mini", "actor_epochs", "actor_micro_per_gpu", "actor_dyn", "actor_max_tokens", "actor_sp",
                             "grad_ckpt", "remove_padding"],
    Phase.CRITIC_UPDATE: _STEP + ["critic_mini", "critic_epochs", "critic_micro_per_gpu", "critic_sp", "critic_grad_ckpt",
                              "critic_param_offload", "critic_optimizer_offload", "critic_max_tokens",
                              "remove_padding"],
    Phase.WEIGHT_SYNC: _STEP + ["rollout_tp"] + PLACEMENT,
    # lora_rank: a LoRA policy's optimizer state is the adapter's alone, so the offload copies less (make_plan
    # lora_params)
    Phase.OFFLOAD: _STEP + ["param_offload", "optimizer_offload", "ref_param_offload", "need_critic",
                        "critic_param_offload", "critic_optimizer_offload", "lora_rank"] + HOST_COPIES,
}


def shared_plan_fields(v: Mapping[str, Value], phase: str, model: ModelCard, gpu: GPU, version: str = NEWEST) -> dict:
    """``Plan`` fields verl fills the same way on its FSDP and Megatron engines: hardware and lengths,
    the step's batches (the critic's mini-batches in ``critic_update``), the log-prob token budget (the
    reference's in ``ref``), padding removal, which models run, and the rollout engine."""
    mini = int(v.get("actor_mini", 1)) if phase != Phase.CRITIC_UPDATE else int(v.get("critic_mini", 1))
    epochs = int(v.get("critic_epochs" if phase == Phase.CRITIC_UPDATE else "actor_epochs", 1) or 1)
    train = int(v.get("train_batch_size", mini))
    if phase == Phase.REF:
        lp_budget = token_budget(v, "ref_dyn", "ref_max_tokens")
    else:
        lp_budget = token_budget(v, "logprob_dyn", "logprob_max_tokens")
    return dict(
        model=model,
        gpu=gpu,
        gpus_per_node=int(v["gpus_per_node"]),
        prompt_len=int(v["max_prompt_length"]),
        response_len=int(v["max_response_length"]),
        samples_per_step=train * int(v.get("n", 1)),
        group_size=max(1, int(v.get("n", 1))),
        mini_batches=max(1, train // max(1, mini)),
        update_epochs=max(1, epochs),
        logprob_token_budget=lp_budget,
        remove_padding=bool(v.get("remove_padding", True)),
        need_ref=bool(v.get("need_ref", False)),
        need_critic=bool(v.get("need_critic", False)),
        engine="sglang" if v.get("rollout_sglang") else "vllm",
        rollout_tp=int(v["rollout_tp"]),
        gpu_memory_utilization=int(v["gmu_permille"]) / 1000,
        enforce_eager=bool(v["enforce_eager"]),
        engine_v0=vllm_v0_engine(v, version),
        max_num_seqs=int(v["max_num_seqs"]),
        max_num_batched_tokens=int(v["max_num_batched_tokens"]),
        engine_max_len=engine_max_len(v, model, version),
        **placement_fields(v),
    )


def engine_max_len(v: Mapping[str, Value], model: ModelCard, version: str = NEWEST) -> int | None:
    """The context the engine must hold one sequence of. From 0.7.1 an unset ``rollout.max_model_len`` is the model's
    max_position_embeddings (0.9.1, 0.8.0 and 0.7.1 workers/rollout/vllm_rollout/vllm_async_server.py). verl 0.6.1 and
    before pass prompt + response: the in-process ("sync") rollout unless ``max_model_len`` is set (0.6.1 and 0.5.0
    workers/rollout/vllm_rollout/vllm_rollout_spmd.py vLLMRollout.__init__ "config.max_model_len or
    config.prompt_length + config.response_length"; sglang_rollout/sglang_rollout.py SGLangRollout._verify_config),
    0.6.1's rollout servers whatever it says (vllm_async_server.py vLLMHttpServerBase.__init__ overwrites it)."""
    own = bool(v.get("rollout_sync") and v.get("max_model_len")) and version not in BUNDLED_VLLM  # 0.2: never read
    if version in PROMPT_PLUS_RESPONSE_CONTEXT and not own:
        return int(v["max_prompt_length"]) + int(v["max_response_length"])
    if v.get("max_model_len"):
        return int(v["max_model_len"])
    return model.max_position_embeddings or None


def placement_fields(v: Mapping[str, Value]) -> dict:
    """Where the rollout runs (docs/async.md). separate_async and the fully_async recipe generate on the
    standalone pool (rollout.nnodes x rollout.n_gpus_per_node); with the hybrid engine on (separate_async's
    default) the trainer GPUs hold rollout replicas too, which generate at warm-up and validation only (without
    trainer.v1.separate_async.hybrid_rollout.enable_switch): their memory counts, their speed does not. The
    one_step_off recipe uses the same pool. separate_async always runs partial rollout (streaming), the fully_async
    recipe with async_training.partial_rollout, the one_step_off recipe never.
    separate_async's decoupled PPO (bypass_mode off) keeps the sync's first policy on the host: one copy at the
    first step, three at each later one (save, restore, restore: trainer_separate_async.py
    _compute_old_log_prob)."""
    mode = int(v.get("async_mode") or 0)
    if mode < 2:
        return {}
    per_node = int(v.get("rollout_gpus_per_node") or v["gpus_per_node"])
    pool = int(v.get("rollout_nnodes") or 0) * per_node
    hybrid = bool(v.get("hybrid_engine", True)) and mode == 2
    steps = max(1, int(v.get("sync_steps") or 1))
    copies = 1 + 3 * (steps - 1) if mode == 2 and not v.get("bypass_logprob") else 0
    # the one_step_off recipe generates whole batches (no partial rollout): its longest response ends each one
    streaming = mode == 2 or (mode == 3 and bool(v.get("partial_rollout", True)))
    return dict(rollout_gpus=max(1, pool), colocated=hybrid, rollout_streaming=streaming,
                actor_param_host_copies=copies)


def phases_run_verl(values: Mapping[str, Value]) -> list[str]:
    """verl's phases: no old-log-prob forward with rollout_correction.bypass_mode (the engine's log-probs serve)."""
    out = phases_run(values)
    return [p for p in out if not (p == Phase.OLD_LOG_PROB and values.get("bypass_logprob"))]


def pipeline(values: Mapping[str, Value]) -> list[tuple[str, tuple[str, ...]]]:
    """The split placements pipeline generation and training: the rollout pool generates the next step's samples
    while the trainer pool trains on the last ones, so a step takes the slower of the two, plus the weight sync
    (both pools wait for it). The fully_async recipe with staleness_threshold 0 may not generate ahead of the
    weights it has: its stages follow one another (the recipe's ablation: at staleness 0 a step took about
    generation plus update, 231 s against 128 + 99 s; docs/async.md). The one_step_off recipe generates the next
    batch while it trains on the last (one step off policy)."""
    mode = int(values.get("async_mode") or 0)
    if mode < 2 or (mode == 3 and int(values.get("staleness_permille") or 0) <= 0):
        return []
    return TWO_POOLS


# The versions whose default path runs verl's legacy workers (trainer.use_legacy_worker_impl: auto in 0.7.1;
# 0.6.1), as the rule packs say (versions.py).
LEGACY_WORKERS = frozenset({"0.1.0", "0.2.0", "0.3.0", "0.5.0", "0.6.1", "0.7.1"})
# verl 0.1-0.2: the rollout runs verl's own copy of the vLLM 0.3-0.6 worker, which sizes the KV cache from the memory
# free at start-up and captures CUDA graphs after sizing it, and the sharding manager drops the engine's weights after
# every rollout (costmodel/plan.py engine_kv_of_free_memory, engine_weights_released)
BUNDLED_VLLM = frozenset({"0.1.0", "0.2.0"})
# the releases on an installed vLLM whose supported versions still have the V0 engine (VLLM_USE_V1=0 selects it; vLLM
# 0.11 removed it): the extras' vllm pins, 0.3.0 <=0.8.2, 0.4.1 and 0.5.0 0.7.3-0.8.5, 0.6.1 0.8.5-0.11.0
V0_BY_ENVIRONMENT = frozenset({"0.3.0", "0.5.0", "0.6.1"})


def vllm_v0_engine(v: Mapping[str, Value], version: str) -> bool:
    """Whether the rollout runs vLLM's V0 engine: verl 0.1-0.2's bundled vLLM, or VLLM_USE_V1=0 on a release whose
    vLLM still has it (not SGLang)."""
    v0 = version in BUNDLED_VLLM or (bool(v.get("vllm_v0")) and version in V0_BY_ENVIRONMENT)
    return v0 and not v.get("rollout_sglang")


# the releases whose engine context is prompt + response (engine_max_len; verl 0.2's vllm_rollout.py vLLMRollout too)
PROMPT_PLUS_RESPONSE_CONTEXT = frozenset({"0.1.0", "0.2.0", "0.3.0", "0.5.0", "0.6.1"})
# verl 0.1-0.2: the actor's update always computes the entropy with its gradient, whatever actor.entropy_coeff
# (policy_loss = pg_loss - entropy_loss * entropy_coeff, a 0 coefficient included), through torch.compile only on the
# remove-padding path (eager verl_F.entropy_from_logits on the padded one); flash-attn's cross-entropy writes its own
# gradient (no inplace_backward) (verl 0.2.0.post2 verl/workers/actor/dp_actor.py DataParallelPPOActor.update_policy,
# _forward_micro_batch; verl/utils/torch_functional.py logprobs_from_logits_flash_attn). From 0.4 the update computes
# it only with entropy_coeff != 0 (the entropy_loss input, fsdp.entropy_in_loss).
ENTROPY_ALWAYS = frozenset({"0.1.0", "0.2.0", "0.3.0"})
# verl 0.3 computes it always too (0.3.0.post1 verl/workers/actor/dp_actor.py DataParallelPPOActor.update_policy:
# entropy from _forward_micro_batch, policy_loss = pg_loss - entropy_loss * entropy_coeff; megatron_actor.py
# MegatronPPOActor.forward_backward_batch loss_func: vocab_parallel_compute_entropy_loss), but compiles the entropy
# whenever actor.use_torch_compile (default True; _forward_micro_batch's compute_entropy_from_logits), as later ones do
ENTROPY_COMPILED_ON_RMPAD_ONLY = frozenset({"0.1.0", "0.2.0"})
# The padded path (use_remove_padding off) never compiles the entropy, in any release: it calls
# verl_F.entropy_from_logits itself (0.1 to 0.7.1 workers/actor/dp_actor.py _forward_micro_batch, "not using rmpad";
# 0.9.1 workers/engine/fsdp/transformer_impl.py prepare_model_outputs, the same branch), whatever use_torch_compile.
# flash-attn's cross-entropy writes its gradient beside its input in verl 0.1-0.3 (utils/torch_functional.py
# logprobs_from_logits_flash_attn calls cross_entropy_loss with flash-attn's default inplace_backward=False); from
# 0.4 verl's logprobs_from_logits defaults inplace_backward=True, which the padded path keeps.
CE_GRAD_BESIDE = frozenset({"0.1.0", "0.2.0", "0.3.0"})
# verl 0.1: the reference's FSDP module is built without CPUOffload (0.2.0.post2 forces CPUOffload(offload_params=True)
# on it), so its bf16 params stay on the GPU beside every phase unless ref.fsdp_config.param_offload, which offloads
# them between its passes and loads them for each (TinyZero's fork of verl verl/workers/fsdp_workers.py
# ActorRolloutRefWorker._build_model_optimizer and compute_ref_log_prob; verl 0.1 verl/trainer/ppo/workers/fsdp_workers.py)
REF_ON_GPU = frozenset({"0.1.0"})
# verl 0.1-0.2: an offloaded actor's params stay on the GPU while the engine starts (init_model offloads only its
# gradients and optimizer before _build_rollout) and through every generation (generate_sequences loads them with
# load_fsdp_param_and_grad before the sharding manager and offloads them at its own end: right after the
# generation in 0.2.0.post2, whose compute_log_prob loads them again for the old log-probs; after the old log-probs
# in the 0.1 forks, whose generate_sequences computes them too) (verl 0.2.0.post2 verl/workers/fsdp_workers.py
# ActorRolloutRefWorker.init_model and generate_sequences; TinyZero's and Search-R1's verl/workers/fsdp_workers.py);
# 0.3 offloads them inside the sharding manager once the weights are synced (0.3.0.post1 generate_sequences,
# offload_fsdp_model_to_cpu)
ACTOR_PARAMS_THROUGH_ROLLOUT = frozenset({"0.1.0", "0.2.0"})
# releases without model.use_fused_kernels (it came in 0.4.0: the 0.3.0.post1 trainer yaml and workers have no such
# key; the rules' packs drop the variable there too, versions.BEFORE_0_4_1_MEMORY)
BEFORE_FUSED_KERNELS = frozenset({"0.1.0", "0.2.0", "0.3.0"})
# what the critic's update reads beyond the newest version's inputs, in the older versions
CRITIC_BATCHING_OLDER = ["critic_dyn", "critic_train_max_tokens"]


# the deprecated global micro batch keys the legacy workers convert to per-GPU sizes, per phase (``per_gpu_micro``)
# (and the Ulysses size they divide by where the phase does not read it already: the legacy reference runs on the
# actor's mesh)
LEGACY_GLOBAL_MICRO = {Phase.OLD_LOG_PROB: ["logprob_micro"], Phase.REF: ["ref_micro"],
                       Phase.ACTOR_UPDATE: ["actor_micro"], Phase.CRITIC_UPDATE: ["critic_micro"]}
_LEGACY_FSDP = {**LEGACY_GLOBAL_MICRO, Phase.REF: ["ref_micro", "actor_sp"]}


def _legacy_fsdp(version: str) -> dict[str, list[str]]:
    """The legacy inputs of ``version``; where rollout.n scales the global micro keys (``n_scale``), the passes it
    scales also read every per-GPU key (which dates the config) and the mini batch and batch sizes (the cap)."""
    if version not in N_SCALED_GLOBAL_MICRO:
        return _LEGACY_FSDP
    scaled = list(PER_GPU_MICRO_KEYS) + ["actor_mini"] + BATCH_SHARE
    return {phase: names + (scaled if phase != Phase.CRITIC_UPDATE else []) for phase, names in _LEGACY_FSDP.items()}


def per_gpu_micro(v: Mapping[str, Value], per_gpu: str, global_key: str, dp: int, version: str = NEWEST,
                  scale: int = 1, mini: bool = False) -> int:
    """The micro batch per GPU a phase runs with. The legacy workers (0.6.1, 0.7.1) convert a deprecated global key
    when the per-GPU one is unset: ``ppo_micro_batch_size //= world_size // ulysses_sp`` (the actor and the critic),
    ``log_prob_micro_batch_size //= world_size // ulysses_sp`` (rollout and reference)
    (verl/workers/fsdp_workers.py:ActorRolloutRefWorker.__init__ / CriticWorker.__init__, "normalize config";
    megatron_workers.py divides by the data-parallel size the same way), then times ``scale`` (``n_scale``: rollout.n
    in the verl of January 2025), then capped by the data the GPU splits where ``scale`` > 1 (``n_scaled_micro``;
    ``mini``: the actor's update). A conversion to 0 is a rule's (verl.legacy.logprob_global_micro_covers_dp); its
    memory is priced at 1."""
    if v.get(per_gpu):
        return int(v[per_gpu])
    if version in LEGACY_WORKERS and v.get(global_key):
        micro = converted_micro(v, global_key, dp, scale)
        return n_scaled_micro(v, micro, dp, scale, mini) if scale > 1 else micro
    return 1


def converted_micro(v: Mapping[str, Value], global_key: str, dp: int, scale: int = 1) -> int:
    """A global micro batch key as the legacy workers convert it, before any cap: divided by the data-parallel size,
    times ``scale`` (``per_gpu_micro``)."""
    return max(1, int(v[global_key]) // max(1, dp) * max(1, scale))


# The verl of January 2025 (the "0.1" the forks' verl/version/version reads: versions.py V010) scaled the actor's
# global micro batch keys by rollout.n after dividing them by the data-parallel size: verl PR #80 (2997e5d,
# 2025-01-05) added ``ppo_micro_batch_size *= rollout.n``, ``rollout.log_prob_micro_batch_size *= rollout.n`` and
# ``ref.log_prob_micro_batch_size *= rollout.n`` to verl/workers/fsdp_workers.py ActorRolloutRefWorker.__init__
# ("normalize config"; the critic's CriticWorker.__init__ only divides), PR #136 (f2a76ac, 2025-01-27) replaced them
# with the per-GPU keys (``*_micro_batch_size_per_gpu``, not scaled). The forks keep the scaling: TinyZero b19c457,
# Logic-RL fb31708, Search-R1, ZeroSearch, ToolRL (their verl/workers/fsdp_workers.py, same lines); simpleRL-reason's
# fork is after #136. So a 0.1 config that names a per-GPU micro key is dated after #136 and not scaled; verl 0.1's PyPI
# release (2024-12) had no rollout.n, which is 1 there (no scaling either way). verl's Megatron workers never scaled.
N_SCALED_GLOBAL_MICRO = frozenset({"0.1.0"})
PER_GPU_MICRO_KEYS = ("actor_micro_per_gpu", "logprob_micro_per_gpu", "ref_micro_per_gpu", "critic_micro_per_gpu")


def n_scale(v: Mapping[str, Value], version: str) -> int:
    """What the FSDP workers multiply the actor's, the rollout's and the reference's global micro batch keys by after
    the division by the data-parallel size (``N_SCALED_GLOBAL_MICRO``): rollout.n, or 1."""
    if version not in N_SCALED_GLOBAL_MICRO or any(v.get(k) for k in PER_GPU_MICRO_KEYS):
        return 1
    return max(1, int(v.get("n", 1) or 1))


def unread_n_scaled(phase: str, kind: str, domains: Mapping[str, Any]) -> set:
    """``unread`` for the releases whose micro batches rollout.n may scale (``N_SCALED_GLOBAL_MICRO``). Where a phase's
    global micro key is given and n can exceed 1, the scaled micro batch is capped by the GPU's share of the batch
    (``split_share``) and dated by the per-GPU keys (``n_scale``): the phase reads them all. Elsewhere (a search that
    sets the per-GPU keys itself) it reads what the other releases' phases read."""
    out = unread(phase, kind, domains)
    key = next(iter(LEGACY_GLOBAL_MICRO.get(phase, [])), "")
    if phase != Phase.CRITIC_UPDATE and any(domains.get(key, [])) and any(int(n or 1) > 1 for n in domains.get("n", [1])):
        return out - set(BATCH_SHARE)
    base = set(MEMORY_INPUTS.get(phase, []) if kind == "mem" else TIME_INPUTS.get(phase, []))
    return out | ((set(PER_GPU_MICRO_KEYS) | {"actor_mini"} | set(BATCH_SHARE)) - base - set(_LEGACY_FSDP.get(phase, [])))


def split_share(micro: int, share: int) -> int:
    """The largest micro batch a split of ``share`` sequences into chunks of ``micro`` makes: verl splits a GPU's
    mini batch (dp_actor.py DataParallelPPOActor.update_policy, ``mini_batch.split(ppo_micro_batch_size)``) and its
    whole batch in the log-prob passes (compute_log_prob, ``batch.split(micro_batch_size)``) with TensorDict.split,
    whose last chunk holds what is left: a micro batch larger than the data is the data."""
    return max(1, min(micro, share))


def n_scaled_micro(v: Mapping[str, Value], micro: int, dp: int, scale: int, mini: bool = False) -> int:
    """A micro batch scaled by rollout.n (``n_scale``) as it runs: capped by the GPU's share of the batch, or for the
    actor's update of the mini batch (``ppo_mini_batch_size //= dp`` then ``*= rollout.n`` in the same "normalize
    config"), whichever is smaller (``split_share``)."""
    share = samples_per_step(v) // max(1, dp)
    if mini:
        share = min(share, max(1, int(v.get("actor_mini") or 1) // max(1, dp)) * scale)
    return split_share(micro, share)


# the passes whose global micro key rollout.n scales (N_SCALED_GLOBAL_MICRO): (phase, global key, its dynamic-batch
# switch, whether the update's mini batch caps it)
N_SCALED_PASSES = ((Phase.ACTOR_UPDATE, "actor_micro", "actor_dyn", True),
                   (Phase.OLD_LOG_PROB, "logprob_micro", "logprob_dyn", False), (Phase.REF, "ref_micro", "ref_dyn", False))


def n_scaled_micro_batches(v: Mapping[str, Value], version: str) -> list[dict[str, Any]]:
    """Each pass that runs and reads a global micro key the verl of January 2025 scales by rollout.n (``n_scale``;
    no dynamic batch): the key's value ``given``, ``dp``, ``n``, ``scaled`` = given // dp x n, and ``per_gpu``, the
    sequences a GPU runs in one micro batch (``n_scaled_micro``: the plan's own number); [] where none scales."""
    scale = n_scale(v, version)
    if scale <= 1:
        return []
    dp = int(v["nnodes"]) * int(v["gpus_per_node"]) // max(1, int(v.get("actor_sp") or 1))
    out, runs_phase = [], set(phases_run_verl(v))
    for phase, name, dyn, mini in N_SCALED_PASSES:
        if phase not in runs_phase or not v.get(name) or v.get(dyn):
            continue
        scaled = converted_micro(v, name, dp, scale)
        out.append({"phase": getattr(phase, "value", phase), "variable": name, "given": int(v[name]), "dp": dp, "n": scale,
                    "scaled": scaled, "per_gpu": n_scaled_micro(v, scaled, dp, scale, mini),
                    "share_of": "mini batch" if mini else "batch"})
    return out


def n_scaled_note(v: Mapping[str, Value], version: str, keys: Mapping[str, str]) -> list[str]:
    """For ``check``: what the verl of January 2025 makes of each global micro key it scales by rollout.n
    (``n_scaled_micro_batches``), with the numbers. ``keys``: variable name -> config key."""
    passes = n_scaled_micro_batches(v, version)
    if not passes:
        return []
    parts = []
    for p in passes:
        runs, scaled = p["per_gpu"], p["scaled"]
        whole = (f", the GPU's whole {p['share_of']} of {runs:,} sequences in one" if runs < scaled else " sequences")
        parts.append(f"{keys[p['variable']]} {p['given']} -> {scaled:,}{whole}")
    dp, scale = passes[0]["dp"], passes[0]["n"]
    return [f"verl of January 2025 (the 0.1 forks, from verl PR #80 until #136) runs a global micro batch key as key "
            f"// {dp} data-parallel GPUs x rollout.n {scale} sequences a GPU (verl/workers/fsdp_workers.py "
            f"ActorRolloutRefWorker.__init__), capped by the data the GPU splits: {'; '.join(parts)}. The smallest "
            f"micro batch is rollout.n = {scale} sequences (a global value from {dp} to {2 * dp - 1}); "
            "use_dynamic_bsz=True sizes them by tokens instead"]


def engine_sleeps_to_host(v: Mapping[str, Value], version: str = NEWEST) -> bool:
    """Whether verl's sleeping vLLM engine keeps its weights in host RAM (sleep level 1). The releases the legacy packs
    stand for slept at level 1: 0.4.1 always (verl/workers/sharding_manager/fsdp_vllm.py ``sleep(level=1)``), 0.6.1 with
    vLLM before 0.8.5 and in its async colocated server (verl/third_party/vllm/__init__.py VLLM_SLEEP_LEVEL,
    vllm_async_server.py ``sleep(level=1)``); we price level 1 for them, the larger host footprint. 0.9.1 sleeps at
    level 2 unless the rollout holds a LoRA adapter (vllm_async_server.py ``_resolve_sleep_level``). SGLang releases
    its memory instead. verl 0.1-0.2's bundled vLLM keeps its weights in host RAM whatever free_cache_engine says:
    every rollout ends in offload_model_weights (verl/workers/sharding_manager/fsdp_vllm.py:
    FSDPVLLMShardingManager.__exit__), which points each parameter at a CPU tensor of its size kept for the run
    (verl/third_party/vllm/vllm_v_0_6_3/worker.py:Worker.offload_model_weights, torch.empty_like(device="cpu")), and
    the next sync writes the actor's weights into those CPU tensors before moving the model back to the GPU
    (dtensor_weight_loaders.py:load_dtensor_weights): one TP shard of the weights per rank, as at sleep level 1."""
    if v.get("rollout_sglang"):
        return False
    if version in BUNDLED_VLLM:
        return True
    if not v.get("free_cache_engine", True):
        return False
    return version in LEGACY_WORKERS or bool(v.get("lora_rank"))


def critic_batching(v: Mapping[str, Value], version: str = NEWEST, dp: int | None = None) -> tuple[int, int | None]:
    """(micro batch, token budget) the critic's update runs with, by verl version.

    0.9.1: the v1 trainer hands the critic engine critic.ppo_infer_max_token_len_per_gpu and it always packs by
    tokens (verl/trainer/ppo/v1/trainer_base.py:PPOTrainer._setup; docs/rules-verl.md, the critic's quirk).
    0.8.0: the engine worker packs by critic.ppo_max_token_len_per_gpu (the 0.8.0 pack, versions.py).
    0.7.1 and 0.6.1: the legacy critic splits each mini batch into critic.ppo_micro_batch_size_per_gpu samples
    unless critic.use_dynamic_bsz, then packs by critic.ppo_max_token_len_per_gpu
    (verl/workers/critic/dp_critic.py:DataParallelPPOCritic.update_critic,
    verl/workers/critic/megatron_critic.py:MegatronPPOCritic.update_critic)."""
    if dp is None:  # FSDP: the critic's Ulysses groups
        dp = int(v["nnodes"]) * int(v["gpus_per_node"]) // max(1, int(v.get("critic_sp") or 1))
    micro = per_gpu_micro(v, "critic_micro_per_gpu", "critic_micro", dp, version)
    if version == NEWEST:
        return micro, int(v["critic_max_tokens"])
    if version in LEGACY_WORKERS and not v.get("critic_dyn"):
        return micro, None
    budget = v.get("critic_train_max_tokens") or v.get("critic_max_tokens")
    return micro, int(budget) if budget else None


def one_micro_per_mini_batch(v: Mapping[str, Value], phase: str, dp: int, micro: int, budget: int | None,
                             sp: int) -> bool:
    """Does each mini batch run as a single micro batch on a GPU, at the maximum lengths?

    verl zeroes the gradients before each mini batch's micro batches (torch's ``Optimizer.zero_grad``,
    ``set_to_none=True`` since torch 2.0, so FSDP's sharded gradients are freed): verl/workers/actor/dp_actor.py:
    DataParallelPPOActor.update_policy and verl/workers/critic/dp_critic.py:DataParallelPPOCritic.update_critic
    (0.2.0.post2 to 0.7.1, and the 0.1 forks: ``zero_grad()`` after the micro batch split, before the loop), and
    verl/workers/engine/base.py:BaseEngine.train_batch (0.8.0, 0.9.1: ``optimizer_zero_grad()`` then
    ``forward_backward_batch`` per mini batch). A GPU's share of a mini batch is ``ppo_mini_batch_size * n // dp``
    (the workers' normalization); it is one micro batch when the micro batch holds it all, or with dynamic batching
    when its tokens at the maximum lengths fit the budget times the Ulysses size (verl/utils/seqlen_balancing.py:
    rearrange_micro_batches, ``ceil(total tokens / max_token_len)`` micro batches)."""
    mini = int(v.get("critic_mini" if phase == Phase.CRITIC_UPDATE else "actor_mini") or 1)
    share = max(1, mini * int(v.get("n", 1)) // max(1, dp))
    if budget:
        seq = int(v["max_prompt_length"]) + int(v["max_response_length"])
        return share * seq <= budget * max(1, sp)
    return micro >= share


def fused_logits_impl(v: Mapping[str, Value], phase: str, version: str) -> str:
    """How a phase's log-probs hold their logits: verl's own materialized accounting ("verl-fsdp"), or with
    ``model.use_fused_kernels`` (0.4.0 on: not in ``BEFORE_FUSED_KERNELS``) the fused kernels of the backend
    ``model.fused_kernel_options.impl_backend`` selects, for the actor's update, its old log-probs and the reference
    alike (costmodel/constants.py VERL_FUSED_PPO_*: legacy workers/fsdp_workers.py ActorRolloutRefWorker.init_model,
    0.8.0 on workers/engine_workers.py TrainingWorker.__init__). The critic's value head has no logits.
    ``model.use_liger`` is not read: Liger's RMSNorm/SwiGLU/RoPE kernels, and a forward that builds the logits when no
    labels are passed, as verl's log-probs pass none (docs/cost-model.md section 2)."""
    if not v.get("use_fused_kernels") or version in BEFORE_FUSED_KERNELS or phase == Phase.CRITIC_UPDATE:
        return "verl-fsdp"
    return "verl-fused-triton" if v.get("fused_kernels_triton") else "verl-fused-torch"


def make_plan(values: Mapping[str, Value], phase: str, model: ModelCard, gpu: GPU,
              version: str = NEWEST) -> Plan:
    """The plan one phase of verl FSDP runs with these values (with the critic batching of ``version``)."""
    v = values
    n_gpus = int(v["nnodes"]) * int(v["gpus_per_node"])
    fsdp = int(v.get("fsdp_size", -1))
    shard = fsdp if 0 < fsdp < n_gpus else n_gpus
    sp, grad_ckpt = int(v["actor_sp"]), bool(v["grad_ckpt"])
    dp = n_gpus // max(1, sp)  # the legacy reference runs on the actor's Ulysses mesh too
    scale = n_scale(v, version)
    train_micro = per_gpu_micro(v, "actor_micro_per_gpu", "actor_micro", dp, version, scale, mini=True)
    param_off, opt_off = bool(v["param_offload"]), bool(v["optimizer_offload"])
    lp_micro = per_gpu_micro(v, "logprob_micro_per_gpu", "logprob_micro", dp, version, scale)
    train_budget = token_budget(v, "actor_dyn", "actor_max_tokens")
    critic = critic_batching(v, version)
    ref_on_gpu = version in REF_ON_GPU
    packed = bool(v.get("remove_padding", True))
    if phase == Phase.REF:
        lp_micro = per_gpu_micro(v, "ref_micro_per_gpu", "ref_micro", dp, version, scale)
        sp = int(v["ref_sp"])
        # the ref model has no optimizer; verl 0.1 loads an offloaded reference for its pass
        param_off, opt_off = bool(v["ref_param_offload"]) and not ref_on_gpu, True
    elif phase == Phase.CRITIC_UPDATE:
        train_micro, train_budget = critic
        sp, grad_ckpt = int(v["critic_sp"]), bool(v["critic_grad_ckpt"])
        param_off, opt_off = bool(v["critic_param_offload"]), bool(v["critic_optimizer_offload"])
    shared = shared_plan_fields(v, phase, model, gpu, version)
    update_dp = n_gpus // max(1, sp)  # the training model's Ulysses groups (the critic's in critic_update)
    return Plan.of(
        **shared,
        n_gpus=n_gpus,
        train_micro=train_micro,
        train_token_budget=train_budget,
        logprob_micro=lp_micro,
        sp=sp,
        shard_degree=shard,
        zero_stage=3,
        # the wrap policy (verl/utils/fsdp_utils.py get_fsdp_wrap_policy for strategy fsdp, the default through
        # 0.9.1; apply_fsdp2 for fsdp2) leaves the embedding / lm_head in the root unit, gathered all pass long
        fsdp_root="fsdp2" if v.get("fsdp2") else "fsdp1",
        grad_ckpt=grad_ckpt,
        param_offload=param_off,
        optimizer_offload=opt_off,
        entropy_chunking=bool(v.get("entropy_chunking", False)),
        entropy_checkpointing=bool(v.get("entropy_checkpointing", False)),
        logits_impl=fused_logits_impl(v, phase, version),
        budget_capped_by_batch=True,
        use_torch_compile=packed and (version in ENTROPY_COMPILED_ON_RMPAD_ONLY
                                      or bool(v.get("use_torch_compile", True))),
        verl_padded_logprobs="" if packed else "response" if version in LEGACY_WORKERS else "all",
        ce_inplace_backward=version not in CE_GRAD_BESIDE,
        entropy_in_update=version in ENTROPY_ALWAYS or bool(v.get("entropy_loss")),
        ref_entropy=version in ENTROPY_ALWAYS,
        # the gradients are zeroed (freed) before every mini batch: one micro batch per mini batch starts its backward
        # without any (Plan.no_grads_at_backward)
        no_grads_at_backward=one_micro_per_mini_batch(v, phase, update_dp, train_micro, train_budget, sp),
        critic_micro=critic[0],
        free_cache_engine=bool(v["free_cache_engine"]),
        lora_params=model.lora_params(int(v["lora_rank"]), "all-linear") if v.get("lora_rank") else 0,
        ref_in_actor=bool(v.get("lora_rank")),
        # beside each phase, the other models' states stay on the GPU unless offloaded (verl's engines offload
        # after a phase only with param_offload / optimizer_offload: workers/engine/base.py BaseEngineCtx), and the
        # sleeping engine keeps its CUDA graphs (memory._colocated_extra)
        count_colocated_residents=True,
        ref_on_gpu=ref_on_gpu,
        **({"ref_param_offload": bool(v["ref_param_offload"]) and phase != Phase.REF} if ref_on_gpu else {}),
        engine_sleep_host_weights=engine_sleeps_to_host(v, version),
        engine_graphs_in_budget=version == NEWEST,
        engine_kv_of_free_memory=version in BUNDLED_VLLM and not v.get("rollout_sglang"),
        engine_weights_released=version in BUNDLED_VLLM and not v.get("rollout_sglang"),
        actor_param_offload=bool(v["param_offload"]),
        actor_optimizer_offload=bool(v["optimizer_offload"]),
        actor_params_through_rollout=version in ACTOR_PARAMS_THROUGH_ROLLOUT,
        critic_param_offload=bool(v.get("critic_param_offload")),
        critic_optimizer_offload=bool(v.get("critic_optimizer_offload")),
    )


def inputs_of_version(inputs: Mapping[str, list[str]], version: str,
                      legacy: Mapping[str, list[str]] | None = None) -> dict[str, list[str]]:
    """A phase-inputs table for ``version``: before the newest, the critic's update also reads its batching switches
    (``critic_batching``); in the legacy workers, the phases named in ``legacy`` also read the names given there."""
    extra: dict[str, list[str]] = {}
    if version != NEWEST:
        extra[Phase.CRITIC_UPDATE] = list(CRITIC_BATCHING_OLDER)
    if version in LEGACY_WORKERS:
        for phase, names in (legacy or {}).items():
            extra[phase] = extra.get(phase, []) + list(names)
    return {phase: names + extra.get(phase, []) for phase, names in inputs.items()}


def samples_per_step(values: Mapping[str, Value]) -> int:
    """The responses one step trains on: train_batch_size prompts x n responses each (a cost spec's ``samples``)."""
    return int(values["train_batch_size"]) * int(values["n"])


def host_layout(v: Mapping[str, Value], model: ModelCard, version: str = NEWEST) -> HostLayout:
    """verl FSDP on the actor's GPUs, for the host-memory estimate: one fused worker per GPU, the bundled vLLM's CPU
    swap space (0.1-0.2) and a LoRA actor's first weight sync. The legacy workers (0.4.1 to 0.7.1) send a dummy-loaded vLLM engine its base weights once by moving
    the whole unsharded model to the CPU inside FSDP.summon_full_params on every rank (verl/utils/fsdp_utils.py
    collect_lora_params and, in 0.4.1-0.6.1's sync path, workers/sharding_manager/fsdp_vllm.py
    ``model = model.to("cpu")`` when not base_sync_done; base_sync_done = "dummy" not in rollout.load_format), unless
    rollout.layered_summon gathers it layer by layer. The actor's weights are fp32 (the FSDP workers load the actor
    in fp32 unless fsdp_config.model_dtype says otherwise). 0.9.1's engine workers send it tensor by tensor."""
    full_sync = (bool(v.get("lora_rank")) and version in LEGACY_WORKERS and version not in BUNDLED_VLLM
                 and not v.get("rollout_sglang") and bool(v.get("rollout_dummy_load", True))
                 and not v.get("layered_summon"))
    # verl 0.1-0.2's bundled vLLM (0.3-0.6.3) is vLLM V0, built without swap_space: 4 GiB of pinned CPU KV blocks per
    # rollout rank (third_party/vllm/vllm_v_0_6_3/llm.py LLM(swap_space=4); vLLMRollout.__init__ passes none). The
    # releases on an installed vLLM run its V1 engine (the default from vLLM 0.8) unless the environment says
    # VLLM_USE_V1=0: then V0's workers allocate EngineArgs' default swap space, which verl does not set
    # (vllm_rollout_spmd.py vLLMRollout.__init__ passes no swap_space, 0.3.0 to 0.6.1)
    swap = VLLM_V0_SWAP_BYTES if vllm_v0_engine(v, version) else 0.0
    kill = v.get("ray_kill_permille")  # the script's RAY_memory_usage_threshold (Ray's memory monitor line)
    return HostLayout(lora_first_sync_bytes=C.FP32 * model_consts(model).params if full_sync else 0.0,
                      limit_share=int(kill) / 1000 if kill else HOST_LIMIT_SHARE,
                      engine_swap_per_gpu=swap, save_bytes_per_gpu=save_bytes_per_gpu(v, model, version),
                      save_loads_params=True)


# Adam's two fp32 moments per trained parameter (exp_avg, exp_avg_sq)
ADAM_MOMENT_BYTES = 2 * C.FP32


def save_bytes_per_gpu(v: Mapping[str, Value], model: ModelCard, version: str = NEWEST) -> float:
    """Bytes one FSDP worker holds on the CPU while it saves a checkpoint (trainer.save_freq > 0; verl's default -1
    saves none). verl 0.2.0 to 0.9.1's FSDPCheckpointManager.save_checkpoint (verl/utils/checkpoint/
    fsdp_checkpoint_manager.py) has every rank build its sharded model state dict and its sharded optimizer state
    dict with offload_to_cpu=True (ShardedStateDictConfig, ShardedOptimStateDictConfig) and torch.save them; the model
    state dict is still held while the optimizer's is built (0.2.0 builds both before saving). The worker first moves
    offloaded parameters back to the GPU (fsdp_workers.py save_checkpoint: load_fsdp_model_to_gpu), so the copies are
    new. Per rank: the fp32 weights' shard (the actor is loaded in fp32: fsdp_config.model_dtype) and, with a
    full-parameter optimizer, Adam's two fp32 moments of it; a LoRA actor's optimizer holds the adapter's only. The
    critic saves after the actor, in a call of its own: the larger of the two. The state dicts are priced as copies
    whether or not the optimizer is offloaded (an assumption: FSDP builds each sharded state as a tensor of its
    own). FSDP2 (actor.strategy=fsdp2) saves under a null context (utils/fsdp_utils.py get_fsdp_state_ctx): its state
    dicts are DTensors on the GPU that torch.save copies one tensor at a time: not priced. The hf_model content
    (checkpoint contents, not in the default ['model', 'optimizer', 'extra']) is not priced. verl 0.1.0 saves
    differently: not priced."""
    if int(v.get("save_freq", -1) or -1) <= 0 or version == "0.1.0" or v.get("fsdp2"):
        return 0.0
    params = model_consts(model).params
    world = max(1, int(v.get("nnodes", 1) or 1) * int(v.get("gpus_per_node", 1) or 1))
    fsdp = int(v.get("fsdp_size", -1) or -1)
    shard = min(world, fsdp) if fsdp > 0 else world
    actor = C.FP32 + (0 if v.get("lora_rank") else ADAM_MOMENT_BYTES)
    critic = C.FP32 + ADAM_MOMENT_BYTES if v.get("need_critic") else 0
    return max(actor, critic) * params / shard


def cost_spec(model: ModelCard, gpu: GPU, version: str = NEWEST) -> CostSpec:
    return CostSpec(
        framework="verl",
        plan=lambda values, phase: make_plan(values, phase, model, gpu, version),
        memory_inputs=inputs_of_version(MEMORY_INPUTS, version, _legacy_fsdp(version)),
        time_inputs=inputs_of_version(TIME_INPUTS, version, _legacy_fsdp(version)),
        phases_run=phases_run_verl,
        unread=unread_n_scaled if version in N_SCALED_GLOBAL_MICRO else unread,
        samples=samples_per_step,
        bool_names=bool_names(VARIABLES),
        optional=optional_names(VARIABLES),
        pipeline=pipeline,
        concurrency_inputs=("async_mode", "staleness_permille"),
        host_layout=lambda values: host_layout(values, model, version),
    )
