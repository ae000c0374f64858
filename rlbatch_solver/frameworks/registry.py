"""The frameworks by name: one line per framework, imported on first use (keeps start-up fast)."""

from __future__ import annotations

import copy
import importlib

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
