"""EasyR1 0.3.2 config import and export.

Import: the command as pasted (``python3 -m verl.trainer.main config=examples/config.yaml worker.rollout.n=8 ...``)
or the overrides alone. EasyR1's ``verl/trainer/main.py:main`` merges PPOConfig's defaults, then the ``config=``
YAML file, then the command line's dotted keys (OmegaConf.from_cli; the command line wins wherever it stands).
The file is read when it exists here; ``examples/config.yaml`` that does not is EasyR1 0.3.2's published example
(``EXAMPLE_CONFIG``), which every example script of EasyR1 passes. Values are read into the rule variables of
rules.py, with EasyR1 0.3.2's dataclass defaults for keys neither gives.

Export: a solution -> paste-ready dotted overrides in EasyR1's keys.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from ...catalog.models import ModelCard
from ...errors import InputError, did_you_mean
from ...rules.base import Value
from ..base import Framework, Space, attention_constants, batches_for_gpus, pow2
from ..overrides import (flatten, hydra_bool, is_file, load_yaml_file, memory_share_permille, parse_hydra_overrides,
                         resolve_algorithm, whole_number)
from ..verl.fsdp import default_n, overrides_to_yaml
from . import columns, docs, errors, repair
from .rules import DECIDED, RULESET, VARIABLES, VERSION

EXAMPLE = "examples/config.yaml"
# EasyR1 0.3.2's examples/config.yaml, the keys we read (and the data and reward a run needs); every example
# script runs `python3 -m verl.trainer.main config=examples/config.yaml` plus its overrides
EXAMPLE_CONFIG: dict[str, Any] = {
    "data.train_files": "hiyouga/math12k@train", "data.val_files": "hiyouga/math12k@test",
    "data.max_prompt_length": 2048, "data.max_response_length": 2048, "data.rollout_batch_size": 512,
    "data.mini_rollout_batch_size": None,
    "algorithm.adv_estimator": "grpo", "algorithm.disable_kl": False, "algorithm.use_kl_loss": True,
    "worker.actor.global_batch_size": 128, "worker.actor.micro_batch_size_per_device_for_update": 1,
    "worker.actor.micro_batch_size_per_device_for_experience": 2, "worker.actor.padding_free": True,
    "worker.actor.dynamic_batching": True, "worker.actor.ulysses_size": 1,
    "worker.actor.model.model_path": "Qwen/Qwen2.5-7B-Instruct", "worker.actor.model.enable_gradient_checkpointing": True,
    "worker.actor.fsdp.enable_cpu_offload": False, "worker.actor.offload.offload_params": True,
    "worker.actor.offload.offload_optimizer": True,
    "worker.rollout.n": 5, "worker.rollout.gpu_memory_utilization": 0.6, "worker.rollout.enforce_eager": False,
    "worker.rollout.tensor_parallel_size": 2,
    "worker.ref.fsdp.enable_cpu_offload": True, "worker.ref.offload.offload_params": False,
    "worker.reward.reward_function": "./examples/reward_function/math.py:compute_score",
    "trainer.nnodes": 1, "trainer.n_gpus_per_node": 8,
}
ESTIMATORS = ("gae", "grpo", "reinforce_plus_plus", "remax", "rloo")  # verl/trainer/core_algos.py AdvantageEstimator
# --algo -> EasyR1's algorithm keys (DAPO and GSPO: GRPO advantages without KL, as its example scripts run them)
ALGORITHMS: dict[str, dict[str, Any]] = {
    "ppo": {"algorithm.adv_estimator": "gae", "algorithm.disable_kl": True},
    "grpo": {"algorithm.adv_estimator": "grpo"},
    "dapo": {"algorithm.adv_estimator": "grpo", "algorithm.disable_kl": True},
    "gspo": {"algorithm.adv_estimator": "grpo", "algorithm.disable_kl": True},
    "rloo": {"algorithm.adv_estimator": "rloo"},
    "reinforce++": {"algorithm.adv_estimator": "reinforce_plus_plus"},
    "remax": {"algorithm.adv_estimator": "remax"},
}
ALIASES = {"reinforce_plus_plus": "reinforce++", "reinforcepp": "reinforce++"}
# what recommend searches when the user leaves it alone: powers of two, as EasyR1's examples use
SEARCH: dict[str, list[Value]] = {
    "train_batch_size": pow2(16, 1024), "actor_mini": pow2(4, 1024), "actor_micro_per_gpu": pow2(1, 64),
    "logprob_micro_per_gpu": pow2(1, 128), "rollout_tp": [1, 2, 4, 8],
}
CRITIC_SEARCH: dict[str, list[Value]] = {"critic_mini": pow2(4, 1024), "critic_micro_per_gpu": pow2(1, 64),
                                         "critic_exp_micro": pow2(1, 128)}
KNOB_SEARCH: dict[str, list[Value]] = {"gmu_permille": [300, 400, 500, 600, 700, 800, 900], "grad_ckpt": [True, False],
                                       "param_offload": [False, True], "optimizer_offload": [False, True]}
_NULL = (None, "null", "None", "~")


def _layered(flat: Mapping[str, Any]) -> dict[str, Any]:
    """main.py's merge: the config file (or the published example), then the command line."""
    cfg = flat.get("config")
    base: dict[str, Any] = {}
    if cfg not in _NULL:
        if is_file(cfg):
            data = load_yaml_file(cfg) or {}
            if not isinstance(data, dict):
                raise InputError("config", f"{cfg} does not hold an EasyR1 config (a mapping).",
                                 "pass a YAML file like EasyR1's examples/config.yaml.")
            base = flatten(data)
        elif Path(str(cfg)).as_posix().removeprefix("./") == EXAMPLE:
            base = dict(EXAMPLE_CONFIG)
    return {**base, **{k: v for k, v in flat.items() if k != "config"}}


def _value(name: str, raw: Any) -> Value:
    spec = VARIABLES[name]
    if raw in _NULL:
        if spec.optional:
            return None
        raise InputError(spec.key, "is null, and EasyR1 needs a value.", f"set {spec.key} (default {spec.default}).")
    if spec.kind == "bool":
        return hydra_bool(spec.key, raw)
    if name.endswith("_permille"):
        return memory_share_permille(spec.key, raw, f"set {spec.key} to a share in (0, 1], e.g. 0.6.")
    value = whole_number(spec.key, raw, spec.key)
    if name == "fsdp_size":  # -1: every GPU (verl/workers/fsdp_workers.py: the device mesh)
        if value == 0 or value < -1:
            raise InputError(spec.key, f"{value} is not a valid FSDP size.", "use -1 (all GPUs) or a positive size.")
    elif value < 1:  # sizes and counts: EasyR1 divides by them
        raise InputError(spec.key, f"{value} must be at least 1.", f"set {spec.key} to a positive number.")
    return value


def config_values(flat: Mapping[str, Any], gpus: int | None = None, model: ModelCard | None = None) -> dict[str, Value]:
    """EasyR1 keys (file and overrides merged) -> rule values, EasyR1 0.3.2's defaults where neither sets one."""
    merged = _layered(flat)
    values: dict[str, Value] = {}
    for name, spec in VARIABLES.items():
        if name in DECIDED:
            continue
        values[name] = _value(name, merged[spec.key]) if spec.key in merged else spec.default
    est = str(merged.get("algorithm.adv_estimator", "grpo"))
    if est not in ESTIMATORS:
        raise InputError("algorithm.adv_estimator", f"'{est}' is not an advantage estimator of EasyR1."
                         f"{did_you_mean(est, ESTIMATORS)}", f"use one of: {', '.join(ESTIMATORS)}.")
    # ray_trainer.py RayPPOTrainer.__init__: a critic with gae, a reference policy unless disable_kl
    values["need_critic"] = est == "gae"
    values["group_estimator"] = est in ("grpo", "rloo")
    values["need_ref"] = not hydra_bool("algorithm.disable_kl", merged.get("algorithm.disable_kl", False))
    if gpus is not None and "trainer.n_gpus_per_node" not in merged and "trainer.nnodes" not in merged:
        values["nnodes"], values["gpus_per_node"] = 1, gpus
    if model is not None:
        values.update(attention_constants(model))
    return values


class EasyR1Framework(Framework):
    """``python3 -m verl.trainer.main config=... key=value``: EasyR1's PPO trainer (FSDP actor, vLLM rollout)."""

    name = "easyr1"
    version = VERSION
    ruleset = RULESET
    syntax = "hydra"
    command = "python3 -m verl.trainer.main"
    doc_intro = docs.INTRO
    policy = repair.EASYR1
    error_families = ("easyr1",)
    accuracy_family = "verl"  # verl's workers and cost terms: verl's published runs give the error bars
    model_keys = ("worker.actor.model.model_path",)
    example_inputs = (f"config={EXAMPLE}",)

    def training_data(self, flat: Mapping[str, Any]) -> str:
        """The data.train_files of main.py's merge (``_layered``): the command line's, else the ``config=`` file's
        (a user's YAML read here; the published examples/config.yaml: hiyouga/math12k@train, EXAMPLE_CONFIG)."""
        return super().training_data(_layered(flat))
    example_inputs_source = "EasyR1's examples/config.yaml (hiyouga/math12k, the math reward)"
    offload_switch = ("param_offload", "worker.actor.offload.offload_params=True")
    oom_frames = errors.OOM_FRAMES
    oom_advice = errors.OOM_ADVICE
    shapes_learning = frozenset({"train_batch_size", "actor_mini", "critic_mini"})
    derived_columns = columns.DERIVED
    column_words = columns.WORDS
    # none claimed: EasyR1's console logger prints its own metric lines, which runlog.py does not read
    log_formats = ()

    def error_patterns(self) -> list:
        return errors.PATTERNS

    def parse(self, tokens: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
        return parse_hydra_overrides(tokens)

    def to_values(self, flat: Mapping[str, Any], *, gpus: int | None, model: ModelCard | None) -> dict[str, Value]:
        return config_values(flat, gpus, model)

    def config_notes(self, flat: Mapping[str, Any], *, priced: bool = True) -> list[str]:
        cfg = flat.get("config")
        if cfg in _NULL:
            return ["no config= file: EasyR1 0.3.2's dataclass defaults under the overrides"]
        if is_file(cfg):
            return []
        if Path(str(cfg)).as_posix().removeprefix("./") == EXAMPLE:
            return [f"config={cfg} read as EasyR1 0.3.2's published {EXAMPLE} (the file is not here)"]
        return [f"config={cfg} is not here: only the overrides were read, over EasyR1 0.3.2's defaults"]

    def normalize(self, flat: Mapping[str, Any]) -> dict[str, Any]:
        """The config as the run sees it (recommend --from keeps what it sets): the file's keys (or the published
        example's) under the overrides; ``config`` null, so that the search space reads no example beneath them."""
        return {**{k: v for k, v in _layered(flat).items() if v not in _NULL}, "config": None}

    def kept_batch(self, scenario: Any) -> dict[str, Any]:
        """The published example's batch sizes (the config every command we print starts from)."""
        out = super().kept_batch(scenario)
        base = config_values({"config": EXAMPLE})
        return {k: (self.native_value(VARIABLES_BY_KEY[k], base[VARIABLES_BY_KEY[k]])) for k in out}

    def _native(self, scenario: Any) -> dict[str, Any]:
        algo = resolve_algorithm(scenario.algorithm, ALIASES, ALGORITHMS, "easyr1") if scenario.algorithm else None
        native = {"config": EXAMPLE, **(ALGORITHMS[algo] if algo else {}), **scenario.fixed}
        n = scenario.n
        if n is None:
            given = scenario.fixed.get("worker.rollout.n")
            n = whole_number("worker.rollout.n", given, "worker.rollout.n") if given is not None else default_n(
                algo or "grpo")
        native.update({"data.max_prompt_length": scenario.prompt_length,
                       "data.max_response_length": scenario.response_length, "worker.rollout.n": n,
                       "trainer.nnodes": scenario.nnodes, "trainer.n_gpus_per_node": scenario.per_node})
        return native

    def space(self, scenario: Any, model: ModelCard | None, *, with_knobs: bool = False) -> Space:
        native = self._native(scenario)
        base = config_values(native, model=model)
        by_key = self.ruleset.by_key()
        domains, user_set = self.user_domains(scenario, base, DECIDED, _value, "an EasyR1 key",
                                              "data.rollout_batch_size")
        total = scenario.total_gpus
        search = {**SEARCH, **(CRITIC_SEARCH if base["need_critic"] else {}), **(KNOB_SEARCH if with_knobs else {})}
        for name, values in search.items():
            if name in user_set:
                continue
            if name == "rollout_tp":
                values = [v for v in values if v <= total]
            elif name in ("train_batch_size", "actor_mini", "critic_mini"):
                values = batches_for_gpus(values, total, int(base["n"]))
            domains[name] = list(values)
        fixed_native = {k: v for k, v in native.items() if k not in by_key and k != "config"}
        return Space(domains, [], fixed_native)

    def cost_spec(self, model: ModelCard, gpu: Any):
        from .cost import cost_spec

        return cost_spec(model, gpu)

    def export(self, solution: Mapping[str, Value], space: Space | None = None) -> list[str]:
        critic = bool(solution.get("need_critic"))
        out = []
        for name, spec in VARIABLES.items():
            if name in DECIDED or name not in solution or (name.startswith("critic_") and not critic):
                continue
            if spec.optional and solution[name] is None:
                continue
            out.append(self.assignment(name, solution[name]))
        for key, value in (space.fixed_native if space else {}).items():
            text = "null" if value is None else ("True" if value is True else "False" if value is False else str(value))
            out.append(f"{key}={text}")
        return out

    def export_yaml(self, native: list[str]) -> str | None:
        return overrides_to_yaml(native)


VARIABLES_BY_KEY = {spec.key: name for name, spec in VARIABLES.items()}
