"""What starts each framework's run in a launch script: the one definition of every ``Framework``'s
``entry_modules``, ``entry_commands``, ``entry_flags`` and ``companion_entries`` (base.Framework reads them from here
by name). A module of its own, importing nothing: ``launch_script.py`` tells a script's framework from this table and
imports that framework only (importing all ten took about 0.04 CPU s of every check of a script and every recommend,
which reads its printed command back)."""

from __future__ import annotations

from typing import NamedTuple


class EntryWords(NamedTuple):
    """``modules``: Python modules a run starts with ``python -m``; ``commands``: commands that start it
    (``("swift", "rlhf")``); ``flags``: one of which a generic entry command's arguments must hold to be this
    framework's (empty: the command alone decides); ``companions``: commands a run starts beside its entry point,
    as a launch script's lines begin them (their words go to ``Framework.read_companion``); ``scripts``: a script's
    bare file name (``train_ppo.py``, under ``torchrun`` or ``deepspeed`` from the folder that holds it) with the
    flags one of which its arguments must hold to be this framework's (the name alone is any project's)."""

    modules: tuple[str, ...] = ()
    commands: tuple[tuple[str, str], ...] = ()
    flags: tuple[str, ...] = ()
    companions: tuple[tuple[str, ...], ...] = ()
    scripts: tuple[tuple[str, tuple[str, ...]], ...] = ()


# verl's recipes started by their own entry points (verl/experimental/fully_async_policy/fully_async_main.py,
# verl/experimental/one_step_off_policy/main_ppo.py)
FULLY_ASYNC_ENTRY = "verl.experimental.fully_async_policy.fully_async_main"
ONE_STEP_OFF_ENTRY = "verl.experimental.one_step_off_policy.main_ppo"

# entry modules whose word stays in the arguments the framework reads: its parse tells a launcher by it (OpenRLHF's
# launcher without Ray, frameworks/openrlhf/framework.py LAUNCHER)
KEPT_MODULES = ("openrlhf.cli.train_ppo",)

# name (as registry.FRAMEWORKS lists it) -> the words that start its run
ENTRY_WORDS: dict[str, EntryWords] = {
    "verl": EntryWords(modules=("verl.trainer.main_ppo", FULLY_ASYNC_ENTRY, ONE_STEP_OFF_ENTRY)),
    # verl's entry points start a Megatron run too: launch_script reads them as verl's, whose from_script picks
    # verl-megatron by the script's own keys
    "verl-megatron": EntryWords(),
    # and the launcher without Ray (`deepspeed --module openrlhf.cli.train_ppo`, 0.4.0-0.6.1), whose word the
    # framework's parse reads (frameworks/openrlhf/framework.py LAUNCHER)
    # The script itself, run bare from its folder (`torchrun --nproc_per_node 8 train_ppo.py ...`, `deepspeed
    # train_ppo.py ...`), is any project's name: OpenRLHF's when its arguments hold a flag of train_ppo.py's own
    # parser (openrlhf/cli/train_ppo.py add_argument in the 0.4.0.post2, 0.5.9.post1 and 0.6.1 wheels: --reward_pretrain,
    # --rollout_batch_size, --micro_rollout_batch_size; versions.non_ray_flags), its word kept as the module's is
    "openrlhf": EntryWords(modules=("openrlhf.cli.train_ppo_ray", "openrlhf.cli.train_ppo"),
                           scripts=(("train_ppo.py", ("--reward_pretrain", "--rollout_batch_size",
                                                      "--micro_rollout_batch_size")),)),
    "swift": EntryWords(commands=(("swift", "rlhf"),)),
    "swift-megatron": EntryWords(commands=(("megatron", "rlhf"),)),
    # and TRL's other GRPO example scripts that read GRPOConfig from the command line (TrlParser((ScriptArguments,
    # GRPOConfig, ModelConfig)) in examples/scripts/grpo_vlm.py, grpo_agent.py and grpo_continuous_batching.py; the
    # VLM quick start of docs/source/grpo_trainer.md launches grpo_vlm.py); a server mode run starts `trl vllm-serve`
    "trl": EntryWords(modules=("trl.scripts.grpo", "open_r1.grpo", "examples.scripts.grpo", "examples.scripts.grpo_vlm",
                               "examples.scripts.grpo_agent", "examples.scripts.grpo_continuous_batching"),
                      commands=(("trl", "grpo"),), companions=(("trl", "vllm-serve"),)),
    "unsloth": EntryWords(modules=("unsloth_grpo",), companions=(("trl", "vllm-serve"),)),
    "easyr1": EntryWords(modules=("verl.trainer.main",)),
    # slime's `python3 train.py` is any project's: its parser requires --rollout-batch-size, which tells slime's apart
    "slime": EntryWords(commands=(("python3", "train.py"), ("python", "train.py"), ("python3", "train_async.py"),
                                  ("python", "train_async.py")), flags=("--rollout-batch-size",)),
    # the base entry point, and the published example entry points that run the same trainer on the same config after
    # the same validate_cfg (examples/algorithms/dapo/main_dapo.py, examples/tis_correction/main_tis_dapo.py: DAPO's
    # overlong reward shaping over BasePPOExp)
    "skyrl": EntryWords(modules=("skyrl_train.entrypoints.main_base", "examples.algorithms.dapo.main_dapo",
                                 "examples.tis_correction.main_tis_dapo",
                                 # the unified skyrl package's (launch_script._LAYOUTS reads their keys as 0.3.1's)
                                 "skyrl.train.entrypoints.main_base", "examples.train.algorithms.dapo.main_dapo")),
}
