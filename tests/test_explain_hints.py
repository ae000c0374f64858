"""Every message ``explain`` knows says, in plain words, what it means and the one setting to change.

A pattern without a hint printed its rule's message with <placeholders> for the numbers the pasted line does not
carry; each now has a hint in its framework's own key syntax, which must hold on its own example's numbers and
agree with the fix ``explain`` proposes when the config comes with it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import test_openrlhf
import test_skyrl
import test_swift
import yaml

from clirun import run
from rlbatch_solver.api import explain
from rlbatch_solver.frameworks.error_text import all_patterns
from test_verl_rules import SEED_4090, replace

PATTERNS = all_patterns()
DATA = Path(__file__).resolve().parent / "data"
# a config key as a framework spells it: a flag (--vllm_mode, --train.batch_size, --max-tokens-per-gpu), a dotted
# key (worker.rollout.n, trainer.strategy=fsdp2) or an underscore name (ppo_micro_batch_size_per_gpu)
KEY = re.compile(r"--[a-z][\w.-]*|\b[a-z]\w*\.[a-z]\w*|\b[a-z]+_[a-z_]+")


def _names(pattern) -> dict[str, str]:
    """The numbers and names the pattern picks out of its own example."""
    m = pattern.match(pattern.example)
    return {k: v for k, v in m.groupdict().items() if v is not None}


@pytest.mark.parametrize("pattern", PATTERNS, ids=lambda p: f"{p.framework}:{p.rules[0]}")
def test_every_message_has_a_hint_naming_what_to_change(pattern):
    assert pattern.hint is not None, f"no plain-words hint for {pattern.framework}'s message: {pattern.example!r}"
    said = pattern.explain(_names(pattern))
    assert said, "the hint fails on its own example's numbers (a name it reads that the pattern does not pick out)"
    assert "{" not in said and "<" not in said, said  # numbers filled in, no placeholders
    assert KEY.search(said), f"the hint names no config key: {said}"
    assert len(said) <= 480, f"a hint is one or two sentences ({len(said)} characters): {said}"


def test_a_hint_reads_the_section_a_verl_message_names():
    """verl's mutual-exclusion messages name actor, critic, the rollout or the ref: the hint says that section's
    keys in verl's own override syntax, and its switch for token-packed micro batches."""
    rollout = explain("[actor_rollout_ref.rollout] Please set at least one of "
                      "'actor_rollout_ref.rollout.log_prob_micro_batch_size' or "
                      "'actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu'.")
    assert "set actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu" in rollout.meaning[0]
    critic = explain("ValueError: [critic] You have set both 'critic.ppo_micro_batch_size' AND "
                     "'critic.ppo_micro_batch_size_per_gpu'.")
    assert "remove critic.ppo_micro_batch_size and keep only ppo_micro_batch_size_per_gpu" in critic.meaning[0]


def test_an_old_openrlhf_flag_is_named_with_its_new_name():
    said = explain("train_ppo_ray.py: error: unrecognized arguments: --actor_num_gpus_per_node 4",
                   framework="openrlhf").meaning[0]
    assert said.startswith("--actor_num_gpus_per_node is --actor.num_gpus_per_node since OpenRLHF 0.10.2"), said


def _broken(framework_dir: str):
    """The broken configs of tests/data/<fw>/broken.yaml whose expected rule a pattern maps to, with the message."""
    cases = yaml.safe_load((DATA / framework_dir / "broken.yaml").read_text())
    for name, case in cases.items():
        if "expect" not in case:  # a config without a message of its own (the fix's examples)
            continue
        rule, fw = case["expect"]["rule"], case.get("framework", framework_dir)
        found = sorted((p for p in PATTERNS if rule in p.rules), key=lambda p: p.framework != fw.split("==")[0])
        if found:
            yield pytest.param(framework_dir, fw, case, found[0], id=name)


def _norm(text: str) -> str:
    return text.replace(".", "_").replace("-", "_")


@pytest.mark.parametrize("framework_dir, framework, case, pattern", [*_broken("swift"), *_broken("openrlhf")])
def test_the_hint_names_the_keys_the_fix_changes(framework_dir, framework, case, pattern):
    """With the config that printed the message, the fix ``explain`` proposes changes only keys the hint names
    (ms-swift's FAQ messages, OpenRLHF issue 346): the hint and the rule's fix point at the same setting."""
    tokens = {"swift": test_swift, "openrlhf": test_openrlhf}[framework_dir].tokens(case["flags"])
    r = explain(pattern.example, framework=framework, config=tokens, gpus=case.get("gpus"), time_limit_s=10)
    said = " ".join(r.meaning)
    changed = [key for key, _, _ in r.fix.diff] if r.fix else []
    assert all(_norm(key) in _norm(said) for key in changed), (changed, said)


_SKYRL_PPO = test_skyrl.BASE + ["trainer.critic.model.path=Qwen/Qwen2.5-1.5B-Instruct",
                               "trainer.algorithm.advantage_estimator=gae", "trainer.placement.critic_num_gpus_per_node=4"]
_SKYRL_SMALL = [t for t in test_skyrl.BASE if not t.startswith(("generator.n_samples", "trainer.policy_mini",
                                                                "trainer.train_batch", "trainer.micro_"))]


@pytest.mark.parametrize("framework, message, config, gpus", [
    ("verl", "ValueError: train_batch_size (16) must be >= actor.ppo_mini_batch_size (32)",
     replace(SEED_4090, "data.train_batch_size", 16), 4),
    ("skyrl", "AssertionError: train_batch_size 1024 should be divisible by critic_mini_batch_size 300",
     _SKYRL_PPO + ["trainer.critic_mini_batch_size=300"], 4),
    ("skyrl", "AssertionError: Invalid policy_mini_batch_size_per_gpu: 0. mini_batch_size=1, n_samples_per_prompt=2, "
     "dp_size=4", _SKYRL_SMALL + ["generator.n_samples_per_prompt=2", "trainer.policy_mini_batch_size=1",
                                 "trainer.train_batch_size=4", "trainer.micro_train_batch_size_per_gpu=1",
                                 "trainer.micro_forward_batch_size_per_gpu=1"], 4),
    ("skyrl", "AssertionError: num_attention_heads 12 must be divisible by ulysses_sp_size 8",
     test_skyrl.BASE + ["trainer.policy.sequence_parallel_size=8"], 8),
    ("easyr1", "ValueError: Rollout batch size must be divisible by actor global batch size.",
     ["config=examples/config.yaml", "worker.actor.global_batch_size=96", "data.rollout_batch_size=500"], 8),
], ids=["verl-mini-over-train", "skyrl-critic-mini", "skyrl-mini-under-dp", "skyrl-ulysses-heads", "easyr1-global"])
def test_the_hint_names_the_keys_the_fix_changes_elsewhere(framework, message, config, gpus):
    r = explain(message, framework=framework, config=config, gpus=gpus, time_limit_s=10)
    changed = [key for key, _, _ in r.fix.diff]
    assert changed and all(_norm(key) in _norm(" ".join(r.meaning)) for key in changed), (changed, r.meaning)


def test_the_swift_megatron_faq_message_prints_its_hint_and_a_fix_it_names():
    """ms-swift's Megatron GRPO FAQ: 16 completions in groups of 4 are 4 prompts for 8 data-parallel ranks."""
    flags = yaml.safe_load((DATA / "swift" / "broken.yaml").read_text())["megatron_rollout_prompts_vs_dp"]["flags"]
    res = run("explain", "--framework", "swift-megatron", "--gpus", "8",
              "ValueError: num_rollout_prompt (4) = generation_batch_size (16) // num_generations (4) must be "
              "divisible by dp_size (8). Please adjust generation_batch_size/steps_per_generation/num_generations.",
              "--", *test_swift.tokens(flags))
    assert res.returncode == 0, res.stdout + res.stderr
    words = next(line for line in res.stdout.splitlines() if line.startswith("in plain words:"))
    assert "the 4 prompts of a rollout" in words and "8 data-parallel ranks" in words, words
    assert "--steps_per_generation 1 -> --steps_per_generation 2" in res.stdout, res.stdout


@pytest.mark.parametrize("message, framework, expect", [
    # verl 0.9.1 ActorConfig.validate, the numbers of open-proof-corpus issue 2 (train 16 < mini 128)
    ("ValueError: train_batch_size (16) must be >= actor.ppo_mini_batch_size (128)", "verl",
     "lower ppo_mini_batch_size to at most 16, or raise data.train_batch_size to at least 128"),
    # SkyRL 0.3.1 validate_batch_sizes, its own example numbers
    ("AssertionError: Invalid policy_mini_batch_size_per_gpu: 0. mini_batch_size=1, n_samples_per_prompt=2, "
     "dp_size=4", "skyrl", "raise trainer.policy_mini_batch_size to at least 2"),
    # megatron-core through ms-swift: Qwen2.5-7B's 28 heads on TP 8
    ("ValueError: num_attention_heads (28) must be a multiple of tensor_model_parallel_size (8).", "swift-megatron",
     "use a divisor of 28: 1, 2, 4, 7, 14, 28"),
    # slime's rollout placement: one 8-GPU engine on 4 rollout GPUs
    ("ValueError: Invalid rollout server group GPU placement: worker_type=regular, gpu_offset=0, "
     "num_gpus_per_engine=8, num_gpus_per_engine_on_node=8, num_engines=1, required_gpu_slots=8, "
     "len(reordered_gpu_ids)=4, rollout_num_gpus=4, rollout_num_gpus_per_engine=8.", "slime",
     "the 4 rollout GPUs (--rollout-num-gpus) hold no SGLang engine of 8 GPUs"),
])
def test_real_messages_print_their_hint(message, framework, expect):
    res = run("explain", "--framework", framework, message)
    assert res.returncode == 0, res.stdout + res.stderr
    words = next(line for line in res.stdout.splitlines() if line.startswith("in plain words:"))
    assert expect in " ".join(words.split()), words
