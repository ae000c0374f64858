"""explain on a CUDA out-of-memory message with a verl GRPO script for one 24 GB GPU that offloads params and optimizer
(verl loads both back for the update): proven at once that nothing fix may change fits (the least memory of the
actor update anywhere), one consistent answer, only the script's own keys named as held, and LoRA offered as what
fits. Speed: benchmarks/bench_explain_oom.py."""

from __future__ import annotations

import io

from rich.console import Console

from rlbatch_solver import api
from rlbatch_solver.catalog.gpus import load_gpu
from rlbatch_solver.catalog.models import load_model
from rlbatch_solver.costmodel.tables import build_cost_terms, least_memory
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.repair_policies import policy_for
from rlbatch_solver.render import print_explain

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.64 GiB. GPU 0 has a total capacity of "
       "23.65 GiB of which 2.02 GiB is free.")
SCRIPT = [
    "algorithm.adv_estimator=grpo", "data.train_batch_size=32", "data.max_prompt_length=512",
    "data.max_response_length=1024", "actor_rollout_ref.model.path=Qwen/Qwen2.5-1.5B-Instruct",
    "actor_rollout_ref.model.use_remove_padding=True", "actor_rollout_ref.actor.ppo_mini_batch_size=16",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4", "actor_rollout_ref.actor.use_kl_loss=True",
    "actor_rollout_ref.model.enable_gradient_checkpointing=True",
    "actor_rollout_ref.actor.fsdp_config.param_offload=True", "actor_rollout_ref.actor.fsdp_config.optimizer_offload=True",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8", "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
    "actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.rollout.gpu_memory_utilization=0.4",
    "actor_rollout_ref.rollout.n=5", "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8",
    "actor_rollout_ref.ref.fsdp_config.param_offload=True", "trainer.n_gpus_per_node=1", "trainer.nnodes=1",
]


def _explained():
    report = api.explain(OOM, framework="verl", config=SCRIPT, model="qwen2.5-1.5b", gpu="rtx4090", time_limit_s=10)
    out = io.StringIO()
    print_explain(Console(file=out, width=200), report)
    return report.oom.fix, out.getvalue()


def test_a_full_fine_tune_that_fits_nowhere_is_proven_so_and_lora_is_offered():
    fix, text = _explained()
    assert fix.status == "infeasible"
    least, usable = fix.memory_floor["verl.memory.actor_update"]
    assert least > usable
    assert "No repair exists" in text and "may exist" not in text and "cannot all hold" not in text
    assert fix.relaxations[0].endswith("actor_rollout_ref.model.lora_rank=32")
    assert not any("CPU offload" in r for r in fix.relaxations)  # the script offloads both already
    # a relaxation tried and refused is not offered again as a hope
    assert "a shorter max response length" not in fix.relaxations
    given = {a.split("=")[0] for a in SCRIPT}
    assert fix.pinned_in_conflict and set(fix.pinned_in_conflict) <= given


def test_the_least_memory_at_the_smallest_growing_values_is_the_least_anywhere():
    """least_memory(grows=...) reads only the smallest value of the keys memory grows with: on a space small enough
    to scan whole, the same least as the full scan, phase by phase."""
    fw = get_framework("verl")
    values = fw.to_values(fw.parse(SCRIPT)[0], gpus=1, model=load_model("qwen2.5-1.5b"))
    policy = policy_for(fw.name, fw.ruleset, values)
    grows = policy.grows_memory | policy.batch_grows_memory
    domains = {k: [v] for k, v in values.items()}
    domains.update({"train_batch_size": [16, 32, 64], "actor_mini": [8, 16], "actor_micro_per_gpu": [1, 2, 4],
                    "n": [4, 5], "actor_dyn": [False, True], "actor_max_tokens": [1536, 3072],
                    "logprob_micro_per_gpu": [2, 8], "param_offload": [False, True]})
    spec = fw.cost_spec(load_model("qwen2.5-1.5b"), load_gpu("rtx4090"))
    terms = build_cost_terms(spec, domains, time=False)
    full = least_memory(terms.derived, domains)
    assert least_memory(terms.derived, domains, grows=grows) == full
    assert all(v is not None for v in full.values())
