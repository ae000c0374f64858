"""slime 0.3.1 command-line import and export.

Import: ``python3 train.py --flag value ...`` as pasted (or a launch script: ``ray job submit ... -- python3
train.py ...``), or the flags alone. slime's parser is Megatron-LM's with slime's arguments and SGLang's
``ServerArgs`` (prefixed ``--sglang-``) added (slime/utils/arguments.py:parse_args); flags are read into the rule
variables of rules.py with slime 0.3.1's argparse defaults where a flag is not given. Megatron's model-shape flags
(``--num-layers`` ...) are read where they matter (the pipeline split); the model's card gives them otherwise.

Export: a solution -> paste-ready flags in slime's spelling (store-true switches bare, as argparse wants them).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ...catalog.models import ModelCard
from ...errors import InputError, did_you_mean
from ...rules.base import Value
from ..base import Framework, Space, pow2, priced_words
from ..cost_common import DEFAULT_RECOMPUTE_MODULES, modules_code, recompute_modules
from ..overrides import ListFlag, flag_bool, flag_float, flag_int, memory_share_permille, parse_flag_args, whole_number
from . import columns, docs, errors, repair
from .rules import DECIDED, RULESET, VARIABLES, VERSION

# --advantage-estimator's choices (slime/utils/arguments.py add_algo_arguments)
ESTIMATORS = ("grpo", "gspo", "cispo", "reinforce_plus_plus", "reinforce_plus_plus_baseline", "ppo")
ALGORITHMS = {"grpo": "grpo", "gspo": "gspo", "dapo": "grpo", "cispo": "cispo", "ppo": "ppo",
              "reinforce++": "reinforce_plus_plus", "reinforce_plus_plus": "reinforce_plus_plus"}
RECOMPUTE = {"full": 2, "selective": 1, "none": 0}
RECOMPUTE_WORDS = {2: "full", 1: "selective"}
# the published example scripts/run-qwen3-4B.sh (slime v0.3.1): its batch, the data and reward a run needs
EXAMPLE_BATCH = {"rollout-batch-size": 32, "n-samples-per-prompt": 8, "global-batch-size": 256}
EXAMPLE_INPUTS = ("${MODEL_ARGS[@]}", "--prompt-data /root/dapo-math-17k/dapo-math-17k.jsonl", "--input-key prompt",
                  "--label-key label", "--apply-chat-template", "--rollout-shuffle", "--rm-type deepscaler",
                  "--num-rollout 3000")
# what recommend searches when the user leaves it alone
SEARCH: dict[str, list[Value]] = {
    "train_batch_size": pow2(8, 1024), "global_batch_size": pow2(8, 8192), "micro_batch_size": pow2(1, 16),
    "tp": [1, 2, 4, 8], "pp": [1, 2, 4], "gpus_per_engine": [1, 2, 4, 8],
}
KNOB_SEARCH: dict[str, list[Value]] = {"gmu_permille": [500, 600, 700, 800, 850], "megatron_recompute": [0, 2]}
# flags whose value may be 0 (no engines: routers only, slime's --rollout-num-gpus help)
_ZERO_OK = {"rollout_gpus"}
_INT_FLAGS_READ_ELSEWHERE = {"megatron_recompute", "megatron_recompute_modules", "megatron_cpu_optimizer_permille",
                             "gmu_permille"}


_OWN_ROLLOUT = "slime.rollout.sglang_rollout.generate_rollout"  # --rollout-function-path's default (arguments.py)


def _recompute(flat: Mapping[str, Any]) -> int:
    raw = flat.get("recompute-granularity")
    if raw is None or raw is True:
        return 0 if raw is None else 2
    word = str(raw).strip().lower()
    if word not in RECOMPUTE:
        raise InputError("recompute-granularity", f"'{raw}' is not a recompute granularity.",
                         "use --recompute-granularity full or selective.")
    return RECOMPUTE[word]


def _cpu_optimizer(flat: Mapping[str, Any]) -> int:
    """Megatron's --optimizer-cpu-offload with --optimizer-offload-fraction (default 1.0), x1000."""
    if not flag_bool("optimizer-cpu-offload", flat.get("optimizer-cpu-offload", False)):
        return 0
    frac = flag_float("optimizer-offload-fraction", flat.get("optimizer-offload-fraction", 1.0))
    if not 0 <= frac <= 1:
        raise InputError("optimizer-offload-fraction", f"{frac} is not a share in [0, 1].",
                         "set --optimizer-offload-fraction between 0 and 1.")
    return int(round(frac * 1000))


def _typed(name: str, raw: Any) -> Value:
    spec = VARIABLES[name]
    if spec.kind == "bool":
        return flag_bool(spec.key, raw)
    if name in _ZERO_OK:
        value = whole_number(spec.key, raw, f"--{spec.key}")
        if value < 0:
            raise InputError(spec.key, f"{value} must be 0 or more.", f"set --{spec.key} to a GPU count.")
        return value
    return flag_int(spec.key, raw)


def _estimator(flat: Mapping[str, Any]) -> str:
    est = str(flat.get("advantage-estimator", "grpo"))
    if est not in ESTIMATORS:
        raise InputError("advantage-estimator", f"'{est}' is not an advantage estimator of slime."
                         f"{did_you_mean(est, ESTIMATORS)}", f"use one of: {', '.join(ESTIMATORS)}.")
    return est


def _nonzero(flat: Mapping[str, Any], key: str) -> bool:
    return flag_float(key, flat.get(key, 0.0)) != 0


def _switch(flat: Mapping[str, Any], key: str) -> bool | None:
    """An argparse BooleanOptionalAction: --key, --no-key, or unset (None)."""
    if f"no-{key}" in flat and flag_bool(f"no-{key}", flat[f"no-{key}"]):
        return False
    return flag_bool(key, flat[key]) if key in flat else None


def _offloads(flat: Mapping[str, Any], colocate: bool, critic: bool) -> tuple[bool, bool]:
    """(offload_train, offload_rollout) as slime_validate_args resolves them: --offload sets both; under --colocate
    an unset one is on; a critic forces offload_train."""
    train, rollout = _switch(flat, "offload-train"), _switch(flat, "offload-rollout")
    if flag_bool("offload", flat.get("offload", False)):
        train = rollout = True
    if colocate:
        train = True if train is None else train
        rollout = True if rollout is None else rollout
    return bool(train) or critic, bool(rollout)


def config_values(flat: Mapping[str, Any], gpus: int | None = None, model: ModelCard | None = None) -> dict[str, Value]:
    """slime flags -> rule values, slime 0.3.1's defaults where a flag is not given."""
    values: dict[str, Value] = {}
    for name, spec in VARIABLES.items():
        if name in DECIDED or name in _INT_FLAGS_READ_ELSEWHERE:
            continue
        values[name] = _typed(name, flat[spec.key]) if spec.key in flat else spec.default
    if values["train_batch_size"] is None:
        from ..key_names import nearest

        typo = [k for k in map(str, flat) if nearest(k, {"rollout-batch-size"}, complete=False)]
        raise InputError("rollout-batch-size", "is required by slime's parser (required=True)"
                         + (f"; --{typo[0]} is no slime flag: did you mean --rollout-batch-size?" if typo else "."),
                         "pass --rollout-batch-size, the prompts of one rollout.")
    values["megatron_recompute"] = _recompute(flat)
    # Megatron-LM's --recompute-modules (nargs='*', default None: megatron-core's ["core_attn"]), read as
    # verl-megatron's override_transformer_config.recompute_modules is (cost_common.modules_code)
    values["megatron_recompute_modules"] = modules_code(flat.get("recompute-modules"), "recompute-modules")
    values["megatron_cpu_optimizer_permille"] = _cpu_optimizer(flat)
    raw_gmu = flat.get("sglang-mem-fraction-static")
    values["gmu_permille"] = None if raw_gmu is None else memory_share_permille(
        "sglang-mem-fraction-static", raw_gmu, "set --sglang-mem-fraction-static to a share in (0, 1], e.g. 0.7.")
    est = _estimator(flat)
    values["need_critic"] = est == "ppo"
    values["reinforce_pp"] = est.startswith("reinforce_plus_plus")
    values["kl_coef_on"] = _nonzero(flat, "kl-coef")
    values["kl_loss_coef_on"] = _nonzero(flat, "kl-loss-coef")
    # sglang_rollout.generate_and_rm calls the user's --custom-generate-function-path in place of generate; a
    # --rollout-function-path other than slime's own replaces the whole rollout
    values["custom_generate"] = flat.get("custom-generate-function-path") is not None or flat.get(
        "rollout-function-path", _OWN_ROLLOUT) != _OWN_ROLLOUT
    values["response_len_given"] = values["max_response_length"] is not None
    # MegatronTrainRayActor.init loads the reference when a KL term needs it (slime_validate_args checks ref_load then)
    values["need_ref"] = bool(values["use_kl_loss"]) or bool(values["kl_coef_on"])
    values["offload_train"], values["offload_rollout"] = _offloads(flat, bool(values["colocate"]),
                                                                   bool(values["need_critic"]))
    values["cluster_num_gpus"] = None
    if gpus is not None:
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
            raise InputError("gpus", f"{gpus} must be at least 1.", "pass --gpus with a positive count.")
        values["cluster_num_gpus"] = gpus
    if model is not None:
        fill_from_model(values, model)
    return values


def fill_from_model(values: dict[str, Value], model: ModelCard) -> None:
    """What the model's card decides where no flag does: its layers, and the lengths SGLang allows (its context:
    ``--rollout-max-context-len``, else the model's; an unset prompt limit lets a prompt take the context less the
    response limit, an unset response limit lets the response take the rest)."""
    if values.get("num_layers") is None and model.num_hidden_layers:
        values["num_layers"] = model.num_hidden_layers
    context = values.get("max_context_length") or model.max_position_embeddings or None
    prompt, response = values.get("max_prompt_length"), values.get("max_response_length")
    if context is None:
        return
    if prompt is None and response is None:
        # neither bound given (both default to None, slime/utils/arguments.py): slime's own generate stops at the
        # first sample (rule slime.rollout.response_len_required); a custom generate function is bounded by the
        # context alone. Priced as a sample that fills the context: a one-token prompt, the rest response
        values["max_prompt_length"] = 1
        values["max_response_length"] = max(1, int(context) - 1)
    elif prompt is None and response is not None:
        values["max_prompt_length"] = max(1, int(context) - int(response))
    elif response is None and prompt is not None:
        values["max_response_length"] = max(1, int(context) - int(prompt))


class SlimeFramework(Framework):
    """``python3 train.py --flags``: slime's RL trainer (Megatron actor, SGLang rollout on Ray)."""

    name = "slime"
    version = VERSION
    ruleset = RULESET
    syntax = "flags"
    command = "python3 train.py"
    doc_intro = docs.INTRO
    policy = repair.SLIME
    error_families = ("slime",)
    accuracy_family = "verl"  # verl-megatron's cost terms price it: verl's published runs give the error bars
    model_keys = ("--hf-checkpoint",)
    example_inputs = EXAMPLE_INPUTS
    example_inputs_source = ("slime's scripts/run-qwen3-4B.sh (dapo-math-17k, the deepscaler reward; MODEL_ARGS: the "
                             "model's Megatron shape, `source scripts/models/<model>.sh` of slime's repository)")
    offload_switch = ("megatron_cpu_optimizer_permille", "optimizer-cpu-offload=true optimizer-offload-fraction=1.0")
    oom_frames = errors.OOM_FRAMES
    oom_advice = errors.OOM_ADVICE
    shapes_learning = frozenset({"train_batch_size", "global_batch_size", "steps_per_rollout"})
    derived_columns = columns.DERIVED
    column_words = columns.WORDS
    scenario_vars = {"prompt_length": "max_prompt_length", "response_length": "max_response_length", "n": "n",
                     "gpus_per_node": "actor_gpus_per_node", "nnodes": "actor_nodes"}
    gpu_count_vars = ("actor_gpus_per_node", "actor_nodes")  # the actor's; the rollout's GPUs follow (gpus_needed)
    # none claimed: slime logs its metrics to wandb/tensorboard and its own logger lines, which runlog.py does not read
    log_formats = ()

    def error_patterns(self) -> list:
        return errors.PATTERNS

    def parse(self, tokens: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
        flat, ignored = parse_flag_args(tokens)
        # argparse's BooleanOptionalAction: --no-offload-train
        return flat, ignored

    def to_values(self, flat: Mapping[str, Any], *, gpus: int | None, model: ModelCard | None) -> dict[str, Value]:
        return config_values(flat, gpus, model)

    def config_notes(self, flat: Mapping[str, Any], *, priced: bool = True) -> list[str]:
        if "rollout-max-prompt-len" in flat:
            return []
        if "rollout-max-response-len" not in flat:
            return ["no --rollout-max-prompt-len nor --rollout-max-response-len: memory and time "
                    f"{priced_words(priced, plural=True)} at a sample that fills the context (--rollout-max-context-len, "
                    "else the model's), the only bound left (give both, or --mean-prompt-len and --mean-response-len "
                    "for the time)"]
        return ["no --rollout-max-prompt-len: a prompt may take the context less the response limit, and memory and "
                f"time {priced_words(priced, plural=True)} at that (give --rollout-max-prompt-len, or "
                "--mean-prompt-len for the time)"]

    def value_notes(self, values: Mapping[str, Value], *, priced: bool = True) -> list[str]:
        notes = []
        if values.get("cluster_num_gpus") is None:
            notes.append("the Ray cluster's GPU count is unknown (--gpus): the placement's budget is not checked")
        return notes

    def hardware(self, values: Mapping[str, Value]) -> tuple[int, int]:
        from .cost import rollout_pool

        actor = int(values.get("actor_nodes") or 1) * int(values.get("actor_gpus_per_node") or 1)
        pool = rollout_pool(values)
        gpus = max(actor, pool) if values.get("colocate") else actor + pool
        return gpus, int(values.get("max_prompt_length") or 0) + int(values.get("max_response_length") or 0)

    def kept_batch(self, scenario: Any) -> dict[str, Any]:
        """The published example's batch (scripts/run-qwen3-4B.sh) where the user set none of it."""
        fixed, searched = scenario.fixed, set(scenario.search)
        if any(k in fixed or k in searched for k in EXAMPLE_BATCH):
            return {}
        return {k: v for k, v in EXAMPLE_BATCH.items() if k != "n-samples-per-prompt"}

    def _native(self, scenario: Any) -> dict[str, Any]:
        native: dict[str, Any] = {"colocate": True, **scenario.fixed}
        if scenario.algorithm:
            algo = scenario.algorithm.strip().lower()
            if algo not in ALGORITHMS:
                raise InputError("algo", f"'{scenario.algorithm}' is not an algorithm slime runs."
                                 f"{did_you_mean(algo, ALGORITHMS)}", f"use one of: {', '.join(ALGORITHMS)}.")
            native["advantage-estimator"] = ALGORITHMS[algo]
        n = scenario.n
        if n is None:
            n = scenario.fixed.get("n-samples-per-prompt", 8)
        native.update({"rollout-max-prompt-len": scenario.prompt_length,
                       "rollout-max-response-len": scenario.response_length, "n-samples-per-prompt": n,
                       "actor-num-nodes": scenario.nnodes, "actor-num-gpus-per-node": scenario.per_node,
                       "num-gpus-per-node": scenario.per_node})
        native.setdefault("rollout-batch-size", EXAMPLE_BATCH["rollout-batch-size"])
        return native

    def space(self, scenario: Any, model: ModelCard | None, *, with_knobs: bool = False) -> Space:
        native = self._native(scenario)
        base = config_values(native, model=model)
        by_key = self.ruleset.by_key()
        domains, user_set = self.user_domains(
            scenario, base, DECIDED, lambda name, v: v if name in _INT_FLAGS_READ_ELSEWHERE else _typed(name, v),
            "a slime flag", "rollout-batch-size")
        total = scenario.total_gpus
        search = {**SEARCH, **(KNOB_SEARCH if with_knobs else {})}
        for name, values in search.items():
            if name in user_set:
                continue
            if name in ("tp", "gpus_per_engine"):
                values = [v for v in values if v <= min(total, scenario.per_node)]
            elif name == "pp":
                values = [v for v in values if v <= total]
            domains[name] = list(values)
        fixed_native = {k: v for k, v in native.items() if k not in by_key and k not in (
            "recompute-granularity", "recompute-modules", "optimizer-cpu-offload", "optimizer-offload-fraction", "advantage-estimator",
            "kl-coef", "kl-loss-coef")}
        if "advantage-estimator" in native:
            fixed_native["advantage-estimator"] = native["advantage-estimator"]
        return Space(domains, [], fixed_native)

    def cost_spec(self, model: ModelCard, gpu: Any):
        from .cost import cost_spec

        return cost_spec(model, gpu)

    def native_value(self, name: str, value: Value) -> Any:
        if name == "megatron_recompute":
            return RECOMPUTE_WORDS.get(int(value or 0))
        if name == "megatron_recompute_modules":
            return list(recompute_modules(int(value if value is not None else DEFAULT_RECOMPUTE_MODULES)))
        return super().native_value(name, value)

    def assignment(self, name: str, value: Value) -> str:
        """One variable as slime's parser takes it: a store-true switch bare (or nothing when off), the CPU
        optimizer as Megatron's two flags, recompute as its word."""
        spec = VARIABLES[name]
        if spec.kind == "bool":
            return f"--{spec.key}" if value else ""
        if name == "megatron_cpu_optimizer_permille":
            return f"--optimizer-cpu-offload --optimizer-offload-fraction {int(value) / 1000}" if value else ""
        if name == "megatron_recompute":
            word = RECOMPUTE_WORDS.get(int(value or 0))
            return f"--recompute-granularity {word}" if word else ""
        if name == "megatron_recompute_modules":
            if value is None or int(value) == DEFAULT_RECOMPUTE_MODULES:
                return ""
            return " ".join(["--recompute-modules", *self.native_value(name, value)])
        v = self.native_value(name, value)
        return "" if v is None else f"--{spec.key} {v}"

    def export(self, solution: Mapping[str, Value], space: Space | None = None) -> list[str]:
        out = []
        for name in VARIABLES:
            if name in DECIDED or name not in solution:
                continue
            text = self.assignment(name, solution[name])
            if text:
                out.append(text)
        for key, value in (space.fixed_native if space else {}).items():
            if value is None or value is False:
                continue
            if isinstance(value, list):  # an nargs='+' flag: one word per item
                out.append(ListFlag(f"--{key}", [str(v) for v in value]))
            else:
                out.append(f"--{key}" if value is True else f"--{key} {value}")
        return out

    def is_gpu_count_key(self, key: str) -> bool:
        return key.lstrip("-") in ("actor-num-nodes", "actor-num-gpus-per-node", "rollout-num-gpus")
