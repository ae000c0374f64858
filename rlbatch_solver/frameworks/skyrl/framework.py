"""SkyRL (skyrl-train 0.3.1) config import and export.

Import: the command as pasted (``uv run --isolated --extra vllm -m skyrl_train.entrypoints.main_base
trainer.train_batch_size=1024 ...``) or the overrides alone. SkyRL's entry point composes Hydra's
``ppo_base_config.yaml`` under the command line's dotted overrides; keys neither sets take that file's defaults
(rules.py ROWS). ``trainer.strategy`` and ``generator.backend`` choose the checks that apply; a critic trains when
``trainer.critic.model.path`` is set.

Export: a solution -> paste-ready Hydra overrides in SkyRL's keys.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ...catalog.models import ModelCard
from ...errors import InputError, did_you_mean
from ...rules.base import Rule, RuleKind, Stage, Value
from ...rules.expr import IntVar
from ...rules.ids import follow_in_search
from ..base import LORA_RANK, Framework, Space, attention_constants, batches_for_gpus, pow2
from ..overrides import hydra_bool, memory_share_permille, parse_hydra_overrides, resolve_algorithm, whole_number
from ..verl.fsdp import default_n, overrides_to_yaml
from . import columns, docs, errors, repair
from .rules import DECIDED, RULESET, VARIABLES, VERSION

# skyrl_train/utils/ppo_utils.py AdvantageEstimator (0.3.1)
ESTIMATORS = ("gae", "grpo", "rloo", "reinforce++")
STRATEGIES = ("fsdp", "fsdp2", "deepspeed", "megatron")
BACKENDS = ("vllm", "sglang")
# --algo -> SkyRL's algorithm keys (DAPO and GSPO: GRPO advantages without KL, as SkyRL's examples run them;
# PPO: GAE with a critic of the policy's model)
ALGORITHMS: dict[str, dict[str, Any]] = {
    "ppo": {"trainer.algorithm.advantage_estimator": "gae", "trainer.algorithm.use_kl_loss": False,
            "trainer.critic.model.path": "${trainer.policy.model.path}"},  # _POLICY_PATH
    "grpo": {"trainer.algorithm.advantage_estimator": "grpo"},
    "dapo": {"trainer.algorithm.advantage_estimator": "grpo", "trainer.algorithm.use_kl_loss": False},
    "gspo": {"trainer.algorithm.advantage_estimator": "grpo", "trainer.algorithm.use_kl_loss": False,
             "trainer.algorithm.policy_loss_type": "gspo"},
    "rloo": {"trainer.algorithm.advantage_estimator": "rloo"},
    "reinforce++": {"trainer.algorithm.advantage_estimator": "reinforce++"},
}
ALIASES = {"reinforce_plus_plus": "reinforce++", "reinforcepp": "reinforce++"}
# what recommend searches when the user leaves it alone: powers of two, as SkyRL's examples use
SEARCH: dict[str, list[Value]] = {
    "train_batch_size": pow2(16, 1024), "actor_mini": pow2(4, 1024), "actor_micro_per_gpu": pow2(1, 64),
    "logprob_micro_per_gpu": pow2(1, 128), "rollout_tp": [1, 2, 4, 8],
}
CRITIC_SEARCH: dict[str, list[Value]] = {"critic_mini": pow2(4, 1024)}
KNOB_SEARCH: dict[str, list[Value]] = {"gmu_permille": [500, 600, 700, 800, 900], "grad_ckpt": [True, False],
                                       "actor_cpu_offload": [False, True]}
_NULL = (None, "null", "None", "~")
_POLICY_PATH = "${trainer.policy.model.path}"
_MEGATRON_VARS = frozenset({"policy_mtp", "policy_mpp", "policy_mcp", "ref_mtp", "ref_mpp", "ref_mcp"})
_PLACEMENT = ("trainer.placement.policy_num_nodes", "trainer.placement.policy_num_gpus_per_node")


def _value(name: str, raw: Any) -> Value:
    spec = VARIABLES[name]
    if raw in _NULL:
        if spec.optional:
            return None
        raise InputError(spec.key, "is null, and SkyRL needs a value.", f"set {spec.key} (default {spec.default}).")
    if spec.kind == "bool":
        return hydra_bool(spec.key, raw)
    if name.endswith("_permille"):
        return memory_share_permille(spec.key, raw, f"set {spec.key} to a share in (0, 1], e.g. 0.8.")
    value = whole_number(spec.key, raw, spec.key)
    if name == "fsdp_size":  # -1: every GPU (skyrl_train/distributed/fsdp_utils.py:create_device_mesh)
        if value == 0 or value < -1:
            raise InputError(spec.key, f"{value} is not a valid FSDP size.", "use -1 (all GPUs) or a positive size.")
    elif name == "lora_rank":
        if value < 0:
            raise InputError(spec.key, f"{value} is not a LoRA rank.", "use 0 (no LoRA) or a positive rank.")
    elif value < 1:  # sizes and counts: SkyRL divides by them or asserts them positive (validate_batch_sizes)
        raise InputError(spec.key, f"{value} must be at least 1.", f"set {spec.key} to a positive number.")
    return value


def _choice(flat: Mapping[str, Any], key: str, default: str, allowed: Sequence[str], what: str) -> str:
    raw = flat.get(key, default)
    text = default if raw in _NULL else str(raw)
    if text not in allowed:
        raise InputError(key, f"'{text}' is not {what} of SkyRL.{did_you_mean(text, allowed)}",
                         f"use one of: {', '.join(allowed)}.")
    return text


def config_values(flat: Mapping[str, Any], gpus: int | None = None, model: ModelCard | None = None) -> dict[str, Value]:
    """SkyRL overrides -> rule values, ppo_base_config.yaml's defaults (0.3.1) where the overrides set none."""
    flat = dict(flat)
    # the policy's DeepSpeed config is ${deepspeed_config.train}: its stage may be set there
    ds_alias = "deepspeed_config.train.zero_optimization.stage"
    if ds_alias in flat and VARIABLES["ds_stage"].key not in flat:
        flat[VARIABLES["ds_stage"].key] = flat[ds_alias]
    values: dict[str, Value] = {}
    for name, spec in VARIABLES.items():
        if name in DECIDED:
            continue
        values[name] = _value(name, flat[spec.key]) if spec.key in flat else spec.default
    est = _choice(flat, "trainer.algorithm.advantage_estimator", "grpo", ESTIMATORS, "an advantage estimator")
    strategy = _choice(flat, "trainer.strategy", "fsdp2", STRATEGIES, "a training strategy")
    backend = _choice(flat, "generator.backend", "vllm", BACKENDS, "an inference backend")
    values["gae"] = est == "gae"
    values["fsdp1"], values["deepspeed"], values["megatron"] = (strategy == s for s in ("fsdp", "deepspeed", "megatron"))
    values["rollout_sglang"] = backend == "sglang"
    # validate_batch_sizes: a critic when its model path is set; a reference with either KL
    values["need_critic"] = flat.get("trainer.critic.model.path") not in (*_NULL, "")
    values["need_ref"] = bool(values["use_kl_loss"]) or bool(values["use_kl_in_reward"])
    if gpus is not None:
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
            raise InputError("gpus", f"{gpus} must be at least 1.", "pass --gpus with a positive count.")
        values["cluster_num_gpus"] = gpus  # unknown: the GPU budget rule is skipped (and listed as skipped)
    if gpus is not None and not any(k in flat for k in _PLACEMENT):
        # --gpus: every model on those GPUs, and (colocated) one engine per GPU at the tensor parallel size given
        for prefix in ("", "ref_", "critic_"):
            values[f"{prefix}nnodes"], values[f"{prefix}gpus_per_node"] = 1, gpus
    if model is not None:
        values.update(attention_constants(model))
    return values


class SkyRLFramework(Framework):
    """``uv run ... -m skyrl_train.entrypoints.main_base key=value``: SkyRL's PPO trainer (FSDP/FSDP2, DeepSpeed or
    Megatron workers; vLLM or SGLang engines, colocated or on GPUs of their own)."""

    name = "skyrl"
    version = VERSION
    ruleset = RULESET
    syntax = "hydra"
    command = "uv run --isolated --extra vllm -m skyrl_train.entrypoints.main_base"
    doc_intro = docs.INTRO
    policy = repair.SKYRL
    error_families = ("skyrl",)
    accuracy_family = "verl"  # verl's FSDP cost terms price it: verl's published runs give the error bars
    model_keys = ("trainer.policy.model.path",)
    example_inputs = ("data.train_data=['$HOME/data/gsm8k/train.parquet']",
                      "data.val_data=['$HOME/data/gsm8k/validation.parquet']", "environment.env_class=gsm8k",
                      "trainer.logger=console")
    example_inputs_source = "SkyRL's GSM8K example, written by its examples/gsm8k/gsm8k_dataset.py"
    offload_switch = ("actor_cpu_offload", "trainer.policy.fsdp_config.cpu_offload=true")
    lora_switch = ("lora_rank", f"trainer.policy.model.lora.rank={LORA_RANK}")
    oom_frames = errors.OOM_FRAMES
    oom_advice = errors.OOM_ADVICE
    shapes_learning = frozenset({"train_batch_size", "actor_mini", "critic_mini"})
    derived_columns = columns.DERIVED
    column_words = columns.WORDS
    # none claimed: SkyRL logs through its tracker (wandb or console), which runlog.py does not read
    log_formats = ()

    def error_patterns(self) -> list:
        return errors.PATTERNS

    def parse(self, tokens: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
        return parse_hydra_overrides(tokens)

    def to_values(self, flat: Mapping[str, Any], *, gpus: int | None, model: ModelCard | None) -> dict[str, Value]:
        return config_values(flat, gpus, model)

    def _native(self, scenario: Any) -> dict[str, Any]:
        algo = resolve_algorithm(scenario.algorithm, ALIASES, ALGORITHMS, "skyrl") if scenario.algorithm else None
        native = {**(ALGORITHMS[algo] if algo else {}), **scenario.fixed}
        if native.get("trainer.critic.model.path") == _POLICY_PATH and scenario.model:
            # PPO's critic starts from the trained model: its id, not the interpolation (a shell would expand ${...})
            from ...catalog.models import launch_id

            native["trainer.critic.model.path"] = launch_id(scenario.model)
        n = scenario.n
        if n is None:
            given = scenario.fixed.get("generator.n_samples_per_prompt")
            n = whole_number("generator.n_samples_per_prompt", given, "generator.n_samples_per_prompt") \
                if given is not None else default_n(algo or "grpo")
        placement = {}
        for role in ("policy", "ref", "critic"):
            placement[f"trainer.placement.{role}_num_nodes"] = scenario.nnodes
            placement[f"trainer.placement.{role}_num_gpus_per_node"] = scenario.per_node
        native.update({"trainer.max_prompt_length": scenario.prompt_length,
                       "generator.sampling_params.max_generate_length": scenario.response_length,
                       "generator.n_samples_per_prompt": n, **placement})
        native.update({k: v for k, v in scenario.fixed.items() if k in placement})
        return native

    def space(self, scenario: Any, model: ModelCard | None, *, with_knobs: bool = False) -> Space:
        native = self._native(scenario)
        base = config_values(native, model=model)
        by_key = self.ruleset.by_key()
        domains, user_set = self.user_domains(scenario, base, DECIDED, _value, "a SkyRL key", "trainer.train_batch_size")
        domains["cluster_num_gpus"] = [scenario.total_gpus]  # decided: never the user's search
        total = scenario.total_gpus
        search = {**SEARCH, **(CRITIC_SEARCH if base["need_critic"] else {}), **(KNOB_SEARCH if with_knobs else {})}
        for name, values in search.items():
            if name in user_set:
                continue
            if name == "rollout_tp":
                values = [v for v in values if v <= total and total % v == 0]
            elif name in ("train_batch_size", "actor_mini", "critic_mini"):
                values = batches_for_gpus(values, total, int(base["n"]))
            domains[name] = list(values)
        extra: list[Rule] = []
        if base["colocate_all"]:
            # colocate_all: one engine per tensor-parallel group of the policy's GPUs (engines x tp = GPUs); where the
            # policy's GPU count is searched (recommend --objective gpus), the reference and critic share its GPUs
            # (skyrl.placement.colocate_all_*_same_gpus), so they follow it
            counts = sorted({int(g) * int(n) for g in domains.get("gpus_per_node", [base["gpus_per_node"]])
                             for n in domains.get("nnodes", [base["nnodes"]])})
            if "num_engines" not in user_set:
                domains["num_engines"] = sorted({c // int(t) for c in counts for t in domains["rollout_tp"]
                                                 if c % int(t) == 0})
            if len(counts) > 1:
                for role in ("ref_", "critic_"):
                    for leader in ("gpus_per_node", "nnodes"):
                        follower = role + leader
                        if follower in user_set or len(domains.get(leader, ())) < 2:
                            continue
                        extra.append(follow_in_search(
                            domains, follower, leader,
                            f"{VARIABLES[follower].key} = {{{follower}}} follows {VARIABLES[leader].key}",
                            "rlbatch-solver search space: colocate_all puts every model on the policy's GPUs"))
        elif not base["colocate_all"]:
            # engines on GPUs of their own (recommend --placement split): the reference follows the policy's layout
            # (colocate_policy_ref, SkyRL's default), the engines and the critic take the rest of the cluster
            if "num_engines" not in user_set:
                domains["num_engines"] = list(range(1, total))
            for follower in ("ref_gpus_per_node", "ref_nnodes"):
                if follower not in user_set:
                    leader = follower.removeprefix("ref_")
                    extra.append(follow_in_search(
                        domains, follower, leader,
                        f"{VARIABLES[follower].key} = {{{follower}}} follows {VARIABLES[leader].key}",
                        "rlbatch-solver search space: the reference on the policy's GPUs"))
            extra.append(Rule(
                "search.use_all_gpus", IntVar("gpus_needed").eq(IntVar("cluster_num_gpus")),
                "the layout uses {gpus_needed} of the {cluster_num_gpus} GPUs", Stage.SEARCH,
                "rlbatch-solver search space: the policy, critic and engines cover the GPUs", kind=RuleKind.SEARCH))
        fixed_native = {k: v for k, v in native.items() if k not in by_key}
        return Space(domains, extra, fixed_native)

    def placements(self, scenario: Any, notes: list[str]) -> list:
        """Colocated (colocate_all, SkyRL's default): the models and the engines take turns on every GPU. Split: the
        engines on GPUs of their own (colocate_all=false); SkyRL's synchronous trainer waits for them (no
        pipelining), so a split pays for idle GPUs and saves the offload around generation. One split solve per
        node count places the policy (with the reference) on a share of each node and the engines on the rest."""
        from ...layout import Layout, admits, sub_scenario

        out = []
        colocate = {"trainer.placement.colocate_all": True}
        if scenario.placement in ("colocate", "auto") and admits(scenario, "colocate", colocate, notes):
            out.append(Layout("colocate", f"colocated on {scenario.total_gpus} GPUs",
                              sub_scenario(scenario, fixed=colocate, layout_keys=colocate)))
        split = {"trainer.placement.colocate_all": False}
        if scenario.placement in ("split", "auto") and admits(scenario, "split", split, notes):
            more = {}
            key = "trainer.placement.policy_num_gpus_per_node"
            if key not in scenario.fixed and key not in scenario.search:
                per = scenario.per_node
                more[key] = sorted({v for v in (*pow2(1, per), per - 1, per - 2) if 1 <= v < per}) or [per]
                critic = "trainer.placement.critic_num_gpus_per_node"
                if config_values(self._native(scenario))["need_critic"] and critic not in scenario.fixed:
                    more[critic] = list(more[key])  # the critic's own GPUs (RayPPOTrainer.build_models)
            out.append(Layout("split", "engines on GPUs of their own (colocate_all=false)",
                              sub_scenario(scenario, fixed=split, layout_keys=split, search=more)))
        return out

    def describe_placement(self, values: Mapping[str, Value]) -> str | None:
        if values.get("colocate_all", True):
            return None
        policy = int(values["nnodes"]) * int(values["gpus_per_node"])
        engines = int(values["num_engines"]) * int(values["rollout_tp"]) * int(values["engine_pp"]) * int(
            values["engine_dp"])
        critic = int(values["critic_nnodes"]) * int(values["critic_gpus_per_node"]) if values.get("need_critic") else 0
        return f"{policy} policy{f' + {critic} critic' if critic else ''} + {engines} engine GPUs"

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
            if (name in _MEGATRON_VARS and not solution.get("megatron")) or (
                    name == "ds_stage" and not solution.get("deepspeed")):
                continue  # the other strategies' sizes: SkyRL reads them only under their strategy
            out.append(self.assignment(name, solution[name]))
        for key, value in (space.fixed_native if space else {}).items():
            text = "null" if value is None else ("true" if value is True else "false" if value is False else str(value))
            out.append(f"{key}={text}")
        return out

    def export_yaml(self, native: list[str]) -> str | None:
        return overrides_to_yaml(native)
