"""verl 0.9.1 on the Megatron backend: ``--framework verl-megatron``.

Same Hydra syntax and keys as ``frameworks.verl``; the rule set is
``rules.verl_megatron.MEGATRON_RULESET`` and the search covers the Megatron
parallel sizes (TP, PP; EP for MoE models; CP, VPP and ETP when the user
searches them) besides the batch sizes. Exports start with
``model_engine=megatron``. There is no Megatron memory model yet, so
``recommend`` (and ``check``/``fix`` with ``--gpu``) say so (the base class's
``cost_spec``).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..catalog.models import ModelCard
from ..errors import InputError
from ..rules.base import Value
from ..rules.verl_megatron import MEGATRON_RULESET
from .base import Framework, Space
from .verl import STRATEGY_KEY, _native_value, build_space, config_to_values, parse_verl_tokens, solution_to_overrides


class VerlMegatronFramework(Framework):
    name = "verl-megatron"
    version = MEGATRON_RULESET.version
    ruleset = MEGATRON_RULESET
    syntax = "hydra"
    backend = "megatron"

    def parse(self, tokens: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
        return parse_verl_tokens(tokens)

    def to_values(self, flat: Mapping[str, Any], *, gpus: int | None, model: ModelCard | None) -> dict[str, Value]:
        _require_megatron(flat)
        return config_to_values(flat, gpus=gpus, model=model, ruleset=MEGATRON_RULESET, megatron=True)

    def space(self, scenario: Any, model: ModelCard | None, *, with_knobs: bool = False) -> Space:
        _require_megatron(scenario.fixed)
        return build_space(scenario, model, with_knobs, ruleset=MEGATRON_RULESET, megatron=True)

    def native_value(self, name: str, value: Value) -> Any:
        return value if value is None else _native_value(name, value)

    def export(self, solution: Mapping[str, Value], space: Space | None = None) -> list[str]:
        return solution_to_overrides(solution, space.fixed_native if space else None, megatron=True)


def _require_megatron(flat: Mapping[str, Any]) -> None:
    strategy, engine = flat.get(STRATEGY_KEY), flat.get("model_engine")
    if (strategy is not None and str(strategy).lower() != "megatron") or (engine is not None and str(engine) != "megatron"):
        raise InputError(
            STRATEGY_KEY if strategy is not None else "model_engine",
            f"this config selects the FSDP backend ({'strategy=' + str(strategy) if strategy is not None else 'model_engine=' + str(engine)}).",
            "use --framework verl for FSDP configs.",
        )
