"""OpenRLHF 0.11.2 values -> cost-model ``Plan`` per phase, and which variables each phase reads.

Placement (openrlhf/cli/train_ppo_ray.py ``train``): every model group (actor, ref, critic, reward)
has its own GPUs unless ``--colocate_actor_ref`` / ``--colocate_critic_reward`` /
``--colocate_all_models`` share them; the vLLM engines (``vllm.num_engines`` x
``vllm.tensor_parallel_size``) run on GPUs of their own unless ``--colocate_all_models``. Each
phase's memory is that of the GPUs it runs on, with what the other models sharing them keep there.

Trainer: DeepSpeed ZeRO (``ds.zero_stage``, bf16) over the group's ranks
(openrlhf/utils/deepspeed/deepspeed_utils.py get_train_ds_config), states counted as DeepSpeed's
own estimators count them (``memory.deepspeed_states``); ``--adam_offload`` is ZeRO-Offload (the
optimizer steps on the CPU: ``offload_during_compute``). The reference and reward models are
bf16 forward-only DeepSpeed engines (get_eval_ds_config: ZeRO-3 sharded when the stage is 3,
parameters on the CPU with ``ref.offload`` / ``reward.offload``). With colocate_all the sleeping
engine keeps its CUDA graphs on the training GPUs (its KV cache is counted in the rollout only).
"""

from __future__ import annotations

from typing import Any, Mapping

from ...costmodel.phase import Phase
from ...catalog.gpus import GPU
from ...catalog.models import ModelCard
from ...costmodel import constants as C
from ...costmodel.host import (DS_READ_AT, HOST_LIMIT_SHARE, STANDARD_NODE_GPUS, VLLM_V0_SWAP_BYTES, GroupOnNode,
                              HostLayout)
from ...costmodel.memory import model_consts
from ...costmodel.plan import Plan
from ...costmodel.tables import TWO_POOLS, CostSpec
from ...rules.base import Value, bool_names, optional_names
from .rules import VARIABLES
from .versions import EXPERIENCE_ORDERS
from ..bnb import quantized_cost_spec
from ..cost_common import phases_run

# vLLM engine limits OpenRLHF 0.11.2 does not set (trainer/ray/vllm_engine.py create_vllm_engines passes
# neither): its engine is vllm.AsyncLLMEngine.from_engine_args, whose usage context ENGINE_CONTEXT has no
# entry in EngineArgs.get_batch_defaults, so vLLM 0.29.0 (the version OpenRLHF pins) falls back to
# SchedulerConfig.DEFAULT_MAX_NUM_SEQS = 128 and DEFAULT_MAX_NUM_BATCHED_TOKENS = 2048
# (vllm/engine/arg_utils.py _set_default_max_num_seqs_and_batched_tokens_args, vllm/config/scheduler.py).
VLLM_MAX_NUM_SEQS = 128
VLLM_MAX_BATCHED_TOKENS = 2048

_LAYOUT = ["actor_nnodes", "actor_gpus_per_node", "max_len", "max_new_tokens", "zero_stage", "ds_tp",
           "ring_attn_size", "packing_samples", "colocate_all", "colocate_actor_ref", "colocate_critic_reward",
           "need_ref", "need_critic", "need_reward_model", "ref_offload", "reward_offload", "adam_offload",
           "ds_sleep", "vllm_eager", "async_train", "lora_rank", "one_world"]
_ENGINE = ["vllm_num_engines", "vllm_tp", "gmu_permille", "vllm_sleep", "colocate_lowers_gmu", "vllm_graphs_in_budget",
           "sync_wakes_weights_only", "hf_generate"]
# the release's log-prob code (frameworks/openrlhf/versions.py Release.logits)
_LOGITS = ["logits_gather", "logits_fp32_model"]
_TRAIN = ["micro_train_batch_size", "dynamic_batch", "train_max_tokens", "grad_ckpt", "ds_overlap_comm"]
# with --train.dynamic_batch_enable the experience forwards pack by tokens too (experience_maker.py
# split_rollout_samples: rollout.max_tokens_per_gpu, x ring_attn_size x ds.tensor_parallel_size)
_EXPERIENCE_BUDGET = ["dynamic_batch", "rollout_max_tokens", "train_max_tokens"]
MEMORY_INPUTS = {
    Phase.ROLLOUT: _LAYOUT + _ENGINE + ["micro_rollout_batch_size", "rollout_batch_size", "n"],
    Phase.OLD_LOG_PROB: _LAYOUT + ["micro_rollout_batch_size"] + _EXPERIENCE_BUDGET + _LOGITS,
    Phase.REF: _LAYOUT + ["ref_nnodes", "ref_gpus_per_node", "micro_rollout_batch_size"] + _EXPERIENCE_BUDGET + _LOGITS,
    Phase.ACTOR_UPDATE: _LAYOUT + _TRAIN + ["grad_accum_fp32"] + _LOGITS,
    Phase.CRITIC_UPDATE: _LAYOUT + _TRAIN + ["grad_accum_fp32", "critic_nnodes", "critic_gpus_per_node"],
}
_STEP = ["rollout_batch_size", "n"]
# Time reads the placement and the trainer layout, not what other models keep resident.
_T = ["actor_nnodes", "actor_gpus_per_node", "max_len", "max_new_tokens", "zero_stage", "ds_tp", "ring_attn_size",
      "packing_samples", "one_world"] + _STEP
TIME_INPUTS = {
    # lora_rank: transformers' generate on a 4-bit LoRA base dequantizes it every decode step (0.4-0.6's hf_generate;
    # time.decode_weight_bytes)
    Phase.ROLLOUT: ["actor_nnodes", "actor_gpus_per_node", "max_len", "max_new_tokens", "colocate_all", "async_train",
                "vllm_num_engines", "vllm_tp", "gmu_permille", "colocate_lowers_gmu", "vllm_eager", "vllm_v0",
                "hf_generate", "flash_attn", "vllm_micro_calls",
                "micro_rollout_batch_size", "zero_stage", "lora_rank", "one_world"] + _STEP,
    Phase.OLD_LOG_PROB: _T + ["micro_rollout_batch_size"] + _EXPERIENCE_BUDGET,
    Phase.REF: _T + ["colocate_all", "colocate_actor_ref", "ref_nnodes", "ref_gpus_per_node", "ref_offload",
                 "micro_rollout_batch_size"] + _EXPERIENCE_BUDGET,
    # adam_offload: ZeRO-Offload copies each micro batch's gradients to the CPU and back (time._deepspeed_micro_grads)
    # max_epochs: the update passes over the replay buffer that many times (framework.py _max_epochs)
    Phase.ACTOR_UPDATE: _T + _TRAIN + ["train_batch_size", "adam_offload", "max_epochs"],
    Phase.CRITIC_UPDATE: _T + _TRAIN + ["train_batch_size", "colocate_all", "critic_nnodes", "critic_gpus_per_node",
                                        "adam_offload", "max_epochs"],
    # the critic's value forward, in make_experience (Plan.critic_values_apart): on the critic's GPUs, over the
    # experience's micro batches
    Phase.CRITIC_VALUES: _T + ["need_critic", "colocate_all", "critic_nnodes", "critic_gpus_per_node",
                               "micro_rollout_batch_size"] + _EXPERIENCE_BUDGET,
    Phase.WEIGHT_SYNC: _T + ["colocate_all", "async_train", "vllm_tp", "vllm_num_engines", "hf_generate"],
    # ds_sleep: --deepspeed_enable_sleep moves the trainer's states off the GPU and back around the rollout
    Phase.OFFLOAD: _T + ["adam_offload", "need_critic", "ds_sleep"],
}


def lengths(v: Mapping[str, Value]) -> tuple[int, int]:
    """(prompt, response) limits: ``max_new_tokens`` (unset: half of ``max_len``, our assumption)
    and the rest of ``max_len`` (vLLM's max_model_len)."""
    total = int(v.get("max_len") or 2048)
    resp = v.get("max_new_tokens")
    resp = int(resp) if resp else total // 2
    return max(1, total - resp), resp


def _group(v: Mapping[str, Value], g: str) -> int:
    return int(v.get(f"{g}_nnodes") or 1) * int(v.get(f"{g}_gpus_per_node") or 1)


def one_world(v: Mapping[str, Value]) -> Mapping[str, Value]:
    """The values as the Ray placement they amount to under the non-Ray launcher (``one_world``: openrlhf/cli/
    train_ppo.py, read at 0.5.2, 0.5.9 and 0.6.1 ``train``); the one reading both the rules (framework.py
    ``to_values``) and the cost model read. Every rank of one DeepSpeed world builds the actor, the critic (gae),
    the reward model (no --remote_rm_url) and the reference model (``initial_model``) and ``strategy.prepare``s them
    all, so each GPU holds all four, as --colocate_all_models places them: the reference, critic and reward groups
    are the actor's world (one strategy's DeepSpeed configs), and neither --colocate_actor_ref's nor
    --colocate_critic_reward's own placement group exists (train_ppo_ray.py of 0.6.1 gives the critic and reward
    model a placement group of their own GPUs under --colocate_critic_reward even with --colocate_all_models, which
    one world is not: False). No vLLM engines (its parser has no --vllm_num_engines: PPOTrainer's
    NaiveExperienceMaker generates with the actor's own ``generate``), the reference and reward models prepared
    with ``get_ds_eval_config(offload=False)`` (its parser has no --ref_reward_offload), no sleep, no async
    training. The world is the actor's (framework.py to_values sets it from the cluster's GPUs). Other values as
    given."""
    if not v.get("one_world"):
        return v
    groups = {f"{g}_{k}": v.get(f"actor_{k}") for g in ("ref", "critic", "reward")
              for k in ("nnodes", "gpus_per_node")}
    return {**v, **groups, "colocate_all": True, "colocate_actor_ref": True, "colocate_critic_reward": False,
            "vllm_num_engines": 0, "ref_offload": False, "reward_offload": False, "vllm_sleep": False,
            "ds_sleep": False, "async_train": False}


def make_plan(values: Mapping[str, Value], phase: str, model: ModelCard, gpu: GPU) -> Plan:
    """The plan one phase of OpenRLHF runs with these values, on the GPUs that phase runs on."""
    v = one_world(values)
    all_ = bool(v.get("colocate_all"))
    # vLLM shares the actor's GPUs with colocate_all, except in async training, where its engines always get GPUs of
    # their own (train_ppo_ray.py: shared_pg = pg if colocate_all and not async_enable)
    engines = int(v.get("vllm_num_engines") or 0)
    # (no engines, 0.4-0.6's own generate: no engine shares them)
    vllm_shared = all_ and not bool(v.get("async_train")) and engines > 0
    # no vLLM engines on 0.4-0.6: the actor generates with transformers, micro_rollout_batch_size prompts per call
    # (versions.Release.hf_generate); the phases that read the engine count (rollout, weight sync) price that
    hf = bool(v.get("hf_generate")) and engines == 0 and phase in (Phase.ROLLOUT, Phase.WEIGHT_SYNC)
    actor_ref = all_ or bool(v.get("colocate_actor_ref"))
    critic_reward = all_ or bool(v.get("colocate_critic_reward"))
    need_rm = bool(v.get("need_reward_model"))
    group = {Phase.REF: "ref", Phase.CRITIC_UPDATE: "critic", Phase.CRITIC_VALUES: "critic"}.get(phase, "actor")
    if group == "ref" and actor_ref or group == "critic" and all_:
        group = "actor"  # colocated groups take the actor's placement
    n_gpus = _group(v, group)
    per_node = int(v.get(f"{group}_gpus_per_node") or 1)
    tp = max(1, int(v.get("ds_tp") or 1))
    ring = max(1, int(v.get("ring_attn_size") or 1))
    prompt, resp = lengths(v)
    # who else lives on this phase's GPUs
    on_actor = (phase in (Phase.ROLLOUT, Phase.OLD_LOG_PROB, Phase.ACTOR_UPDATE) or (phase == Phase.REF and actor_ref)
                or (phase == Phase.CRITIC_UPDATE and all_))
    if phase == Phase.ROLLOUT:
        colocated = vllm_shared or hf  # transformers' generate runs in the actor, beside its states
        actor_c, ref_c, critic_c = True, actor_ref, all_
        rm = all_ and need_rm
    elif on_actor:
        colocated = True
        actor_c, ref_c, critic_c = True, actor_ref, all_
        rm = all_ and need_rm and not bool(v.get("reward_offload"))
    else:  # a group of its own (ref alone; critic with or without the reward model)
        colocated = True
        actor_c = ref_c = False
        critic_c = phase == Phase.CRITIC_UPDATE
        rm = phase == Phase.CRITIC_UPDATE and critic_reward and need_rm and not bool(v.get("reward_offload"))
    samples = int(v.get("rollout_batch_size") or 1) * int(v.get("n") or 1)
    train = int(v.get("train_batch_size") or samples)
    dyn = bool(v.get("dynamic_batch"))
    opt_off = bool(v.get("adam_offload"))
    # --ds.enable_sleep: a DeepSpeed model's params and optimizer go to the CPU while it is idle
    # (openrlhf/trainer/ray/ppo_actor.py, offload_deepspeed_states / reload_deepspeed_states)
    sleep = bool(v.get("ds_sleep"))
    ref_off = bool(v.get("ref_offload"))
    vtp = int(v.get("vllm_tp") or 1)
    gmu = int(v.get("gmu_permille") or 900)
    if v.get("colocate_lowers_gmu") and all_ and gmu >= 900:
        gmu = 400  # 0.5.9 train(): "Set args.vllm_gpu_memory_utilization to 0.4 for colocate_all_models!"
    logits = ("openrlhf-0.4" if v.get("logits_fp32_model") else "openrlhf-0.5") if v.get("logits_gather") \
        else "openrlhf"
    if logits == "openrlhf-0.5" and v.get("packing_samples"):
        logits = "openrlhf-0.5-packed"  # one packed row: the per-row logsumexp at full size (constants.LOGIT_BYTES)
    return Plan.of(
        model=model,
        gpu=gpu,
        n_gpus=n_gpus,
        gpus_per_node=per_node,
        prompt_len=prompt,
        response_len=resp,
        samples_per_step=samples,
        group_size=max(1, int(v.get("n") or 1)),
        mini_batches=max(1, samples // max(1, train)),
        update_epochs=max(1, int(v.get("max_epochs") or 1)),
        train_micro=int(v.get("micro_train_batch_size") or 1),
        train_token_budget=int(v["train_max_tokens"]) if dyn else None,
        logprob_micro=int(v.get("micro_rollout_batch_size") or 1),
        logprob_token_budget=(int(v.get("rollout_max_tokens") or v["train_max_tokens"]) if dyn else None),
        sp=ring,
        shard_degree=max(1, n_gpus // tp),
        zero_stage=int(v.get("zero_stage") or 0),
        grad_ckpt=bool(v.get("grad_ckpt")),
        param_offload=ref_off if phase == Phase.REF else False,
        optimizer_offload=True if phase == Phase.REF else opt_off,
        remove_padding=bool(v.get("packing_samples")),
        entropy_chunking=False,
        entropy_checkpointing=False,
        need_ref=bool(v.get("need_ref")),
        need_critic=bool(v.get("need_critic")),
        critic_micro=int(v.get("micro_train_batch_size") or 1),
        # make_experience runs the critic's value forward on the critic's GPUs beside the reference's and the actor's
        # forwards (trainer/ppo_utils/experience_maker.py: RemoteExperienceMaker.make_experience, read at the
        # benchmark's dbdd43b0 and at 0.11.2 make_experience), not with its training: a phase of its own (concurrency)
        critic_values_apart=True,
        engine="hf" if hf else "vllm",
        hf_generate_micro=int(v.get("micro_rollout_batch_size") or 1) if hf else None,
        hf_generate_unpads=bool(hf and v.get("flash_attn")),
        engine_call_samples=(int(v.get("micro_rollout_batch_size") or 1) if v.get("vllm_micro_calls") and not hf
                             else None),
        rollout_tp=vtp,
        gpu_memory_utilization=gmu / 1000,
        free_cache_engine=bool(v.get("vllm_sleep")) if phase == Phase.ROLLOUT else True,
        enforce_eager=bool(v.get("vllm_eager")),
        engine_v0=bool(v.get("vllm_v0")),
        max_num_seqs=VLLM_MAX_NUM_SEQS,
        max_num_batched_tokens=VLLM_MAX_BATCHED_TOKENS,
        tp=tp,
        colocated=colocated,
        rollout_gpus=None if vllm_shared or hf else max(1, engines * vtp),
        trainer="deepspeed",
        # OpenRLHF 0.4's DeepSpeed config accumulates gradients in fp32 (frameworks/openrlhf/versions.py)
        deepspeed_grad_accum_fp32=bool(v.get("grad_accum_fp32")),
        # get_train_ds_config leaves reduce_bucket_size "auto" (DeepSpeed's default) and contiguous_gradients to
        # DeepSpeed (default True); --overlap_comm (--ds.overlap_comm) sets overlap_comm, two buckets (0.4.0-0.11.2)
        deepspeed_reduce_bucket=C.DEEPSPEED_REDUCE_BUCKET_SIZE * (2 if v.get("ds_overlap_comm") else 1),
        # --use_liger_kernel changes nothing here: it loads AutoLigerKernelForCausalLM (0.11.2 models/actor.py), whose
        # forward builds the logits when no labels are passed (liger-kernel lce_forward skip_logits), as Actor.forward
        # does (docs/cost-model.md section 2)
        logits_impl=logits,
        offload_during_compute=True,
        ref_param_offload=ref_off,
        critic_param_offload=sleep,
        critic_optimizer_offload=opt_off or sleep,
        actor_param_offload=sleep,
        actor_optimizer_offload=opt_off or sleep,
        count_colocated_residents=True,
        reward_model=rm,
        actor_colocated=actor_c,
        ref_colocated=ref_c,
        critic_colocated=critic_c,
        engine_colocated=vllm_shared and not hf,
        # --vllm_enable_sleep puts the engines to sleep at level 1: their weights go to host RAM
        # (openrlhf/trainer/ray/vllm_engine.py ``sleep(self, level=1)``, v0.7.5)
        engine_sleep_host_weights=bool(v.get("vllm_sleep")),
        # the pinned vLLM: its CUDA graphs inside gpu_memory_utilization from 0.21 on (versions.Release.vllm)
        engine_graphs_in_budget=bool(v.get("vllm_graphs_in_budget", True)),
        # every release broadcasts each weight whole to every engine rank (trainer/ray/vllm_worker_wrap.py
        # WorkerWrap.update_weight) with the KV cache allocated: 0.4.0-0.6.2 wake the engines fully before the
        # broadcast (ppo_actor.py), 0.11.2 wakes only their weights when --vllm.enable_sleep
        # (ppo_trainer.py broadcast_to_vllm: wake_up(tags=["weights"]))
        engine_receives_whole_weights=not (bool(v.get("vllm_sleep")) and bool(v.get("sync_wakes_weights_only", True))),
        # --ds.lora.rank: the actor trains LoRA adapters on every linear layer (models/actor.py Actor.__init__:
        # get_peft_model with --ds.lora.target_modules, default "all-linear") over its frozen base; the reference
        # model is a model of its own (ReferenceModelActor), not the actor with its adapter disabled. The critic's
        # LoRA is not priced (its states as a full model's: Framework.config_notes says so). With --ds.load_in_4bit
        # frameworks/bnb.py quantized_cost_spec prices the actor's base, and memory._ref_param_bytes the reference
        # and reward models, at NF4 bytes
        lora_params=model.lora_params(int(v.get("lora_rank") or 0)) if v.get("lora_rank") else 0,
    )


def unread(phase: str, kind: str, domains: Mapping[str, Any]) -> set:
    """Inputs no plan of this space reads (switches of models that do not run)."""
    out: set = set()
    if True not in domains.get("need_critic", [False]):
        out |= {"critic_nnodes", "critic_gpus_per_node", "colocate_critic_reward"}
    if True not in domains.get("need_ref", [False]):
        out |= {"ref_nnodes", "ref_gpus_per_node", "ref_offload", "colocate_actor_ref"}
    if True not in domains.get("need_reward_model", [False]):
        out |= {"reward_offload"}
    if phase == Phase.ROLLOUT and (True not in domains.get("hf_generate", [False])
                                   or 0 not in domains.get("vllm_num_engines", [0])):
        # only the actor's own generate (no engines, 0.4-0.6) reads the batch it generates per call, and the time of
        # engines called micro batch by micro batch (0.4)
        micro_calls = kind == "time" and True in domains.get("vllm_micro_calls", [False])
        out |= ({"micro_rollout_batch_size"} if not micro_calls else set()) | (
            {"rollout_batch_size", "n"} if kind == "mem" else {"zero_stage"})
    return out


def concurrency(values: Mapping[str, Value]) -> list[tuple]:
    """The phases OpenRLHF overlaps on separate GPU groups. make_experience (trainer/ppo_utils/experience_maker.py)
    dispatches the experience forwards as Ray calls and, where a model shares GPUs with the next, waits on its
    call before going on; the order is the release's (``experience_order``, versions.Release). With a (actor's
    log-prob), c (critic's value), r (reference's) forwards:

    * "actor_first" (read at 0.7.5, 0.8.11, 0.9.10, 0.10.4 and 0.11.2: a, c, r as remote batch calls): a and r
      waited on with ``colocate_all`` or ``colocate_actor_ref``, c with ``colocate_all`` or
      ``colocate_critic_reward``. No flag: max(a, c, r); colocate_actor_ref: a + max(c, r); colocate_critic_reward:
      max(a, c + r) (r is dispatched once c is done, a still running); both: a + c + r.
    * "ref_first" (read at 0.6.2, RemoteExperienceMaker.make_experience): r (waited on with colocate_actor_ref or
      colocate_all_models), c (waited on with colocate_critic_reward or colocate_all_models), then a on the actor's
      own GPUs. colocate_actor_ref: r + max(c, a); colocate_critic_reward: max(r, c + a); both: r + c + a.
    * "actor_last" (read at 0.4.0.post2 and 0.5.9, RemoteExperienceMaker.make_experience; the benchmark table's
      commit dbdd43b0 too): r and c dispatched, c waited on with colocate_critic_reward (or colocate_all_models,
      0.5.9), r with colocate_actor_ref, then a on the actor's own GPUs. colocate_actor_ref: max(c, r + a);
      colocate_critic_reward: max(r, c + a); both: max(c, r) + a.

    A group's member that is a tuple runs its phases one after another beside the other members (tables._combine).
    ppo_train (trainer/ppo_trainer.py) runs the actor's and the critic's fit together unless ``--ds.enable_sleep``
    (then critic, then actor) or ``colocate_all`` (one set of GPUs). Generation, experience, training and the
    weight broadcast follow one another."""
    values = one_world(values)  # the non-Ray launcher runs every phase in one process per GPU, one after another
    all_ = bool(values.get("colocate_all"))
    actor_ref, critic_reward = bool(values.get("colocate_actor_ref")), bool(values.get("colocate_critic_reward"))
    order = EXPERIENCE_ORDERS[int(values.get("experience_order") or 0)]
    a, c, r = Phase.OLD_LOG_PROB, Phase.CRITIC_VALUES, Phase.REF
    groups: list[tuple] = []
    if not all_:
        if not actor_ref and not critic_reward:
            groups.append((a, c, r))
        elif order == "actor_first":
            groups.append((c, r) if not critic_reward else (a, (c, r)) if not actor_ref else ())
        elif order == "ref_first":
            groups.append((a, c) if not critic_reward else (r, (c, a)) if not actor_ref else ())
        else:  # actor_last
            groups.append((c, (r, a)) if not critic_reward else (r, (c, a)) if not actor_ref else (c, r))
    if not (all_ or values.get("ds_sleep")):
        groups.append((Phase.ACTOR_UPDATE, Phase.CRITIC_UPDATE))
    return [g for g in groups if g]


def pipeline(values: Mapping[str, Value]) -> list[tuple[str, tuple[str, ...]]]:
    """``--train.async_enable`` (trainer/ppo_trainer_async.py): a generator actor fills a queue of at most
    ``--train.async_queue_size`` rollout batches while the trainer makes experience and trains on the previous one,
    so a step takes the slower of the two; the weight broadcast holds the engines (a lock, or pause/resume with
    partial rollout) and follows."""
    if not values.get("async_train") or values.get("one_world"):
        return []
    return TWO_POOLS


def _deepspeed_release(v: Mapping[str, Value]) -> tuple[int, ...]:
    """The DeepSpeed release the values' OpenRLHF release pins (framework.py: major x 10000 + minor x 100 + patch)."""
    n = int(v.get("deepspeed_release") or 0)
    return (n // 10000, n // 100 % 100, n % 100) if n else DS_READ_AT


def _node_groups(v: Mapping[str, Value], model: ModelCard, actor_gpus: int, engine_gpus: int,
                 engines_colocated: bool) -> tuple[int, float, float, float, float]:
    """The node the host estimate is for, beside the actor's GPUs: its GPUs, the GPU worker processes of the groups
    with GPUs of their own on it, what those load on the CPU at start-up with the actor, the engines' GPUs on it and
    the share of each such group's GPUs that is on it.
    Each group is a Ray placement group of its own, one bundle per GPU, packed onto as few nodes as Ray can
    (trainer/ray/launcher.py PPORayActorGroup._initiate_actors ``placement_group(bundles, strategy="PACK")``,
    vllm_engine.py create_vllm_engines the same for all engines; read at 0.6.2): a job of at most one node's GPUs
    (the cluster's --gpus, else the standard 8-GPU node) shares one node, a larger one fills the actor's node with
    the other groups' GPUs in proportion (which group Ray puts there is not in the flags). One process per GPU of a
    group (the reward model's too when it shares the critic's GPUs with --colocate_critic_reward; an engine's GPU
    worker: the LLMRayActor itself at TP 1, vLLM's Ray workers at TP > 1); the reference and the reward model load
    a whole bf16 copy each below ZeRO-3 under the same ray.get as the actor (cli/train_ppo_ray.py), the critic after
    them."""
    all_ = bool(v.get("colocate_all"))
    whole = C.BF16 * model_consts(model).params if int(v.get("zero_stage") or 0) < 3 else 0.0
    need_rm = bool(v.get("need_reward_model"))
    groups: list[tuple[int, float, float]] = []  # (GPUs, processes per GPU, bytes loaded per GPU at start-up)
    if v.get("need_ref") and not (all_ or v.get("colocate_actor_ref")):
        groups.append((_group(v, "ref"), 1.0, whole))
    rm_with_critic = need_rm and bool(v.get("colocate_critic_reward"))
    if v.get("need_critic") and not all_:
        groups.append((_group(v, "critic"), 1.0 + rm_with_critic, whole if rm_with_critic else 0.0))
    if need_rm and not all_ and not rm_with_critic:
        groups.append((_group(v, "reward"), 1.0, whole))
    engines_own = engine_gpus if not engines_colocated else 0
    if engines_own:
        groups.append((engines_own, 1.0, 0.0))
    per_node = int(v.get("actor_gpus_per_node") or 1)
    other_gpus = sum(g for g, _, _ in groups)
    cluster = int(v.get("cluster_num_gpus") or 0) or STANDARD_NODE_GPUS
    node_gpus = max(per_node, min(per_node + other_gpus, cluster, STANDARD_NODE_GPUS))
    share = (node_gpus - per_node) / other_gpus if other_gpus else 0.0
    engines_on_node = engines_own * share if engines_own else min(per_node, engine_gpus)
    return (node_gpus, share * sum(g * p for g, p, _ in groups), share * sum(g * b for g, _, b in groups),
            engines_on_node, share)


def _group_on_node(v: Mapping[str, Value], g: str, colocated: bool, share: float) -> GroupOnNode:
    """The critic's or the reference's workers on the actor's node and the ZeRO partitions of its states. On the
    actor's placement group (colocated): one per actor GPU of the node, partitioned over the actor's GPUs; else its
    own group's GPUs in the node's share (_node_groups), partitioned over its own GPUs (each group is a DeepSpeed
    world of its own: trainer/ray/launcher.py PPORayActorGroup, one torch.distributed world per model: read at 0.3.8
    and 0.6.2).
    A 70B critic on a node of its own adds none of its offloaded Adam states to the actor's node (OpenRLHF #198, the
    maintainer: actor and critic are scheduled onto two nodes, so each needs 840 GB)."""
    tp = max(1, int(v.get("ds_tp") or 1))
    if colocated:
        return GroupOnNode(float(v.get("actor_gpus_per_node") or 1), max(1, _group(v, "actor") // tp))
    return GroupOnNode(share * _group(v, g), max(1, _group(v, g) // tp))


def _critic_node(v: Mapping[str, Value], colocated: bool, share: float, node_gpus: int) -> GroupOnNode | None:
    """The node a critic with GPUs of its own fills when not all of the other groups fit on the actor's node: its
    GPUs of one node, together (0.3.8: one bundle of ``critic_num_gpus_per_node`` GPUs per node, STRICT_SPREAD; 0.6.2:
    one bundle per GPU, PACK onto as few nodes as Ray can: trainer/ray/launcher.py PPORayActorGroup._initiate_actors),
    up to the node's GPUs. #198's maintainer: the 70B script's actor and critic 'should be scheduled onto two nodes,
    so each node needs at least 840 GB' (translated). None when the critic is on the actor's GPUs or node."""
    if not v.get("need_critic") or colocated or share >= 1.0:
        return None
    tp = max(1, int(v.get("ds_tp") or 1))
    return GroupOnNode(float(min(int(v.get("critic_gpus_per_node") or 1), node_gpus)),
                       max(1, _group(v, "critic") // tp))


def host_layout(v: Mapping[str, Value], model: ModelCard) -> HostLayout:
    """OpenRLHF on the actor's GPUs, for the host-memory estimate. Every model group is a Ray actor per GPU, so each
    model that shares the actor's GPUs (the reference with colocate_actor_ref or colocate_all, the critic, the reward
    model and the vLLM engines with colocate_all) is a worker process of its own there (trainer/ray/launcher.py
    PPORayActorGroup, num_gpus_per_actor 0.2 when colocated; vllm_engine.py create_vllm_engines: a TP-1 engine runs
    in its own Ray actor with the "uni" executor, a TP-n engine in n Ray workers). train_ppo_ray.py loads the
    reference, the actor and the reward model together (one ray.get over their init_model_from_pretrained; the
    critic after them), each process a whole bf16 copy on the CPU below ZeRO-3 (models/actor.py Actor.__init__
    from_pretrained(torch_dtype=bfloat16), the reference's eval config at stage 0: get_ds_eval_config); and
    create_vllm_engines puts the engines to sleep before that (``batch_vllm_engine_call(vllm_engines, "sleep")``),
    so with --vllm_enable_sleep their weights are in host RAM while the models load. Read at v0.6.3, v0.7.5 and
    v0.11.2 (the same in each)."""
    all_ = bool(v.get("colocate_all"))
    ref_here = bool(v.get("need_ref")) and (all_ or bool(v.get("colocate_actor_ref")))
    rm_here = bool(v.get("need_reward_model")) and all_
    critic_here = bool(v.get("need_critic")) and all_
    actor_gpus = max(1, _group(v, "actor"))
    engine_gpus = int(v.get("vllm_num_engines") or 0) * int(v.get("vllm_tp") or 1)
    engines_here = all_ and not bool(v.get("async_train"))
    per_gpu = 1 + ref_here + rm_here + critic_here + (-(-engine_gpus // actor_gpus) if engines_here else 0)
    whole = int(v.get("zero_stage") or 0) < 3  # ZeRO-3's zero.Init loads each rank's shard only
    loads = (ref_here + rm_here) * C.BF16 * model_consts(model).params if whole else 0.0
    params = model_consts(model).params
    # a DeepSpeed checkpoint (--save_steps > 0): PPORayActor._save_checkpoint -> strategy.save_ckpt ->
    # DeepSpeedEngine.save_checkpoint, every rank torch.saves its ZeRO partition (runtime/engine.py
    # _save_zero_checkpoint); torch.save copies a GPU storage to the CPU one at a time (torch/serialization.py _save),
    # the largest the fp32 master partition of a parameter group: 4 B x P / actor GPUs (stage_1_and_2.py
    # single_partition_of_fp32_groups). Already on the CPU with --adam_offload: no copy. A colocated critic saves at
    # the same time (critic.save_checkpoint.remote before the actor's save_ckpt).
    partition = C.FP32 * params / (actor_gpus if int(v.get("zero_stage") or 0) >= 1 else 1)
    ckpt = 0.0 if int(v.get("save_steps") or -1) <= 0 or v.get("adam_offload") else partition * (1 + critic_here)
    # save_model, at the end of training (train_ppo_ray.py: ray.get(actor_model.async_save_model())) and at each save
    # with --save_hf_ckpt: the whole bf16 model on the CPU, cloned on every rank below ZeRO-3 from 0.7.5
    # (versions.Release.save_clones_every_rank), else gathered onto rank 0
    clones = bool(v.get("save_clones_every_rank", True)) and int(v.get("zero_stage") or 0) < 3
    whole = C.BF16 * params
    # vLLM V0 (the pinned vLLM before 0.8, or VLLM_USE_V1=0): every engine worker allocates EngineArgs' default
    # swap_space of pinned CPU KV blocks; vllm_engine.py create_vllm_engines passes none (read at 0.5.9, 0.6.2, 0.6.3).
    # train_ppo_ray.py creates the engines before it loads the models (their Ray actors build them meanwhile; with
    # --vllm_enable_sleep the driver waits for them first): the swap space is there at start-up
    swap = VLLM_V0_SWAP_BYTES if v.get("vllm_v0") and engine_gpus else 0.0
    node_gpus, others, other_loads, engines_on_node, share = _node_groups(v, model, actor_gpus, engine_gpus,
                                                                          engines_here)
    return HostLayout(processes_per_gpu=per_gpu, other_loads_per_gpu=loads, engine_swap_per_gpu=swap,
                      node_gpus=node_gpus, other_processes=others, other_startup_loads=other_loads,
                      engine_gpus_on_node=engines_on_node,
                      critic_group=_group_on_node(v, "critic", all_, share),
                      critic_node=_critic_node(v, all_, share, node_gpus),
                      critic_node_processes=1.0 + (bool(v.get("need_reward_model"))
                                                   and bool(v.get("colocate_critic_reward"))),
                      ref_group=_group_on_node(v, "ref", all_ or bool(v.get("colocate_actor_ref")), share),
                      engines_built_at_load=True,
                      limit_share=int(v["ray_kill_permille"]) / 1000 if v.get("ray_kill_permille") else HOST_LIMIT_SHARE,
                      engines_asleep_at_load=bool(v.get("vllm_sleep")),
                      save_bytes_per_gpu=max(ckpt, whole if clones else 0.0),
                      save_rank0_bytes=0.0 if clones else whole,
                      # --deepspeed_enable_sleep: offload_deepspeed_states pins the optimizer's states on the CPU
                      # (utils/deepspeed/deepspeed_utils.py, 0.6.2; costmodel/host.py _deepspeed_offloaded)
                      ds_offload_states_pinned=True, ds_offload_states_lp_grads=bool(v.get("ds_sleep_lp_grads")),
                      # get_train_ds_config sets offload_optimizer pin_memory True (0.4.0-0.11.2), on the DeepSpeed
                      # the release's wheel pins
                      ds_offload_pin_memory=True, deepspeed=_deepspeed_release(v))


def cost_spec(model: ModelCard, gpu: GPU) -> CostSpec:
    return quantized_cost_spec(CostSpec(
        framework="openrlhf",
        plan=lambda values, phase: make_plan(values, phase, model, gpu),
        memory_inputs=MEMORY_INPUTS,
        time_inputs=TIME_INPUTS,
        phases_run=phases_run,
        samples=lambda values: int(values["rollout_batch_size"]) * int(values["n"]),
        bool_names=(bool_names(VARIABLES)
                    | {"ds_sleep", "vllm_eager", "grad_accum_fp32", "logits_gather", "logits_fp32_model",
                       "colocate_lowers_gmu", "vllm_graphs_in_budget", "sync_wakes_weights_only",
                       "save_clones_every_rank", "vllm_v0", "ds_sleep_lp_grads", "hf_generate", "flash_attn",
                       "vllm_micro_calls", "one_world", "ds_overlap_comm"}),
        unread=unread,
        optional=optional_names(VARIABLES),
        concurrency=concurrency,
        concurrency_inputs=("colocate_all", "colocate_actor_ref", "colocate_critic_reward", "ds_sleep", "async_train",
                            "one_world", "experience_order"),
        pipeline=pipeline,
        host_layout=lambda values: host_layout(values, model),
    ))
