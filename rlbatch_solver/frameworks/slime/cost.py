"""slime's cost terms: verl-megatron's (frameworks/verl/cost_megatron.py), read through a key map.

slime trains with megatron-core and generates with SGLang, as verl on Megatron with ``rollout.name=sglang`` does, so
a step is priced by verl-megatron's ``make_plan`` once its variables are filled from slime's arguments (``fills``):

* the layout: Megatron's TP/PP/CP/EP/ETP as given (ETP unset: TP, megatron/training/arguments.py:validate_args);
  the reference and the critic on the actor's layout (slime builds them from the same Megatron arguments);
* batches: ``rollout_batch_size`` and ``n_samples_per_prompt`` are verl's ``train_batch_size`` and ``n``; verl's
  prompts per update (``ppo_mini_batch_size``) is slime's global batch (samples) over n; the micro batch and the
  token budgets are ``--micro-batch-size`` and ``--max-tokens-per-gpu`` (``--log-probs-max-tokens-per-gpu`` for the
  log-prob and reference forwards, unset: the same, slime_validate_args); packed sequences always (slime sets
  ``variable_seq_lengths``, slime/backends/megatron_utils/arguments.py:validate_args);
* memory switches: ``--offload-train`` (on under ``--colocate`` or ``--offload``, and always with a critic:
  slime_validate_args)
  releases the Megatron states between phases (torch_memory_saver) like verl's param and optimizer offload;
  ``--offload-rollout`` (on under ``--colocate`` or ``--offload``) releases the engine's KV cache and weights
  (``enable_memory_saver``, slime/backends/sglang_utils/sglang_engine.py) like verl's ``free_cache_engine``, with no
  host copy of the engine's weights (they are pushed again from Megatron); the reference's weights live in host
  memory and are swapped into the actor's model for its forward (slime/backends/megatron_utils/actor.py, the
  weights backuper), so they add nothing on the GPU; ``--recompute-granularity``, ``--recompute-modules`` and
  ``--optimizer-cpu-offload``/``--optimizer-offload-fraction`` as verl-megatron reads them;
* the engine: SGLang with TP ``rollout_num_gpus_per_engine // sglang_pp_size``; ``--sglang-mem-fraction-static``
  (unset: SGLang's own, costmodel/sglang_defaults.py) is the KV pool's share: SGLang's ``_profile_available_bytes``
  (model_runner_kv_cache_mixin.py, SGLang 0.5.15.post1) sizes the pool as the free memory after loading less
  ``(1 - mem_fraction_static)`` of the memory free before loading, i.e. ``mem_fraction_static x (total - what
  the trainer keeps) - weights`` (costmodel/memory.py:engine_budget); the chunked-prefill size and CUDA-graph batch
  are SGLang's defaults for the GPU; the context is ``--rollout-max-context-len`` (unset: the model's);
* placement: ``--colocate`` is verl's hybrid engine; separate rollout GPUs are verl's standalone rollout pool with
  whole batches and no staleness (slime's train.py generates, then trains).

The phase-input lists are verl-megatron's with every filled name replaced by the slime names it is computed from,
so the solver tables stay exact (tests/test_slime.py checks them).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

from ...catalog.gpus import GPU
from ...catalog.models import ModelCard
from ...costmodel import sglang_defaults
from ...costmodel.tables import CostSpec
from ...rules.base import Value, bool_names, optional_names
from ..cost_common import mapped_inputs, mapped_values
from ..verl import cost_megatron as vm
from .rules import VARIABLES

Fill = tuple[tuple[str, ...], Callable[[Mapping[str, Value]], Value]]
_P, _R = "max_prompt_length", "max_response_length"


def _same(name: str) -> Fill:
    return (name,), lambda v: v[name]


def _const(value: Value) -> Fill:
    return (), lambda v: value


def _int(v: Mapping[str, Value], name: str, default: int) -> int:
    x = v.get(name)
    return default if x is None else int(x)


def samples(v: Mapping[str, Value]) -> int:
    return int(v["train_batch_size"]) * int(v["n"])


def global_batch(v: Mapping[str, Value]) -> int:
    """Samples per optimizer step, as slime and Megatron set an unset ``--global-batch-size`` (rules.py ``gbs``)."""
    if v.get("global_batch_size") is not None:
        return int(v["global_batch_size"])
    if v.get("steps_per_rollout") is not None:
        return samples(v) // max(1, int(v["steps_per_rollout"]))
    world = int(v["actor_nodes"]) * int(v["actor_gpus_per_node"])
    dp = max(1, world // max(1, int(v["tp"]) * int(v["pp"]) * int(v["cp"])))
    return int(v["micro_batch_size"]) * dp


def rollout_pool(v: Mapping[str, Value]) -> int:
    if v.get("rollout_gpus") is not None:
        return int(v["rollout_gpus"])
    return int(v["actor_nodes"]) * int(v["actor_gpus_per_node"]) if v.get("colocate") else 0


def engine_tp(v: Mapping[str, Value]) -> int:
    return max(1, int(v["gpus_per_engine"]) // max(1, int(v.get("sglang_pp") or 1)))


_BATCH = ("train_batch_size", "n", "global_batch_size", "steps_per_rollout", "micro_batch_size", "actor_nodes",
          "actor_gpus_per_node", "tp", "pp", "cp")
_BUDGET = ("dynamic_batch", "max_tokens_per_gpu", "micro_batch_size", _P, _R)
_LP_BUDGET = ("dynamic_batch", "logprob_max_tokens", "max_tokens_per_gpu")
_ENGINE = ("gpus_per_engine", "sglang_pp")
_PLACE = ("colocate", "rollout_gpus", "actor_nodes", "actor_gpus_per_node")


def _lp_tokens(v: Mapping[str, Value]) -> Value:
    return v.get("logprob_max_tokens") or v.get("max_tokens_per_gpu")


_PACKED = ("dynamic_batch", "max_tokens_per_gpu")


def _packed(v: Mapping[str, Value]) -> bool:
    """Micro batches packed by tokens: --use-dynamic-batch-size with its --max-tokens-per-gpu budget. Without the
    budget slime stops in slime_validate_args (rule slime.args.dynamic_batch_needs_max_tokens says so; the
    budget's default is None, slime/utils/arguments.py add_data_arguments), so its memory is priced by micro
    batches of --micro-batch-size, as with static batching."""
    return bool(v.get("dynamic_batch")) and v.get("max_tokens_per_gpu") is not None


def _critic_tokens(v: Mapping[str, Value]) -> Value:
    """verl's critic always packs by tokens: slime's critic packs like the actor, by --max-tokens-per-gpu with
    dynamic batching, else by micro batches of the longest sample (slime/utils/dp_schedule.py)."""
    if _packed(v):
        return int(v["max_tokens_per_gpu"])
    return int(v["micro_batch_size"]) * (int(v[_P]) + int(v[_R]))


def fills(gpu: GPU) -> dict[str, Fill]:
    """verl-megatron variable -> (the slime variables it is computed from, how), for a GPU type (SGLang's defaults
    depend on its memory)."""

    def gmu(v: Mapping[str, Value]) -> int:
        if v.get("gmu_permille") is not None:
            return int(v["gmu_permille"])
        return int(round(1000 * sglang_defaults.mem_fraction_static(gpu.memory_bytes, engine_tp(v),
                                                                    int(v.get("sglang_pp") or 1))))

    def chunked(v: Mapping[str, Value]) -> int:
        return sglang_defaults.chunked_prefill_and_max_bs(gpu.memory_bytes, engine_tp(v))[0]

    def max_bs(v: Mapping[str, Value]) -> int:
        return sglang_defaults.chunked_prefill_and_max_bs(gpu.memory_bytes, engine_tp(v))[1]

    layout = {f"{p}{k}": _same(k) for p in ("ref_", "critic_") for k in ("tp", "pp", "cp", "ep")}
    layout.update({f"{p}etp": (("etp", "tp"), lambda v: v.get("etp") or v["tp"]) for p in ("", "ref_", "critic_")})
    return {
        "nnodes": _same("actor_nodes"),
        "gpus_per_node": _same("actor_gpus_per_node"),
        **layout,
        "first_stage_layers": _same("first_pp_layers"),
        "last_stage_layers": _same("last_pp_layers"),
        "actor_mini": (("train_batch_size", "n", *_BATCH), lambda v: max(1, global_batch(v) // int(v["n"]))),
        "critic_mini": (("train_batch_size", "n", *_BATCH), lambda v: max(1, global_batch(v) // int(v["n"]))),
        "actor_micro_per_gpu": _same("micro_batch_size"),
        "logprob_micro_per_gpu": _same("micro_batch_size"),
        "ref_micro_per_gpu": _same("micro_batch_size"),
        "critic_micro_per_gpu": _same("micro_batch_size"),
        "actor_dyn": (_PACKED, _packed),
        "logprob_dyn": (_PACKED, _packed),
        "ref_dyn": (_PACKED, _packed),
        "actor_max_tokens": _same("max_tokens_per_gpu"),
        "logprob_max_tokens": (_LP_BUDGET, _lp_tokens),
        "ref_max_tokens": (_LP_BUDGET, _lp_tokens),
        "critic_max_tokens": (_BUDGET, _critic_tokens),
        "megatron_param_offload": _same("offload_train"),
        "megatron_optimizer_offload": _same("offload_train"),
        "rollout_tp": (_ENGINE, engine_tp),
        "gmu_permille": (("gmu_permille", *_ENGINE), gmu),
        "max_num_batched_tokens": (_ENGINE, chunked),
        "max_num_seqs": (_ENGINE, max_bs),
        "free_cache_engine": _same("offload_rollout"),
        "max_model_len": _same("max_context_length"),
        "async_mode": (("colocate",), lambda v: 0 if v.get("colocate") else 3),
        "hybrid_engine": _same("colocate"),
        "rollout_nnodes": (("colocate",), lambda v: 0 if v.get("colocate") else 1),
        "rollout_gpus_per_node": (_PLACE, lambda v: None if v.get("colocate") else max(1, rollout_pool(v))),
        "vpp": _const(None),
        "ref_vpp": _const(None),
        "critic_vpp": _const(None),
    }


# verl-megatron variables with the one value slime runs: SGLang with CUDA graphs, packed sequences, the unfused
# loss, the reference's weights on the host, the critic offloaded (slime_validate_args: use_critic -> offload_train),
# synchronous generation (train.py), no LoRA; the old-log-prob forward always (MegatronTrainRayActor.train_actor skips
# it when one step trains on the whole rollout without a KL reward or a critic, can_reuse_log_probs_in_loss: that
# depends on the searched batch sizes, which the solver's phase list does not, so its time is counted: an overestimate)
FIXED: dict[str, Value] = {
    "rollout_sglang": True, "enforce_eager": False, "remove_padding": True, "use_fused_kernels": False,
    "ref_megatron_param_offload": True, "critic_megatron_param_offload": True,
    "critic_megatron_optimizer_offload": True, "pp_account_embedding": False, "pp_account_loss": False,
    "partial_rollout": False, "sync_steps": 1, "bypass_logprob": False, "staleness_permille": 0, "lora_rank": 0,
    "actor_micro": None, "logprob_micro": None, "ref_micro": None, "critic_micro": None, "critic_dyn": True,
    "critic_train_max_tokens": None,
}


def verl_values(values: Mapping[str, Value], gpu: GPU) -> dict[str, Any]:
    """slime rule values -> the verl-megatron values its cost terms read."""
    return mapped_values(values, FIXED, fills(gpu))


def _inputs(table: Mapping[str, list[str]], gpu: GPU) -> dict[str, list[str]]:
    """verl-megatron's phase inputs in slime's variables."""
    return mapped_inputs(table, fills(gpu), VARIABLES)


def _unread(phase: str, kind: str, domains: Mapping[str, Any]) -> set:
    """Nothing is dropped: a slime variable feeds several verl names (the batch, the placement), so every source a
    phase's list names is read."""
    return set()


def cost_spec(model: ModelCard, gpu: GPU) -> CostSpec:
    def plan(values: Mapping[str, Value], phase: str):
        # SGLang releases its memory (enable_memory_saver): no host copy of the engine's weights; slime's own
        # training loop (not verl's Megatron actor) is not known to wait for the GPU in every micro batch
        return dataclasses.replace(vm.make_plan(verl_values(values, gpu), phase, model, gpu),
                                   engine_sleep_host_weights=False, host_syncs_per_micro=False)

    return CostSpec(
        framework="slime",
        plan=plan,
        memory_inputs=_inputs(vm.MEMORY_INPUTS, gpu),
        time_inputs=_inputs(vm.TIME_INPUTS, gpu),
        phases_run=lambda values: vm.phases_run_verl(verl_values(values, gpu)),
        unread=_unread,
        samples=samples,
        bool_names=bool_names(VARIABLES),
        optional=optional_names(VARIABLES),
        pipeline=lambda values: vm.pipeline(verl_values(values, gpu)),
    )
