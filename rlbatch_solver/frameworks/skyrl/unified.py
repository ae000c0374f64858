"""SkyRL's unified ``skyrl`` package (PyPI skyrl 0.4.0; ``-m skyrl.train.entrypoints.main_base``) read in the
skyrl-train 0.3.1 names our SkyRL rules read.

The unified package moved the inference engine's keys under ``generator.inference_engine`` and changed some defaults;
its config is a dataclass (skyrl 0.4.0 wheel, skyrl/train/config/config.py: ``InferenceEngineConfig``,
``GeneratorConfig``, ``PlacementConfig``, ``TrainerConfig``) that ``SkyRLTrainConfig.from_cli_overrides`` fills from
the command line's dotted overrides. Each key we read maps to one of skyrl-train 0.3.1's (``RENAMED``), settled by the
two configs: the same field of the same meaning, the engine's keys one level down. Where a default changed
(``DEFAULTS``), a key the script leaves unset is written in with the unified package's default, so that the 0.3.1
rules see the run the unified package starts. The rules stay skyrl-train 0.3.1's: the note says so.
"""

from __future__ import annotations

from typing import Sequence

ENGINE = "generator.inference_engine."
# the unified package's key -> skyrl-train 0.3.1's (ppo_base_config.yaml), for the keys rules.py ROWS read
RENAMED = {
    f"{ENGINE}num_engines": "generator.num_inference_engines",
    f"{ENGINE}tensor_parallel_size": "generator.inference_engine_tensor_parallel_size",
    f"{ENGINE}pipeline_parallel_size": "generator.inference_engine_pipeline_parallel_size",
    f"{ENGINE}data_parallel_size": "generator.inference_engine_data_parallel_size",
    f"{ENGINE}expert_parallel_size": "generator.inference_engine_expert_parallel_size",
    f"{ENGINE}backend": "generator.backend",
    f"{ENGINE}gpu_memory_utilization": "generator.gpu_memory_utilization",
    f"{ENGINE}max_num_batched_tokens": "generator.max_num_batched_tokens",
    f"{ENGINE}max_num_seqs": "generator.max_num_seqs",
    f"{ENGINE}enforce_eager": "generator.enforce_eager",
    # InferenceEngineConfig.async_engine (skyrl/train/config/config.py; 0.3.1's generator.async_engine)
    f"{ENGINE}async_engine": "generator.async_engine",
    # from_cli_overrides: "trainer.use_sample_packing has been renamed to trainer.remove_microbatch_padding"
    "trainer.remove_microbatch_padding": "trainer.use_sample_packing",
}
# strategy names: validate_cfg "trainer.strategy='fsdp2' has been renamed to 'fsdp'" (FSDP2 either way); 0.3.1's
# "fsdp" was FSDP1
STRATEGIES = {"fsdp": "fsdp2", "fsdp2": "fsdp2", "megatron": "megatron"}
STRATEGY = "trainer.strategy"
# defaults of the unified package that differ from skyrl-train 0.3.1's, in 0.3.1's keys (PlacementConfig
# *_num_gpus_per_node 1, was 4; InferenceEngineConfig tensor_parallel_size 1, was 4, enforce_eager False, was True;
# TrainerConfig strategy "fsdp", FSDP2, was "fsdp2")
DEFAULTS = {
    "trainer.placement.policy_num_gpus_per_node": 1,
    "trainer.placement.ref_num_gpus_per_node": 1,
    "trainer.placement.critic_num_gpus_per_node": 1,
    "generator.inference_engine_tensor_parallel_size": 1,
    "generator.enforce_eager": False,
    STRATEGY: "fsdp2",
}
# the unified entry points we read: the package's own, and its DAPO example's (a main_base subclass whose config adds
# the DAPO keys)
ENTRY_MODULES = ("skyrl.train.entrypoints.main_base", "examples.train.algorithms.dapo.main_dapo")


def to_skyrl_train(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """A unified-package command's arguments in skyrl-train 0.3.1's names, with the unified package's defaults
    written in where they differ and the script sets none; and what was done, in words (one note)."""
    out: list[str] = []
    renamed: list[str] = []
    given: set[str] = set()
    for arg in args:
        key, eq, value = arg.partition("=")
        bare = key.lstrip("+")
        if eq and bare in RENAMED:
            renamed.append(f"{bare} as {RENAMED[bare]}")
            bare = RENAMED[bare]
            arg = f"{bare}={value}"
        elif eq and bare == STRATEGY and value.strip("'\"") in STRATEGIES:
            arg = f"{bare}={STRATEGIES[value.strip(chr(39) + chr(34))]}"
        given.add(bare)
        out.append(arg)
    added = [f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in DEFAULTS.items() if k not in given]
    note = ("SkyRL's unified skyrl package (skyrl 0.4.0's config): checked with the skyrl-train 0.3.1 rules, its keys "
            "read as 0.3.1's (" + (", ".join(renamed) or "none renamed") + "; trainer.strategy=fsdp is FSDP2, 0.3.1's "
            "fsdp2), and its defaults that differ from 0.3.1's taken (" + (", ".join(added) or "all set") + "); "
            "recommend prints and writes its answer in the unified package's names.")
    return out + added, [note]


def from_skyrl_train(items: Sequence[str]) -> list[str]:
    """An answer's ``key=value`` items (and ``(drop key)`` items) in the unified package's names, for ``--write`` to
    put in its script: each 0.3.1 name of ``RENAMED`` back to the unified key, trainer.strategy=fsdp2 as fsdp."""
    back = {old: new for new, old in RENAMED.items()}
    out = []
    for item in items:
        key, eq, value = item.partition("=")
        if eq and key.lstrip("+") in back:
            item = f"{back[key.lstrip('+')]}={value}"
        elif eq and key == STRATEGY and value == "fsdp2":
            item = f"{STRATEGY}=fsdp"
        else:
            for old, new in back.items():
                item = item.replace(f"(drop {old})", f"(drop {new})")
        out.append(item)
    return out
