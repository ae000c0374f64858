"""The frameworks by name: one line per framework, imported on first use (keeps start-up fast)."""

from __future__ import annotations

import copy
import importlib
from typing import NamedTuple

from ..errors import InputError, did_you_mean
from .base import Framework

# name (as --framework takes it) -> "module:Class" of its Framework; adding a framework is one line here
FRAMEWORKS: dict[str, str] = {
    "verl": "rlbatch_solver.frameworks.verl.fsdp:VerlFramework",
    "verl-megatron": "rlbatch_solver.frameworks.verl.megatron:VerlMegatronFramework",
    "openrlhf": "rlbatch_solver.frameworks.openrlhf.framework:OpenRLHFFramework",
    "swift": "rlbatch_solver.frameworks.swift.framework:SwiftFramework",
    "swift-megatron": "rlbatch_solver.frameworks.swift.framework:SwiftMegatronFramework",
    "trl": "rlbatch_solver.frameworks.trl.framework:TrlFramework",
    "unsloth": "rlbatch_solver.frameworks.trl.unsloth:UnslothFramework",
    "easyr1": "rlbatch_solver.frameworks.easyr1.framework:EasyR1Framework",
    "slime": "rlbatch_solver.frameworks.slime.framework:SlimeFramework",
    "skyrl": "rlbatch_solver.frameworks.skyrl.framework:SkyRLFramework",
}



class EntryWords(NamedTuple):
    """What starts a framework's run in a launch script: its ``Framework``'s ``entry_modules``, ``entry_commands``,
    ``entry_flags`` and ``companion_entries``."""

    modules: tuple[str, ...] = ()
    commands: tuple[tuple[str, str], ...] = ()
    flags: tuple[str, ...] = ()
    companions: tuple[tuple[str, ...], ...] = ()


# name -> the words that start its run, the same as its Framework's (tests/test_framework_contract.py keeps them so):
# launch_script.py tells a script's framework from these and imports that one only (importing all ten took about
# 0.04 CPU s of every check of a script and every recommend, which reads its printed command back)
ENTRY_WORDS: dict[str, EntryWords] = {
    "verl": EntryWords(modules=("verl.trainer.main_ppo", "verl.experimental.fully_async_policy.fully_async_main",
                                "verl.experimental.one_step_off_policy.main_ppo")),
    "verl-megatron": EntryWords(),
    "openrlhf": EntryWords(modules=("openrlhf.cli.train_ppo_ray",)),
    "swift": EntryWords(commands=(("swift", "rlhf"),)),
    "swift-megatron": EntryWords(commands=(("megatron", "rlhf"),)),
    "trl": EntryWords(modules=("trl.scripts.grpo", "open_r1.grpo", "examples.scripts.grpo", "examples.scripts.grpo_vlm",
                               "examples.scripts.grpo_agent", "examples.scripts.grpo_continuous_batching"),
                      commands=(("trl", "grpo"),), companions=(("trl", "vllm-serve"),)),
    "unsloth": EntryWords(modules=("unsloth_grpo",), companions=(("trl", "vllm-serve"),)),
    "easyr1": EntryWords(modules=("verl.trainer.main",)),
    "slime": EntryWords(commands=(("python3", "train.py"), ("python", "train.py"), ("python3", "train_async.py"),
                                  ("python", "train_async.py")), flags=("--rollout-batch-size",)),
    "skyrl": EntryWords(modules=("skyrl_train.entrypoints.main_base", "examples.algorithms.dapo.main_dapo",
                                 "examples.tis_correction.main_tis_dapo")),
}

_cache: dict[str, Framework] = {}


def split_name(name: str) -> tuple[str, str | None]:
    """``name==version`` (or ``name@version``) -> (the framework's name, the version named, None when none is),
    lower case."""
    text = name.strip().lower()
    for sep in ("==", "@"):
        if sep in text:
            key, _, version = (part.strip() for part in text.partition(sep))
            return key, version
    return text, None


def get_framework(name: str) -> Framework:
    """A framework by name; ``name==version`` (or ``name@version``) also checks that we
    follow that version of it."""
    key, version = split_name(name)
    if key not in FRAMEWORKS:
        raise InputError(
            "framework", f"unknown framework '{name}'.{did_you_mean(key, FRAMEWORKS)}",
            f"use one of: {', '.join(FRAMEWORKS)}.",
        )
    if key not in _cache:
        module, _, cls = FRAMEWORKS[key].partition(":")
        _cache[key] = getattr(importlib.import_module(module), cls)()
    fw = _cache[key]
    if version is None:
        return fw
    packs = fw.versions
    if len(packs) > 1:  # a framework with rule packs per version (verl: frameworks/verl/versions.py)
        pack, note = fw.resolve_version(version)
        if pack is not None:
            return _pinned(fw, key, pack, note).with_named_release(version)
    if version.lstrip("v") != fw.version:
        known = ", ".join(packs)
        raise InputError(
            "framework", f"our {key} rules follow version{'s' if len(packs) > 1 else ''} {known}, not {version}: "
            "rules change between versions (batch checks move, defaults change), so we will not guess.",
            f"check against {key}=={packs[0]} (pass --framework {key}), or one we follow.",
        )
    return fw


def _pinned(fw: Framework, key: str, pack: str, note: str | None) -> Framework:
    """``fw`` pinned to one of its versions (cached), with ``note`` saying why when the user named another."""
    cached = _cache.get(f"{key}=={pack}")
    if cached is None:
        cached = _cache[f"{key}=={pack}"] = type(fw).for_version(pack)
    if note:
        cached = copy.copy(cached)
        cached.version_note = note
    return cached
