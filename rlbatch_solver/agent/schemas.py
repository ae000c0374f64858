"""The tools' JSON schemas: their inputs (the command line's arguments, typed, with the words of its ``--help``) and
their outputs (what ``--json`` prints; the catalogs' lists under one key), and the check of a call's arguments
against its input schema, whose failures are the one-paragraph input error naming the field."""

from __future__ import annotations

from typing import Any

from ..costmodel.lengths import PROFILES
from ..errors import InputError, did_you_mean, shown
from ..frameworks.registry import FRAMEWORKS
from ..scenario import OBJECTIVES, PLACEMENTS

MAX_TEXT = 256 * 1024  # characters of one pasted text, and of a whole call's arguments
MAX_TIME_LIMIT = 60.0  # seconds a call's solves may take


def _s(description: str, **more: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, "maxLength": 1024, **more}


def _i(description: str, **more: Any) -> dict[str, Any]:
    return {"type": "integer", "description": description, "minimum": 1, "maximum": 10**9, **more}


def _num(description: str, **more: Any) -> dict[str, Any]:
    return {"type": "number", "description": description, "exclusiveMinimum": 0, **more}


def _words(description: str) -> dict[str, Any]:
    return {"type": "array", "description": description, "maxItems": 4096,
            "items": {"type": "string", "maxLength": 65536}}


FRAMEWORK = {"description": f"{', '.join(FRAMEWORKS)}; a release after == (verl==0.7.1). Default: verl, or the one "
             "a pasted launch script runs.",
             "anyOf": [{"type": "string", "enum": list(FRAMEWORKS)},
                       {"type": "string", "pattern": r"^[a-z-]+(==|@)[0-9][0-9a-z.]*$", "maxLength": 64}]}
GPU = _s("GPU type, e.g. h100, a100-80gb, rtx4090 (catalog_gpus lists them): with model, memory per phase.",
         maxLength=64)
MODEL = _s("Model: a catalog name or Hugging Face id, e.g. qwen2.5-7b (catalog_models lists them).", maxLength=200)
MODEL_CONFIG = _s("Instead of model: a Hugging Face config.json's text, for a model the catalog lacks.",
                  maxLength=MAX_TEXT)
ARGS = _words("The framework's own arguments, one a word, as pasted after -- on the command line: key=value for verl "
              "(data.train_batch_size=64), --flag value for the others.")
SCRIPT = _s("A launch script's text (run.sh: verl, ms-swift, OpenRLHF, TRL): read, never run; its framework, "
            "arguments, GPU count and model are taken from it.", maxLength=MAX_TEXT)
CONFIG_YAML = _s("A YAML config's text (nested like the framework's own, or flat dotted keys).", maxLength=MAX_TEXT)
TIME_LIMIT = _num("Seconds for the call's solves (it says whether its answer is proven within them).",
                  maximum=MAX_TIME_LIMIT, default=10)
LENGTH_FRACTION = _num("Memory: the longest micro batch's length as a share of max prompt+response (default 1.0, the "
                       "worst case).", maximum=1)
MEAN_PROMPT = _num("Time and tokens/s: your data's mean prompt length in tokens (default: the length profile's data "
                   "mean, else 0.28 of max_prompt_length).", maximum=10**9)
MEAN_RESPONSE = _num("Time and tokens/s: your data's mean response length in tokens (default: a share of "
                     "max_response_length).",
                     maximum=10**9)
LONGEST_RESPONSE = _num("Time: the longest response your data reaches in tokens (verl logs response_length/max), where "
                        "it stays under max_response_length: a synchronous rollout waits for it (default: the length "
                        "profile's longest, up to the limit).", maximum=10**9)
RESPONSE_PROFILE = {"type": "string", "enum": list(PROFILES),
                    "description": "Time, where no mean is given: how long the model answers (default 0.35 of the "
                    "limit, reasoning 0.55 of an 8K limit and less of a longer one, gsm8k ~270 tokens, math ~1,500 tokens, limit: every response at "
                    "the limit); unset: chosen by the model's family and the config's training data."}
HOST_MEM = _num("RAM of one node in GiB: with gpu and model, checks the host memory.", maximum=2**20)
GPUS = _i("Total GPUs (or give them in the config).", maximum=65536)

PASTED = {"args": ARGS, "script": SCRIPT, "config_yaml": CONFIG_YAML}
HARDWARE = {"framework": FRAMEWORK, "gpus": GPUS, "model": MODEL, "model_config": MODEL_CONFIG, "gpu": GPU}


def _input(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


INPUTS: dict[str, dict[str, Any]] = {
    "check": _input({**PASTED, **HARDWARE, "length_fraction": LENGTH_FRACTION, "mean_prompt_len": MEAN_PROMPT,
                     "mean_response_len": MEAN_RESPONSE, "longest_response_len": LONGEST_RESPONSE,
                     "response_profile": RESPONSE_PROFILE, "host_mem": HOST_MEM}),
    "fix": _input({**PASTED, **HARDWARE, "keep": _words("Keys that must not change (native names)."),
                   "time_limit": TIME_LIMIT, "length_fraction": LENGTH_FRACTION, "host_mem": HOST_MEM}),
    "explain": _input({"error": _s("The error line (or traceback) the job died on.", maxLength=MAX_TEXT),
                       **PASTED, **HARDWARE, "time_limit": TIME_LIMIT}, required=("error",)),
    "recommend": _input({
        **HARDWARE,
        "nnodes": _i("Nodes the GPUs are spread over (default 1; more than 8 GPUs on one: servers of 8).",
                     maximum=65536),
        "algo": _s("The framework's algorithm, e.g. ppo, grpo, dapo, gspo, adpo, rloo, reinforce++.", maxLength=64),
        "n": _i("Responses per prompt (rollout.n)."),
        "prompt_len": _i("The longest prompt in tokens (max_prompt_length); memory is priced at it."),
        "response_len": _i("The longest response in tokens (max_response_length); memory is priced at it."),
        "set": _words("Fix native keys: key=value each, e.g. data.train_batch_size=64."),
        "search": _words("Search native keys: key=v1,v2,... each, e.g. data.train_batch_size=32,64."),
        "objective": {"type": "string", "enum": list(OBJECTIVES), "description": "What the best config is best at: "
                      "time (per sample, the default), memory-headroom or gpus (the fewest)."},
        "top": _i("How many configs to rank.", maximum=50, default=5),
        "time_limit": TIME_LIMIT, "length_fraction": LENGTH_FRACTION, "mean_prompt_len": MEAN_PROMPT,
        "mean_response_len": MEAN_RESPONSE, "longest_response_len": LONGEST_RESPONSE,
        "response_profile": RESPONSE_PROFILE, "host_mem": HOST_MEM,
        "placement": {"type": "string", "enum": list(PLACEMENTS), "description": "colocate: rollout on the training "
                      "GPUs; split: rollout on a pool of its own, pipelined; auto: both, compared."},
        "free_batch": {"type": "boolean", "description": "Let the search choose the algorithm's batch sizes too."},
        "from_config": _s("Start from your own launch script's text (or a YAML config's, with framework): keep its "
                          "model, GPUs, lengths, algorithm and batch per step; choose the rest; compare with it. "
                          "Needs gpu.", maxLength=MAX_TEXT),
        "scenario_yaml": _s("A scenario YAML's text (the other arguments override it).", maxLength=MAX_TEXT),
    }),
    "catalog_gpus": _input({}),
    "catalog_models": _input({}),
}

# ----------------------------------------------------------------------------- outputs
STR, BOOL, NUM, OBJ = {"type": "string"}, {"type": "boolean"}, {"type": "number"}, {"type": "object"}
STRS = {"type": "array", "items": STR}


def _maybe(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _out(properties: dict[str, Any], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties,
            "required": [k for k in properties if k not in optional]}


VIOLATION = _out({"rule": STR, "message": STR, "stage": STR, "severity": {"enum": ["error", "warning"]},
                  "source": STR, "tolerated": BOOL}, optional=("tolerated",))
VIOLATIONS = {"type": "array", "items": VIOLATION}
CHECK = _out({"valid": BOOL, "framework": STR, "rules_version": STR, "violations": VIOLATIONS,
              "skipped_rules": {"type": "array", "items": _out({"rule": STR, "why": STR})}, "notes": STRS,
              "memory": OBJ, "host_memory": OBJ}, optional=("memory", "host_memory"))
FIX = _out({
    "framework": STR, "rules_version": STR, "status": STR, "proven_nearest": BOOL, "nearest_counts": STR,
    "valid_before": BOOL,
    "violations_before": VIOLATIONS,
    "changes": {"type": "array", "items": _out({"key": STR, "old": {}, "new": {}, "old_arg": STR, "new_arg": STR,
                                                "satisfies": STRS, "headroom": STR})},
    "fixed_config": STRS, "memory_evaluated": BOOL, "memory_mib": OBJ, "conflict": _maybe(STRS),
    "conflict_text": {"type": "array", "items": _out({"rule": STR, "text": STR})}, "pinned_in_conflict": OBJ,
    "relaxations": STRS, "relaxations_tried": {"type": "array", "items": OBJ}, "notes": STRS,
    "search": _out({"method": STR, "configs_evaluated": {"type": "integer"}, "wall_time_s": NUM, "cut_short": STRS}),
    "waste": STR,
    "advice_after": {"type": "array", "items": _out({"rule": STR, "text": STR, "new": BOOL})},
    "memory_floor_mib": OBJ, "host_memory": _maybe(OBJ), "host_memory_unfit": _maybe(OBJ),
    "nearest_repair": _maybe(_out({"changes": STRS, "proven_nearest": BOOL})),
    "partial": _maybe(_out({"changes": {"type": "array", "items": OBJ}, "still_breaks": STRS})),
})
EXPLAIN = _out({"matched": BOOL, "numbers": OBJ, "meaning": STRS, "notes": STRS,
                "rules": {"type": "array", "items": _out({"framework": STR, "rule": STR, "stage": STR, "why": STR,
                                                          "source": STR})},
                "config_breaks": _maybe(VIOLATIONS), "fix": _maybe(FIX), "out_of_memory": _maybe(OBJ)})
CHOICE = _out({"rank": {"type": "integer"}, "native": STRS, "yaml": STR, "step_time_s": NUM, "phase_seconds": OBJ,
               "tokens_per_s": NUM, "memory_gib": OBJ, "proven": BOOL, "waste": STR,
               "pipeline": {"type": "array", "items": OBJ}, "entry_point": {}})
RECOMMEND = _out({"framework": STR, "rules_version": STR, "status": STR, "proven": BOOL, "capacity_gib": NUM,
                  "headroom": STR, "batch": {}, "batch_kept": {}, "host_memory": _maybe(OBJ),
                  "host_memory_unfit": _maybe(OBJ),
                  "choices": {"type": "array", "items": CHOICE}, "conflict": _maybe(STRS), "memory_floor_mib": OBJ,
                  "not_listed": STRS, "helps": STRS, "error_bars": {}, "mean_lengths": {}, "placement": _maybe(OBJ), "start": _maybe(OBJ)})
GPU_ROW = _out({"name": STR, "display_name": STR, "memory_bytes": {"type": "integer"}, "bf16_tflops": NUM,
                "hbm_bandwidth_gbps": NUM, "intra_node": STR, "intra_node_bandwidth_gbps": NUM,
                "host_link_bandwidth_gbps": NUM, "hopper_fp8": BOOL, "source": STR, "aliases": STRS})
MODEL_ROW = _out({"name": STR, "params": {"type": "integer"}, "active_params": {"type": "integer"},
                  "layers": {"type": "integer"}, "hidden": {"type": "integer"}, "heads": {"type": "integer"},
                  "kv_heads": {"type": "integer"}})

OUTPUTS: dict[str, dict[str, Any]] = {
    "check": CHECK, "fix": FIX, "explain": EXPLAIN, "recommend": RECOMMEND,
    "catalog_gpus": _out({"gpus": {"type": "array", "items": GPU_ROW}}),
    "catalog_models": _out({"models": {"type": "array", "items": MODEL_ROW}}),
}


# ----------------------------------------------------------------------------- the check of a call's arguments
def check_arguments(tool: str, arguments: Any) -> dict[str, Any]:
    """``arguments`` as the tool takes them (unset ones left out), or the input error naming the field."""
    import json

    import jsonschema

    if not isinstance(arguments, dict):
        raise InputError("arguments", "must be an object of named arguments.", f"see {tool}'s input schema.")
    arguments = {k: v for k, v in arguments.items() if v is not None}  # null: not given
    size = len(json.dumps(arguments))
    if size > MAX_TEXT:
        raise InputError("arguments", f"are {size:,} characters, more than the {MAX_TEXT:,} a call may carry.",
                         "paste only the launch script or the arguments that set the run's sizes.")
    schema = INPUTS[tool]
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(arguments), key=lambda e: [str(p) for p in e.path])
    if errors:
        raise _input_error(tool, schema, errors[0])
    return arguments


def _input_error(tool: str, schema: dict[str, Any], err: Any) -> InputError:
    props = schema["properties"]
    if err.validator == "additionalProperties":
        word = sorted(set(err.instance) - set(props))[0]
        return InputError(shown(word, 40), f"is no argument of {tool}.{did_you_mean(word, props)}",
                          f"use {', '.join(props) or 'no arguments'}.")
    if err.validator == "required":
        name = next(k for k in err.validator_value if k not in err.instance)
        return InputError(name, "is required.", f"give {name}: {props[name]['description']}")
    name = str(err.path[0]) if err.path else "arguments"
    value, limit = err.instance, err.validator_value
    about = props.get(name, {}).get("description", "")
    problem = {
        "type": lambda: f"{shown(value, 40)!r} is not a{'n' if str(limit)[0] in 'aeiou' else ''} {limit}.",
        "enum": lambda: f"{shown(value, 40)!r} is none of {', '.join(limit)}.{did_you_mean(str(value), limit)}",
        "maxLength": lambda: f"is {len(value):,} characters, more than the {limit:,} it may have.",
        "maxItems": lambda: f"has {len(value):,} items, more than the {limit:,} it may have.",
        "minimum": lambda: f"{shown(value)} is out of range (at least {limit}).",
        "exclusiveMinimum": lambda: f"{shown(value)} is out of range (it must be above {limit}).",
        "maximum": lambda: f"{shown(value)} is out of range (at most {limit}).",
        "pattern": lambda: f"{shown(value, 40)!r} is not of the form {limit}.",
    }.get(err.validator, lambda: shown(err.message, 200) + ".")()
    if err.validator == "anyOf" and name == "framework":
        problem = f"{shown(value, 40)!r} is none of {', '.join(FRAMEWORKS)}.{did_you_mean(str(value), FRAMEWORKS)}"
    return InputError(name, problem, f"give {name} as its schema says: {about}" if about else "see the schema.")
