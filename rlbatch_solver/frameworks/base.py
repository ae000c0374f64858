"""What every framework provides, and the registry that finds them by name.

A framework turns pasted config (its own syntax) into rule-variable values,
builds the search space for a scenario, and prints a solution back in its own
syntax. Rules live in ``rules/``; this layer knows key names, not CP-SAT.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..catalog.models import ModelCard
from ..errors import InputError, did_you_mean
from ..rules.base import Rule, RuleSet, Value


def pow2(lo: int, hi: int) -> list[int]:
    """Powers of two in [lo, hi] (up to 2**20): the sizes people actually use."""
    return [2**i for i in range(0, 21) if lo <= 2**i <= hi]


def attention_constants(model: ModelCard) -> dict[str, int]:
    """Rule variables the model card gives: attention heads and the position limit."""
    return {
        "num_heads": model.num_attention_heads,
        "num_kv_heads": model.num_key_value_heads,
        "max_position_embeddings": model.max_position_embeddings,
    }


@dataclass
class Space:
    """Domains of the rule variables plus search-space restrictions (ties)."""

    domains: dict[str, list[Value]]
    extra_rules: list[Rule] = field(default_factory=list)
    # native keys the export should print besides the decided values (e.g. algorithm settings)
    fixed_native: dict[str, Any] = field(default_factory=dict)

    @property
    def raw_size(self) -> int:
        size = 1
        for values in self.domains.values():
            size *= len(values)
        return size


class Framework(ABC):
    name: str
    version: str
    ruleset: RuleSet
    syntax: str  # "hydra" | "flags"

    @abstractmethod
    def parse(self, tokens: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
        """Pasted arguments -> (flat native config, ignored tokens)."""

    @abstractmethod
    def to_values(self, flat: Mapping[str, Any], *, gpus: int | None, model: ModelCard | None) -> dict[str, Value]:
        """Native config -> rule-variable values with the framework's defaults."""

    @abstractmethod
    def space(self, scenario: Any, model: ModelCard | None, *, with_knobs: bool = False) -> Space:
        """Search domains for a scenario (what is fixed is a one-value domain).

        ``with_knobs`` also searches the memory/speed switches the user left
        alone (gradient checkpointing, offload, memory utilisation).
        """

    def cost_spec(self, model: ModelCard, gpu: Any):
        """How this framework's variables feed the cost model (``costmodel.tables.CostSpec``)."""
        raise InputError("framework", f"{self.name} has no cost model yet.", "use --framework verl for recommend.")

    @abstractmethod
    def export(self, solution: Mapping[str, Value], space: Space | None = None) -> list[str]:
        """A solution as paste-ready arguments in the framework's syntax."""

    def export_text(self, solution: Mapping[str, Value], space: Space | None = None) -> str:
        return " \\\n    ".join(self.export(solution, space))

    def export_yaml(self, native: list[str]) -> str | None:
        """The exported arguments as a config-file fragment, where the framework reads one."""
        return None

    def native_value(self, name: str, value: Value) -> Any:
        """A rule-variable value as the framework spells it (``*_permille`` variables are fractions x 1000)."""
        if name.endswith("_permille") and value is not None:
            return value / 1000
        return value

    def assignment(self, name: str, value: Value) -> str:
        """One variable as a paste-ready argument (``key=value`` or ``--flag value``); unset prints as null."""
        key = self.ruleset.variables[name].key
        v = self.native_value(name, value)
        text = "null" if v is None else ("True" if v is True else "False" if v is False else str(v))
        if self.syntax == "flags":
            return f"--{key} {text}"
        return f"{key}={text}"

    def native_key(self, name: str) -> str:
        """The key a variable is written under in the framework's own syntax (the diff of ``fix``)."""
        return self.ruleset.variables[name].key

    def hardware(self, values: Mapping[str, Value]) -> tuple[int, int]:
        """(total GPUs, prompt+response tokens) of a config, for repair candidates."""
        gpus = int(values.get("nnodes") or 1) * int(values.get("gpus_per_node") or 1)
        return gpus, int(values.get("max_prompt_length") or 0) + int(values.get("max_response_length") or 0)


# name -> "module:Class"; modules are imported on first use (keeps start-up fast)
FRAMEWORKS: dict[str, str] = {
    "verl": "rlbatch_solver.frameworks.verl:VerlFramework",
    "verl-megatron": "rlbatch_solver.frameworks.verl_megatron:VerlMegatronFramework",
    "openrlhf": "rlbatch_solver.frameworks.openrlhf:OpenRLHFFramework",
    "swift": "rlbatch_solver.frameworks.swift:SwiftFramework",
    "swift-megatron": "rlbatch_solver.frameworks.swift:SwiftMegatronFramework",
}

_cache: dict[str, Framework] = {}


def get_framework(name: str) -> Framework:
    """A framework by name; ``name==version`` (or ``name@version``) also checks that we
    follow that version of it."""
    text = name.strip().lower()
    key, version = text, None
    for sep in ("==", "@"):
        if sep in text:
            key, _, version = (part.strip() for part in text.partition(sep))
            break
    if key not in FRAMEWORKS:
        raise InputError(
            "framework", f"unknown framework '{name}'.{did_you_mean(key, FRAMEWORKS)}",
            f"use one of: {', '.join(FRAMEWORKS)}.",
        )
    if key not in _cache:
        module, _, cls = FRAMEWORKS[key].partition(":")
        _cache[key] = getattr(importlib.import_module(module), cls)()
    fw = _cache[key]
    if version is not None and version.lstrip("v") != fw.version:
        raise InputError(
            "framework", f"our {key} rules follow version {fw.version}, not {version}: rules change between "
            "versions (batch checks move, defaults change), so we will not guess.",
            f"check against {key}=={fw.version} (pass --framework {key}), or upgrade to it.",
        )
    return fw
