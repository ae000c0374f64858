"""Sparse configs, in-process: every framework's batch config and a launch script of each framework that has one, with
one argument left out at a time, checked with memory (--gpus, --gpu, --model). A config that omits an optional flag
must reach the rules and the cost model with the framework's default, never a traceback: exit code 0 (valid) or 1
(invalid, with the rules and numbers), or 2 (bad input, one paragraph naming the field).

Each left-out argument is one unit: a ``key=value`` override, an environment prefix, or a ``--flag`` with its values.
The launch scripts are written back as one command line with the argument left out and read as a script (the
framework and the GPU count come from it).
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from clirun import ROOT, run
from rlbatch_solver.launch_script import parse_launch_script

MEMORY = ["--gpu", "h100", "--model", "qwen2.5-7b"]
# one batch config per framework: its batch sizes, layout and lengths, as its docs and examples set them
BASES = {
    "verl": ["data.train_batch_size=64", "actor_rollout_ref.rollout.n=8", "actor_rollout_ref.actor.ppo_mini_batch_size=32",
             "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4", "algorithm.adv_estimator=grpo",
             "data.max_prompt_length=512", "data.max_response_length=1024"],
    "verl-megatron": ["data.train_batch_size=64", "actor_rollout_ref.rollout.n=8",
                      "actor_rollout_ref.actor.ppo_mini_batch_size=32",
                      "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
                      "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2", "data.max_response_length=1024"],
    "openrlhf": ["--train.batch_size", "64", "--rollout.batch_size", "64", "--train.micro_batch_size", "4",
                 "--rollout.n_samples_per_prompt", "8"],
    "swift": ["NPROC_PER_NODE=4", "swift", "rlhf", "--rlhf_type", "grpo", "--per_device_train_batch_size", "4",
              "--num_generations", "8", "--gradient_accumulation_steps", "2", "--max_completion_length", "1024"],
    "swift-megatron": ["NPROC_PER_NODE=8", "megatron", "rlhf", "--rlhf_type", "grpo", "--micro_batch_size", "2",
                       "--global_batch_size", "64", "--num_generations", "8", "--tensor_model_parallel_size", "2",
                       "--max_completion_length", "1024"],
    "trl": ["--num_processes", "4", "--per_device_train_batch_size", "4", "--num_generations", "8",
            "--gradient_accumulation_steps", "2", "--use_vllm", "true", "--vllm_gpu_memory_utilization", "0.5",
            "--max_completion_length", "512", "--lora_r", "8"],
    "unsloth": ["--fast_inference", "true", "--load_in_4bit", "true", "--max_seq_length", "1024", "--r", "64",
                "--gpu_memory_utilization", "0.5", "--per_device_train_batch_size", "1",
                "--gradient_accumulation_steps", "1", "--num_generations", "8", "--max_prompt_length", "256",
                "--max_completion_length", "200"],
    "skyrl": ["trainer.train_batch_size=1024", "trainer.policy_mini_batch_size=256", "generator.n_samples_per_prompt=5",
              "trainer.micro_forward_batch_size_per_gpu=64", "trainer.micro_train_batch_size_per_gpu=64",
              "trainer.placement.policy_num_gpus_per_node=4", "generator.num_inference_engines=4",
              "generator.inference_engine_tensor_parallel_size=1"],
    "slime": ["--actor-num-nodes", "1", "--actor-num-gpus-per-node", "8", "--colocate", "--rollout-batch-size", "32",
              "--n-samples-per-prompt", "8", "--global-batch-size", "256", "--tensor-model-parallel-size", "2",
              "--use-dynamic-batch-size", "--max-tokens-per-gpu", "9216", "--rollout-num-gpus-per-engine", "2",
              "--rollout-max-response-len", "8192"],
    "easyr1": ["data.max_prompt_length=1024", "data.max_response_length=2048", "data.rollout_batch_size=512",
               "data.mini_rollout_batch_size=256", "worker.actor.global_batch_size=32", "worker.rollout.n=16",
               "worker.rollout.tensor_parallel_size=4", "trainer.n_gpus_per_node=8"],
}
# a published launch script per framework that has them, and the arguments (by their key) left out in turn
SCRIPTS = {
    "scripts/verl/run_qwen2-7b.sh": ("data.train_batch_size", "actor_rollout_ref.actor.ppo_micro_batch_size",
                                     "trainer.n_gpus_per_node"),
    "scripts/verl-megatron/run_qwen2-7b_math_megatron.sh": (
        "actor_rollout_ref.actor.ppo_mini_batch_size", "actor_rollout_ref.actor.megatron.tensor_model_parallel_size",
        "trainer.n_gpus_per_node"),
    "scripts/openrlhf/train_ppo_llama_ray.sh": ("--micro_train_batch_size", "--rollout_batch_size",
                                                "--actor_num_gpus_per_node"),
    "scripts/swift/gspo.sh": ("NPROC_PER_NODE", "--num_generations", "--max_completion_length"),
    "scripts/swift-megatron/dense_colocate.sh": ("NPROC_PER_NODE", "--micro_batch_size", "--global_batch_size"),
    "skyrl/run_gsm8k.sh": ("trainer.policy_mini_batch_size", "trainer.placement.policy_num_gpus_per_node",
                           "generator.num_inference_engines"),
}


def units(words: list[str]) -> list[list[str]]:
    """The words in leave-one-out units: ``--flag`` with the values after it, else one word."""
    out: list[list[str]] = []
    for w in words:
        if out and out[-1][0].startswith("--") and "=" not in out[-1][0] and not w.startswith("--") and "=" not in w:
            out[-1].append(w)
        else:
            out.append([w])
    return out


def unit_key(unit: list[str]) -> str:
    return unit[0].split("=", 1)[0]


def _outcome(args: list) -> int:
    result = run(*args)  # no exception, no traceback (clirun.run asserts both)
    assert result.returncode in (0, 1, 2), (args, result.returncode, result.stdout[-500:], result.stderr[-500:])
    return result.returncode


@pytest.mark.parametrize("framework", sorted(BASES))
def test_each_batch_argument_left_out_ends_in_0_1_or_2(framework):
    parts = units(BASES[framework])
    codes = {_outcome(["check", "-f", framework, "--gpus", "8", *MEMORY, "--",
                       *[w for j, u in enumerate(parts) if j != i for w in u]])
             for i in range(len(parts))}
    assert codes & {0, 1}, codes  # the sparse configs reach the rules, not only the input checks


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_each_batch_argument_left_out_of_a_launch_script_ends_in_0_1_or_2(name, tmp_path):
    path = ROOT / "tests" / "data" / name
    script = parse_launch_script(path.read_text(), str(path))
    parts = units(list(script.command))
    keys = SCRIPTS[name]
    left_out = [i for i, u in enumerate(parts) if unit_key(u) in keys]
    assert len(left_out) == len(keys), [unit_key(u) for u in parts]  # every key named is in the script
    for i in left_out:
        sparse = tmp_path / f"{Path(name).stem}-{i}.sh"
        sparse.write_text("#!/bin/bash\n" + shlex.join(w for j, u in enumerate(parts) if j != i for w in u) + "\n")
        _outcome(["check", sparse, *MEMORY])
