"""SkyRL's cost terms: verl's FSDP terms (frameworks/verl/cost.py), read through a key map.

SkyRL's FSDP workers train, score and generate as verl's do (a ZeRO-3 sharded policy, a vLLM or SGLang engine), so a
step is priced as verl prices it once the verl variables SkyRL does not have are filled in: from SkyRL's own keys
where SkyRL derives them (``FILLS``), or at the value SkyRL always runs (``FIXED``). Sources, at skyrl-train 0.3.1:

* one ``trainer.update_epochs_per_batch`` gives the passes of both updates (verl's actor and critic ppo_epochs);
* one micro train size serves the policy and the critic, one forward size the policy, the reference and the critic's
  values (``trainer.micro_train_batch_size_per_gpu`` / ``micro_forward_batch_size_per_gpu``); no dynamic batching,
  so the critic's token budget (verl's critic always packs by tokens) is micro x longest sample;
* ``colocate_all=true``: the models leave the GPU while the engines generate (trainer.py:RayPPOTrainer.train,
  ``offload_to_cpu`` / ``backload_to_gpu``; the optimizer after each step with ``optimizer_config.offload_after_step``),
  and the engines sleep (entrypoints/main_base.py: ``inference_engine_enable_sleep = colocate_all``) at level 2, level
  1 with LoRA (inference_engines/ray_wrapped_inference_engine.py, main_base.py ``sleep_level``), as verl 0.9.1 does;
  FSDP's ``cpu_offload`` keeps the states on the host throughout;
* ``colocate_all=false``: the engines have GPUs of their own (engines x tp x pp x dp), and the synchronous trainer
  waits for them (no pipelining): verl's one-step-off placement at staleness 0 (verl/cost.py ``placement_fields``);
* the engine's context: SkyRL passes no max_model_len, so vLLM takes the model's (verl's unset rollout.max_model_len);
* the loss: SkyRL's own logits accounting (``logits_impl="skyrl"``, costmodel/constants.py LOGIT_BYTES: bf16 logits,
  flash-attn's in-place cross entropy, entropy in chunks without grad).

A reference or critic on GPUs of their own (``colocate_policy_ref=false``, their own placement keys) is priced as
verl prices them, beside the policy on its GPUs: the larger footprint. DeepSpeed (stage 3, the only stage SkyRL
runs) shards as FSDP does. The Megatron strategy's tensor and pipeline
split is not priced here: its memory is verl's FSDP sharding over the same GPUs (docs/rules-skyrl.md says so).
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
Fill = tuple[tuple[str, ...], Callable[[Mapping[str, Value]], Value]]


def _same(name: str) -> Fill:
    return (name,), lambda v: v[name]


def _budget(micro: str) -> Fill:
    return (micro, _P, _R), lambda v: int(v[micro]) * (int(v[_P]) + int(v[_R]))


def _offload(cpu: str, after_step: str | None = None) -> Fill:
    """On the host outside its phases: FSDP's CPU offload, or (colocate_all) SkyRL's offload around generation."""
    names = ("colocate_all", cpu) + ((after_step,) if after_step else ())
    if after_step is None:
        return names, lambda v: bool(v["colocate_all"]) or bool(v[cpu])
    return names, lambda v: (bool(v["colocate_all"]) and bool(v[after_step])) or bool(v[cpu])


def _rollout_pool(v: Mapping[str, Value]) -> int:
    return int(v["num_engines"]) * int(v["rollout_tp"]) * int(v["engine_pp"]) * int(v["engine_dp"])


_SPLIT = ("colocate_all",)
# verl variable -> (the SkyRL variables it is computed from, how)
FILLS: dict[str, Fill] = {
    "ref_micro_per_gpu": _same("logprob_micro_per_gpu"),
    "critic_micro_per_gpu": _same("actor_micro_per_gpu"),
    "critic_grad_ckpt": _same("grad_ckpt"),
    # one key for both updates (workers/worker.py PolicyWorkerBase.ppo_train, CriticWorkerBase.ppo_train)
    "actor_epochs": _same("update_epochs"),
    "critic_epochs": _same("update_epochs"),
    "critic_max_tokens": _budget("actor_micro_per_gpu"),
    "param_offload": _offload("actor_cpu_offload"),
    "optimizer_offload": _offload("actor_cpu_offload", "offload_after_step"),
    "ref_param_offload": _offload("ref_cpu_offload"),
    "critic_param_offload": _offload("critic_cpu_offload"),
    "critic_optimizer_offload": _offload("critic_cpu_offload", "critic_offload_after_step"),
    # the engines sleep between rollouts only when colocated (main_base.py inference_engine_enable_sleep)
    "free_cache_engine": _same("colocate_all"),
    # colocate_all=false: a pool of their own, stages in sequence (one-step-off placement at staleness 0)
    "async_mode": (_SPLIT, lambda v: 0 if v["colocate_all"] else 3),
    "hybrid_engine": _same("colocate_all"),
    "rollout_nnodes": (_SPLIT, lambda v: 0 if v["colocate_all"] else 1),
    "rollout_gpus_per_node": (("colocate_all", "num_engines", "rollout_tp", "engine_pp", "engine_dp"),
                              lambda v: None if v["colocate_all"] else _rollout_pool(v)),
}
# verl variables with the one value SkyRL 0.3.1 runs: no dynamic batching (micro batches count samples), no
# partial rollout, no off-policy staleness, no entropy chunking, the engine's own context length
FIXED: dict[str, Value] = {
    "actor_dyn": False, "logprob_dyn": False, "ref_dyn": False, "critic_dyn": False,
    "actor_max_tokens": None, "logprob_max_tokens": None, "ref_max_tokens": None, "critic_train_max_tokens": None,
    "actor_micro": None, "logprob_micro": None, "ref_micro": None, "critic_micro": None,
    "partial_rollout": False, "sync_steps": 1, "bypass_logprob": False, "staleness_permille": 0,
    "entropy_chunking": False, "entropy_checkpointing": False, "max_model_len": None,
}


def verl_values(values: Mapping[str, Value]) -> dict[str, Any]:
    """SkyRL rule values -> the verl values its cost terms read."""
    return mapped_values(values, FIXED, FILLS)


def _inputs(table: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """verl's phase inputs in SkyRL's variables."""
    return mapped_inputs(table, FILLS, VARIABLES)


def cost_spec(model: ModelCard, gpu: GPU) -> CostSpec:
    return CostSpec(
        framework="skyrl",
        # verl's gradients zeroed before each mini batch (Plan.no_grads_at_backward) are not read from SkyRL's code:
        # its gradients stay priced through the backward
        plan=lambda values, phase: dataclasses.replace(verl_cost.make_plan(verl_values(values), phase, model, gpu),
                                                       logits_impl="skyrl", no_grads_at_backward=False),
        memory_inputs=_inputs(verl_cost.MEMORY_INPUTS),
        time_inputs=_inputs(verl_cost.TIME_INPUTS),
        phases_run=lambda values: verl_cost.phases_run_verl(verl_values(values)),
        unread=mapped_unread(verl_cost.unread, FIXED, FILLS, VARIABLES),
        samples=verl_cost.samples_per_step,
        bool_names=bool_names(VARIABLES),
        optional=optional_names(VARIABLES),
        pipeline=lambda values: verl_cost.pipeline(verl_values(values)),
    )
