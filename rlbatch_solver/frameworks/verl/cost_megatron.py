"""verl Megatron values -> cost-model ``Plan`` per phase, and which variables each phase reads.

Same phases and rollout engine as verl FSDP (``cost.py``); the trainer is megatron-core
(``Plan.trainer = "megatron"``): params, grads and optimizer on the most loaded shard of TP x PP
(experts: PP x EP x ETP), the distributed optimizer over DP (verl's engine/megatron.yaml
``use_distributed_optimizer: True``), sequence parallel on (``sequence_parallel: True``),
recompute from ``override_transformer_config.recompute_granularity`` (cost variable
``megatron_recompute``: 0 none, 1 selective, 2 full) and, for selective, ``recompute_modules`` (cost variable
``megatron_recompute_modules``: a bit per megatron-core module name, ``MCORE_RECOMPUTE_MODULES``; verl 0.5.0
trainer/config/actor/megatron_actor.yaml defaults it to ["core_attn"], megatron-core's default, and
models/mcore/config_converter.py passes override_transformer_config to TransformerConfig as it is),
1F1B / interleaved pipeline activations.
verl 0.9.1 offloads Megatron params (with the grad buffers) and optimizer between phases and loads
them back for compute (verl/utils/megatron_utils.py offload_megatron_model_to_cpu,
offload_megatron_optimizer), as its FSDP engine does.

Training phases count what the other Megatron models keep on the GPU (the reference model unless
``ref.megatron.param_offload``, the critic) and the sleeping engine's CUDA graphs; with
``free_cache_engine=False`` the engine's KV cache is counted in the rollout phase only.
"""

from __future__ import annotations

from typing import Any, Mapping

from ...costmodel.phase import Phase
from ...catalog.gpus import GPU
from ...catalog.models import ModelCard
from ...costmodel.plan import Plan
from ...costmodel.tables import CostSpec
from ...rules.base import Value, bool_names, optional_names
from .rules_megatron import ANY_VARIABLES
from ..cost_common import DEFAULT_RECOMPUTE_MODULES, modules_code, recompute_modules, token_budget

# verl 0.3's Megatron actor computes the entropy in every update whatever actor.entropy_coeff (0.3.0.post1
# verl/workers/actor/megatron_actor.py:MegatronPPOActor.forward_backward_batch loss_func,
# vocab_parallel_compute_entropy_loss); from 0.4 only when asked (the entropy_loss input). The Megatron backend of 0.1-0.2
# is priced as 0.6.1's (not re-read).
ENTROPY_ALWAYS = frozenset({"0.3.0"})
from ..base import of_absent_model
from .cost import (BATCH_SHARE, BUNDLED_VLLM, HOST_COPIES, LEGACY_GLOBAL_MICRO, LEGACY_WORKERS, NEWEST, PLACEMENT, critic_batching,
                   engine_sleeps_to_host, inputs_of_version, per_gpu_micro, phases_run_verl, pipeline,
                   samples_per_step, shared_plan_fields, unread_batch_share)

MG = "actor_rollout_ref.actor.megatron"
RECOMPUTE_KEY = f"{MG}.override_transformer_config.recompute_granularity"
RECOMPUTE_MODULES_KEY = f"{MG}.override_transformer_config.recompute_modules"
RECOMPUTE = {0: "none", 1: "selective", 2: "full"}
RECOMPUTE_CODE = {None: 0, "null": 0, "none": 0, "selective": 1, "full": 2}
# megatron-core's CPU optimizer (HybridDeviceOptimizer), passed through verl's optimizer overrides
OPT = "actor_rollout_ref.actor.optim.override_optimizer_config"
CPU_OPT_KEY, CPU_OPT_FRACTION_KEY = f"{OPT}.optimizer_cpu_offload", f"{OPT}.optimizer_offload_fraction"

_HW = ["nnodes", "gpus_per_node", "max_prompt_length", "max_response_length"]
_LAYOUT = ["tp", "pp", "cp", "ep", "etp", "vpp"]
# the actor's pipeline split (megatron-core get_num_layers_to_build): which decoder layers each stage holds
_SPLIT = ["first_stage_layers", "last_stage_layers", "pp_account_embedding", "pp_account_loss"]
_ROLLOUT = ["rollout_tp", "gmu_permille", "rollout_sglang", "free_cache_engine", "enforce_eager",
            "max_num_seqs", "max_num_batched_tokens", "max_model_len", "rollout_sync"]
_RESIDENT = ["megatron_param_offload", "megatron_optimizer_offload", "megatron_cpu_optimizer_permille"]
_OTHERS = ["need_ref", "ref_megatron_param_offload", "need_critic", "critic_megatron_param_offload",
           "critic_megatron_optimizer_offload", "enforce_eager"]
_ACTOR = ["actor_micro_per_gpu", "actor_dyn", "actor_max_tokens", "megatron_recompute", "megatron_recompute_modules",
          "remove_padding", "use_fused_kernels"]
_CRITIC = ["critic_micro_per_gpu", "critic_max_tokens", "critic_tp", "critic_pp", "critic_cp", "critic_ep",
           "critic_etp", "critic_vpp", "megatron_recompute", "megatron_recompute_modules", "remove_padding"]
_REF = ["ref_micro_per_gpu", "ref_dyn", "ref_max_tokens", "ref_tp", "ref_pp", "ref_cp", "ref_ep", "ref_etp",
        "ref_vpp", "remove_padding", "use_fused_kernels"]
_LOGPROB = ["logprob_micro_per_gpu", "logprob_dyn", "logprob_max_tokens", "remove_padding", "use_fused_kernels"]

MEMORY_INPUTS = {
    Phase.ROLLOUT: _HW + _LAYOUT + _SPLIT + _ROLLOUT + _RESIDENT + _OTHERS + PLACEMENT,
    Phase.OLD_LOG_PROB: _HW + _LAYOUT + _SPLIT + _RESIDENT + _LOGPROB + _OTHERS + BATCH_SHARE,
    Phase.REF: _HW + _REF + ["ref_megatron_param_offload"] + _RESIDENT + _OTHERS + BATCH_SHARE,
    Phase.ACTOR_UPDATE: _HW + _LAYOUT + _SPLIT + _RESIDENT + _ACTOR + _OTHERS + BATCH_SHARE + ["actor_mini",
                                                                                       "entropy_loss"],
    Phase.CRITIC_UPDATE: _HW + _CRITIC + _RESIDENT + _OTHERS + BATCH_SHARE + ["critic_mini"],
}
_STEP = _HW + ["train_batch_size", "n"]
# Compute time reads the dense layout (TP, PP, CP, VPP), not EP/ETP (expert all-to-all is not modelled)
# nor the offload switches (their copies are the "offload" phase); an update's gradient reduction and optimizer step
# read EP/ETP too (the experts' share of a GPU: time._grad_sync_and_adam).
_TIME_LAYOUT = ["tp", "pp", "cp", "vpp"]
TIME_INPUTS = {
    Phase.ROLLOUT: _STEP + _LAYOUT + _ROLLOUT + _RESIDENT + _OTHERS + PLACEMENT + ["vllm_v0"],
    Phase.OLD_LOG_PROB: _STEP + _TIME_LAYOUT + _LOGPROB,
    Phase.REF: _STEP + [n for n in _REF if n not in ("ref_ep", "ref_etp")],
    Phase.ACTOR_UPDATE: _STEP + _TIME_LAYOUT + ["ep", "etp"] + _ACTOR + ["actor_mini", "actor_epochs"],
    Phase.CRITIC_UPDATE: _STEP + _CRITIC + ["critic_mini", "critic_epochs"],
    # cp: the sync's gather spans the shard degree, GPUs / (TP x PP x CP) (make_plan; time._weight_sync)
    Phase.WEIGHT_SYNC: _STEP + ["tp", "pp", "cp", "rollout_tp"] + PLACEMENT,
    Phase.OFFLOAD: _STEP + _LAYOUT + _RESIDENT + HOST_COPIES + ["need_critic", "critic_megatron_param_offload",
                                                            "critic_megatron_optimizer_offload"],
}


# verl releases whose Megatron workers never read actor.optim.override_optimizer_config: it is first in 0.6.0
# (verl/utils/megatron/optimizer.py init_megatron_optim_config merges it into megatron-core's OptimizerConfig); 0.5.0,
# 0.4.1 and 0.3.0.post1 build that config in verl/utils/megatron_utils.py init_megatron_optim_config from the
# optimizer, lr, min_lr, clip_grad and weight_decay alone and name the key nowhere (0.2.0.post2's, which the 0.1 pack
# shares, from lr and clip_grad alone). Hydra accepts a ``+`` override of it there and nothing reads it:
# megatron-core's optimizer stays on the GPU.
OPTIMIZER_OVERRIDES_IGNORED = frozenset({"0.1.0", "0.2.0", "0.3.0", "0.5.0"})


def cpu_optimizer_permille(flat: Mapping[str, Any], version: str = NEWEST) -> int:
    """Share x1000 of the optimizer megatron-core keeps on the CPU (0: optimizer_cpu_offload off, or a release
    that ignores the override, ``OPTIMIZER_OVERRIDES_IGNORED``)."""
    if version in OPTIMIZER_OVERRIDES_IGNORED:
        return 0
    on = flat.get(CPU_OPT_KEY, flat.get(f"+{CPU_OPT_KEY}"))
    if not on or str(on).lower() == "false":
        return 0
    frac = flat.get(CPU_OPT_FRACTION_KEY, flat.get(f"+{CPU_OPT_FRACTION_KEY}", 1.0))
    try:
        return int(round(min(1.0, max(0.0, float(frac))) * 1000))
    except (TypeError, ValueError):
        return 1000


def recompute_code(flat: Mapping[str, Any]) -> int:
    """0/1/2 from ``override_transformer_config.recompute_granularity`` (null/selective/full)."""
    raw = flat.get(RECOMPUTE_KEY)
    return RECOMPUTE_CODE.get(None if raw is None else str(raw).lower(), 0)


def recompute_modules_code(flat: Mapping[str, Any]) -> int:
    """``override_transformer_config.recompute_modules`` as a bit set over ``MCORE_RECOMPUTE_MODULES`` (unset:
    megatron-core's ["core_attn"]). A name megatron-core does not know is an input error: its TransformerConfig
    refuses it (transformer_config.py __post_init__, "Invalid choices for recompute_modules")."""
    return modules_code(flat.get(RECOMPUTE_MODULES_KEY), RECOMPUTE_MODULES_KEY)




def _unset_none(v: Mapping[str, Value], name: str) -> int | None:
    x = v.get(name)
    return None if x is None else int(x)


def _opt(v: Mapping[str, Value], name: str, default: int) -> int:
    x = v.get(name)
    return default if x is None else int(x)


# what verl's Megatron sharding manager loads to sync an offloaded actor into vLLM: 0.5.0 load_megatron_model_to_gpu's
# default load_grad=True (params + fp32 grad buffer); PR #2678 (first in 0.6.0) passes load_grad=False
SYNC_LOADS = {"0.5.0": "params+grads", "0.6.1": "params"}
# the releases whose pass moves the rank's whole batch to the GPU first and keeps it there (Plan.batch_on_gpu), per
# phase: the actor's update_actor up to 0.5.0 (verl PRs #3011 and #3106, first in 0.6.0, move a mini / micro
# batch at a time); the critic's update_critic in every release with the legacy workers (0.7.1
# workers/megatron_workers.py CriticWorker.update_critic ``data = data.to(device)``, the minibatch iterator then
# splitting that GPU copy)
WHOLE_BATCH_ON_GPU = {Phase.ACTOR_UPDATE: frozenset({"0.3.0", "0.5.0"}),
                      Phase.CRITIC_UPDATE: frozenset({"0.3.0", "0.5.0", "0.6.1", "0.7.1"}),
                      # compute_log_prob and compute_ref_log_prob ``data = data.to(device)`` before the forward
                      # (0.3.0.post1, 0.4.1, 0.5.0); 0.6.1's workers move nothing there and the actor's
                      # forward_backward_batch moves its copy back to the CPU before the micro batches
                      Phase.OLD_LOG_PROB: frozenset({"0.3.0", "0.5.0"}),
                      Phase.REF: frozenset({"0.3.0", "0.5.0"})}


def fused_logits(v: Mapping[str, Value], phase: str, version: str) -> bool:
    """Whether the phase's log-probs go through verl's fused linear cross-entropy (``model.use_fused_kernels``).
    The engine workers (0.8.0 on) read the model's switch for the actor and the reference alike and fall back to the
    materialized logits without padding removal (verl 0.9.1 workers/engine_workers.py TrainingWorker.__init__,
    workers/engine/megatron/transformer_impl.py MegatronEngine._maybe_enable_fused_kernels; 0.8.0 the same file's
    forward_step); the legacy workers of 0.7.1 and 0.6.1 patch the actor only (workers/actor/megatron_actor.py
    MegatronPPOActor.__init__ reads its own config's use_fused_kernels, which the reference's config lacks:
    trainer/config/_generated_ppo_megatron_trainer.yaml)."""
    if not v.get("use_fused_kernels") or phase == Phase.CRITIC_UPDATE:
        return False
    if version in LEGACY_WORKERS:
        return phase != Phase.REF
    return bool(v.get("remove_padding", True))


def make_plan(values: Mapping[str, Value], phase: str, model: ModelCard, gpu: GPU,
              version: str = NEWEST) -> Plan:
    """The plan one phase of verl on Megatron runs with these values. The legacy workers of 0.7.1 and 0.6.1 build
    the reference and the critic on the actor's parallel layout: they share its process, whose megatron-core
    groups the actor initialised (verl/workers/megatron_workers.py:CriticWorker.__init__ initialises them only
    when torch.distributed is not yet up)."""
    v = values
    n_gpus = int(v["nnodes"]) * int(v["gpus_per_node"])
    # whose layout the phase runs on: its own model's, or (legacy workers) always the actor's
    prefix = "" if version in LEGACY_WORKERS else {Phase.REF: "ref_", Phase.CRITIC_UPDATE: "critic_"}.get(phase, "")
    tp, pp, cp = _opt(v, f"{prefix}tp", 1), _opt(v, f"{prefix}pp", 1), _opt(v, f"{prefix}cp", 1)
    ep = _opt(v, f"{prefix}ep", 1)
    etp, vpp = _opt(v, f"{prefix}etp", tp), _opt(v, f"{prefix}vpp", 1)
    dp = max(1, n_gpus // max(1, tp * pp * cp))
    recompute = RECOMPUTE.get(int(v.get("megatron_recompute") or 0), "none")
    param_off, opt_off = bool(v.get("megatron_param_offload")), bool(v.get("megatron_optimizer_offload"))
    train_micro = per_gpu_micro(v, "actor_micro_per_gpu", "actor_micro", dp, version)
    train_budget = token_budget(v, "actor_dyn", "actor_max_tokens")
    lp_micro = per_gpu_micro(v, "logprob_micro_per_gpu", "logprob_micro", dp, version)
    critic = critic_batching(v, version, dp)
    if phase == Phase.REF:
        lp_micro = per_gpu_micro(v, "ref_micro_per_gpu", "ref_micro", dp, version)
        param_off, opt_off = bool(v.get("ref_megatron_param_offload")), True
    elif phase == Phase.CRITIC_UPDATE:
        train_micro, train_budget = critic
        param_off = bool(v.get("critic_megatron_param_offload"))
        opt_off = bool(v.get("critic_megatron_optimizer_offload"))
    shared = shared_plan_fields(v, phase, model, gpu, version)
    if version in LEGACY_WORKERS:
        # the legacy Megatron actor packs every micro batch without its padding whatever model.use_remove_padding
        # says (verl 0.6.1 workers/actor/megatron_actor.py forward_step -> models/mcore/model_forward.py
        # model_forward: preprocess_packed_seqs to THD; 0.7.1 the same unless actor.megatron.use_remove_padding,
        # default True, is turned off); the engine workers read the model's switch
        # (0.9.1 workers/engine/megatron/transformer_impl.py: data_format "thd" if use_remove_padding else "bshd")
        shared["remove_padding"] = True
    return Plan.of(
        **shared,
        n_gpus=n_gpus,
        train_micro=train_micro,
        train_token_budget=train_budget,
        logprob_micro=lp_micro,
        sp=1,
        shard_degree=dp,
        zero_stage=0,
        grad_ckpt=recompute == "full",
        param_offload=param_off,
        optimizer_offload=opt_off,
        entropy_chunking=False,
        entropy_checkpointing=False,
        logits_impl="megatron-fused" if fused_logits(v, phase, version) else "megatron",
        # the update's entropy (with its gradient) only with actor.entropy_coeff != 0 (rules.SHARED_VARS entropy_loss);
        # verl's fused kernel returns it from the same pass, so it changes only the unfused accounting
        entropy_in_update=version in ENTROPY_ALWAYS or bool(v.get("entropy_loss")),
        critic_micro=critic[0],
        # training phases: the engine's KV is freed (see the module docstring)
        free_cache_engine=bool(v["free_cache_engine"]) if phase == Phase.ROLLOUT else True,
        # the weight sync loads an offloaded actor beside the woken vLLM weights (memory._sync_load_excess; read at
        # 0.5.0 and 0.6.1: workers/sharding_manager/megatron_vllm.py MegatronVLLMShardingManager.__enter__)
        sync_loads_trainer=SYNC_LOADS.get(version, "") if not v.get("rollout_sglang") else "",
        tp=tp,
        pp=pp,
        cp=cp,
        ep=ep,
        etp=etp,
        vpp=vpp,
        # the actor's split; the reference and critic models take megatron-core's even split
        pp_account_embedding=not prefix and bool(v.get("pp_account_embedding")),
        pp_account_loss=not prefix and bool(v.get("pp_account_loss")),
        pp_first_layers=None if prefix else _unset_none(v, "first_stage_layers"),
        pp_last_layers=None if prefix else _unset_none(v, "last_stage_layers"),
        recompute=recompute,
        recompute_modules=recompute_modules(_opt(v, "megatron_recompute_modules", DEFAULT_RECOMPUTE_MODULES)),
        cpu_optimizer=bool(v.get("megatron_cpu_optimizer_permille")),
        optimizer_offload_fraction=int(v.get("megatron_cpu_optimizer_permille") or 0) / 1000,
        distributed_optimizer=True,
        trainer="megatron",
        host_syncs_per_micro=True,  # preprocess_packed_seqs' .tolist() and the loss's .item() (Plan's comment)
        ref_param_offload=bool(v.get("ref_megatron_param_offload")),
        critic_param_offload=bool(v.get("critic_megatron_param_offload")),
        critic_optimizer_offload=bool(v.get("critic_megatron_optimizer_offload")),
        actor_param_offload=bool(v.get("megatron_param_offload")),
        actor_optimizer_offload=bool(v.get("megatron_optimizer_offload")),
        count_colocated_residents=True,
        # the update keeps the rank's whole batch on the GPU (memory.batch_on_gpu_bytes; 0.3.0.post1
        # megatron_workers.py update_actor data.batch.cuda(), 0.4.1 and 0.5.0 data.batch.to(device); the critic's
        # update_critic data.to(device) in every legacy release: WHOLE_BATCH_ON_GPU)
        batch_on_gpu=version in WHOLE_BATCH_ON_GPU.get(phase, ()),
        # a token budget packs a rank's share of the batch being split: never more than that share (the engines'
        # shared data splitting, verl/utils/seqlen_balancing.py rearrange_micro_batches)
        budget_capped_by_batch=True,
        engine_sleep_host_weights=engine_sleeps_to_host(v, version),
        engine_graphs_in_budget=version == NEWEST,  # the older releases run vLLM before 0.21
        engine_kv_of_free_memory=version in BUNDLED_VLLM,  # verl 0.1-0.2's own vLLM worker (cost.py)
        engine_weights_released=version in BUNDLED_VLLM,
    )


def unread(phase: str, kind: str, domains: Mapping[str, Any]) -> set:
    """Inputs no plan of this space reads: the critic's (reference's) switches when no critic (reference)
    runs, and the trainer layout in vLLM's rollout time (only SGLang's budget depends on it)."""
    out = {n for n in domains if of_absent_model(n, lambda switch: True in domains.get(switch, [False]))}
    out |= unread_batch_share(phase, kind, domains)
    if kind == "time" and phase == Phase.ROLLOUT and True not in domains.get("rollout_sglang", [False]):
        out |= set(_LAYOUT + _RESIDENT + _OTHERS) - {"enforce_eager"}
    return out


# the legacy workers build the reference and the critic on the actor's layout (make_plan)
_LEGACY_LAYOUT = {Phase.REF: _LAYOUT + _SPLIT, Phase.CRITIC_UPDATE: _LAYOUT + _SPLIT}
# and convert the deprecated global micro batch keys by the data-parallel size (cost.per_gpu_micro)
_LEGACY = {p: _LEGACY_LAYOUT.get(p, []) + names for p, names in LEGACY_GLOBAL_MICRO.items()}


def cost_spec(model: ModelCard, gpu: GPU, version: str = NEWEST) -> CostSpec:
    return CostSpec(
        framework="verl-megatron",
        plan=lambda values, phase: make_plan(values, phase, model, gpu, version),
        memory_inputs=inputs_of_version(MEMORY_INPUTS, version, _LEGACY),
        time_inputs=inputs_of_version(TIME_INPUTS, version, _LEGACY),
        phases_run=phases_run_verl,
        samples=samples_per_step,
        bool_names=bool_names(ANY_VARIABLES),
        unread=unread,
        optional=optional_names(ANY_VARIABLES),
        pipeline=pipeline,
        concurrency_inputs=("async_mode", "staleness_permille"),
    )
