"""EasyR1's cost terms: verl's (frameworks/verl/cost.py), read through the key map.

EasyR1's workers are verl's FSDP workers with fewer switches, so a step is priced as verl prices it once the
verl variables EasyR1 does not have are filled in: from EasyR1's own keys where EasyR1 derives them (``FILLS``: the
dynamic-batching token budget is micro size x longest sample, verl/workers/actor/dp_actor.py:198 and 242; the
reference copies the actor's experience micro size and Ulysses size, verl/workers/config.py WorkerConfig.post_init;
FSDP's CPU offload keeps the states on the host like the manual offload), or at the value EasyR1 always runs
(``FIXED``: one colocated pool, vLLM only, no LoRA in 0.3.2). The phase-input lists are verl's with every filled
name replaced by the EasyR1 names it is computed from, so the solver tables stay exact.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping

from ...catalog.gpus import GPU
from ...catalog.models import ModelCard
from ...costmodel.tables import CostSpec
from ...rules.base import Value, bool_names, optional_names
from ..cost_common import mapped_inputs, mapped_unread, mapped_values
from ..verl import cost as verl_cost
from .rules import VARIABLES

_P, _R = "max_prompt_length", "max_response_length"


def _budget(micro: str) -> tuple[tuple[str, ...], Callable[[Mapping[str, Value]], Value]]:
    return (micro, _P, _R), lambda v: int(v[micro]) * (int(v[_P]) + int(v[_R]))


def _either(*names: str) -> tuple[tuple[str, ...], Callable[[Mapping[str, Value]], Value]]:
    return names, lambda v: any(bool(v.get(n)) for n in names)


def _same(name: str) -> tuple[tuple[str, ...], Callable[[Mapping[str, Value]], Value]]:
    return (name,), lambda v: v[name]


# verl variable -> (the EasyR1 variables it is computed from, how)
FILLS: dict[str, tuple[tuple[str, ...], Callable[[Mapping[str, Value]], Value]]] = {
    "logprob_dyn": _same("actor_dyn"),
    "ref_dyn": _same("actor_dyn"),
    "ref_sp": _same("actor_sp"),
    "ref_micro_per_gpu": _same("logprob_micro_per_gpu"),
    "actor_max_tokens": _budget("actor_micro_per_gpu"),
    "logprob_max_tokens": _budget("logprob_micro_per_gpu"),
    "ref_max_tokens": _budget("logprob_micro_per_gpu"),
    "critic_max_tokens": _budget("critic_micro_per_gpu"),
    # FSDP's CPUOffload(offload_params=True) keeps parameters, gradients and (so) the optimizer's states on the host
    "param_offload": _either("param_offload", "actor_cpu_offload"),
    "optimizer_offload": _either("optimizer_offload", "actor_cpu_offload"),
    "ref_param_offload": _either("ref_param_offload", "ref_cpu_offload"),
    "critic_param_offload": _either("critic_param_offload", "critic_cpu_offload"),
    "critic_optimizer_offload": _either("critic_optimizer_offload", "critic_cpu_offload"),
    # unset: vLLM gets prompt + response (vllm_rollout_spmd.py:113)
    "max_model_len": (("max_model_len", _P, _R), lambda v: v.get("max_model_len") or int(v[_P]) + int(v[_R])),
}
# verl variables with the one value EasyR1 0.3.2 runs: the hybrid engine on all GPUs (no async placements),
# vLLM (no SGLang), the engine asleep between rollouts (enable_sleep_mode=True, vllm_rollout_spmd.py:122), vLLM's
# default max_num_seqs (EasyR1 does not pass it), no LoRA, no entropy chunking
FIXED: dict[str, Value] = {
    "async_mode": 0, "hybrid_engine": True, "rollout_nnodes": 0, "rollout_gpus_per_node": None, "partial_rollout": True,
    "sync_steps": 1, "bypass_logprob": False, "staleness_permille": 0, "rollout_sglang": False,
    "free_cache_engine": True, "max_num_seqs": 256, "lora_rank": 0, "entropy_chunking": False,
    "entropy_checkpointing": False, "critic_dyn": True, "critic_train_max_tokens": None,
    "critic_micro": None, "actor_micro": None, "logprob_micro": None, "ref_micro": None,
}


def verl_values(values: Mapping[str, Value]) -> dict[str, Any]:
    """EasyR1 rule values -> the verl values its cost terms read."""
    return mapped_values(values, FIXED, FILLS)


def _inputs(table: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """verl's phase inputs in EasyR1's variables."""
    return mapped_inputs(table, FILLS, VARIABLES)


def cost_spec(model: ModelCard, gpu: GPU) -> CostSpec:
    def plan(values: Mapping[str, Value], phase: str):
        # the sleeping engine keeps its weights in host RAM: EasyR1 sleeps vLLM at level 1
        # (verl/workers/sharding_manager/fsdp_vllm.py:147, vllm_rollout_spmd.py:127)
        # verl's gradients zeroed before each mini batch (Plan.no_grads_at_backward) are not read from EasyR1's
        # code: its gradients stay priced through the backward
        return dataclasses.replace(verl_cost.make_plan(verl_values(values), phase, model, gpu),
                                   engine_sleep_host_weights=True, no_grads_at_backward=False)

    return CostSpec(
        framework="easyr1",
        plan=plan,
        memory_inputs=_inputs(verl_cost.MEMORY_INPUTS),
        time_inputs=_inputs(verl_cost.TIME_INPUTS),
        phases_run=lambda values: verl_cost.phases_run_verl(verl_values(values)),
        unread=mapped_unread(verl_cost.unread, FIXED, FILLS, VARIABLES),
        samples=verl_cost.samples_per_step,
        bool_names=bool_names(VARIABLES),
        optional=optional_names(VARIABLES),
    )
