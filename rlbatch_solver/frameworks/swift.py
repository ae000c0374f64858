"""ms-swift 4.6.0 config import and export: ``swift rlhf`` (HF/DeepSpeed) and ``megatron rlhf``.

Import: a launch command as pasted (``NPROC_PER_NODE=8 swift rlhf --rlhf_type grpo
--per_device_train_batch_size 4 ...``; ``--flag value`` and ``--flag=value``; the
launcher's ``NPROC_PER_NODE`` / ``NNODES`` prefix, ``export`` lines too) or a YAML
file of the same keys -> values of the rule variables in ``rules.swift`` /
``rules.swift_megatron``, with ms-swift 4.6.0's dataclass defaults where a flag
is absent. Flags we do not model (datasets, learning rate, ...) are read past.

In server mode the ``swift rollout`` server is a separate command: give its sizes
as ``--rollout.vllm_tensor_parallel_size`` / ``--rollout.vllm_data_parallel_size``
(our names; they default to 1, as ``swift rollout``'s do) and the GPUs of the
whole job with ``--gpus``.

Export: a solution -> paste-ready ``NPROC_PER_NODE=.. --flag value`` arguments.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from ..catalog.models import ModelCard
from ..errors import InputError, did_you_mean
from ..rules.base import Rule, RuleSet, Stage, Value
from ..rules.expr import BoolVar, IntVar
from ..rules.swift import RULESET as HF_RULESET
from ..rules.swift_megatron import RULESET as MEGATRON_RULESET
from .base import Framework, Space, pow2
from .overrides import parse_flag_args, parse_scalar, resolve_algorithm, split_tokens

ENV_KEYS = ("NPROC_PER_NODE", "NNODES")
_ENV = re.compile(r"^([A-Z_][A-Z0-9_]*)=(.*)$")

# What each --algo sets (ms-swift's examples/train/grpo and examples/megatron/grpo); every one is
# the GRPO trainer, so the batch rules are the same.
ALGORITHMS: dict[str, dict[str, Any]] = {
    "grpo": {},
    "gspo": {"importance_sampling_level": "sequence"},
    "dapo": {"loss_type": "dapo", "dynamic_sample": True, "epsilon_high": 0.28},
    "dr_grpo": {"loss_type": "dr_grpo", "scale_rewards": "none"},
    "rloo": {"advantage_estimator": "rloo"},
    "reinforce++": {"advantage_estimator": "reinforce_plus_plus"},
}
ALGORITHM_ALIASES = {"reinforce_plus_plus": "reinforce++", "reinforcepp": "reinforce++", "dr-grpo": "dr_grpo"}

_TRUE = {"true", "yes", "y", "t", "1"}
_FALSE = {"false", "no", "n", "f", "0"}

# Variables no single flag sets: other flags decide them, the model card gives the constants.
DECIDED = {"cluster_num_gpus", "eval_on", "vllm_mode_given", "vllm_server", "server_host_given", "teacher",
           "loss_real", "kl_on", "num_heads", "num_kv_heads", "num_layers", "num_experts"}
_FLOAT_KEYS = {"beta", "split_dataset_ratio"}


def canonical_algorithm(name: str) -> str:
    return resolve_algorithm(name, ALGORITHM_ALIASES, ALGORITHMS, "ms-swift GRPO")


def parse_swift_args(tokens: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """Pasted launch text -> ({flag or env name: value}, ignored tokens)."""
    flags: list[str] = []
    env: dict[str, Any] = {}
    ignored: list[str] = []
    for tok in split_tokens(tokens):
        m = _ENV.match(tok)
        if m and not tok.startswith("-"):
            if m.group(1) in ENV_KEYS:
                env[m.group(1)] = parse_scalar(m.group(2))
            else:
                ignored.append(tok)
            continue
        flags.append(tok)
    values, more = parse_flag_args(flags)
    values.update(env)
    return values, ignored + more


def normalize_keys(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``--per-device-train-batch-size`` and ``per_device_train_batch_size`` are one key."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        k = key[2:] if key.startswith("--") else key
        if k not in ENV_KEYS and not k.startswith("rollout."):
            k = k.replace("-", "_")
        out[k] = value
    return out


def _present(value: Any) -> bool:
    """A flag's value counts as given (not null, not an empty list or string)."""
    return value is not None and value != "" and value != [] and str(value).lower() not in ("none", "null")


def _bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise InputError(key, f"'{value}' is not a boolean.", f"write --{key} true or --{key} false.")


def _int(key: str, value: Any) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        hint = " (a shell variable that was not expanded?)" if isinstance(value, str) and "$" in value else ""
        raise InputError(key, f"'{value}' is not an integer{hint}.", f"write --{key} as a whole number.")
    if value < 1:
        raise InputError(key, f"{value} must be at least 1.", f"set --{key} to a positive number.")
    return value


def _float(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(key, f"'{value}' is not a number.", f"write --{key} as a number, e.g. 0.04.")
    return float(value)


from .swift_cost import (HF_KNOB_SEARCH, KNOB_FLAGS, MEGATRON_KNOB_SEARCH, cost_values, export_flags)  # noqa: E402
from .swift_cost import cost_spec as swift_cost_spec  # noqa: E402

# flags the cost model reads and export prints from the solution (not from fixed_native)
COST_FLAGS = {"deepspeed", "vllm_gpu_memory_utilization", "sleep_level", "offload_model", "offload_optimizer",
              "recompute_granularity", "recompute_method", "recompute_num_layers", "optimizer_cpu_offload",
              "optimizer_offload_fraction"}

class SwiftFramework(Framework):
    """``swift rlhf --rlhf_type grpo`` (HF Trainer + DeepSpeed/FSDP, vLLM colocate or server)."""

    name = "swift"
    version = HF_RULESET.version
    ruleset: RuleSet = HF_RULESET
    syntax = "flags"
    command = "swift rlhf"
    megatron = False

    # -- import ---------------------------------------------------------------------------
    def parse(self, tokens: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
        return parse_swift_args(tokens)

    def to_values(self, flat: Mapping[str, Any], *, gpus: int | None, model: ModelCard | None) -> dict[str, Value]:
        flat = normalize_keys(flat)
        rlhf_type = flat.get("rlhf_type", "grpo")
        if rlhf_type != "grpo":
            raise InputError("rlhf_type", f"'{rlhf_type}' is not modelled: only the GRPO trainer (GRPO, GSPO, DAPO, "
                             "RLOO, REINFORCE++ through it) is.", "use --rlhf_type grpo.")
        if self.megatron and flat.get("use_ray") is not None and _bool("use_ray", flat["use_ray"]):
            raise InputError("use_ray", "the Ray pipeline (swift/ray/megatron) takes its layout from a Ray YAML "
                             "config; it is not modelled.", "check the torchrun launch (drop --use_ray).")
        specs = self.ruleset.variables
        values: dict[str, Value] = {}
        for name, spec in specs.items():
            if name in DECIDED:
                continue
            if spec.key not in flat:
                values[name] = spec.default
                continue
            raw = flat[spec.key]
            if spec.optional and not _present(raw):
                values[name] = None
            elif spec.kind == "bool":
                values[name] = _bool(spec.key, raw)
            else:
                values[name] = _int(spec.key, raw)
        if values.get("vpp") == 1:  # MegatronArguments._init_vpp_size: 1 means no virtual pipeline
            values["vpp"] = None
        if not self.megatron and flat.get("packing") is not None and _bool("packing", flat["packing"]):
            values["padding_free"] = True  # SftArguments._check_padding_free
        values.update(self._decided(flat))
        values.update(cost_values(flat, self.megatron))  # cost-model inputs (frameworks/swift_cost.py)
        self._gpus(values, flat, gpus)
        if model is not None:
            values.update(self.model_constants(model))
        return values

    def _decided(self, flat: Mapping[str, Any]) -> dict[str, Value]:
        mode = flat.get("vllm_mode")
        if _present(mode) and mode not in ("colocate", "server"):
            raise InputError("vllm_mode", f"'{mode}' is not a vLLM mode.{did_you_mean(str(mode), ['colocate', 'server'])}",
                             "use --vllm_mode colocate or --vllm_mode server.")
        out: dict[str, Value] = {
            "vllm_mode_given": _present(mode),
            "vllm_server": mode == "server",
            "server_host_given": _present(flat.get("vllm_server_host")) or _present(flat.get("vllm_server_base_url")),
            "teacher": _present(flat.get("teacher_model")) or _present(flat.get("teacher_model_server")),
        }
        ratio = _float("split_dataset_ratio", flat.get("split_dataset_ratio", 0.0))
        val = any(_present(flat.get(k)) for k in ("val_dataset", "cached_val_dataset", "eval_dataset")) or ratio > 0
        if self.megatron:
            eval_iters = flat.get("eval_iters", -1)
            out["eval_on"] = val and eval_iters != 0
            out["loss_real"] = str(flat.get("loss_type", "grpo")) == "real"
            out["kl_on"] = _float("beta", flat.get("beta", 0.04)) != 0.0
        else:
            out["eval_on"] = val and str(flat.get("eval_strategy", "steps")) != "no"
        return out

    def _gpus(self, values: dict[str, Value], flat: Mapping[str, Any], gpus: int | None) -> None:
        """World size from NPROC_PER_NODE*NNODES, or from --gpus when the prefix is missing."""
        if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1):
            raise InputError("gpus", f"{gpus} must be at least 1.", "pass --gpus with a positive count.")
        values["cluster_num_gpus"] = gpus
        if "NPROC_PER_NODE" in flat:
            return
        if gpus is None:
            raise InputError("gpus", "the number of training processes is not known.",
                             f"prefix the command with NPROC_PER_NODE=8 (as in `NPROC_PER_NODE=8 {self.command} ...`) "
                             "or pass --gpus 8.")
        nn = int(values["nnodes"])
        if gpus % nn:
            raise InputError("gpus", f"--gpus {gpus} is not a multiple of NNODES = {nn}.",
                             "give NPROC_PER_NODE instead of --gpus.")
        values["gpus_per_node"] = gpus // nn

    def model_constants(self, model: ModelCard) -> dict[str, int]:
        out = {"num_heads": model.num_attention_heads, "num_kv_heads": model.num_key_value_heads}
        if self.megatron:
            out.update(num_layers=model.num_hidden_layers, num_experts=model.num_experts)
        return out

    # -- export ---------------------------------------------------------------------------
    EXPORT_ORDER = ["per_device_train_batch_size", "gradient_accumulation_steps", "generation_batch_size",
                    "steps_per_generation", "num_generations", "num_generations_eval", "per_device_eval_batch_size",
                    "sequence_parallel_size", "padding_free", "use_vllm", "vllm_tp"]

    def _flag(self, key: str, value: Any) -> str:
        if isinstance(value, bool):
            value = "true" if value else "false"
        return f"--{key} {value}"

    ALWAYS = {"per_device_train_batch_size", "gradient_accumulation_steps", "num_generations", "use_vllm"}

    def _exported(self, name: str, solution: Mapping[str, Value]) -> bool:
        """Batch sizes always; other values when set and not ms-swift's default."""
        value = solution.get(name)
        if value is None:
            return False
        if name == "vllm_tp":
            return bool(solution.get("use_vllm")) and not solution.get("vllm_server")
        if name in ("per_device_eval_batch_size", "num_generations_eval") and not solution.get("eval_on"):
            return False
        return name in self.ALWAYS or value != self.ruleset.variables[name].default

    def export(self, solution: Mapping[str, Value], space: Space | None = None) -> list[str]:
        out = [f"NPROC_PER_NODE={solution['gpus_per_node']}"]
        if int(solution.get("nnodes") or 1) > 1:
            out.append(f"NNODES={solution['nnodes']}")
        extra = dict(space.fixed_native) if space else {}
        out.append(self._flag("rlhf_type", extra.pop("rlhf_type", "grpo")))
        specs = self.ruleset.variables
        for name in self.EXPORT_ORDER:
            if name in solution and self._exported(name, solution):
                out.append(self._flag(specs[name].key, solution[name]))
        if solution.get("use_vllm") and solution.get("vllm_mode_given"):
            out.append(self._flag("vllm_mode", "server" if solution.get("vllm_server") else "colocate"))
            if solution.get("vllm_server"):
                extra.setdefault("vllm_server_host", "ROLLOUT_HOST")
                for name in ("server_tp", "server_dp"):
                    out.append(self._flag(specs[name].key, solution[name]))
        out += export_flags(solution, self.megatron)
        for key, value in extra.items():
            out.append(self._flag(key, value))
        return out

    def assignment(self, name: str, value: Value) -> str:
        spec = self.ruleset.variables[name]
        if spec.key in ENV_KEYS:
            return f"{spec.key}={value}"
        if name == "vllm_server":
            return f"--vllm_mode {'server' if value else 'colocate'}"
        if name == "vllm_mode_given":
            return "--vllm_mode colocate" if value else "(drop --vllm_mode)"
        if value is None:
            return f"(drop --{spec.key})"
        return self._flag(spec.key, value)

    def native_key(self, name: str) -> str:
        if name in ("vllm_server", "vllm_mode_given"):
            return "vllm_mode"
        return super().native_key(name)

    def hardware(self, values: Mapping[str, Value]) -> tuple[int, int]:
        """(GPUs of the whole job: the training ranks, or --gpus when a rollout server takes more; 0 tokens)."""
        world = int(values.get("nnodes") or 1) * int(values.get("gpus_per_node") or 1)
        return max(world, int(values.get("cluster_num_gpus") or 0)), 0

    # -- search space -----------------------------------------------------------------------
    def default_search(self, per_node: int, total: int, model: ModelCard | None) -> dict[str, list[Value]]:
        return {
            "per_device_train_batch_size": pow2(1, 16),
            "gradient_accumulation_steps": pow2(1, 16),
            "vllm_tp": [t for t in (1, 2, 4, 8) if t <= per_node],
        }

    def space(self, scenario: Any, model: ModelCard | None, *, with_knobs: bool = False) -> Space:
        algo = canonical_algorithm(scenario.algorithm)
        native: dict[str, Any] = {"rlhf_type": "grpo", **ALGORITHMS[algo], "use_vllm": True, "vllm_mode": "colocate",
                                  "num_generations": scenario.n if scenario.n is not None else 8}
        fixed = normalize_keys(scenario.fixed)
        native.update(fixed)
        native.setdefault("NPROC_PER_NODE", scenario.per_node)
        native.setdefault("NNODES", scenario.nnodes)
        base = self.to_values(native, gpus=scenario.total_gpus, model=model)
        by_key = self.ruleset.by_key()
        domains: dict[str, list[Value]] = {name: [value] for name, value in base.items()}
        user_set = {by_key[k].name for k in fixed if k in by_key}
        if "vllm_mode" in fixed:
            user_set |= {"vllm_server", "vllm_mode_given"}
        if "vllm_server_host" in fixed or "vllm_server_base_url" in fixed:
            user_set.add("server_host_given")
        for raw_key, values in normalize_keys(scenario.search).items():
            if raw_key == "vllm_mode":
                modes = [self._decided({"vllm_mode": m})["vllm_server"] for m in values]
                domains["vllm_server"] = sorted(set(modes))
                user_set.add("vllm_server")
                continue
            spec = by_key.get(raw_key)
            if spec is None or spec.name in DECIDED:
                raise InputError(f"search.{raw_key}", f"is not a {self.name} flag we search."
                                 f"{did_you_mean(raw_key, by_key)}",
                                 "search over batch and parallel sizes (per_device_train_batch_size, ...).")
            domains[spec.name] = [self._typed_search(raw_key, spec, x) for x in values]
            user_set.add(spec.name)
        per_node, total = scenario.per_node, scenario.total_gpus
        for name, values in self.default_search(per_node, total, model).items():
            if name not in user_set and values:
                domains[name] = list(values)
        extra: list[Rule] = []
        if True in domains.get("vllm_server", []) and "gpus_per_node" not in user_set:
            # server mode: the rollout server takes some GPUs; search the split, use every GPU
            domains["gpus_per_node"] = list(range(1, per_node + (0 if scenario.nnodes == 1 else 1)))
            if "server_host_given" not in user_set:
                domains["server_host_given"] = [True]  # exported as a placeholder host
            for name in ("server_tp", "server_dp"):
                if name not in user_set:
                    domains[name] = [x for x in (1, 2, 4, 8) if x < total]
            extra.append(Rule(
                "search.use_all_gpus", IntVar("gpus_needed").eq(IntVar("cluster_num_gpus")),
                "the layout uses {gpus_needed} of the {cluster_num_gpus} GPUs",
                Stage.SEARCH, "rlbatch-solver search space: training ranks and the rollout server cover the GPUs",
            ))
            if False in domains["vllm_server"]:  # colocate keeps every GPU for training
                extra.append(Rule(
                    "search.colocate_all_ranks", BoolVar("vllm_server") | IntVar("gpus_per_node").eq(per_node),
                    "colocate mode trains on every GPU (NPROC_PER_NODE = {gpus_per_node})",
                    Stage.SEARCH, "rlbatch-solver search space",
                ))
        # flags that no searched variable prints (algorithm settings, and beta / loss_type / the server host,
        # which only decide a switch) travel with the answer as given
        fixed_native = {k: v for k, v in native.items() if k not in ENV_KEYS and k != "vllm_mode"
                        and (k not in by_key or by_key[k].name in DECIDED)}
        fixed_native.setdefault("max_length", scenario.prompt_length)
        fixed_native.setdefault("max_completion_length", scenario.response_length)
        for key in ("max_length", "max_completion_length"):  # the cost model reads them
            domains[key] = [int(fixed_native[key])]
        fixed_native = {k: v for k, v in fixed_native.items() if k not in COST_FLAGS}
        if with_knobs:
            for name, values in (MEGATRON_KNOB_SEARCH if self.megatron else HF_KNOB_SEARCH).items():
                if not set(KNOB_FLAGS.get(name, (name,))) & set(fixed):
                    domains[name] = list(values)
        return Space(domains, extra, fixed_native)

    def cost_spec(self, model: ModelCard, gpu: Any):
        bools = frozenset(n for n, s in self.ruleset.variables.items() if s.kind == "bool")
        optional = frozenset(n for n, s in self.ruleset.variables.items() if s.optional)
        return swift_cost_spec(model, gpu, self.megatron, bools, optional)

    def _typed_search(self, key: str, spec, value: Any) -> Value:
        if spec.optional and not _present(value):
            return None
        if spec.kind == "bool":
            return _bool(key, value)
        return _int(key, value)


class SwiftMegatronFramework(SwiftFramework):
    """``megatron rlhf --rlhf_type grpo`` (Megatron-core TP/PP/CP/EP, vLLM colocate or server)."""

    name = "swift-megatron"
    version = MEGATRON_RULESET.version
    ruleset = MEGATRON_RULESET
    command = "megatron rlhf"
    megatron = True

    EXPORT_ORDER = ["tp", "pp", "cp", "ep", "etp", "vpp", "first_pp_layers", "last_pp_layers", "micro_batch_size",
                    "global_batch_size", "generation_batch_size", "steps_per_generation", "num_generations",
                    "num_generations_eval", "use_vllm", "vllm_tp"]
    ALWAYS = {"tp", "pp", "cp", "micro_batch_size", "global_batch_size", "num_generations", "use_vllm"}

    def default_search(self, per_node: int, total: int, model: ModelCard | None) -> dict[str, list[Value]]:
        moe = model is not None and model.num_experts > 0
        return {
            "tp": [t for t in (1, 2, 4, 8) if t <= per_node],
            "pp": [p for p in (1, 2, 4) if p <= total],
            "ep": [e for e in (1, 2, 4, 8) if e <= total] if moe else [1],
            "micro_batch_size": pow2(1, 8),
            "global_batch_size": pow2(8, 1024),
            "vllm_tp": [t for t in (1, 2, 4, 8) if t <= per_node],
        }


__all__ = ["SwiftFramework", "SwiftMegatronFramework", "parse_swift_args", "canonical_algorithm", "ALGORITHMS"]


# -- what `rlbatch fix` may change, in which order ------------------------------------------------
def _register_repair_policies() -> None:
    """Repair order for both paths (``frameworks/repair_policies.py`` falls back to "every size" otherwise).

    Adding a missing ``--vllm_mode colocate`` comes first; then the batch sizes, the generation
    batch, the vLLM and parallel layout; switching vLLM off or to server mode last. GPU counts,
    num_generations and the model stay as the user has them.
    """
    from .repair_policies import POLICIES, RepairPolicy

    common = {"vllm_mode_given": 0, "generation_batch_size": 3, "steps_per_generation": 3, "num_generations_eval": 4,
              "vllm_tp": 5, "server_tp": 6, "server_dp": 6, "async_generate": 8, "vllm_server": 8, "use_vllm": 9}
    hf = {**common, "per_device_train_batch_size": 2, "gradient_accumulation_steps": 3,
          "per_device_eval_batch_size": 4, "sequence_parallel_size": 6, "padding_free": 7}
    megatron = {**common, "micro_batch_size": 2, "global_batch_size": 3, "tp": 6, "pp": 6, "cp": 7, "ep": 6, "etp": 7,
                "vpp": 7, "first_pp_layers": 7, "last_pp_layers": 7, "num_iterations": 1, "sync_ref_model": 1}
    parallel = frozenset({"vllm_tp", "server_tp", "server_dp", "sequence_parallel_size", "tp", "pp", "cp", "ep", "etp",
                          "vpp"})
    for name, ranks in (("swift", hf), ("swift-megatron", megatron)):
        POLICIES.setdefault(name, RepairPolicy(
            rules=tuple(ranks), ranks=ranks, parallel=parallel, algorithm=("num_generations",),
            hardware={"gpus_per_node": "per_node", "nnodes": "count", "cluster_num_gpus": "count"},
            grows_memory=frozenset({"gmu_permille", "per_device_train_batch_size", "micro_batch_size"})))


_register_repair_policies()


# -- ms-swift's own error messages (``rlbatch explain``) -------------------------------------------
def _register_error_patterns() -> None:
    """The messages ms-swift 4.6.0 (and megatron-core, where it delegates) print, mapped to our rules."""
    from .error_text import ErrorPattern, register

    n = r"\((?P<{}>\d+)\)".format
    hf_gen = "swift/rlhf_trainers/args_mixin.py:RolloutTrainerArgumentsMixin._init_generation_batch_params"
    mg_gen = "swift/megatron/arguments/megatron_args.py:RLHFMegatronArgumentsMixin"
    colocate = ErrorPattern(
        "swift", rf"vllm_tensor_parallel_size {n('tp')} must divide world size {n('world')} evenly",
        ("swift.rollout.colocate_tp_divides_world",), "swift/rlhf_trainers/rollout_mixin.py:RolloutTrainerMixin._prepare_vllm",
        "ValueError: vllm_tensor_parallel_size (3) must divide world size (8) evenly.")
    register([
        ErrorPattern("swift", rf"generation_batch_size {n('gen')} must be divisible by the global batch size {n('gbs')}",
                     ("swift.args.gen_divisible_by_base",), hf_gen,
                     "ValueError: generation_batch_size (500) must be divisible by the global batch size (16)."),
        ErrorPattern("swift", rf"generation_batch_size {n('gen')} must equal per_device_train_batch_size \* world_size",
                     ("swift.args.gen_equals_base_times_spg",), hf_gen,
                     "ValueError: generation_batch_size (96) must equal per_device_train_batch_size * world_size * "
                     "steps_per_generation = 64."),
        ErrorPattern("swift", rf"generation_batch_size {n('gen')} must be evenly divisible by num_generations {n('g')}",
                     ("swift.args.gen_divisible_by_num_generations",), hf_gen,
                     "ValueError: generation_batch_size (16) must be evenly divisible by num_generations (12). "
                     "Valid values: [2, 4, 8, 16]."),
        ErrorPattern("swift", r"global eval batch size .{0,40}must be\s+evenly divisible by num_generations_eval",
                     ("swift.args.eval_batch_divisible_by_num_generations_eval",), hf_gen,
                     "ValueError: The global eval batch size (4 x 1) must be evenly divisible by num_generations_eval "
                     "(8). Valid values: [1, 2, 4]."),
        ErrorPattern("swift", r"num_generations must be greater than 1 for GRPO",
                     ("swift.args.num_generations_at_least_two",), "swift/arguments/rlhf_args.py:RLHFArguments._check_teacher",
                     "ValueError: num_generations must be greater than 1 for GRPO"),
        ErrorPattern("swift", r"vllm_mode is required when use_vllm is true", ("swift.args.vllm_mode_required",),
                     "swift/arguments/rlhf_args.py:RLHFArguments._init_rollout",
                     "ValueError: vllm_mode is required when use_vllm is true"),
        ErrorPattern("swift", r"vllm_mode is not supported when use_vllm is false",
                     ("swift.args.vllm_mode_needs_use_vllm",), "swift/arguments/rlhf_args.py:RLHFArguments._init_rollout",
                     "ValueError: vllm_mode is not supported when use_vllm is false"),
        ErrorPattern("swift", r"async generate require vllm_mode == server", ("swift.args.async_generate_needs_server",),
                     "swift/arguments/rlhf_args.py:RLHFArguments._init_rollout",
                     "AssertionError: async generate require vllm_mode == server, "),
        colocate,
        ErrorPattern("swift-megatron", colocate.pattern, colocate.rules,
                     "swift/megatron/trainers/rollout_mixin.py:MegatronRolloutMixin._init_rollout_engine", colocate.example),
        ErrorPattern("swift-megatron",
                     rf"generation_batch_size {n('gen')} must be divisible by global_batch_size {n('gbs')}",
                     ("swift.args.gen_divisible_by_base",), f"{mg_gen}.resolve_generation_batch_size",
                     "ValueError: generation_batch_size (100) must be divisible by global_batch_size (16)"),
        ErrorPattern("swift-megatron", rf"generation_batch_size {n('gen')} must equal global_batch_size {n('gbs')}",
                     ("swift.args.gen_equals_base_times_spg",), f"{mg_gen}.resolve_generation_batch_size",
                     "ValueError: generation_batch_size (96) must equal global_batch_size (16) * steps_per_generation "
                     "(4) = 64."),
        ErrorPattern("swift-megatron", rf"generation_batch_size {n('gen')} must be divisible by num_generations {n('g')}",
                     ("swift.args.gen_divisible_by_num_generations",), f"{mg_gen}.resolve_generation_batch_size",
                     "ValueError: generation_batch_size (16) must be divisible by num_generations (3)."),
        ErrorPattern("swift-megatron", rf"num_rollout_prompt {n('prompts')} = generation_batch_size .{{0,80}}must be "
                     rf"divisible by dp_size {n('dp')}",
                     ("swift_megatron.args.rollout_prompts_divisible_by_dp",), f"{mg_gen}.validate_batch_dp_alignment",
                     "ValueError: num_rollout_prompt (4) = generation_batch_size (16) // num_generations (4) must be "
                     "divisible by dp_size (8). Please adjust generation_batch_size/steps_per_generation/num_generations."),
        ErrorPattern("swift-megatron", r"per_device_num_rollout_prompt \((?P<prompts>\d+)\) must be (>= 1|greater than)",
                     ("swift_megatron.args.rollout_prompts_per_dp_at_least_one",),
                     f"{mg_gen}.validate_batch_dp_alignment",
                     "ValueError: per_device_num_rollout_prompt (0) must be >= 1, please adjust "
                     "generation_batch_size/steps_per_generation/num_generations."),
        ErrorPattern("swift-megatron", rf"Per-device rollout prompt count {n('prompts')} .{{0,160}}must be divisible by "
                     rf"micro_batch_size {n('micro')}",
                     ("swift_megatron.args.rollout_prompts_per_dp_divisible_by_micro",),
                     f"{mg_gen}.validate_batch_dp_alignment",
                     "ValueError: Per-device rollout prompt count (3) = (generation_batch_size (96) // num_generations "
                     "(4)) // dp_size (8) must be divisible by micro_batch_size (2)."),
        ErrorPattern("swift-megatron", r"per_device_generation_batch_size \((?P<per_device>\d+)\) must be >= 1",
                     ("swift_megatron.args.generation_per_device_at_least_one",), f"{mg_gen}.validate_batch_dp_alignment",
                     "ValueError: per_device_generation_batch_size (0) must be >= 1."),
        ErrorPattern("swift-megatron", rf"global batch size {n('gbs')} is not divisible by micro batch size {n('micro')} "
                     rf"times data parallel size {n('dp')}",
                     ("swift_megatron.args.global_batch_divisible_by_micro_dp",),
                     "swift/megatron/arguments/megatron_args.py:MegatronArguments._init_distributed",
                     "ValueError: global batch size (12) is not divisible by micro batch size (2) times data parallel "
                     "size (4)."),
        ErrorPattern("swift-megatron", rf"world_size {n('world')} is not divisible by (?P<mp>\d+)\b",
                     ("swift_megatron.mcore.world_divisible_by_model_parallel",),
                     "megatron/core/parallel_state.py:initialize_model_parallel (megatron-core)",
                     "RuntimeError: world_size (8) is not divisible by 3"),
        ErrorPattern("swift-megatron", rf"world_size {n('world')} is not divisible by "
                     rf"expert_tensor_model_pipeline_parallel size {n('expert_mp')}",
                     ("swift_megatron.mcore.world_divisible_by_expert_parallel",),
                     "megatron/core/parallel_state.py:initialize_model_parallel (megatron-core)",
                     "RuntimeError: world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (6)"),
        ErrorPattern("swift-megatron", r"Invalid vllm_mode: None", ("swift_megatron.rollout.vllm_mode_required",),
                     "swift/megatron/trainers/rollout_mixin.py:MegatronRolloutMixin._init_rollout_engine",
                     "ValueError: Invalid vllm_mode: None"),
        ErrorPattern("swift-megatron", r"use_vllm must be True for Megatron GRPO",
                     ("swift_megatron.args.use_vllm_required",), f"{mg_gen}._init_grpo",
                     "AssertionError: use_vllm must be True for Megatron GRPO"),
        ErrorPattern("swift-megatron", r"GRPO currently does not support VPP", ("swift_megatron.step.vpp_needs_beta_zero",),
                     "swift/megatron/trainers/grpo_trainer.py:MegatronGRPOTrainer._maybe_compute_logps",
                     "AssertionError: GRPO currently does not support VPP."),
        ErrorPattern("swift-megatron", r"rollout_group_size \* per_device_batch_size == len\(global_rollout_batch\)",
                     ("swift_megatron.runtime.generation_divisible_by_world", "swift_megatron.runtime.eval_rollout_slice"),
                     "swift/megatron/trainers/grpo_trainer.py:MegatronGRPOTrainer.get_local_rollout_batch (an assert "
                     "without a message: the traceback shows the line)",
                     "    assert rollout_group_size * per_device_batch_size == len(global_rollout_batch)\n"
                     "AssertionError"),
        ErrorPattern("swift-megatron", r"num_iters_per_step=0 <= 0", ("swift_megatron.runtime.eval_rollout_prompts",),
                     "swift/megatron/trainers/grpo_trainer.py:MegatronGRPOTrainer.get_num_iters_per_step",
                     "AssertionError: num_iters_per_step=0 <= 0. This means no prompts will be generated"),
        ErrorPattern("swift-megatron", rf"num_attention_heads {n('heads')} must be a multiple of "
                     rf"tensor_model_parallel_size {n('tp')}",
                     ("swift_megatron.mcore.heads_divisible_by_tp",),
                     "megatron/core/transformer/transformer_config.py:TransformerConfig.__post_init__ (megatron-core)",
                     "ValueError: num_attention_heads (28) must be a multiple of tensor_model_parallel_size (8)."),
        ErrorPattern("swift-megatron", rf"num_query_groups {n('groups')} must be a multiple or divisor of "
                     rf"tensor_model_parallel_size {n('tp')}",
                     ("swift_megatron.mcore.query_groups_vs_tp",),
                     "megatron/core/transformer/transformer_config.py:TransformerConfig.__post_init__ (megatron-core)",
                     "ValueError: num_query_groups (4) must be a multiple or divisor of tensor_model_parallel_size (7)."),
        *[ErrorPattern(fw, r"local_device_count \((?P<devices>\d+)\) must be greater than or equal to the product of "
                       r"vllm_data_parallel_size \((?P<dp>\d+)\) and vllm_tensor_parallel_size \((?P<tp>\d+)\)",
                       ("swift.gpus.budget",), "swift/arguments/deploy_args.py:RolloutArguments._check_device_count",
                       "ValueError: Error: local_device_count (2) must be greater than or equal to the product of "
                       "vllm_data_parallel_size (2) and vllm_tensor_parallel_size (2). Current required_device_count = 4.")
          for fw in ("swift", "swift-megatron")],
        ErrorPattern("swift", r"assert not self\.use_vllm or self\.vllm_server_host is not None",
                     ("swift.rollout.server_needs_host",), "swift/arguments/rlhf_args.py:RLHFArguments._init_rollout "
                     "(an assert without a message)",
                     "    assert not self.use_vllm or self.vllm_server_host is not None or self.vllm_server_base_url "
                     "is not None\nAssertionError"),
        ErrorPattern("swift-megatron", r"num_iterations > 1 is not supported for Megatron GRPO",
                     ("swift_megatron.args.num_iterations_unsupported",), f"{mg_gen}._init_grpo",
                     "ValueError: num_iterations > 1 is not supported for Megatron GRPO right now"),
        ErrorPattern("swift-megatron", r"async_generate is not supported for Megatron GRPO",
                     ("swift_megatron.args.async_generate_unsupported",), f"{mg_gen}._init_grpo",
                     "ValueError: async_generate is not supported for Megatron GRPO right now"),
        ErrorPattern("swift-megatron", r"sync_ref_model is not supported for Megatron GRPO",
                     ("swift_megatron.args.sync_ref_model_unsupported",), f"{mg_gen}._init_grpo",
                     "ValueError: sync_ref_model is not supported for Megatron GRPO right now"),
        ErrorPattern("swift-megatron", rf"REAL loss requires that the training micro_batch_size {n('micro')} is a "
                     rf"multiple of num_generations {n('g')}",
                     ("swift_megatron.args.real_loss_micro_divisible_by_num_generations",), f"{mg_gen}._init_grpo",
                     "AssertionError: \"REAL loss requires that the training micro_batch_size (4) is a multiple of "
                     "num_generations (8). Please adjust your batch parameters."),
        ErrorPattern("swift-megatron", r"num_layers should be divisible by pipeline_model_parallel_size",
                     ("swift_megatron.mcore.layers_divisible_by_pp",),
                     "megatron/core/transformer/transformer_block.py:get_num_layers_to_build (megatron-core)",
                     "AssertionError: num_layers should be divisible by pipeline_model_parallel_size"),
    ])


_register_error_patterns()
