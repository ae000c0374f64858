"""TRL 1.16.0 GRPO config import and export.

Import: a launch command as pasted (``accelerate launch --num_processes 8 --config_file zero3.yaml grpo.py
--per_device_train_batch_size 4 ...``, ``trl grpo ...``; ``--flag value`` and ``--flag=value``) or a YAML file
of ``GRPOConfig`` fields (open-r1's recipes), read into the rule variables of ``rules.py`` with TRL 1.16.0's
dataclass defaults where a flag is absent. The world size is accelerate's ``--num_processes`` (all machines;
``--num_machines`` of them), else the accelerate config file's ``num_processes``, else ``--gpus``. A
``--config_file`` that is one of TRL's own accelerate configs (``zero1``, ``zero2``, ``zero3``, ``fsdp1``,
``fsdp2``, ``multi_gpu``, ``single_gpu``: trl/accelerate_configs/) is known by name; another one is read when the
file exists here. ``--config FILE`` (TrlParser's GRPOConfig YAML) is read when it exists: flags override it.

In server mode ``trl vllm-serve`` is a separate command: give its sizes as ``--server.tensor_parallel_size`` /
``--server.data_parallel_size`` (our names; they default to 1, as ``trl vllm-serve``'s do) and the GPUs of the
whole job with ``--gpus``.

Export: a solution -> paste-ready ``--num_processes N --flag value`` arguments.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from ... import safe_input
from ...catalog.models import ModelCard
from ...errors import InputError, did_you_mean
from ...rules.base import Rule, RuleKind, RuleSet, Stage, Value, bool_names, optional_names
from ...rules.expr import BoolVar, Const, IfThenElse, IntVar
from ..base import LORA_RANK, Space, priced_words
from ..key_names import KeyList, nearest
from ..overrides import ListFlag, flag_bool, flag_float, flag_int, is_file, load_yaml_file, parse_flag_args, split_tokens
from ..swift.cost import cost_spec as swift_cost_spec
from ..swift.framework import ACCUMULATION, PER_DEVICE, SwiftFramework, _present, read_flags
from . import columns, docs, errors, liger, placement, repair, versions
from ..bnb import quantized_cost_spec
from .cost import cost_values, release_cost_spec
from .fields import GRPO_SCRIPT_OPTIONS
from .rules import REMOVED_FIELDS, RULESET
from .versions import RELEASES

# TRL's own accelerate configs, as `trl grpo --accelerate_config NAME` and the docs' --config_file paths name them
# (trl/accelerate_configs/*.yaml: all with num_processes 8 and num_machines 1)
NAMED_ACCELERATE = {
    "zero1": {"distributed_type": "DEEPSPEED", "zero_stage": 1},
    "zero2": {"distributed_type": "DEEPSPEED", "zero_stage": 2},
    "zero3": {"distributed_type": "DEEPSPEED", "zero_stage": 3},
    "fsdp1": {"distributed_type": "FSDP"},
    "fsdp2": {"distributed_type": "FSDP"},
    "multi_gpu": {"distributed_type": "MULTI_GPU"},
    "single_gpu": {"distributed_type": "NO"},
}
ACCELERATE_FLAGS = ("num_processes", "num_machines", "config_file", "accelerate_config", "use_deepspeed",
                    "zero_stage", "offload_optimizer_device", "offload_param_device", "use_fsdp",
                    "fsdp_offload_params", "mixed_precision", "machine_rank", "main_process_ip",
                    "main_process_port", "deepspeed_config_file", "deepspeed_multinode_launcher")
_SKIP = {"accelerate", "launch", "trl", "grpo", "python", "python3", "-m", "torchrun"}
# flags of ours and of the launcher, not of TRL's script parser (resolve_flag leaves them alone)
OUR_FLAGS = frozenset(ACCELERATE_FLAGS) | {"gpus", "config", "model", "torch_dtype"}
DECIDED = {"gpus_per_node", "cluster_num_gpus", "eval_on", "vllm_server", "kl_on", "num_heads", "num_kv_heads",
           "removed_fields", "frontend_check"} | liger.RULE_VARIABLES
# rule variables the export writes from no solution value (EXPORT_ORDER, the layout flags): a user's --set of one
# travels with the answer as given
PRINTED_AS_GIVEN = frozenset({"use_peft", "sync_ref_model", "auto_find_batch_size"})
# which command the pasted text starts (parse_trl_args): `trl grpo` checks GRPOConfig at world size 1 first
ENTRY = "__entry__"
TRL_CLI, ACCELERATE = "trl grpo", "accelerate launch"
# the script accelerate launch runs, as the text names it (``src/open_r1/grpo.py``, ``-m trl.scripts.grpo``): a
# printed command keeps the user's own entry point (``user_command``)
SCRIPT = "__script__"
# the memory switches recommend searches when the user leaves them alone, and the flags that set them
# (the distribution: plain DDP, accelerate's DeepSpeed ZeRO-2 or ZeRO-3, -1/2/3; the weights' dtype: TRL loads fp32
# unless --dtype says otherwise, which an expert sets to bfloat16 for a bf16 checkpoint)
# (gradient checkpointing: searched where the release's GRPOConfig leaves it off, before 0.22.0, versions.Release.grad_ckpt)
KNOB_SEARCH: dict[str, list[Value]] = {"gmu_permille": [300, 500, 700], "sleep_level": [0, 2], "ds_stage": [-1, 2, 3],
                                       "weights_fp32": [True, False], "grad_ckpt": [False, True]}
CONFIG_FILE_FLAGS = ("config_file", "accelerate_config")  # accelerate's config file, TRL's own name for it
KNOB_FLAGS = {"gmu_permille": ("vllm_gpu_memory_utilization",), "sleep_level": ("vllm_enable_sleep_mode",),
              "ds_stage": ("zero_stage", "use_deepspeed", "use_fsdp", *CONFIG_FILE_FLAGS),
              "weights_fp32": ("dtype", "torch_dtype", "model_init_kwargs"), "grad_ckpt": ("gradient_checkpointing",)}


def parse_trl_args(tokens: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """Pasted launch text -> ({flag: value}, ignored tokens): launcher words and the script path are read past; the
    command that starts the run is kept under ``ENTRY`` when the text names it."""
    all_toks = split_tokens(tokens)
    script = _script(all_toks)
    module = script.split()[-1] if script and script.startswith("-m ") else None
    toks = [t for t in all_toks if t not in _SKIP and not t.endswith(".py") and t != module]
    values, ignored = parse_flag_args(toks)
    out = {k.replace("-", "_"): v for k, v in values.items()}
    words = [t for t in all_toks if not t.startswith("-")]
    if any(a == "trl" and b == "grpo" for a, b in zip(words, words[1:])):
        out[ENTRY] = TRL_CLI
    elif "accelerate" in words or any(t.endswith(".py") for t in all_toks):
        out[ENTRY] = ACCELERATE
    if script and out.get(ENTRY) == ACCELERATE:
        out[SCRIPT] = script
    return out, ignored


def _script(tokens: Sequence[str]) -> str | None:
    """The entry point accelerate launch runs, as written: its first ``.py`` word, or ``-m`` and the module."""
    for i, tok in enumerate(tokens):
        if tok.endswith(".py"):
            return tok
        if tok == "-m" and i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
            return f"-m {tokens[i + 1]}"
    return None


def _accelerate(flat: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """accelerate's settings: the config file (TRL's named ones, or read here), then the launch flags."""
    out: dict[str, Any] = {}
    notes: list[str] = []
    name = flat.get("config_file") or flat.get("accelerate_config")
    if _present(name):
        stem = Path(str(name)).stem.removeprefix("deepspeed_")
        if is_file(name):
            data = load_yaml_file(name, "config_file") or {}
            if not isinstance(data, dict):
                raise InputError("config_file", f"{name} does not hold an accelerate config (a mapping).",
                                 "pass an accelerate config file.")
            out.update({k: data[k] for k in ("num_processes", "num_machines", "distributed_type") if k in data})
            ds = data.get("deepspeed_config") or {}
            fsdp = data.get("fsdp_config") or {}
            out.update({k: ds[k] for k in ("zero_stage", "offload_optimizer_device", "offload_param_device") if k in ds})
            if "fsdp_offload_params" in fsdp:
                out["fsdp_offload_params"] = fsdp["fsdp_offload_params"]
        elif stem in NAMED_ACCELERATE:
            out.update(NAMED_ACCELERATE[stem], num_processes=8, num_machines=1)
            notes.append(f"accelerate config {name}: read as TRL's own {stem}.yaml (num_processes 8 unless given)")
        else:
            known = [n for n in ("zero3", "zero2", "zero1", "fsdp") if n in stem]
            if known:
                out.update(NAMED_ACCELERATE.get(known[0], NAMED_ACCELERATE["fsdp1"]))
            notes.append(f"accelerate config {name} is not here: "
                         + (f"its name says {known[0]}" if known else "its backend is not known (no DeepSpeed assumed)"))
    if flat.get("use_deepspeed") is not None and flag_bool("use_deepspeed", flat["use_deepspeed"]):
        out["distributed_type"] = "DEEPSPEED"
    if flat.get("use_fsdp") is not None and flag_bool("use_fsdp", flat["use_fsdp"]):
        out["distributed_type"] = "FSDP"
    for key in ("num_processes", "num_machines", "zero_stage", "offload_optimizer_device", "offload_param_device",
                "fsdp_offload_params"):
        if key in flat:
            out[key] = flat[key]
    return out, notes


OLD_BETA = 0.04  # GRPOConfig.beta's default in TRL 0.14-0.18 (trl/trainer/grpo_config.py); 0.0 from 0.19 on
# GRPOConfig fields TRL 0.18 no longer has (trl 0.18.0 grpo_config.py): a config setting one ran on 0.17 or before
FIELDS_BEFORE_0_18 = ("vllm_device", "vllm_dtype", "vllm_max_model_len", "vllm_enable_prefix_caching")


def _before_0_18(flat: Mapping[str, Any]) -> bool:
    return any(k in flat for k in FIELDS_BEFORE_0_18)


FILE_KEYS = "__config_keys__"  # _with_config: the keys only the --config file gave (the flags override the rest)


def _plain(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Flags without their dashes, dashes inside as underscores (``--vllm-mode`` is ``vllm_mode``)."""
    return {(k[2:] if k.startswith("--") else k).replace("-", "_"): v for k, v in flat.items()}


def _ours(name: str) -> bool:
    """Not a name for TRL's script parser: ours and the launcher's, internal keys, environment words."""
    return name in OUR_FLAGS or name.startswith("__") or "." in name or name.isupper()


def resolve_flag(name: str) -> str:
    """A flag as argparse reads it: an exact option, else the one option it is an unambiguous prefix of; ours (the
    launcher's, --gpus, --config, the server's sizes, environment words) and unknown names stay as they are. An
    ambiguous prefix is argparse's error at launch: an input error here, naming the options."""
    if name in GRPO_SCRIPT_OPTIONS or _ours(name):
        return name
    matches = sorted(o for o in GRPO_SCRIPT_OPTIONS if o.startswith(name))
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        shown = ", ".join(f"--{m}" for m in matches[:6]) + (" ..." if len(matches) > 6 else "")
        raise InputError(name, f"--{name} is ambiguous: TRL's parser could read it as {shown} (argparse stops with "
                         "'ambiguous option').", f"write the whole name, e.g. --{matches[0]}.")
    return name


def _unknown(name: str) -> bool:
    return resolve_flag(name) == name and name not in GRPO_SCRIPT_OPTIONS and name not in versions.ALL_FIELDS and \
        not _ours(name)


def _guess(name: str) -> str:
    """ `` (did you mean --x?)`` for a flag one slip from an option of TRL's grpo script, else ''."""
    near = nearest(name, GRPO_SCRIPT_OPTIONS, complete=True)
    return f" (did you mean --{near}?)" if near else ""


def _config_data(flat: Mapping[str, Any]) -> dict[str, Any]:
    cfg = flat.get("config")
    if not _present(cfg) or not is_file(cfg):
        return {}
    data = load_yaml_file(cfg) or {}
    if not isinstance(data, dict):
        raise InputError("config", f"{cfg} does not hold GRPOConfig fields (a mapping).", "pass a GRPOConfig YAML.")
    return {str(k): v for k, v in data.items()}


def _old_release(flat: Mapping[str, Any]) -> bool:
    """A config that sets fields TRL 1.16.0 removed was written for a release before 1.0."""
    return any(k in flat for k in REMOVED_FIELDS)


def _old_release_server(flat: Mapping[str, Any]) -> bool:
    """A config of a TRL release before 1.0 (it sets fields 1.16.0 removed) that turns vLLM on without naming a mode
    ran vLLM on a GPU of its own: ``vllm_device`` "auto", "the next available GPU after the last one used for
    training" (trl 0.14.0 grpo_config.py), then ``vllm_mode`` default "server" (trl 0.18.0 and 0.19.1
    grpo_config.py); 1.16.0's default is "colocate"."""
    return (_old_release(flat) and not _present(flat.get("vllm_mode"))
            and flag_bool("use_vllm", flat.get("use_vllm", False)))


class TrlFramework(SwiftFramework):
    """``accelerate launch ... grpo.py`` / ``trl grpo``: TRL's GRPOTrainer (DeepSpeed/FSDP through accelerate,
    vLLM colocate or server)."""

    name = "trl"
    version = RULESET.version
    ruleset: RuleSet = RULESET
    command = "accelerate launch"
    doc_intro = docs.INTRO
    policy = repair.TRL
    error_families = ("trl",)
    accuracy_family = "trl"
    derived_columns = columns.DERIVED
    column_words = columns.WORDS
    # none: GRPOTrainer prints its metrics through transformers' Trainer.log, a Python dict per logging step with
    # no step or phase times and no memory (trl/extras/profiling.py ProfilingContext reports its timers to wandb,
    # MLflow and Trackio only)
    log_formats = ()
    launcher_keys = frozenset(ACCELERATE_FLAGS)
    launcher_entries = (ACCELERATE,)
    launcher_flags = True
    model_keys = ("--model_name_or_path", "--model")
    # a whole command (run_command): the dataset and reward of GRPOTrainer's own example (its docstring:
    # trl-lib/DeepMath-103K with trl.rewards.accuracy_reward, which the grpo script names accuracy_reward)
    example_inputs = ("--dataset_name trl-lib/DeepMath-103K", "--reward_funcs accuracy_reward")
    example_inputs_source = "GRPOTrainer's example (trl-lib/DeepMath-103K, accuracy_reward)"
    offload_switch = None  # accelerate's DeepSpeed config file decides it, not a flag
    # TRL's ModelConfig: use_peft, lora_r, lora_target_modules (peft's default targets are q and v only)
    lora_switch = ("use_peft", f"use_peft=true lora_r={LORA_RANK} lora_target_modules=all-linear")
    oom_frames = errors.OOM_FRAMES
    oom_advice = errors.OOM_ADVICE
    shapes_learning = frozenset({"generation_batch_size", "steps_per_generation", "per_device_train_batch_size",
                                 "gradient_accumulation_steps"})
    scenario_vars = {"prompt_length": "max_length", "response_length": "max_completion_length",
                     "n": "num_generations", "gpus_per_node": "gpus_per_node", "nnodes": "nnodes"}

    releases = versions
    versions = versions.VERSIONS

    @property
    def release(self) -> versions.Release:
        """The defaults of the release whose rules this object follows (``versions.RELEASES``)."""
        return RELEASES[self.version]

    fields_release: str | None = None  # the release a config's fields dated, where a pack of another judges it
    named_release: str | None = None  # the release the user named (trl==0.26.0), where a pack of another judges it

    @property
    def fields_version(self) -> str:
        """The release whose GRPOConfig fields the parser takes: the dated release (``versions.RULES_OF`` judges it by
        a neighbour's pack), else the pack's own."""
        return self.fields_release or self.version

    @property
    def release_said(self) -> str:
        """The release a note names: the one the user named (TRL 0.26.0), else the one the fields date (0.26.2), else
        the pack's own."""
        return self.named_release or self.fields_version

    @property
    def prompt_limit(self) -> bool:
        """Whether the release the config runs cuts its prompts at GRPOConfig's max_prompt_length (0.14 to 0.25:
        versions.PROMPT_CUT_FROM): the printed command carries the prompt length there, which check reads back
        (cost.cost_values). 0.26 and 0.27 keep the field, deprecated, and never read it: their engine's length is
        vllm_max_model_length, as from 0.28 on. The fields' release decides, where a neighbour's pack judges it
        (TRL 0.23.1 cuts; 0.29.1, whose pack judges it, has no such field)."""
        return versions.prompt_cut(self.fields_version) is not None

    @property
    def newest(self) -> bool:
        return self.version == versions.NEWEST

    def with_named_release(self, named: str) -> "TrlFramework":
        """A named release a neighbour's pack judges (versions.RULES_OF: TRL 0.23.1 checks as 0.29.1 does) reads a
        config with its own GRPOConfig fields, as when its fields date the config (for_config)."""
        release = versions.fields_release_of(named)
        if release is None or release == self.version:
            return self
        fw = copy.copy(self)
        fw.fields_release = release
        fw.named_release = named.strip().lstrip("v")
        return fw

    def for_config(self, flat: Mapping[str, Any]):
        """The release a pasted config's fields date it to (fields only some releases' GRPOConfig has), unless the user
        named one; the newest we follow when nothing dates it."""
        if self.pinned:
            return self, None
        from .. import get_framework

        release, why = versions.detect_release(self._with_config(self.normalize(flat)))
        others = ", ".join(versions.VERSIONS[1:])
        if release is None:
            return self, (f"checked with the TRL {self.version} rules, the newest we follow ({why}); name yours with "
                          f"--framework trl==VERSION ({others}) if you run another")
        version = versions.RULES_OF[release]
        judged = f"the TRL {version} rules" + (f" (TRL {release} checks as {version} does)" if version != release
                                               else "")
        if version == self.version and release == version:
            return self, None
        fw = get_framework(f"{self.name}=={version}").with_named_release(release)
        return fw, f"checked with {judged}: {why}; name another with --framework trl==VERSION"

    def doc_appendix(self) -> str:
        return docs.versions_markdown() if self.newest else ""

    def error_patterns(self) -> list:
        return errors.PATTERNS

    def dated_by_value(self, flat: Mapping[str, Any]) -> set[str]:
        return versions.dated_by_value(self.normalize(flat))  # the fields as TRL's parser reads them, as detection does

    def normalize(self, flat: Mapping[str, Any]) -> dict[str, Any]:
        """Flags as TRL's script parser reads them: dashes as underscores, an unambiguous prefix of an option as that
        option (argparse's allow_abbrev: ``--vllm_max_model_len`` is ``--vllm_max_model_length``)."""
        return {resolve_flag(k): v for k, v in _plain(flat).items()}

    def key_list(self, flat: Mapping[str, Any], command: bool = False) -> KeyList:
        """Every option of TRL's grpo script (fields.py), which refuses any other: judged where the command is TRL's
        (``trl grpo``, or recommend's own command); pasted flags that a script of the user's own may read (under
        ``accelerate launch``, or no command given) get config_notes' note instead. A GRPOConfig field of another
        release is not judged here (``foreign_fields``' notes), nor ours and the launcher's."""
        cli = self.normalize(flat)
        given = tuple(k for k in cli if not _ours(k)) if command or cli.get(ENTRY) == TRL_CLI else ()
        return KeyList(given, GRPO_SCRIPT_OPTIONS, complete=True, others=versions.ALL_FIELDS, flags=True,
                       refusal="ValueError: Some specified arguments are not used by the HfArgumentParser: ['{key}']",
                       source="transformers/hf_argparser.py:HfArgumentParser.parse_args_into_dataclasses (TRL's "
                              "grpo.py: TrlParser.parse_args_and_config)")

    def _knobs(self) -> list[str]:
        """The memory switches recommend searches (gradient checkpointing only where the release leaves it off)."""
        return [n for n in KNOB_SEARCH if n != "grad_ckpt" or self._has_knob(n)]

    def searchable(self, values: Mapping[str, Value]) -> set[str]:
        return super(SwiftFramework, self).searchable(values) | set(self._knobs())

    def free_keys(self, values: Mapping[str, Value]) -> set[str]:
        """The knobs' flags, less an accelerate config file: the user's launcher setup (its distribution, mixed
        precision, offload) stays whole on the command recommend --from prints, and decides ZeRO."""
        return super(SwiftFramework, self).free_keys(values) | {
            f for n in self._knobs() for f in self.cost_input_keys[n] if f not in CONFIG_FILE_FLAGS}

    def from_script(self, args: list[str], scope: Mapping[str, str], gpus: int | None,
                    notes: list[str] | None = None) -> tuple[str, list[str], int | None]:
        has_world = any(a.split("=")[0] in ("--num_processes", "--config_file") for a in args)
        return self.name, args, None if has_world else gpus

    def parse(self, tokens: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
        return parse_trl_args(tokens)

    def to_values(self, flat: Mapping[str, Any], *, gpus: int | None, model: ModelCard | None) -> dict[str, Value]:
        flat = self._with_config(self.normalize(flat))
        values = read_flags(self.ruleset, flat, DECIDED)
        values.update(self._decided(flat))
        accel, _ = _accelerate(flat)
        accel.update({k: flat[k] for k in ("NPROC_PER_NODE", "NNODES") if k in flat and k not in accel})
        values.update(cost_values(flat, accel, self.release, self.code_release))
        if placement.is_server(values) and self.release.vllm_mode != "device" and not (
                self.newest and _before_0_18(flat)):
            # a `trl vllm-serve` GPU holds the engine alone, at the server's own memory share (GRPOConfig's
            # vllm_gpu_memory_utilization applies to colocate mode only); before 0.18 (vllm_device) the engine ran
            # in the trainer's main process on its own GPU at GRPOConfig's share
            values["gmu_permille"] = placement.SERVER_GMU_PERMILLE
        self._world(values, accel, gpus)
        if model is not None:
            values.update(self.model_constants(model))
        return values

    def config_notes(self, flat: Mapping[str, Any], *, priced: bool = True) -> list[str]:
        notes = [f"--{k} read as --{resolve_flag(k)} (TRL's parser takes an unambiguous prefix of an option)"
                 for k in _plain(flat) if resolve_flag(k) != k]
        cli = self.normalize(flat)
        unknown = [k for k in cli if _unknown(k)] if cli.get(ENTRY) != TRL_CLI else []
        if unknown:
            notes.append(f"ignored, as flags no TRL {self.version} GRPO field has (TRL's own grpo.py refuses them at launch; "
                         "a script of your own may read them): " + ", ".join(f"--{k}" + _guess(k) for k in unknown))
        if ENTRY not in cli:
            notes.append("the command is not given: checked as `accelerate launch grpo.py` runs it (each rank's "
                         "GRPOConfig); `trl grpo` also builds it at world size 1 first: paste the command to check that")
        flat = self._with_config(cli)
        notes += _accelerate(flat)[1]
        if flat.get("max_prompt_length") not in (None, "None", "none", "") and versions.prompt_field_ignored(
                self.fields_version):
            notes.append(f"--max_prompt_length is deprecated in TRL {self.release_said} and never read (GRPOTrainer "
                         "cuts no prompt from 0.26 on): prompts are as long as the data's, bounded by the engine's "
                         "max model length, and are read so; filter the dataset to bound them")
        removed = versions.foreign_fields(self.fields_version, [k for k in flat if k != FILE_KEYS])
        if removed:
            notes.append(f"fields TRL {self.fields_version}'s GRPOConfig does not have: {', '.join(removed)}")
        from_file = versions.foreign_fields(self.fields_version, flat.get(FILE_KEYS, ()))
        if from_file and cli.get(ENTRY) != TRL_CLI:
            notes.append(f"--config sets {', '.join(from_file)}: TRL's grpo.py ignores keys of a config file its "
                         "fields do not have (parse_args_and_config(fail_with_unknown_args=False)); as flags, or under "
                         "`trl grpo` (which hands them to accelerate launch), they stop the launch")
        if self.newest and _before_0_18(flat) and "beta" not in flat:
            notes.append(f"written for TRL 0.17 or before (vllm_device and its siblings) without --beta: it "
                         f"{priced_words(priced)} with that release's default beta {OLD_BETA} (a reference model); "
                         "1.16.0's default is 0.0")
        if self.newest and _old_release_server(flat):
            notes.append("written for TRL < 1.0 (fields it no longer has) with --use_vllm and no --vllm_mode: read as "
                         "that release ran it, vLLM on a GPU of its own (vllm_device 'auto' before 0.18, vllm_mode "
                         "'server' by default from 0.18); 1.16.0 would colocate it")
        notes += self._release_notes(flat, priced)
        cfg = flat.get("config")
        if _present(cfg) and not is_file(cfg):
            notes.append(f"--config {cfg} is not here: only the flags were read")
        return notes

    def _release_notes(self, flat: Mapping[str, Any], priced: bool = True) -> list[str]:
        """What an older release's defaults decided for this config (``priced``: as ``config_notes``')."""
        rel, notes = self.release, []
        if rel.batch_counts_prompts:
            notes.append(f"TRL {rel.version}: per_device_train_batch_size counts prompts, each generating "
                         "num_generations completions on its GPU (the memory model prices micro batches of their "
                         "product); no batch size is checked by this release")
        if rel.ref_always and not flag_bool("use_peft", flat.get("use_peft", False)):
            notes.append(f"TRL {rel.version} builds a reference model whatever beta is (it {priced_words(priced)} "
                         "resident)")
        if flag_bool("use_vllm", flat.get("use_vllm", False)):
            if rel.vllm_mode == "device":
                notes.append(f"TRL {rel.version} runs vLLM in the main process on a GPU of its own (vllm_device "
                             "'auto': the one after the training ranks): the training GPUs hold no engine")
            elif rel.vllm_mode == "server_only":
                notes.append(f"TRL {rel.version} generates with vLLM on a `trl vllm-serve` server only (GPUs of its "
                             "own: give its sizes as --server.tensor_parallel_size / --server.data_parallel_size)")
            elif rel.vllm_mode == "server" and not _present(flat.get("vllm_mode")):
                notes.append(f"TRL {rel.version}'s vllm_mode defaults to server: a `trl vllm-serve` on GPUs of its own "
                             "(give its sizes as --server.tensor_parallel_size / --server.data_parallel_size)")
        return notes

    def _with_config(self, flat: dict[str, Any]) -> dict[str, Any]:
        """TrlParser: a ``--config`` YAML sets the fields, the flags override them (the keys only the file gave are
        kept under ``FILE_KEYS``)."""
        data = _config_data(flat)
        if not data:
            return flat
        return {**data, **flat, FILE_KEYS: tuple(k for k in data if k not in flat)}

    def _decided(self, flat: Mapping[str, Any]) -> dict[str, Value]:
        mode = flat.get("vllm_mode", "colocate")
        if _present(mode) and mode not in ("colocate", "server"):
            raise InputError("vllm_mode", f"'{mode}' is not a vLLM mode.{did_you_mean(str(mode), ['colocate', 'server'])}",
                             "use --vllm_mode colocate (the default) or --vllm_mode server.")
        eval_strategy = str(flat.get("eval_strategy", "no")).lower()
        from_file = set(flat.get(FILE_KEYS, ()))
        # a removed field stops the launch given as a flag (HfArgumentParser: "Some specified arguments are not used"),
        # or from a config file under `trl grpo` (its front-end hands unknown keys to accelerate launch); TRL's own
        # grpo.py ignores a config file's unknown keys
        removed = [k for k in versions.foreign_fields(self.fields_version, flat)
                   if k not in from_file or flat.get(ENTRY) == TRL_CLI]
        rel = self.release
        if rel.vllm_mode in ("device", "server_only"):  # never in the training processes
            server = True
        else:
            given = flat.get("vllm_mode")
            server = (given if _present(given) else rel.vllm_mode) == "server" or (
                self.newest and _old_release_server(flat))
        beta_default = OLD_BETA if self.newest and _before_0_18(flat) else rel.beta
        return {
            "removed_fields": bool(removed),
            "vllm_server": server,
            # TrainingArguments.__post_init__ turns do_eval on with an eval_strategy other than "no", whatever
            # --do_eval says (transformers/training_args.py: "if self.do_eval is False and self.eval_strategy !=
            # IntervalStrategy.NO: self.do_eval = True"), and GRPOConfig checks the eval batch when both hold
            "eval_on": eval_strategy != "no",
            "frontend_check": rel.frontend and flat.get(ENTRY) == TRL_CLI,
            # beta defaulted to 0.04 up to TRL 0.18 (a reference model): such a config without --beta keeps it; 0.14
            # builds the reference model whatever beta is
            "kl_on": rel.ref_always or flag_float("beta", flat.get("beta", beta_default)) != 0.0,
            # what the release the config runs refuses beside its Liger flag, and the settings it reads
            **liger.rule_values(flat, self.code_release),
        }

    def _world(self, values: dict[str, Value], accel: Mapping[str, Any], gpus: int | None) -> None:
        """W from accelerate's num_processes (all machines), else --gpus."""
        if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1):
            raise InputError("gpus", f"{gpus} must be at least 1.", "pass --gpus with a positive count.")
        values["cluster_num_gpus"] = gpus
        machines = flag_int("num_machines", accel.get("num_machines", accel.get("NNODES", values.get("nnodes") or 1)))
        values["nnodes"] = machines
        world = accel.get("num_processes")
        if world is None and "NPROC_PER_NODE" in accel:  # a search space's per-node count (commands/recommend)
            world = flag_int("NPROC_PER_NODE", accel["NPROC_PER_NODE"]) * machines
        if world is None:
            if gpus is None:
                raise InputError("num_processes", "the number of training processes is not known.",
                                 "pass accelerate's --num_processes 8 (as in `accelerate launch --num_processes 8 "
                                 "grpo.py ...`) or --gpus 8.")
            world = gpus
        world = flag_int("num_processes", world)
        if world % machines:
            raise InputError("num_processes", f"{world} processes do not split over num_machines = {machines}.",
                             "make --num_processes a multiple of --num_machines.")
        values["gpus_per_node"] = world // machines

    def model_constants(self, model: ModelCard) -> dict[str, int]:
        return {"num_heads": model.num_attention_heads, "num_kv_heads": model.num_key_value_heads}

    # -- export ---------------------------------------------------------------------------
    EXPORT_ORDER = ["per_device_train_batch_size", "gradient_accumulation_steps", "generation_batch_size",
                    "steps_per_generation", "num_generations", "num_generations_eval", "per_device_eval_batch_size",
                    "use_vllm", "vllm_tp"]
    ALWAYS = {"per_device_train_batch_size", "gradient_accumulation_steps", "num_generations", "use_vllm"}
    # generation without vLLM: GRPOConfig's default (use_vllm False, trl/trainer/grpo_config.py; trl/trainer/
    # grpo_trainer.py GRPOTrainer._generate_single_turn, 0.29.1: its "regular generation path", the unwrapped model's
    # generate); a GRPOConfig vllm_ field or a `trl vllm-serve` flag asks for vLLM (arms_left_out)
    WITHOUT_VLLM = "transformers' generate, GRPOConfig's default"
    VLLM_KEYS = ("vllm_", "server.")
    # not both engines in every search: without vLLM the newest releases' command carries no prompt length
    # (GRPOConfig has no max_prompt_length since 0.28), so that arm is priced at the 512 tokens check reads for it,
    # not the prompt asked: the two arms are not alike, and the arm without vLLM is searched only where the vLLM
    # answer lacks room (wider_search.py), one policy for every TRL release
    BOTH_ENGINES_BY_DEFAULT = False

    def export(self, solution: Mapping[str, Value], space: Space | None = None) -> list[str]:
        world = int(solution["gpus_per_node"]) * int(solution.get("nnodes") or 1)
        out = [f"--num_processes {world}"]
        if int(solution.get("nnodes") or 1) > 1:
            out.append(f"--num_machines {solution['nnodes']}")
        if solution.get("ds_stage") not in (None, -1):  # accelerate launch's own DeepSpeed flags (plain DDP: none)
            out += ["--use_deepspeed", f"--zero_stage {solution['ds_stage']}"]
        if solution.get("weights_fp32") is False:
            out.append(self._bf16_flag())
        # the config's own keys: not ours (the command's words, ``ENTRY``/``SCRIPT``: ``user_command`` writes them)
        extra = {k: v for k, v in (space.fixed_native if space else {}).items()
                 if k != "rlhf_type" and not k.startswith("__")}
        specs = self.ruleset.variables
        for name in self.EXPORT_ORDER:
            if name in solution and self._exported(name, solution):
                out.append(self._flag(specs[name].key, solution[name]))
        has_mode = "vllm_mode" in versions.RELEASE_FIELDS[self.version]
        if solution.get("use_vllm") and self.release.vllm_mode != "device":
            if has_mode:
                out.append(self._flag("vllm_mode", "server" if solution.get("vllm_server") else "colocate"))
            if solution.get("vllm_server"):
                for name in ("server_tp", "server_dp"):
                    out.append(self._flag(specs[name].key, solution[name]))
        if solution.get("gmu_permille") not in (None, self.release.gmu_permille) and self._has_knob("gmu_permille") \
                and solution.get("use_vllm") and (not placement.is_server(solution) or self.release.vllm_mode == "device"):
            out.append(f"--vllm_gpu_memory_utilization {int(solution['gmu_permille']) / 1000}")
        if solution.get("sleep_level") and solution.get("use_vllm"):
            out.append("--vllm_enable_sleep_mode true")
        if solution.get("grad_ckpt") and not self.release.grad_ckpt:  # on where the release leaves it off
            out.append("--gradient_checkpointing true")
        out += self._length_flag(solution, extra)
        if not self.newest and "beta" not in extra and not self.release.ref_always:
            # the release's own default, said: a command that the fields of several releases fit is dated by check to
            # the oldest of them (versions.detect_release), whose beta may differ (0.04 until 0.19.0: a reference model)
            out.append(f"--beta {self.release.beta}")
        written = {arg[2:].partition(" ")[0] for arg in out}
        for key, value in extra.items():
            if key not in written:  # a switch the user set (--set zero_stage=3) is already written from the solution
                out.append(self._flag(key, value))
        return out

    def _bf16_flag(self) -> str:
        """The flag that loads the model in bf16: ModelConfig's torch_dtype before 0.2x's dtype."""
        return "--torch_dtype bfloat16" if self.version in versions.TORCH_DTYPE_RELEASES else "--dtype bfloat16"

    def memory_relaxations(self, values: Mapping[str, Value]) -> list[str]:
        """TRL has no offload flag of its own (accelerate's launcher decides the sharding): the 16-bit weights and the
        sharding the config lacks, in accelerate's and TrlParser's flags (cost.cost_values reads both)."""
        out = []
        if values.get("weights_fp32"):
            out.append(f"{self._bf16_flag()}: TRL loads the model in fp32 unless told (ModelConfig's dtype default)")
        if int(values.get("ds_stage", -1)) < 3 and not values.get("fsdp"):
            out.append("DeepSpeed ZeRO-3 (accelerate launch --use_deepspeed --zero_stage 3 ..., or --config_file with "
                       "a ZeRO-3 config): params, gradients and optimizer states sharded over the GPUs")
        elif not values.get("ds_offload"):
            out.append("ZeRO-3 CPU offload (accelerate launch --offload_optimizer_device cpu --offload_param_device "
                       "cpu ...)")
        return out

    def _model_length(self, solution: Mapping[str, Value], given: Any = ()) -> int | None:
        """The longest prompt + max_completion_length the answer is priced at, where a release does not cut prompts
        at max_prompt_length (0.26 stopped reading it, 0.28 removed it) and the engine's max_model_len is the only flag to say it: check reads it
        back as the prompt limit (cost.cost_values); None where the user's config (``given``) sets one."""
        if (self.prompt_limit or not solution.get("max_length")
                or any(str(k).lstrip("-").split(" ")[0] in ("vllm_max_model_length", "server.max_model_len")
                       for k in given)):
            return None
        return int(solution["max_length"]) + int(solution.get("max_completion_length") or 0)

    def printed_lengths(self, scenario: Any) -> tuple[Any, list[str]]:
        """With vLLM off (the user's --use_vllm false), a release that does not cut prompts at max_prompt_length
        (``_no_prompt_flag``) has no flag that carries the prompt length (vllm_max_model_length sizes an engine it does not start): the answer
        is priced at the prompt check reads for its command (cost.cost_values: the user's vllm_max_model_length
        less the completion, else DEFAULT_PROMPT), and says so."""
        from dataclasses import replace

        if self._use_vllm_arms(scenario) != {False}:
            return scenario, []
        prompt = self._prompt_without_vllm(scenario)
        if prompt == scenario.prompt_length:
            return scenario, []
        return replace(scenario, prompt_length=prompt), [
            f"prompt {prompt}, not the {scenario.prompt_length} asked: {self._no_prompt_flag()}, so the answer is "
            f"priced at the {prompt} tokens `rlbatch check` reads for its command; your prompts may be longer: "
            f"--set use_vllm=true carries yours as --vllm_max_model_length"]

    def _no_prompt_flag(self) -> str:
        """Why a release without vLLM has no flag that carries the prompt length, in the words of the release the
        user named (TRL 0.26.0, not the 0.29.1 pack that judges it): 0.26 and 0.27 keep max_prompt_length,
        deprecated and never read (``versions.prompt_field_ignored``); 0.28 removed it."""
        why = ("its GRPOConfig's max_prompt_length is deprecated and never read, from 0.26 on"
               if versions.prompt_field_ignored(self.fields_version) else "GRPOConfig has no max_prompt_length since 0.28")
        return f"TRL {self.release_said} without vLLM has no flag that carries the prompt length ({why})"

    def _prompt_without_vllm(self, scenario: Any) -> int:
        """The prompt length ``rlbatch check`` reads for a printed command with vLLM off (cost.cost_values: the
        user's length flag, else DEFAULT_PROMPT): a release without max_prompt_length has no flag to carry the
        scenario's; the scenario's own where the release has one."""
        if self.prompt_limit:
            return scenario.prompt_length
        fixed = self.normalize({str(k).lstrip("-"): v for k, v in scenario.fixed.items()})
        read = cost_values({**fixed, "max_completion_length": scenario.response_length}, {}, self.release,
                           self.code_release)
        return int(read["max_length"])

    def _price_each_arm(self, scenario: Any, space: Space) -> None:
        """``--search use_vllm=true,false``: each arm priced at the prompt its printed command tells check, the
        vLLM arm at the scenario's (carried as --vllm_max_model_length), the other at what check reads without a
        flag for it (``_prompt_without_vllm``), tied to use_vllm by a search rule; said in a note."""
        prompt = self._prompt_without_vllm(scenario)
        if (self._use_vllm_arms(scenario) != {True, False} or prompt == scenario.prompt_length
                or space.domains.get("max_length") != [scenario.prompt_length]):
            return
        space.domains["max_length"] = [scenario.prompt_length, prompt]
        space.extra_rules.append(Rule(
            "search.trl.prompt_as_printed",
            IntVar("max_length").eq(IfThenElse(BoolVar("use_vllm"), Const(scenario.prompt_length), Const(prompt))),
            "max_length = {max_length}, not the prompt the printed command tells check", Stage.SEARCH,
            "rlbatch-solver recommend: an answer is priced at the lengths its printed command carries",
            kind=RuleKind.SEARCH))
        space.notes.append(
            f"the use_vllm=false configs are priced at prompt {prompt}, not the {scenario.prompt_length} asked: "
            f"{self._no_prompt_flag()}, so they are priced at the {prompt} tokens `rlbatch check` reads for their "
            f"command; the use_vllm=true ones carry yours as --vllm_max_model_length")

    def _length_flag(self, solution: Mapping[str, Value], extra: Mapping[str, Any]) -> list[str]:
        """The prompt length the answer is priced at, as a flag the release reads: a release that does not cut
        prompts at max_prompt_length (0.26 stopped reading it, 0.28 removed it) whose colocated engine takes GRPOConfig's vllm_max_model_length (1.16:
        GRPOTrainer.__init__ hands it to VLLMGeneration, whose _init_vllm makes it the engine's max_model_len) carries longest prompt + max_completion_length
        there, which check reads back as the prompt limit (cost.cost_values); none where the user set it, the engine
        is a server's (its own flags) or vLLM is off (no flag holds the prompt length)."""
        total = self._model_length(solution, extra)
        if (not solution.get("use_vllm") or solution.get("vllm_server") or total is None
                or "vllm_max_model_length" not in versions.RELEASE_FIELDS[self.fields_version]):
            return []
        return [f"--vllm_max_model_length {total}"]

    def export_yaml(self, native: list[str]) -> str | None:
        """The GRPOConfig fields as a ``--config`` YAML (TrlParser reads it; accelerate's flags stay on the
        command line: --num_processes, --num_machines)."""
        fields: dict[str, Any] = {}
        for arg in native:
            key, _, raw = arg[2:].partition(" ")
            if key in ACCELERATE_FLAGS:
                continue
            if isinstance(arg, ListFlag):  # a List field (--reward_funcs a b): a YAML list, one entry per item
                fields[key] = [_yaml_value(item) for item in arg.items]
                continue
            fields[key] = _yaml_value(raw) if raw else True
        return yaml.safe_dump(fields, sort_keys=False)

    def assignment(self, name: str, value: Value) -> str:
        if name == "removed_fields":
            return ("(drop " + ", ".join(f"--{k}" for k in REMOVED_FIELDS) + ": whichever of them you set)"
                    if not value else "(fields of an older GRPOConfig)")
        if name == "gpus_per_node":
            return f"--num_processes {value} (per machine)"
        if name == "vllm_server":
            return f"--vllm_mode {'server' if value else 'colocate'}"
        if name == "gmu_permille":
            return f"--vllm_gpu_memory_utilization {int(value or 0) / 1000}"
        if name == "sleep_level":
            return f"--vllm_enable_sleep_mode {'true' if value else 'false'}"
        if name == "grad_ckpt":
            return f"--gradient_checkpointing {'true' if value else 'false'}"
        if name == "lora_rank" and name not in self.ruleset.variables:  # a cost input: fix's LoRA relaxation sets it
            # TRL's ModelConfig (trl/trainer/model_config.py): use_peft, lora_r, lora_target_modules
            return (f"--use_peft true --lora_r {value} --lora_target_modules all-linear" if value
                    else "--use_peft false")
        spec = self.ruleset.variables[name]
        if value is None:
            return f"(drop --{spec.key})"
        return self._flag(spec.key, value)

    def native_key(self, name: str) -> str:
        if name == "gpus_per_node":
            return "num_processes"
        if name == "vllm_server":
            return "vllm_mode"
        return super(SwiftFramework, self).native_key(name)

    # the cost-only switches, set by their flags; LoRA: TRL's ModelConfig (trl/trainer/model_config.py) use_peft,
    # lora_r, lora_target_modules (``assignment``)
    cost_input_keys: Mapping[str, tuple[str, ...]] = {
        **KNOB_FLAGS, "lora_rank": ("use_peft", "lora_r", "lora_target_modules")}

    # -- search space (default_search: ms-swift's HF one, the same flags) ----------------------
    def space(self, scenario: Any, model: ModelCard | None, *, with_knobs: bool = False) -> Space:
        space = super().space(scenario, model, with_knobs=False)
        space.fixed_native.pop("rlhf_type", None)
        space.fixed_native.pop("num_processes", None)  # export writes the solution's own (the trainer's world)
        # the prompt length is the data's (GRPOConfig 1.16 has no prompt limit): the cost model reads it, the
        # exported command does not carry it
        for key in ("max_length", "max_prompt_length"):
            space.fixed_native.pop(key, None)
        for algo_key in ("dynamic_sample", "advantage_estimator"):  # ms-swift's, not GRPOConfig fields
            space.fixed_native.pop(algo_key, None)
        space.domains.pop("vllm_mode_given", None)
        space.domains.pop("server_host_given", None)
        if not self.newest:
            # the search's own flags (vllm_mode colocate) are not the config's: only the user's can be foreign fields
            space.domains["removed_fields"] = [bool(versions.foreign_fields(self.fields_version,
                                                                            self.normalize(scenario.fixed)))]
            if self.prompt_limit:  # its prompts are cut at max_prompt_length: carry the length
                space.fixed_native["max_prompt_length"] = scenario.prompt_length
            if self.release.vllm_mode == "device":  # one engine, on one GPU (vllm_device)
                for name in ("server_tp", "server_dp"):
                    space.domains[name] = [1]
                self._kept_accumulations(scenario, space)
        self._price_each_arm(scenario, space)
        # the user's own flags of a rule variable that no solution value prints: as given (the base space keeps only
        # the flags of no rule variable)
        by_key = self.ruleset.by_key()
        for key, value in self.normalize(scenario.fixed).items():
            if key in by_key and by_key[key].name in PRINTED_AS_GIVEN:
                space.fixed_native[key] = value
        server_only = space.domains.get("vllm_server") == [True] and True in space.domains.get("use_vllm", [])
        if server_only:
            self._pin_server_split(scenario, space)
            # the colocated engine's TP and sleep mode do nothing in server mode (vllm_generation.py: sleep "if
            # self.mode == 'colocate'"): one value each, not ties for the search to list
            space.domains["vllm_tp"] = space.domains.get("vllm_tp", [1])[:1]
        if with_knobs:
            inert = self.inert(space.domains)
            for name, values in KNOB_SEARCH.items():
                if name in inert:
                    continue
                # the user's own flag of the switch, under this framework's name for it (cost_input_keys: Unsloth's
                # gpu_memory_utilization, not GRPOConfig's vllm_gpu_memory_utilization), keeps it as set
                if self._has_knob(name) and not set(self.cost_input_keys[name]) & set(self.normalize(scenario.fixed)):
                    space.domains[name] = list(values)
            self._engine_settings_unused(space.domains, space.extra_rules)
        return space

    @property
    def server_rollout_title(self) -> str:  # type: ignore[override]
        """0.14/0.15 run vLLM in the trainer's main process on a GPU of its own (vllm_device), not on a server."""
        return "rollout (vLLM's own GPU)" if self.release.vllm_mode == "device" else "rollout (server's GPU)"

    def inert(self, domains: Mapping[str, Sequence[Value]]) -> set[str]:
        """As ms-swift's: a `trl vllm-serve` server's share is its own flag (GRPOConfig's vllm_gpu_memory_utilization
        and vllm_enable_sleep_mode apply to colocate mode only, trl/trainer/grpo_config.py; vllm_generation.py sleeps
        "if self.mode == 'colocate'"), and with use_vllm off no vLLM setting does anything; but the engine of a
        release that runs one on vllm_device (0.14, 0.15) takes GRPOConfig's share."""
        out = super().inert(domains)
        if self.release.vllm_mode == "device" and True in domains.get("use_vllm", [True]):
            out -= {"gmu_permille", "sleep_level"}
        return out

    def _kept_accumulations(self, scenario: Any, space: Space) -> None:
        """The accumulations that reach a kept total on the world sizes the server split leaves (the base space
        computes them on its own world sizes, before the split): 0.15.2's engine takes one GPU, and no placement
        layout settles the trainer's size for it."""
        kept = scenario.kept_totals.get("opt_batch")
        user = set(self.normalize(scenario.fixed)) | set(self.normalize(scenario.search))
        if kept and "gradient_accumulation_steps" not in user:
            from ..swift.framework import _accumulations

            space.domains["gradient_accumulation_steps"] = (_accumulations(kept, space.domains)
                                                           or space.domains["gradient_accumulation_steps"])

    def _pin_server_split(self, scenario: Any, space: Space) -> None:
        """Server mode with the trainer's processes fixed (``--num_processes``: a ``recommend --placement`` layout, or
        the user's): the server takes the other GPUs of ``--gpus``, as TP x DP (``placement.server_sizes``) unless the
        user fixed them; the search's rule that every GPU is used ties the two."""
        fixed = self.normalize(scenario.fixed)
        if "num_processes" not in fixed or self.release.vllm_mode == "device":
            return
        world = flag_int("num_processes", fixed["num_processes"])
        machines = flag_int("num_machines", fixed.get("num_machines", 1))
        server = scenario.total_gpus - world
        if server < 1 or world % max(1, machines):
            return
        space.domains["gpus_per_node"] = [world // machines]
        space.domains["nnodes"] = [machines]
        tps, dps = placement.server_sizes(server, scenario.per_node)
        for name, key, sizes in (("server_tp", "server.tensor_parallel_size", tps),
                                 ("server_dp", "server.data_parallel_size", dps)):
            if key not in fixed:
                space.domains[name] = sizes

    # -- placement: colocated, or a `trl vllm-serve` on k GPUs of its own (placement.py) ---------------------
    def placements(self, scenario: Any, notes: list[str]) -> list:
        """Colocated (``--vllm_mode colocate``, every GPU trains) and one server layout per split of the GPUs between
        the trainer and ``trl vllm-serve`` (``placement.server_splits``), each its own solve: the answer lists the
        step time of every split. Server mode generates in turn with training (placement.py), never ahead."""
        from ...layout import Layout, admits, sub_scenario

        out = []
        fixed = self.normalize(scenario.fixed)
        colocate = {"use_vllm": True, "vllm_mode": "colocate"}
        if scenario.placement in ("colocate", "auto") and admits(scenario, "colocate", colocate, notes):
            world = fixed.get("num_processes", scenario.total_gpus)  # the user's training processes, where given
            where = (f"{scenario.total_gpus}" if str(world) == str(scenario.total_gpus)
                     else f"{world} of the {scenario.total_gpus}")
            out.append(Layout("colocate", f"colocated on {where} GPUs",
                              sub_scenario(scenario, fixed=colocate, layout_keys=colocate)))
        server = {"use_vllm": True, "vllm_mode": "server"}
        if scenario.placement not in ("split", "auto") or not admits(scenario, "split", server, notes):
            return out
        splits = placement.server_splits(scenario.total_gpus, scenario.nnodes, scenario.per_node)
        if "num_processes" in fixed:  # the user's trainer size: only that split
            world = flag_int("num_processes", fixed["num_processes"])
            splits = [s for s in splits if s.world == world]
        kept = scenario.kept_totals.get("opt_batch") if {PER_DEVICE, ACCUMULATION} <= set(fixed) else None
        apart: list[int] = []
        if kept:  # the user's completions per step, which only a trainer world dividing them makes (_placement_total)
            apart = [s.world for s in splits if kept % s.world]
            splits = [s for s in splits if not kept % s.world]
            if apart:
                notes.append(f"no server layout with {', '.join(map(str, apart))} trainer GPUs: your "
                             f"per_device_train_batch_size x gradient_accumulation_steps on all {scenario.total_gpus} "
                             f"GPUs make {kept} completions per optimizer step, which that many GPUs cannot split "
                             "evenly (every rank trains the same per-device batch)")
        why = (f"TRL {self.version} runs vLLM on one GPU of its own (vllm_device), not on a `trl vllm-serve` server"
               if self.release.vllm_mode == "device" else
               f"{scenario.total_gpus} GPU(s) leave none for a `trl vllm-serve` server beside "
               + (f"{fixed['num_processes']} training processes" if "num_processes" in fixed else "the trainer")
               if not splits and not apart else
               f"no trainer size a server leaves splits your {kept} completions per optimizer step evenly"
               if not splits else "")
        if why:
            if scenario.placement == "split":
                raise InputError("placement", f"--placement split has no layout: {why}.",
                                 "use --placement colocate or auto, or give more GPUs (--gpus).")
            notes.append(f"no server layout was solved: {why}")
            return out
        scenario = self._own_factors(scenario)  # the job's completions per step, the factors the layout's own
        for i, split in enumerate(splits):
            keys = dict(server, num_processes=split.world, num_machines=split.machines)
            # a server on a machine of its own: the trainer names its host (the user's, else a placeholder)
            host = {"vllm_server_host": placement.SERVER_HOST} if split.machines < scenario.nnodes else {}
            label = f"server: {split.world} trainer + {split.server} vLLM-server GPUs"
            out.append(Layout("split", label, sub_scenario(scenario, fixed={**host, **keys}, layout_keys=keys),
                              coarse=placement.is_coarse(i, len(splits)), family="trl.server"))
        return out

    def describe_placement(self, values: Mapping[str, Value]) -> str | None:
        if not placement.is_server(values):
            return None
        return (f"server: {placement.trainer_world(values)} trainer + {placement.server_gpus(values)} vLLM-server GPUs "
                f"(TP {int(values.get('server_tp') or 1)} x DP {int(values.get('server_dp') or 1)})")


    def companion_commands(self, native: Sequence[str], values: Mapping[str, Value], model: str) -> list[list[str]]:
        """Server mode: the ``trl vllm-serve`` command on the GPUs the trainer leaves, or on a machine of its own when
        the trainer names the server's host (placement.server_command)."""
        if not placement.is_server(values) or self.release.vllm_mode == "device":
            return []
        return [placement.server_command(values, model, placement.remote_server(native),
                                         self._model_length(values, native))]

    def read_companion(self, words: Sequence[str], scope: Mapping[str, str]) -> tuple[list[str], int | None]:
        sizes, gpus = placement.read_server_line(list(words), scope)
        return [f"--{k} {v}" for k, v in sizes.items()], gpus

    def run_command(self, native: Sequence[str], values: Mapping[str, Value], model: str) -> list[str]:
        """As the base class; in server mode without our ``--server.*`` sizes (they are the server command's, and TRL's
        parser refuses unknown flags), on the GPUs the server leaves (one machine: ``CUDA_VISIBLE_DEVICES``)."""
        if not placement.is_server(values) or self.release.vllm_mode == "device":
            return super().run_command(native, values, model)
        words = super().run_command([a for a in native if not a.startswith("--server.")], values, model)
        if int(values.get("nnodes") or 1) == 1 and not placement.remote_server(native):
            trainer, _ = placement.device_lists(values)
            words[0] = f"CUDA_VISIBLE_DEVICES={trainer} {words[0]}"
        return words

    def user_command(self, words: list[str], fixed: Mapping[str, Any]) -> list[str]:
        """``run_command``'s words started as the user's command starts (``parse_trl_args``): ``trl grpo`` for that
        front-end, else accelerate launch with the user's own script (open-r1's ``src/open_r1/grpo.py``) in place
        of TRL's module."""
        ours = f"-m {self.entry_modules[0]}"
        if ours not in words:
            return words
        entry, script = fixed.get(ENTRY), fixed.get(SCRIPT)
        if entry == TRL_CLI:
            at = words.index(ours)
            return [words[0].replace(ACCELERATE, TRL_CLI), *words[1:at], *words[at + 1:]]
        if entry == ACCELERATE and script:
            return [str(script) if w == ours else w for w in words]
        return words

    def kept_totals(self, scenario: Any) -> dict[str, int]:
        """As ms-swift's HF path (completions per optimizer step), except where per_device_train_batch_size counts
        prompts (0.14.0): there recommend keeps the two factors themselves (``kept_batch``). With both factors set,
        ``recommend --placement split|auto`` keeps the total they make on every GPU of the job
        (``_placement_total``)."""
        return {} if self.release.batch_counts_prompts else super().kept_totals(scenario)

    def _placement_total(self, scenario: Any) -> dict[str, int]:
        """As ms-swift's, but not where the user fixed the trainer's processes (every layout has that world) or
        where vLLM takes one GPU of its own (0.14, 0.15: no server layout)."""
        fixed = self.normalize(scenario.fixed)
        if "num_processes" in fixed or self.release.vllm_mode == "device":
            return {}
        return super()._placement_total(scenario)

    def kept_batch(self, scenario: Any) -> dict[str, Any]:
        """0.14.0: prompts per GPU and accumulation at its defaults (1 and 8) where the user neither set nor searched
        them (each micro batch is a prompt's num_generations completions: memory is not a free choice of batch);
        other releases keep the total instead (``kept_totals``)."""
        if not self.release.batch_counts_prompts:
            return super().kept_batch(scenario)
        fixed, searched = self.normalize(scenario.fixed), self.normalize(scenario.search)
        return {k: self.ruleset.variables[k].default for k in ("per_device_train_batch_size",
                                                               "gradient_accumulation_steps")
                if k not in fixed and k not in searched}

    def _has_knob(self, name: str) -> bool:
        """Whether this release has the flag of a memory switch: vllm_enable_sleep_mode came in 0.2x; 0.16.1's
        vllm_gpu_memory_utilization is deprecated and unused (its server sets its own)."""
        if name == "sleep_level":
            return "vllm_enable_sleep_mode" in versions.RELEASE_FIELDS[self.version]
        if name == "gmu_permille":
            return self.release.vllm_mode != "server_only"
        if name == "grad_ckpt":  # on by default from 0.22.0: searched where it is off
            return not self.release.grad_ckpt
        return True

    def cost_spec(self, model: ModelCard, gpu: Any):
        bools = bool_names(self.ruleset.variables)
        optional = optional_names(self.ruleset.variables)
        return release_cost_spec(quantized_cost_spec(swift_cost_spec(model, gpu, False, bools, optional, framework="trl")),
                                 self.release, self.old_log_prob_rule())

    @property
    def code_release(self) -> str:
        """The TRL release whose GRPOTrainer runs the config: the release its fields date or the user names, which a
        neighbour's pack may judge (0.20-0.21 by 0.19.1's, 0.22-0.28 by 0.29.1's). What its code does where those
        releases differ from the pack's own follows it: when the old log-probs are computed, which flag switches
        Liger's loss (``versions.old_log_prob_rule``, ``versions.liger_loss_flags``)."""
        return self.fields_version

    def old_log_prob_rule(self) -> str:
        """When the release the config runs computes the old log-probs (``versions.old_log_prob_rule``)."""
        return versions.old_log_prob_rule(self.code_release)


__all__ = ["TrlFramework", "parse_trl_args"]


def _yaml_value(raw: str) -> Any:
    """An exported flag's value as the YAML config holds it (``0.5`` a number, ``[a, b]`` a list); text that is not
    YAML within ``safe_input``'s limits stays the text it is."""
    try:
        return safe_input.load_yaml(raw, "config")
    except InputError:
        return raw
