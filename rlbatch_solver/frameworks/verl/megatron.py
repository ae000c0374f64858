"""verl 0.9.1 on the Megatron backend: ``--framework verl-megatron``.

Same Hydra syntax and keys as ``fsdp.py``; the rule set is
``rules_megatron.MEGATRON_RULESET`` and the search covers the Megatron
parallel sizes (TP, PP; EP for MoE models; CP, VPP and ETP when the user
searches them) besides the batch sizes. Exports start with
``model_engine=megatron``. The cost model is ``cost_megatron.py``; with
knobs, ``recommend`` also searches recompute, optimizer offload and the rollout
memory share (``MEGATRON_KNOB_SEARCH``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

from ...catalog.models import ModelCard
from ...errors import InputError
from ...rules.base import Value
from ...rules.ids import tied_followers
from . import columns, docs, errors, repair, versions
from .rules_megatron import MEGATRON_RULESET
from ..base import Framework, Space, priced_words
from .fsdp import (EXAMPLE_INPUTS, EXAMPLE_SOURCE, SEARCH_TIES, STRATEGY_KEY, VersionPacks, _native_value, build_space, check_groups, config_to_values, overrides_to_yaml, parse_verl_tokens,
                   solution_to_overrides)
from .cost_megatron import (CPU_OPT_FRACTION_KEY, CPU_OPT_KEY, OPTIMIZER_OVERRIDES_IGNORED, RECOMPUTE, RECOMPUTE_KEY,
                            cpu_optimizer_permille, recompute_code, recompute_modules_code)

# Memory and speed switches ``recommend`` searches when the user leaves them alone. Param offload is
# left as given: it only frees memory between phases (verl loads params back for compute).
MEGATRON_KNOB_SEARCH: dict[str, list[Value]] = {
    "gmu_permille": [400, 500, 600, 700, 800],
    "megatron_recompute": [0, 2],  # none, full (selective = none with flash attention in the cost model)
    "megatron_optimizer_offload": [False, True],
}


def recompute_overrides(solution: Mapping[str, Value]) -> list[str]:
    """``megatron_recompute`` as verl's override_transformer_config keys (full: every layer, uniform)."""
    code = int(solution.get("megatron_recompute") or 0)
    if code == 0:
        return []
    prefix = RECOMPUTE_KEY.rsplit(".", 1)[0]
    if code == 1:
        return [f"{RECOMPUTE_KEY}=selective"]
    return [f"{RECOMPUTE_KEY}=full", f"{prefix}.recompute_method=uniform", f"{prefix}.recompute_num_layers=1"]


def cpu_optimizer_overrides(permille: int) -> list[str]:
    """megatron-core's CPU optimizer for ``permille``/1000 of the optimizer states, as verl's optimizer overrides."""
    return [f"+{CPU_OPT_KEY}=True", f"+{CPU_OPT_FRACTION_KEY}={permille / 1000}"] if permille else []


class VerlMegatronFramework(VersionPacks, Framework):
    name = "verl-megatron"
    version = MEGATRON_RULESET.version
    ruleset = MEGATRON_RULESET
    part = "megatron"
    syntax = "hydra"
    backend = "megatron"
    doc_intro = docs.INTRO_MEGATRON
    policy = repair.VERL_MEGATRON
    error_families = ("verl", "verl-megatron")  # the Megatron backend prints verl's messages too
    accuracy_family = "verl"
    derived_columns = columns.MEGATRON_DERIVED
    column_words = columns.MEGATRON_WORDS
    model_keys = ("actor_rollout_ref.model.path",)
    command = "python3 -m verl.trainer.main_ppo"  # run_command; a recipe's entry_point comes first
    example_inputs, example_inputs_source = EXAMPLE_INPUTS, EXAMPLE_SOURCE
    offload_switch = ("megatron_param_offload", "actor_rollout_ref.actor.megatron.param_offload=True")
    oom_frames = errors.OOM_FRAMES
    oom_advice = errors.MEGATRON_OOM_ADVICE
    shapes_learning = frozenset({"train_batch_size", "actor_mini", "critic_mini"})


    def run_command(self, native: Sequence[str], values: Mapping[str, Value], model: str) -> list[str]:
        """As the base class, with the entry's Megatron config (``--config-name``): verl's Megatron examples start
        ``main_ppo`` with ppo_megatron_trainer.yaml, the recipes with their own Megatron files."""
        words = super().run_command(native, values, model)
        recipe = {3: "fully_async_", 4: "one_step_off_"}.get(int(values.get("async_mode") or 0), "")
        words[0] += f" --config-name={recipe}ppo_megatron_trainer.yaml"
        return words

    def error_patterns(self) -> list:
        return errors.PATTERNS

    def searchable(self, values: Mapping[str, Value]) -> set[str]:
        from .fsdp import keep_dynamic_batching

        return keep_dynamic_batching(super().searchable(values))

    def repair_policy(self, values: Mapping[str, Value] | None = None):
        policy = repair.for_values(self.policy, values)
        if self.version in OPTIMIZER_OVERRIDES_IGNORED:  # fix offers no CPU optimizer to a release that ignores it
            knobs = {k: v for k, v in policy.cost_knobs.items() if k != "megatron_cpu_optimizer_permille"}
            policy = replace(policy, cost_knobs=knobs)
        return policy

    def parse(self, tokens: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
        return parse_verl_tokens(tokens)

    def to_values(self, flat: Mapping[str, Any], *, gpus: int | None, model: ModelCard | None) -> dict[str, Value]:
        _require_megatron(flat)
        check_groups(flat, self.keys_version)
        values = config_to_values(flat, gpus=gpus, model=model, ruleset=self.ruleset, megatron=True)
        values["megatron_recompute"] = recompute_code(flat)  # cost-model inputs, no rule reads them
        values["megatron_recompute_modules"] = recompute_modules_code(flat)
        values["megatron_cpu_optimizer_permille"] = cpu_optimizer_permille(flat, self.version)
        return values

    def unmodelled_backend(self, flat: Mapping[str, Any]) -> str | None:
        from .fsdp import unmodelled_engine

        picked = unmodelled_engine(flat)
        return None if picked is None else f"{picked} is a training engine we do not model"

    def config_notes(self, flat: Mapping[str, Any], *, priced: bool = True) -> list[str]:
        from .fsdp import group_notes

        groups = group_notes(flat, priced, self.keys_version)
        if self.version in OPTIMIZER_OVERRIDES_IGNORED and cpu_optimizer_permille(flat):
            return groups + [f"{CPU_OPT_KEY}: verl {self.version} does not read actor.optim.override_optimizer_config (verl "
                    "0.6.0 is the first release that does), so megatron-core's optimizer states stay on the GPU "
                    f"through the actor update and {priced_words(priced, plural=True)} there; "
                    f"{self.ruleset.variables['megatron_optimizer_offload'].key} moves them to the CPU between "
                    "phases only"]
        return groups

    def space(self, scenario: Any, model: ModelCard | None, *, with_knobs: bool = False) -> Space:
        _require_megatron(scenario.fixed)
        space = build_space(scenario, model, with_knobs, ruleset=self.ruleset, megatron=True)
        space.domains["megatron_recompute"] = [recompute_code(scenario.fixed)]
        space.domains["megatron_recompute_modules"] = [recompute_modules_code(scenario.fixed)]
        space.domains["megatron_cpu_optimizer_permille"] = [cpu_optimizer_permille(scenario.fixed, self.version)]
        if with_knobs:
            given = set(scenario.fixed) | set(scenario.search)
            variables = self.ruleset.variables
            for name, values in MEGATRON_KNOB_SEARCH.items():
                if (variables[name].key if name in variables else RECOMPUTE_KEY) in given:
                    continue
                space.domains[name] = list(values)
                for follower, leader in SEARCH_TIES.items():  # tied copies (the critic's offload) follow
                    if leader == name and follower in tied_followers(space.extra_rules):
                        space.domains[follower] = list(values)
        return space

    def script_entries(self) -> tuple[str, ...]:
        # verl's entry points start a Megatron run too (launch_script reads them as verl's, whose from_script picks
        # this backend): fix --write finds the command by them
        from ..registry import get_framework

        return get_framework("verl").script_entries()

    def cost_spec(self, model: ModelCard, gpu: Any):
        from .cost_megatron import cost_spec

        return cost_spec(model, gpu, self.version)

    def native_value(self, name: str, value: Value) -> Any:
        if name == "megatron_recompute":
            return RECOMPUTE.get(int(value or 0), "none") if int(value or 0) else None
        if name == "megatron_cpu_optimizer_permille":
            return bool(value)
        return value if value is None else _native_value(name, value)

    # the cost-model switches fix may move (repair.VERL_MEGATRON.cost_knobs) are spelled by their override keys
    def native_key(self, name: str) -> str:
        if name == "megatron_recompute":  # in verl's schema (override_transformer_config); the CPU optimizer is not
            return RECOMPUTE_KEY
        if name == "megatron_cpu_optimizer_permille":
            return "+" + CPU_OPT_KEY
        return super().native_key(name)

    def assignment(self, name: str, value: Value) -> str:
        if name == "megatron_recompute":
            return " ".join(recompute_overrides({name: value})) or f"{RECOMPUTE_KEY}=null"
        if name == "megatron_cpu_optimizer_permille":
            return " ".join(cpu_optimizer_overrides(int(value or 0))) or f"+{CPU_OPT_KEY}=False"
        return super().assignment(name, value)

    def export_yaml(self, native: list[str]) -> str | None:
        return overrides_to_yaml(native)

    def export(self, solution: Mapping[str, Value], space: Space | None = None) -> list[str]:
        # the command names --config-name=ppo_megatron_trainer.yaml (run_command): model_engine=megatron only where
        # that file's defaults hold the group
        out = solution_to_overrides(solution, space.fixed_native if space else None, megatron=True, keys=self._keys(),
                                    model_engine=self.version in versions.MODEL_ENGINE_IN_MEGATRON_CONFIG)
        out += recompute_overrides(solution)
        out += cpu_optimizer_overrides(int(solution.get("megatron_cpu_optimizer_permille") or 0))
        return self.release_overrides(out, solution)


def _require_megatron(flat: Mapping[str, Any]) -> None:
    strategy, engine = flat.get(STRATEGY_KEY), flat.get("model_engine")
    if (strategy is not None and str(strategy).lower() != "megatron") or (engine is not None and str(engine) != "megatron"):
        raise InputError(
            STRATEGY_KEY if strategy is not None else "model_engine",
            f"this config selects the FSDP backend ({'strategy=' + str(strategy) if strategy is not None else 'model_engine=' + str(engine)}).",
            "use --framework verl for FSDP configs.",
        )
