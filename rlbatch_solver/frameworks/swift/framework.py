"""ms-swift 4.6.0 config import and export: ``swift rlhf`` (HF/DeepSpeed) and ``megatron rlhf``.

Import: a launch command as pasted (``NPROC_PER_NODE=8 swift rlhf --rlhf_type grpo
--per_device_train_batch_size 4 ...``; ``--flag value`` and ``--flag=value``; the
launcher's ``NPROC_PER_NODE`` / ``NNODES`` prefix, ``export`` lines too) or a YAML
file of the same keys -> values of the rule variables in ``rules.py`` /
``rules_megatron.py``, with ms-swift 4.6.0's dataclass defaults where a flag
is absent. Flags we do not model (datasets, learning rate, ...) are read past.

In server mode the ``swift rollout`` server is a separate command: give its sizes
as ``--rollout.vllm_tensor_parallel_size`` / ``--rollout.vllm_data_parallel_size``
(our names; they default to 1, as ``swift rollout``'s do), its memory share as
``--rollout.vllm_gpu_memory_utilization`` (default 0.9, as its own) and the GPUs of
the whole job with ``--gpus``.

Export: a solution -> paste-ready ``NPROC_PER_NODE=.. --flag value`` arguments.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import replace
from typing import Any, Mapping, Sequence

from ...catalog.models import ModelCard
from ...errors import InputError, did_you_mean
from ...rules.base import Rule, RuleKind, RuleSet, Stage, Value, bool_names, optional_names
from ...rules.expr import BoolVar, IntVar
from ...rules.ids import follow_in_search
from . import columns, docs, errors, repair, versions as swift_versions
from .rules import RULESET as HF_RULESET
from .rules_megatron import RULESET as MEGATRON_RULESET
from ..base import Framework, LeftOut, Space, pow2, priced_words
from ..key_names import KeyList
from ..overrides import ListFlag, flag_bool, flag_float, flag_int, parse_flag_args, parse_scalar, resolve_algorithm, split_tokens

ENV_KEYS = ("NPROC_PER_NODE", "NNODES")
# the image budget of the Qwen-VL models (swift/llm/model/model/qwen.py patch_qwen_vl_utils: get_env_args reads it
# from the environment), read for a vision-language model's patches (cost.py vision_values)
VISION_ENV = ("MAX_PIXELS",)
# the devices a node shows: 3.2-3.4 place vLLM by their count (rlhf_args.py _check_grpo: get_device_count())
VISIBLE_ENV = "CUDA_VISIBLE_DEVICES"
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

# Variables no single flag sets: other flags decide them, the model card gives the constants.
DECIDED = {"cluster_num_gpus", "eval_on", "vllm_mode_given", "vllm_server", "server_host_given", "teacher",
           "loss_real", "kl_on", "num_heads", "num_kv_heads", "num_layers", "num_experts", "advantage_grpo",
           *swift_versions.LIGER_REFUSES_FROM}
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
            elif m.group(1) == VISIBLE_ENV:
                env[VISIBLE_ENV] = m.group(2)
            elif m.group(1) in VISION_ENV:
                env[m.group(1)] = parse_scalar(m.group(2))
            else:
                ignored.append(tok)
            continue
        flags.append(tok)
    values, more = parse_flag_args(flags)
    values.update(env)
    return values, ignored + more


PER_DEVICE, ACCUMULATION = "per_device_train_batch_size", "gradient_accumulation_steps"


def _accumulations(total: int, domains: Mapping[str, list[Value]]) -> list[Value]:
    """gradient_accumulation_steps values that make ``total`` completions per optimizer step with a searched
    per-device batch on one of the searched world sizes."""
    worlds = {int(g) * int(n) for g in domains["gpus_per_node"] for n in domains["nnodes"]}
    return sorted({total // (w * int(b)) for w in worlds for b in domains["per_device_train_batch_size"]
                   if total % (w * int(b)) == 0})


def normalize_keys(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``--per-device-train-batch-size`` and ``per_device_train_batch_size`` are one key."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        k = key[2:] if key.startswith("--") else key
        if k not in ENV_KEYS and not k.startswith("rollout."):
            k = k.replace("-", "_")
        out[k] = value
    return out


# ms-swift before 3.5 had no --vllm_mode: these keys place its vLLM engine (swift/trainers/arguments.py of 3.4.0:
# num_infer_workers 1, vllm_device ['auto'], tensor_parallel_size 1)
LEGACY_VLLM_KEYS = ("vllm_device", "num_infer_workers")


# async mode's engines (legacy_vllm_layout) take the trainer's --vllm_gpu_memory_utilization: the engine's share
# (follower) is the trainer's (leader), in to_values and in the search alike (SwiftFramework._engine_share_tie)
LEGACY_ENGINE_SHARE = ("server_gmu_permille", "gmu_permille")  # (follower, leader)


def legacy_vllm_layout(values: Mapping[str, Value], flat: Mapping[str, Any], always: bool = False) -> dict[str, Value]:
    """Where a config written for ms-swift < 3.5 (it sets ``--vllm_device`` or ``--num_infer_workers`` and no
    ``--vllm_mode``) ran vLLM. 3.4.0 (swift/llm/argument/rlhf_args.py ``GRPOArguments._check_grpo``): colocated when
    the visible GPUs equal ``num_infer_workers`` (and then NPROC_PER_NODE), with ``--tensor_parallel_size`` as the
    engine's TP; otherwise "async mode", ``num_infer_workers`` engines on GPUs of their own (visible GPUs = training
    ranks + workers, TP 1). 3.1.1 (swift/trainers/rlhf_trainer/grpo_trainer.py ``GRPOTrainer.__init__``): one engine on
    ``vllm_device``, 'auto' = the GPU after the training ranks, shared only when one GPU is visible. The visible GPUs
    per node are --gpus over the nodes when given, else NPROC_PER_NODE. Read as a server-mode engine of
    ``num_infer_workers`` GPUs (none of the training GPUs holds it), or as the colocated engine at that TP. Either
    way the release decided the mode (3.4.0 has no --vllm_mode), so the mode counts as given: the checks of a mode
    (async_generate only in async mode: 3.4.0 ``_check_grpo`` "async_generate requires async mode") apply, 3.12's
    "vllm_mode is required" does not. ``always``: the release has no --vllm_mode (3.2-3.4: versions.legacy_layout), so
    its layout applies without those keys too; a --vllm_server_host (3.3-3.4: an external server) skips it."""
    if _present(flat.get("vllm_mode")) or not values.get("use_vllm"):
        return {}
    if not (always or any(k in flat for k in LEGACY_VLLM_KEYS)) or values.get("server_host_given"):
        return {}
    per_node, nodes = int(values.get("gpus_per_node") or 1), int(values.get("nnodes") or 1)
    cluster = values.get("cluster_num_gpus")
    visible = int(cluster) // nodes if cluster else per_node
    workers = flag_int("num_infer_workers", flat.get("num_infer_workers", 1))
    if visible == workers or visible <= 1:
        colocated: dict[str, Value] = {"vllm_mode_given": True, "vllm_server": False}
        if "vllm_tensor_parallel_size" in flat or "tensor_parallel_size" not in flat:
            return colocated
        return {**colocated, "vllm_tp": flag_int("tensor_parallel_size", flat["tensor_parallel_size"])}
    # async mode: the trainer starts its num_infer_workers engines itself on the GPUs past the training ranks (3.4.0
    # swift/trainers/rlhf_trainer/grpo_trainer.py), so there is no server host to give, and they take the trainer's
    # --vllm_gpu_memory_utilization (not a `swift rollout` server's own share)
    # (read by 4.6.0's rules, the engines count as a server with its host; 3.2-3.4's packs drop that rule and test
    # the host the user gave: an external server skips the device checks). num_infer_workers counts a node's engines:
    # _check_grpo compares it with the node's own GPUs, and the trainer spreads a step's prompts over
    # nnodes * num_infer_workers engines (3.4.0 grpo_trainer.py: round_robin(len(all_inputs), nnodes *
    # num_infer_workers)), so the job has that many
    return {"vllm_mode_given": True, "vllm_server": True, "server_host_given": not always, "server_tp": 1,
            "server_dp": max(1, workers) * nodes, LEGACY_ENGINE_SHARE[0]: values.get(LEGACY_ENGINE_SHARE[1])}


def _async_asked(fixed: Mapping[str, Any]) -> bool:
    """Whether a scenario sets --async_generate true (3.2-3.4: which needs async mode, rlhf_args.py _check_grpo)."""
    return str(fixed.get("async_generate", False)).lower() in ("true", "1")


def _present(value: Any) -> bool:
    """A flag's value counts as given (not null, not an empty list or string)."""
    return value is not None and value != "" and value != [] and str(value).lower() not in ("none", "null")






def read_flags(ruleset: RuleSet, flat: Mapping[str, Any], decided: set[str]) -> dict[str, Value]:
    """Every rule variable a flag sets (``decided`` ones aside): its value, or its default when absent."""
    values: dict[str, Value] = {}
    for name, spec in ruleset.variables.items():
        if name in decided:
            continue
        if spec.key not in flat:
            values[name] = spec.default
            continue
        raw = flat[spec.key]
        if spec.optional and not _present(raw):
            values[name] = None
        elif spec.kind == "bool":
            values[name] = flag_bool(spec.key, raw)
        else:
            values[name] = flag_int(spec.key, raw)
    return values




from .cost import (DEFAULT_IMAGES_PER_SAMPLE, HF_COST_DEFAULTS, HF_KNOB_SEARCH, KNOB_FLAGS, MEGATRON_KNOB_SEARCH, QUANTIZED_ENGINE_FROM,  # noqa: E402
                   SERVER_GMU_PERMILLE, cost_values, export_flags, multi_turn_context, vision_values)
from ...release_numbers import release_numbers  # noqa: E402

# the first ms-swift release whose load_by_unsloth passes its --device_map to Unsloth's from_pretrained
# (swift/llm/model/register.py, 3.7.0; 3.1.1 to 3.6.0 pass none, leaving Unsloth's 'sequential')
UNSLOTH_DEVICE_MAP_FROM = (3, 7, 0)
from .cost import cost_spec as swift_cost_spec  # noqa: E402
from .cost import vllm_device_kv_of_total  # noqa: E402

# flags the cost model reads and export prints from the solution (not from fixed_native)
COST_FLAGS = {"deepspeed", "vllm_gpu_memory_utilization", "sleep_level", "offload_model", "offload_optimizer",
              "recompute_granularity", "recompute_method", "recompute_num_layers", "optimizer_cpu_offload",
              "optimizer_offload_fraction"}

# the environment ms-swift's launcher reads for its process count (swift/cli/main.py)
SCRIPT_ENV = ("NPROC_PER_NODE", "NNODES")


class SwiftFramework(Framework):
    """``swift rlhf --rlhf_type grpo`` (HF Trainer + DeepSpeed/FSDP, vLLM colocate or server)."""

    name = "swift"
    version = HF_RULESET.version
    ruleset: RuleSet = HF_RULESET
    syntax = "flags"
    command = "swift rlhf"
    megatron = False
    # the release was read off the config's own flags (for_config), not named by the user
    dated = False
    doc_intro = docs.INTRO
    policy = repair.SWIFT_HF
    error_families = ("swift",)
    accuracy_family = "swift"
    derived_columns = columns.SWIFT_DERIVED
    column_words = columns.SWIFT_WORDS
    log_formats = ("swift",)  # logging.jsonl
    model_keys = ("--model",)
    # a whole command (run_command): the data and reward of ms-swift's GRPO examples (examples/train/grpo/internal)
    example_inputs = ("--dataset AI-MO/NuminaMath-TIR#1000", "--reward_funcs accuracy")
    example_inputs_source = "ms-swift's GRPO examples (NuminaMath-TIR, the built-in accuracy reward)"
    offload_switch = ("ds_offload", "deepspeed=zero3_offload")
    oom_frames = errors.OOM_FRAMES
    oom_advice = errors.OOM_ADVICE
    # completions per rollout, per optimizer step and optimizer steps per rollout decide the training: on the
    # HF path the per-device batch is part of the global batch (per_device x world x accumulation); on the
    # Megatron path the micro batch only splits global_batch_size
    shapes_learning = frozenset({"generation_batch_size", "steps_per_generation", "per_device_train_batch_size",
                                 "gradient_accumulation_steps", "global_batch_size", "num_iterations"})
    scenario_vars = {"prompt_length": "max_length", "response_length": "max_completion_length",
                     "n": "num_generations", "gpus_per_node": "gpus_per_node", "nnodes": "nnodes"}

    releases = swift_versions
    versions = swift_versions.VERSIONS
    # the release a user named where another's pack judges it (3.12.1: 3.12.6's rules): its own code prices the
    # memory (cost.py sync_gather); None: the pack's release
    code_release: str | None = None
    # a config its flags date (``dated``): the newest release they allow (versions.dated_span), whose engine is priced
    # (``newest_dated_release``); None: not dated
    dated_newest: str | None = None

    @property
    def newest_dated_release(self) -> str:
        """The release a dated config's flags are read by where what they do changed across the releases they allow:
        the one the user named, else for a config its flags date (``dated``) the NEWEST release they allow
        (versions.dated_span). Dating picks the oldest (``for_config``), which says when the flags came in, not that
        the config ran there. Two readings take it:
        - the --vllm_device engine the cost model prices (cost.py ``vllm_device_kv_of_total``): --vllm_device dates a
          config to 3.1.0, yet ms-swift's own v3.4.0 examples carry it, and only 3.1's engine (under vLLM 0.7.2) sizes
          its KV cache off the whole GPU, the worst case (``_vllm_device_notes`` says what the 3.1 reading adds);
        - what --vllm_server_base_url without --vllm_server_host does (versions.BASE_URL_NAMES_SERVER_FROM: 3.5.0-3.7.1
          run colocated engines, 3.7.2 on the server): --train_type, last in 4.0.4, dates `--vllm_mode server
          --vllm_server_base_url URL --train_type full` to 3.5.0, so the colocated reading is taken only where the
          flags allow no release from 3.7.2 on (``_base_url_notes`` says what 3.5.0-3.7.1 would do)."""
        if self.dated and self.dated_newest:
            return self.dated_newest
        return self.code_release or self.version

    def dated_as(self, named: str, newest: str | None) -> "SwiftFramework":
        """This pack reading a config its flags date to ``named`` (``for_config``), ``newest`` the newest release the
        flags allow: ``named``'s own code prices the memory (with_named_release), the engine ``newest_dated_release``'s."""
        dated = copy.copy(self.with_named_release(named))
        dated.dated = True  # its flags chose it: a flag it lacks is a mixed script, not a refusal (key_list)
        dated.dated_newest = newest
        return dated

    def with_named_release(self, named: str) -> "SwiftFramework":
        """A named release another release's pack judges (``versions.SERIES``) keeps its own code for the cost model."""
        named = named.strip().lstrip("v")
        if self.megatron or named == self.version:
            return self
        fw = copy.copy(self)
        fw.code_release = named
        return fw

    def for_config(self, flat: Mapping[str, Any]):
        """The release a pasted config's flags date it to (flags only some releases have: versions.KEY_RELEASES),
        unless the user named one; the newest we follow when nothing dates it."""
        if self.pinned or self.megatron:
            return self, None
        from .. import get_framework

        flat = normalize_keys(flat)
        version, why = swift_versions.detect(flat)
        if version is None:
            return self, (f"checked with the ms-swift {self.version} rules, the newest we follow ({why}); name yours "
                          "with --framework swift==VERSION if you run another")
        if version == self.version:
            return self, None
        # the dated release's own code prices the memory (with_named_release)
        named = swift_versions.dated_release(flat)[0] or version
        span = swift_versions.dated_span(flat)
        dated = get_framework(f"{self.name}=={version}").dated_as(named, span[1] if span else None)
        return dated, (
            f"checked with the ms-swift {version} rules: {why}; name another with --framework swift==VERSION")

    def key_list(self, flat: Mapping[str, Any], command: bool = False) -> KeyList:
        """The base reading; for a command recommend prints (``command``) or a config checked under a release the
        user named (``pinned``, not ``dated`` by its flags), the dating flags this release's arguments lack (``unknown_keys``) are refused by
        name, each with its successor (versions.SUCCESSOR_OF) or none: --set train_type=full under 4.6.0 printed
        --train_type, which its parser stops on. A pasted config with no named release is dated by them instead
        (``for_config``)."""
        base = super().key_list(flat, command)
        named = self.pinned and not self.dated
        lacks = [k.removeprefix("--") for k in self.unknown_keys(flat)] if command or named else []
        if not lacks:
            return base
        spans = swift_versions.KEY_RELEASES
        # 3.x parses in swift/llm/base.py, 4.x in swift/pipelines/base.py: both raise on the arguments left over
        parser = "pipelines" if release_numbers(self.code_release or self.version) >= (4,) else "llm"
        successors = tuple(
            (k, new if new and swift_versions.has_key(self.code_release or self.version, new) else None,
             f"a flag of ms-swift {spans[k][0]} to {spans[k][1]}")
            for k in lacks for new in [swift_versions.SUCCESSOR_OF.get(k)])
        return replace(base, refused=frozenset(lacks), successors=successors,
                       refusal="ValueError: remaining_argv: ['{key}', ...]",
                       source=f"swift/{parser}/base.py: SwiftPipeline._parse_args (the arguments no dataclass takes)")

    def unknown_keys(self, flat: Mapping[str, Any]) -> list[str]:
        """The dating flags (versions.KEY_RELEASES) this release's arguments lack (the named release's, where
        another's pack judges it): 4.6.0's parser stops on them
        (swift/pipelines/base.py SwiftPipeline._parse_args: "ValueError: remaining_argv: [...]"); none where the
        config sets --ignore_args_error (``ignored_keys``)."""
        return [] if self._ignores_args(flat) else self._lacked(flat)

    def ignored_keys(self, flat: Mapping[str, Any]) -> list[str]:
        """With --ignore_args_error true the same flags are only logged and the launch goes on without them
        (BaseArguments.ignore_args_error: 3.x swift/llm/argument/base_args/base_args.py, 4.x
        swift/arguments/base_args/base_args.py; read in SwiftPipeline._parse_args): the config runs as if it lacked
        them."""
        return self._lacked(flat) if self._ignores_args(flat) else []

    @staticmethod
    def _ignores_args(flat: Mapping[str, Any]) -> bool:
        return flag_bool("ignore_args_error", normalize_keys(flat).get("ignore_args_error", False))

    def _lacked(self, flat: Mapping[str, Any]) -> list[str]:
        if self.megatron:
            return []
        return [f"--{k}" for k in sorted(normalize_keys(flat)) if k in swift_versions.KEY_RELEASES
                and not swift_versions.has_key(self.code_release or self.version, k)]

    def repair_policy(self, values: Mapping[str, Value] | None = None):
        """The class's policy, less the variables whose flag this release's arguments lack (versions.KEY_RELEASES:
        3.3.1 has no --vllm_mode, --generation_batch_size or --vllm_tensor_parallel_size; 3.10.3 no
        --num_generations_eval): fix and recommend --from never offer a flag the release's parser refuses."""
        policy = super().repair_policy(values)
        if self.releases is not swift_versions or self.version == swift_versions.NEWEST:
            return policy  # ms-swift's newest, its Megatron path and TRL (their own policies)
        lacks = {n for n in (*policy.rules, *policy.memory) if not self._release_has(n)}
        return replace(policy, rules=tuple(n for n in policy.rules if n not in lacks),
                       memory=tuple(n for n in policy.memory if n not in lacks),
                       ranks={n: r for n, r in policy.ranks.items() if n not in lacks}) if lacks else policy

    @property
    def server_rollout_title(self) -> str:
        """The rollout row's title where vLLM has GPUs of its own: a `swift rollout` server's, or in 3.2-3.4 (no
        server) the engines the job itself starts on the GPUs past its training ranks, one per num_infer_workers
        (grpo_trainer.py of 3.4.0, "async mode")."""
        if self._legacy_layout():
            return "rollout (job's own vLLM GPU, one of num_infer_workers)"
        return "rollout (server's GPU)"

    def _legacy_layout(self) -> bool:
        """Whether this is an ms-swift release without --vllm_mode (3.2-3.4: versions.legacy_layout); never TRL's."""
        return self.releases is swift_versions and swift_versions.legacy_layout(self.version)

    def _release_has(self, name: str) -> bool:
        """Whether this release's arguments take the flag of variable ``name`` (as a server's ``rollout.X`` or a
        ``(X is set)`` switch: X's); always for a class that follows other releases (TRL)."""
        spec = self.ruleset.variables.get(name)
        if spec is None or self.releases is not swift_versions:
            return True
        flag = spec.key.strip("()").split(" ")[0].removeprefix("rollout.")
        return flag not in swift_versions.KEY_RELEASES or swift_versions.has_key(self.version, flag)

    def doc_appendix(self) -> str:
        return docs.versions_markdown() if not self.megatron and self.version == swift_versions.NEWEST else ""

    def scenario_fields(self, values: Mapping[str, Value]) -> dict[str, Any]:
        """As the base class, but a server-mode config's job also holds the `swift rollout` server's GPUs: NPROC_PER_NODE
        counts the training ranks only (ms-swift's external examples: 6 of 8 GPUs train, the server takes 2). The
        GPUs per node are --gpus over the nodes when given, else the ranks plus the server's tp*dp (on one node)."""
        fields = super().scenario_fields(values)
        if not values.get("vllm_server") or not values.get("use_vllm", True):
            return fields
        nodes = int(values.get("nnodes") or 1)
        cluster = values.get("cluster_num_gpus")
        if cluster:
            if int(cluster) % nodes == 0 and int(cluster) // nodes >= int(values.get("gpus_per_node") or 1):
                fields["gpus_per_node"] = int(cluster) // nodes
        elif nodes == 1:
            server = int(values.get("server_tp") or 1) * int(values.get("server_dp") or 1)
            fields["gpus_per_node"] = int(values.get("gpus_per_node") or 1) + server
        return fields

    def error_patterns(self) -> list:
        return errors.PATTERNS

    def normalize(self, flat: Mapping[str, Any]) -> dict[str, Any]:
        return normalize_keys(flat)

    def searchable(self, values: Mapping[str, Value]) -> set[str]:
        # and the memory switches recommend searches (cost-only variables, set by flags); the legacy engines' share
        # moves with the trainer's, whose flag it is (_engine_share_tie)
        out = super().searchable(values) | set(MEGATRON_KNOB_SEARCH if self.megatron else HF_KNOB_SEARCH)
        follower, leader = LEGACY_ENGINE_SHARE
        return out | ({follower} if leader in out and self._engine_share_follows(values) else set())

    def _engine_share_follows(self, values: Mapping[str, Value]) -> bool:
        """Whether the engines' vLLM share is the trainer's --vllm_gpu_memory_utilization (``LEGACY_ENGINE_SHARE``):
        3.2-3.4's async mode, the only server layout legacy_vllm_layout gives those releases (an external
        --vllm_server_host, server_host_given, keeps the server's own share)."""
        return self._legacy_layout() and bool(values.get("vllm_server")) and not values.get("server_host_given")

    def _engine_share_tie(self, base: Mapping[str, Value], domains: dict[str, list[Value]], extra: list[Rule],
                          user_set: set[str]) -> None:
        """The search keeps the legacy engines' share equal to the trainer's (``LEGACY_ENGINE_SHARE``, as
        legacy_vllm_layout reads a config), so that a share recommend takes from the config (or searches) prices
        the engine too, not the share's default."""
        follower, leader = LEGACY_ENGINE_SHARE
        if not self._engine_share_follows(base) or follower in user_set or leader not in domains:
            return
        extra.append(follow_in_search(
            domains, follower, leader,
            f"the engines' vLLM share {{{follower}}} is the trainer's --vllm_gpu_memory_utilization {{{leader}}}",
            "ms-swift 3.4.0 grpo_trainer.py: async mode's engines take the trainer's vllm_gpu_memory_utilization"))

    def free_keys(self, values: Mapping[str, Value]) -> set[str]:
        knobs = MEGATRON_KNOB_SEARCH if self.megatron else HF_KNOB_SEARCH
        return super().free_keys(values) | {flag for name in knobs for flag in KNOB_FLAGS.get(name, (name,))}

    def from_script(self, args: list[str], scope: Mapping[str, str], gpus: int | None,
                    notes: list[str] | None = None) -> tuple[str, list[str], int | None]:
        # ms-swift counts its processes from NPROC_PER_NODE/NNODES (swift/cli/main.py starts torchrun with
        # them): passed on as a prefix its own parser reads, instead of the launcher's count
        env = [f"{k}={scope[k]}" for k in SCRIPT_ENV if k in scope and scope[k].isdigit()]
        if scope.get(VISIBLE_ENV):
            env.append(f"{VISIBLE_ENV}={scope[VISIBLE_ENV]}")
        # the image budget the VL model's processor reads from the environment (qwen.py patch_qwen_vl_utils:
        # get_env_args), set by `export MAX_PIXELS=...` or a `MAX_PIXELS=... swift rlhf` prefix as ms-swift's
        # multimodal examples do
        vision = [f"{k}={scope[k]}" for k in VISION_ENV if str(scope.get(k) or "").strip()]
        if not any(k in scope for k in SCRIPT_ENV):
            # swift/cli/main.py use_torchrun: with neither set, ms-swift starts one plain python process; the
            # script's CUDA_VISIBLE_DEVICES stays (3.2-3.4 place vLLM on a visible GPU past the training rank)
            env = ["NPROC_PER_NODE=1"] + [e for e in env if e.startswith(f"{VISIBLE_ENV}=")]
            if notes is not None:
                notes.append(f"the script sets neither NPROC_PER_NODE nor NNODES: `{self.command}` runs one training "
                             "process (ms-swift starts torchrun only when one of them is set)")
        return self.name, env + vision + args, None

    # -- import ---------------------------------------------------------------------------
    def parse(self, tokens: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
        return parse_swift_args(tokens)

    def to_values(self, flat: Mapping[str, Any], *, gpus: int | None, model: ModelCard | None) -> dict[str, Value]:
        ignored = {k.removeprefix("--") for k in self.ignored_keys(flat)}  # the run never reads them
        flat = {k: v for k, v in normalize_keys(flat).items() if k not in ignored}
        rlhf_type = flat.get("rlhf_type", "grpo")
        if rlhf_type != "grpo":
            raise InputError("rlhf_type", f"'{rlhf_type}' is not modelled: only the GRPO trainer (GRPO, GSPO, DAPO, "
                             "RLOO, REINFORCE++ through it) is.", "use --rlhf_type grpo.")
        if self.megatron and flat.get("use_ray") is not None and flag_bool("use_ray", flat["use_ray"]):
            raise InputError("use_ray", "the Ray pipeline (swift/ray/megatron) takes its layout from a Ray YAML "
                             "config; it is not modelled.", "check the torchrun launch (drop --use_ray).")
        values = read_flags(self.ruleset, flat, DECIDED)
        if values.get("vpp") == 1:  # MegatronArguments._init_vpp_size: 1 means no virtual pipeline
            values["vpp"] = None
        if not self.megatron and flat.get("packing") is not None and flag_bool("packing", flat["packing"]):
            values["padding_free"] = True  # SftArguments._check_padding_free
        values.update(self._decided(flat))
        values.update(cost_values(flat, self.megatron, self.code_release or self.version))  # cost-model inputs
        self._gpus(values, flat, gpus)
        if not self.megatron:
            values.update(self._release_vllm_mode(values, flat))
            if release_numbers(self.code_release or self.version) < QUANTIZED_ENGINE_FROM:
                values["engine_load_bits"] = 16  # the colocated vLLM loads 16 bits (cost.py quantized_load)
        if model is not None:
            values.update(self.model_constants(model))
            if not self.megatron:
                values.update(vision_values(flat, model))
        return values

    def value_notes(self, values: Mapping[str, Value], *, priced: bool = True) -> list[str]:
        """A vision-language model: what its image inputs were assumed to be (cost.py vision_values)."""
        if not values.get("vision_patches"):
            return []
        patches = int(values["vision_patches"])
        frozen = [name for key, name in (("vit_frozen", "the ViT"), ("aligner_frozen", "the merger"))
                  if values.get(key)]
        return [f"vision-language model: each sample is assumed to hold {DEFAULT_IMAGES_PER_SAMPLE} image at the "
                f"MAX_PIXELS budget, {patches} ViT patches ({patches // 4} image tokens inside --max_length); "
                + (f"{' and '.join(frozen)} frozen (--freeze_vit / --freeze_aligner)" if frozen
                   else "the ViT and merger train (--freeze_vit false, --freeze_aligner false)")
                + (" in a full fine-tune" if not values.get("lora_rank") else "; LoRA: adapters on the LM only")
                + "; step time counts the language model only (the ViT's passes are not timed)"]

    def _release_vllm_mode(self, values: Mapping[str, Value], flat: Mapping[str, Any]) -> dict[str, Value]:
        """Where the release this object follows runs vLLM when ``--vllm_mode`` does not say: 3.2-3.4 by
        num_infer_workers and the visible GPUs (legacy_vllm_layout), 3.5-3.10 by the host (server with
        --vllm_server_host or --vllm_server_base_url, else colocate: RLHFArguments._init_grpo / _init_rollout
        overwrite vllm_mode), 3.11 on as given (versions.py)."""
        if self._legacy_layout():
            return legacy_vllm_layout(values, flat, always=True)
        if swift_versions.mode_follows_host(self.code_release or self.version) and values.get("use_vllm"):
            return {"vllm_mode_given": True, "vllm_server": bool(values.get("server_host_given"))}
        return legacy_vllm_layout(values, flat)

    def _base_url_only(self, flat: Mapping[str, Any]) -> bool:
        """--use_vllm with --vllm_server_base_url and no --vllm_server_host, on a release that has the base URL (3.5.0
        on; 3.2-3.4, ``legacy_layout``, have no such flag: a release the user named refuses it, key_list)."""
        return (not self.megatron and flag_bool("use_vllm", flat.get("use_vllm", False))
                and _present(flat.get("vllm_server_base_url")) and not _present(flat.get("vllm_server_host"))
                and not swift_versions.legacy_layout(self.code_release or self.version))

    def _base_url_notes(self, flat: Mapping[str, Any], priced: bool) -> tuple[list[str], bool]:
        """What --vllm_server_base_url without --vllm_server_host does, and whether the config is read as colocated
        for it. ms-swift 3.5.0-3.7.1 (RLHFArguments._init_grpo, swift/llm/argument/rlhf_args.py) set vllm_mode to
        colocate when --vllm_server_host is not given, whatever --vllm_mode says, and every training rank builds its own
        engine at --vllm_gpu_memory_utilization (GRPOTrainer.__init__ prepare_vllm); 3.7.2 on (#5483) read the base
        URL as the server. Read colocated (``newest_dated_release``): said so; read as the server while the flags also
        allow 3.5.0-3.7.1 and the user named no release: said what those releases do and how to name one."""
        if not self._base_url_only(flat):
            return [], False
        share = (f"{flat['vllm_gpu_memory_utilization']}" if _present(flat.get("vllm_gpu_memory_utilization"))
                 else f"{HF_COST_DEFAULTS['gmu_permille'] / 1000} (the default)")
        if not swift_versions.base_url_names_server(self.newest_dated_release):
            release = self.code_release or self.version
            return [f"--vllm_server_base_url without --vllm_server_host: ms-swift {release} sets vllm_mode to "
                    "colocate ('vllm_server_host is not provided'), whatever --vllm_mode says, and every training "
                    f"rank starts its own vLLM engine at --vllm_gpu_memory_utilization {share}; the memory "
                    f"{priced_words(priced)} that way. Give --vllm_server_host and --vllm_server_port for the `swift "
                    "rollout` server (3.7.2 and later read the base URL too)"], True
        span = swift_versions.dated_span(flat)
        named = self.pinned and not self.dated
        if named or span is None or swift_versions.base_url_names_server(span[0]):
            return [], False
        first = span[0]
        return [f"--vllm_server_base_url without --vllm_server_host: read as ms-swift 3.7.2 and later run it, with the "
                f"`swift rollout` server; these flags also fit ms-swift {first} to 3.7.1, which set vllm_mode to "
                "colocate ('vllm_server_host is not provided') whatever --vllm_mode says: every training rank would "
                f"start its own vLLM engine at --vllm_gpu_memory_utilization {share} beside its training states, an "
                "engine's share of each training GPU on top of what is priced here. Name your release "
                "(--framework swift==3.6.0) to check that reading, or give --vllm_server_host and --vllm_server_port"
                ], False

    def _decided(self, flat: Mapping[str, Any]) -> dict[str, Value]:
        mode = flat.get("vllm_mode")
        if _present(mode) and mode not in ("colocate", "server"):
            raise InputError("vllm_mode", f"'{mode}' is not a vLLM mode.{did_you_mean(str(mode), ['colocate', 'server'])}",
                             "use --vllm_mode colocate or --vllm_mode server.")
        out: dict[str, Value] = {
            "vllm_mode_given": _present(mode),
            "vllm_server": mode == "server",
            # the base URL names the server from 3.7.2 (versions.BASE_URL_NAMES_SERVER_FROM); before, the host alone
            "server_host_given": _present(flat.get("vllm_server_host")) or (
                _present(flat.get("vllm_server_base_url"))
                and swift_versions.base_url_names_server(self.newest_dated_release)),
            "teacher": _present(flat.get("teacher_model")) or _present(flat.get("teacher_model_server")),
        }
        ratio = flag_float("split_dataset_ratio", flat.get("split_dataset_ratio", 0.0))
        val = any(_present(flat.get(k)) for k in ("val_dataset", "cached_val_dataset", "eval_dataset")) or ratio > 0
        if self.megatron:
            eval_iters = flat.get("eval_iters", -1)
            out["eval_on"] = val and eval_iters != 0
            out["loss_real"] = str(flat.get("loss_type", "grpo")) == "real"
            out["kl_on"] = flag_float("beta", flat.get("beta", 0.04)) != 0.0
        else:
            out["eval_on"] = val and str(flat.get("eval_strategy", "steps")) != "no"
            out["advantage_grpo"] = str(flat.get("advantage_estimator", "grpo")) == "grpo"
            liger = flag_bool("use_liger_kernel", flat.get("use_liger_kernel", False))
            out.update(swift_versions.liger_refusals(self.code_release or self.version, liger))
        return out

    def _gpus(self, values: dict[str, Value], flat: Mapping[str, Any], gpus: int | None) -> None:
        """World size from NPROC_PER_NODE*NNODES, or from --gpus when the prefix is missing."""
        if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1):
            raise InputError("gpus", f"{gpus} must be at least 1.", "pass --gpus with a positive count.")
        devices = [d for d in str(flat.get(VISIBLE_ENV) or "").split(",") if d.strip()]
        if gpus is None and devices and self._legacy_layout():  # the node's visible GPUs decide 3.2-3.4's vLLM mode
            gpus = len(devices) * int(values["nnodes"])
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
        if isinstance(value, list):  # an nargs='+' flag (--reward_funcs accuracy format): one word per item
            return ListFlag(f"--{key}", [self._word(v) for v in value])
        return f"--{key} {self._word(value)}"

    @staticmethod
    def _word(value: Any) -> str:
        return ("true" if value else "false") if isinstance(value, bool) else str(value)

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
        extra = dict(space.fixed_native) if space else {}
        # the environment the VL processor reads (MAX_PIXELS): a prefix, as NPROC_PER_NODE, never a flag
        out = [f"{k}={extra.pop(k)}" for k in VISION_ENV if k in extra]
        out.append(f"NPROC_PER_NODE={solution['gpus_per_node']}")
        if int(solution.get("nnodes") or 1) > 1:
            out.append(f"NNODES={solution['nnodes']}")
        out.append(self._flag("rlhf_type", extra.pop("rlhf_type", "grpo")))
        specs = self.ruleset.variables
        for name in self.EXPORT_ORDER:
            if name in solution and self._exported(name, solution) and self._release_has(name):
                out.append(self._flag(specs[name].key, solution[name]))
        if solution.get("use_vllm") and self._legacy_layout():
            # 3.2-3.4: no --vllm_mode; num_infer_workers places the engine (space: colocated on the node's GPUs)
            if not solution.get("server_host_given") and solution.get("num_infer_workers") is not None:
                out.append(self._flag("num_infer_workers", solution["num_infer_workers"]))
                if not solution.get("vllm_server") and int(solution.get("vllm_tp") or 1) > 1:
                    # the colocated engine's TP is --tensor_parallel_size (rlhf_args.py _check_grpo of 3.4.0)
                    out.append(self._flag("tensor_parallel_size", solution["vllm_tp"]))
                if solution.get("vllm_server"):
                    # async mode: the node shows its training GPUs and the engines' (device_count = NPROC_PER_NODE
                    # + num_infer_workers)
                    shown = int(solution["gpus_per_node"]) + int(solution["num_infer_workers"])
                    out.insert(0, f"{VISIBLE_ENV}={','.join(str(d) for d in range(shown))}")
                    if solution.get("async_generate"):
                        out.append(self._flag(specs["async_generate"].key, True))
        elif solution.get("use_vllm") and solution.get("vllm_mode_given"):
            out.append(self._flag("vllm_mode", "server" if solution.get("vllm_server") else "colocate"))
            if solution.get("vllm_server"):
                extra.setdefault("vllm_server_host", "ROLLOUT_HOST")
                for name in ("server_tp", "server_dp"):
                    out.append(self._flag(specs[name].key, solution[name]))
                if solution.get("async_generate"):
                    out.append(self._flag(specs["async_generate"].key, True))
        out += export_flags(solution, self.megatron)
        for key, value in extra.items():
            out.append(self._flag(key, value))
        return out

    def assignment(self, name: str, value: Value) -> str:
        if name == "lora_rank" and name not in self.ruleset.variables:  # a cost input: fix's LoRA relaxation sets it
            tuner = self.native_key(name)
            return f"--{tuner} lora --lora_rank {value}" if value else f"--{tuner} full"
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

    def config_notes(self, flat: Mapping[str, Any], *, priced: bool = True) -> list[str]:
        ignored = self.ignored_keys(flat)
        notes = [f"{k} is not an option of ms-swift {self.code_release or self.version}: with --ignore_args_error "
                 f"the launch logs it (remaining_argv) and goes on without it, so it is read as not given"
                 for k in ignored]
        flat = {k: v for k, v in normalize_keys(flat).items() if f"--{k}" not in ignored}
        notes += self._tuner_notes(flat, priced)
        notes += self._quant_notes(flat, priced)
        notes += self._tuner_backend_notes(flat, priced)
        if not self.megatron and multi_turn_context(flat):
            notes.append("multi-turn rollout with max_completion_length per round (completion_length_limit_scope "
                         f"per_round, or a rollout server): the trained response {priced_words(priced)} up to the "
                         "engine's context (--vllm_max_model_len, else the model's), not max_completion_length; set "
                         "--completion_length_limit_scope total (colocate) or --vllm_max_model_len to bound it")
        base_url, base_url_only = self._base_url_notes(flat, priced)
        notes += base_url
        if (flat.get("vllm_mode") == "server" and flag_bool("use_vllm", flat.get("use_vllm", self.megatron))
                and not base_url_only and not _present(flat.get("rollout.vllm_gpu_memory_utilization"))):
            ignored = (f"; this command's {flat['vllm_gpu_memory_utilization']} sizes a colocated engine only"
                       if _present(flat.get("vllm_gpu_memory_utilization")) else "")
            notes.append(f"the `swift rollout` server's GPU {priced_words(priced)} at that server's default vLLM "
                         f"memory share, {SERVER_GMU_PERMILLE / 1000} (its own --vllm_gpu_memory_utilization"
                         f"{ignored}): give yours as --rollout.vllm_gpu_memory_utilization")
        return notes + (self._vllm_device_notes(priced) if self._legacy_vllm_config(flat) else [])

    def _legacy_vllm_config(self, flat: Mapping[str, Any]) -> bool:
        """A config written for ms-swift < 3.5: vLLM on, placed by --vllm_device / --num_infer_workers
        (``LEGACY_VLLM_KEYS``) without --vllm_mode, on the HF path (legacy_vllm_layout reads it). What config_notes'
        placement note and other_readings' 3.1 reading both start from."""
        return (not self.megatron and not _present(flat.get("vllm_mode")) and any(k in flat for k in LEGACY_VLLM_KEYS)
                and flag_bool("use_vllm", flat.get("use_vllm", False)))

    def _second_3_1_reading(self) -> bool:
        """The flags also date the config to ms-swift 3.1 (``code_release``, cost.py ``vllm_device_kv_of_total``:
        its engine's KV cache is util x the whole GPU), but it is priced as a newer release they allow
        (``newest_dated_release``, not 3.1): said by _vllm_device_notes, priced by other_readings."""
        return (not vllm_device_kv_of_total(self.newest_dated_release, True)
                and vllm_device_kv_of_total(self.code_release or self.version, True))

    def _vllm_device_notes(self, priced: bool) -> list[str]:
        """Where a pre-3.5 config's vLLM is priced, and ms-swift 3.1's engine (cost.py VLLM_DEVICE_KV_OF_TOTAL: in
        training rank 0's process, under vLLM 0.7.2 its KV cache is --vllm_gpu_memory_utilization of the whole GPU with
        the rest on top): said where it is priced (``newest_dated_release`` 3.1), else where the flags also date the config
        to 3.1 (``code_release``) but it is priced as the newest release they allow, as 3.2 and later run it."""
        release = self.code_release or self.version
        if vllm_device_kv_of_total(self.newest_dated_release, True):
            kv_of_total = (" ms-swift 3.1 (the release it is priced as) starts it in training rank 0's process, and "
                           "with the vLLM it recommends (0.7.2) its KV cache takes --vllm_gpu_memory_utilization of "
                           "the whole GPU with the weights on top; name your release (--framework swift==3.4.1) if you "
                           "run 3.2 or later")
        elif self._second_3_1_reading():
            kv_of_total = (f" Its flags fit ms-swift {release} to {self.newest_dated_release}: an engine on a GPU of its own "
                           f"{priced_words(priced)} as 3.2 and later run it, its KV cache the "
                           "--vllm_gpu_memory_utilization share of that GPU less the engine's weights and activations. "
                           "Under ms-swift 3.1 with the vLLM it recommends (0.7.2) the engine, started in training "
                           "rank 0's process, profiles that process's GPU instead: its KV cache takes the share of the "
                           "whole GPU and its weights, activations and CUDA graphs come on top, so that GPU needs "
                           "about the model's 16-bit weights (per tensor-parallel rank) more than priced here")
        else:
            kv_of_total = ""
        return [
            "written for ms-swift < 3.5 (--vllm_device / --num_infer_workers, no --vllm_mode): vLLM "
            f"{priced_words(priced)} where that release put it, on the training GPUs when the visible GPUs (--gpus per "
            "node, else NPROC_PER_NODE) equal num_infer_workers (TP --tensor_parallel_size), else num_infer_workers "
            f"engines on GPUs of their own.{kv_of_total}"]

    def other_readings(self, flat: Mapping[str, Any]) -> list[tuple[str, "SwiftFramework"]]:
        """A config whose flags fit 3.1 and later releases (``_vllm_device_notes``' second reading): priced as the newest
        they allow, its engine on a GPU of its own is also priced as ms-swift 3.1 with vLLM 0.7.2 runs it (cost.py
        ``vllm_device_kv_of_total``), for ``check`` to give that reading's peak."""
        release = self.code_release or self.version
        if not (self._legacy_vllm_config(flat) and self._second_3_1_reading()):
            return []
        other = copy.copy(self)
        other.dated_newest = release
        return [(f"as ms-swift {release} with vLLM 0.7.2 runs it", other)]

    def _tuner_notes(self, flat: Mapping[str, Any], priced: bool = True) -> list[str]:
        """A config that names no tuner trains LoRA: ``swift rlhf``'s BaseArguments default it (4.x
        swift/arguments/base_args/base_args.py ``tuner_type: str = field(default='lora')``; 3.x
        swift/llm/argument/base_args/base_args.py ``train_type``, the same default), of --lora_rank (TunerArguments:
        8). Said, with how to train every weight instead: an answer that fits as LoRA is not one that fits in full.
        Megatron-SWIFT's default is 'full' (megatron_args.py): nothing to say. Not ``priced`` (no memory evaluated):
        said without the claim that it is. Every release we follow has that default (3.1.0, GRPO's first, to 4.6.0;
        3.8.0's base_args.py too), so the note names the release the user named (``code_release``), not the pack
        that judges it."""
        if self.megatron or any(_present(flat.get(k)) for k in ("tuner_type", "train_type")):
            return []
        key = self.native_key("lora_rank")
        rank = flat.get("lora_rank") if _present(flat.get("lora_rank")) else HF_COST_DEFAULTS["lora_rank"]
        return [f"no --{key}: ms-swift {self.code_release or self.version} trains LoRA by default (BaseArguments.{key} 'lora'), rank "
                f"{rank}{', and so it is priced' if priced else ''}; to train every weight give --{key} full (recommend: --set {key}=full)"]

    def _tuner_backend_notes(self, flat: Mapping[str, Any], priced: bool = True) -> list[str]:
        """``--tuner_backend unsloth`` with GRPO: every release we follow accepts it without a word
        (BaseArguments.tuner_backend ``Literal['peft', 'unsloth']``: 3.1.1 to 3.12.6 swift/llm/argument/base_args/
        base_args.py, 4.0.0 swift/arguments/base_args/base_args.py; ``get_model_processor`` calls ``load_by_unsloth``,
        which loads the model with Unsloth's FastLanguageModel / FastVisionModel, and 3.x swift/llm/train/tuner.py,
        4.0.0 swift/pipelines/train/tuner.py ``prepare_adapter`` add the LoRA with ``UnslothModel.get_peft_model``);
        no GRPO code reads it (neither rlhf_args.py nor rlhf_trainer/grpo_trainer.py names it), while ms-swift's
        maintainers say GRPO does not support it (ms-swift issue #3183, an OOM with it on 8 x A800: 'unsloth is not
        support in grpo'). Before 3.7.0 load_by_unsloth passes no device_map (3.1.1 to 3.6.0
        swift/llm/model/register.py; 3.7.0 on pass ``args.device_map``), so Unsloth's default ``device_map =
        "sequential"`` places the model (unsloth 2025.2.15, 2025.6.1 and 2025.11.1 models/loader.py
        FastLanguageModel.from_pretrained, models/vision.py FastBaseVisionModel.from_pretrained), and transformers
        fills the visible GPUs in order from the first (4.51.3 modeling_utils.py ``_get_device_map``: 'sequential'
        takes accelerate's get_max_memory, every GPU from 0): each process of a multi-process launch starts its copy
        on GPU 0, whatever its local rank. How many copies land there depends on the free memory each process sees as
        it loads, which no config settles: said, and priced as the peft backend."""
        if self.megatron or str(flat.get("tuner_backend") or "peft").strip().lower() != "unsloth":
            return []
        release = self.code_release or self.version
        placed = (" Before ms-swift 3.7.0 load_by_unsloth passes no device_map, and Unsloth's default, 'sequential', "
                  "fills the GPUs from the first: with more than one process each rank starts its copy of the model "
                  "on GPU 0." if release_numbers(release) < UNSLOTH_DEVICE_MAP_FROM else "")
        return [f"--tuner_backend unsloth with GRPO: ms-swift {release} accepts it (BaseArguments.tuner_backend; "
                "the model is loaded by Unsloth's FastLanguageModel / FastVisionModel, load_by_unsloth) but its GRPO "
                "trainer has no code for it, and ms-swift's maintainers say unsloth is not supported in GRPO "
                f"(ms-swift issue #3183).{placed} Memory {priced_words(priced)} as with the default --tuner_backend "
                "peft, one copy a GPU"]

    def _quant_notes(self, flat: Mapping[str, Any], priced: bool = True) -> list[str]:
        """What of ``--quant_method`` / ``--quant_bits`` the cost model does not price (bitsandbytes is priced:
        cost.py quantized_load). QuantizeArguments.get_quantization_config (arguments/base_args/quant_args.py)
        quantizes nothing without a method; hqq, eetq, quanto and fp8 hand transformers their own configs, whose
        bytes per weight we have not sourced; awq/gptq checkpoints are pre-quantized and found from the model's
        config."""
        method = str(flat.get("quant_method") or "").strip().lower()
        bits = flat.get("quant_bits")
        given = _present(bits) and str(bits).strip().lower() not in ("none", "null", "0")
        if method in ("", "none", "null"):
            return [f"--quant_bits {bits} without --quant_method: ms-swift loads the model unquantized "
                    "(QuantizeArguments.get_quantization_config needs a method)"
                    + (", and so it is priced" if priced else "")] if given else []
        if method == "bnb" and not self.megatron:
            tuner = str(flat.get("tuner_type", flat.get("train_type")) or "lora").lower()
            # a LoRA base is priced quantized (frameworks/bnb.py quantized_cost_spec); a full fine-tune is not
            return ["--quant_method bnb with --tuner_type full: a quantized model trained in full is not modelled "
                    f"for ms-swift; the trainer's weights {priced_words(priced, plural=True)} in bf16"
                    ] if tuner == "full" else []
        where = "for Megatron-SWIFT" if self.megatron else "for ms-swift"
        return [f"--quant_method {method}: a {method} quantized base is not modelled {where}; memory and time "
                f"{priced_words(priced, plural=True)} with the base model in bf16 (an over-estimate of its weights)"]

    def native_key(self, name: str) -> str:
        if name in ("vllm_server", "vllm_mode_given"):
            return "vllm_mode"
        return super().native_key(name)

    @property
    def cost_input_keys(self) -> Mapping[str, tuple[str, ...]]:
        # the cost-only switches, set by their flag; LoRA or full: --tuner_type since ms-swift 4.0
        # (swift/arguments/base_args/base_args.py), --train_type before (swift/llm/argument/base_args/base_args.py,
        # 3.x), with --lora_rank (TunerArguments)
        tuner = "tuner_type" if int(str(self.version).split(".")[0]) >= 4 else "train_type"
        return {**KNOB_FLAGS, "lora_rank": (tuner, "lora_rank")}

    def hardware(self, values: Mapping[str, Value]) -> tuple[int, int]:
        """(GPUs of the whole job: the training ranks, or --gpus when a rollout server takes more; 0 tokens)."""
        world = int(values.get("nnodes") or 1) * int(values.get("gpus_per_node") or 1)
        return max(world, int(values.get("cluster_num_gpus") or 0)), 0

    # -- search space -----------------------------------------------------------------------
    # generation without vLLM on the HF path: ms-swift's default (use_vllm False: swift/rlhf_trainers/args_mixin.py
    # 4.x, swift/llm/argument/rlhf_args.py 3.x; the Megatron path's default is vLLM, megatron_args.py use_vllm True);
    # the flags only vLLM reads, which ask for it (arms_left_out)
    WITHOUT_VLLM = "transformers' generate, ms-swift's default"
    # beside the release's engine settings (``vllm_only_keys``): ms-swift's VllmArguments flags (--vllm_*), read to
    # build the engine alone, and --async_generate, which generates with vLLM one batch ahead
    VLLM_KEYS = ("vllm_", "async_generate")
    # both engines searched whenever the user leaves use_vllm alone (``LeftOut.by_default``): the command carries the
    # prompt length either way (--max_length), so the two arms are priced alike and the fastest that fits is the
    # answer (7B LoRA on one RTX 4090: 48.6 s a step without vLLM, 52.9 s with it, each with headroom)
    BOTH_ENGINES_BY_DEFAULT = True

    def _use_vllm_arms(self, scenario: Any) -> set[bool]:
        """The use_vllm values the user set (--set) or searched (--search use_vllm=true,false); empty when neither."""
        fixed = self.normalize({str(k).lstrip("-"): v for k, v in scenario.fixed.items()})
        if "use_vllm" in fixed:
            return {flag_bool("use_vllm", fixed["use_vllm"])}
        searched = self.normalize({str(k).lstrip("-"): v for k, v in scenario.search.items()})
        return {flag_bool("use_vllm", v) for v in searched.get("use_vllm", ())}

    def arms_left_out(self, scenario: Any) -> list[LeftOut]:
        """The generation the search does not try: the default search runs vLLM only (``space``: use_vllm true),
        which leaves out generation without it, the HF path's default (``WITHOUT_VLLM``). Chosen where the user set
        or searched use_vllm, or set or searched a flag only vLLM reads (``vllm_only_keys``, ``VLLM_KEYS``): that asks
        for vLLM. None on the
        Megatron path, whose default is vLLM. Searched by default (``BOTH_ENGINES_BY_DEFAULT``) where the arms are
        priced alike."""
        if self.megatron:
            return []
        arms = self._use_vllm_arms(scenario)
        only = self.vllm_only_keys()
        given = [*scenario.fixed, *scenario.search]  # a key set or searched asks for vLLM alike
        if not arms and any(k.startswith(self.VLLM_KEYS) or k in only
                            for k in self.normalize({str(k).lstrip("-"): None for k in given})):
            arms = {True}
        words = {False: f"use_vllm=false ({self.WITHOUT_VLLM})", True: "use_vllm=true (vLLM)"}
        return [LeftOut("use_vllm", ["true", "false"], [str(value).lower()], words[value], bool(arms),
                        self.BOTH_ENGINES_BY_DEFAULT) for value in sorted({True, False} - (arms or {True}))]

    def default_search(self, per_node: int, total: int, model: ModelCard | None) -> dict[str, list[Value]]:
        return {
            "per_device_train_batch_size": pow2(1, 16),
            "gradient_accumulation_steps": pow2(1, 16),
            "vllm_tp": [t for t in (1, 2, 4, 8) if t <= per_node],
        }

    def placements(self, scenario: Any, notes: list[str]) -> list:
        """Colocated: vLLM on the training GPUs (``--vllm_mode colocate``). Split: a `swift rollout` server on GPUs
        of its own (``--vllm_mode server``), pipelined with ``--async_generate`` on the HF path (Megatron GRPO and
        TRL have none: their server mode runs in turn); one solve places the training ranks and the server's GPUs
        (the space searches the split and uses every GPU)."""
        from ...layout import Layout, admits, sub_scenario

        out = []
        legacy = self._legacy_layout()  # 3.2-3.4: no --vllm_mode; --async_generate asks for async mode
        colocate = {"use_vllm": True, "async_generate": False} if legacy else {"use_vllm": True, "vllm_mode": "colocate"}
        if scenario.placement in ("colocate", "auto") and admits(scenario, "colocate", colocate, notes):
            out.append(Layout("colocate", f"colocated on {scenario.total_gpus} GPUs",
                              sub_scenario(scenario, fixed=colocate, layout_keys=colocate)))
        split = {"use_vllm": True} if legacy else {"use_vllm": True, "vllm_mode": "server"}
        if "async_generate" in self.ruleset.variables and not self.megatron:
            split["async_generate"] = True
        if scenario.placement in ("split", "auto") and admits(scenario, "split", split, notes):
            out.append(Layout("split", "vLLM engines of the job on GPUs of their own (async mode)" if legacy
                              else "a rollout server on GPUs of its own",
                              sub_scenario(self._own_factors(scenario), fixed=split, layout_keys=split)))
        return out

    def is_gpu_count_key(self, key: str) -> bool:
        return key == "NPROC_PER_NODE" or super().is_gpu_count_key(key)

    # the colocated engine's settings: its memory share, sleep level and TP (cost.py make_plan reads them only for an
    # engine in the training processes)
    COLOCATED_ENGINE = ("gmu_permille", "sleep_level", "vllm_tp")
    SERVER_ENGINE = ("server_tp", "server_dp", "server_gmu_permille")

    def vllm_only_keys(self) -> set[str]:
        """This release's flags that only vLLM reads: those of the settings ``inert`` drops without vLLM, as the
        release writes them (3.2-3.4: --num_infer_workers and --tensor_parallel_size; later --vllm_tensor_parallel_size,
        rollout.*), and the cost switches' flags (--vllm_gpu_memory_utilization, --sleep_level)."""
        out: set[str] = set()
        for name in self.inert({"use_vllm": [False]}):
            if name in self.ruleset.variables:
                out.add(self.ruleset.variables[name].key)
            out |= set(self.cost_input_keys.get(name, ()))
        return out

    def inert(self, domains: Mapping[str, Sequence[Value]]) -> set[str]:
        """With vLLM off in every candidate (``--use_vllm false``: transformers' generate) no vLLM setting does
        anything; with a rollout server in every one, the colocated engine's do nothing: rlhf_trainers/
        rollout_mixin.py ``_prepare_vllm`` (megatron/trainers/rollout_mixin.py ``_init_rollout_engine``) builds an
        engine from --vllm_gpu_memory_utilization / --vllm_tensor_parallel_size and sleeps it at --sleep_level in
        its colocate branch only (ms-swift 4.6.0); the server's are its own (cost.py SERVER_GMU_PERMILLE). Without a
        server in any candidate, the server's settings do nothing."""
        vllm = True in domains.get("use_vllm", [True])
        servers = set(domains.get("vllm_server", [False]))
        out: set[str] = set()
        if not vllm or servers == {True}:
            out |= set(self.COLOCATED_ENGINE)
        if not vllm or True not in servers:
            out |= set(self.SERVER_ENGINE)
        if not vllm:
            # 3.2-3.4: the job's own engines, their count and TP (3.4.0 swift/trainers/arguments.py
            # GRPOArgumentsMixin num_infer_workers / tensor_parallel_size, read by grpo_trainer.py to start vLLM)
            out |= {n for n in ("num_infer_workers", "legacy_tp") if n in self.ruleset.variables}
        return out

    def describe_placement(self, values: Mapping[str, Value]) -> str | None:
        if not (values.get("use_vllm") and values.get("vllm_server")):
            return None
        world = int(values.get("gpus_per_node") or 1) * int(values.get("nnodes") or 1)
        server = int(values.get("server_tp") or 1) * int(values.get("server_dp") or 1)
        kind = "async" if values.get("async_generate") else "synchronous"
        if self._legacy_layout():  # 3.2-3.4: no server, the job's own engines (num_infer_workers)
            return f"{kind}: {world} training + {server} vLLM GPUs (num_infer_workers)"
        return f"{kind}: {world} training + {server} rollout-server GPUs"

    def space(self, scenario: Any, model: ModelCard | None, *, with_knobs: bool = False) -> Space:
        # no algorithm (recommend --from): the config's own flags, in scenario.fixed, are all there is
        algo = canonical_algorithm(scenario.algorithm) if scenario.algorithm else "grpo"
        native: dict[str, Any] = {"rlhf_type": "grpo", **(ALGORITHMS[algo] if scenario.algorithm else {}),
                                  "use_vllm": True, "vllm_mode": "colocate",
                                  "num_generations": scenario.n if scenario.n is not None else 8}
        if self._legacy_layout():
            # 3.2-3.4 have no --vllm_mode: the engine is colocated where num_infer_workers equals the node's GPUs
            # (their GRPO examples: NPROC_PER_NODE=8 with --num_infer_workers 8), rlhf_args.py _check_grpo
            # --async_generate needs async mode: engines on GPUs of their own (_legacy_search)
            del native["vllm_mode"]
            native["num_infer_workers"] = 1 if _async_asked(scenario.fixed) else scenario.per_node
            ranks = scenario.fixed.get("NPROC_PER_NODE")
            if ranks is not None and "num_infer_workers" not in scenario.fixed \
                    and 1 <= flag_int("NPROC_PER_NODE", ranks) < scenario.per_node:
                # training ranks fixed below the node's GPUs (a 3.1 script: --vllm_device auto on the GPU after
                # them): the colocated layout is refused (swift.legacy.colocate_device_count); the one _check_grpo
                # allows is async mode, the rest of the node's GPUs as engines (swift.legacy.async_device_count)
                native["num_infer_workers"] = scenario.per_node - flag_int("NPROC_PER_NODE", ranks)
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
            if name not in user_set and values and self._release_has(name):
                domains[name] = list(values)
        kept = scenario.kept_totals.get("opt_batch")
        if kept and by_key[ACCUMULATION].name not in user_set:  # the accumulations that reach the kept total
            domains[by_key[ACCUMULATION].name] = _accumulations(kept, domains) or domains[by_key[ACCUMULATION].name]
        extra: list[Rule] = []
        self._mode_with_vllm(domains, extra, user_set)
        if self._legacy_layout() and not {"legacy_tp", "num_infer_workers", "gpus_per_node"} & user_set:
            self._legacy_search(domains, extra, per_node, async_mode=_async_asked(fixed))
        elif True in domains.get("vllm_server", []) and "gpus_per_node" not in user_set:
            # server mode: the rollout server takes some GPUs; search the split, use every GPU
            if "server_host_given" not in user_set:
                domains["server_host_given"] = [True]  # exported as a placeholder host
            for name in ("server_tp", "server_dp"):
                if name not in user_set:
                    domains[name] = [x for x in (1, 2, 4, 8) if x < total]
            # the ranks per node that leave exactly a server's tp*dp GPUs (search.use_all_gpus below): only those
            # (every other value breaks that rule, and the cost tables would price it for nothing)
            servers = {tp * dp for tp in domains["server_tp"] for dp in domains["server_dp"]}
            ranks = {(total - s) // scenario.nnodes for s in servers if (total - s) % scenario.nnodes == 0}
            domains["gpus_per_node"] = sorted(r for r in ranks
                                              if 1 <= r <= per_node - (1 if scenario.nnodes == 1 else 0))
            extra.append(Rule(
                "search.use_all_gpus", IntVar("gpus_needed").eq(IntVar("cluster_num_gpus")),
                "the layout uses {gpus_needed} of the {cluster_num_gpus} GPUs",
                Stage.SEARCH, "rlbatch-solver search space: training ranks and the rollout server cover the GPUs",
                kind=RuleKind.SEARCH,
            ))
            if False in domains["vllm_server"]:  # colocate keeps every GPU for training
                extra.append(Rule(
                    "search.colocate_all_ranks", BoolVar("vllm_server") | IntVar("gpus_per_node").eq(per_node),
                    "colocate mode trains on every GPU (NPROC_PER_NODE = {gpus_per_node})",
                    Stage.SEARCH, "rlbatch-solver search space", kind=RuleKind.SEARCH,
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
            inert = self.inert(domains)  # a server's engine: the trainer's vLLM share and sleep level do nothing
            for name, values in (MEGATRON_KNOB_SEARCH if self.megatron else HF_KNOB_SEARCH).items():
                if name not in inert and not set(KNOB_FLAGS.get(name, (name,))) & set(fixed):
                    domains[name] = list(values)
            self._engine_settings_unused(domains, extra)
        self._engine_share_tie(base, domains, extra, user_set)
        return Space(domains, extra, fixed_native)

    def _engine_settings_unused(self, domains: Mapping[str, Sequence[Value]], extra: list[Rule]) -> None:
        """Both engines searched (use_vllm true and false): the colocated engine's own settings do nothing without
        vLLM (no engine is built: ``inert``), so a config without vLLM keeps one value of each (the space's first,
        as ``recommend`` pins the settings no candidate reads) rather than count as a new config per value; the
        export writes none of them without vLLM."""
        if set(domains.get("use_vllm", ())) != {True, False}:
            return
        for name in self.COLOCATED_ENGINE:
            values = domains.get(name, ())
            if len(values) > 1:
                extra.append(Rule(
                    f"search.{name}_without_vllm", BoolVar("use_vllm") | IntVar(name).eq(int(values[0])),
                    f"{name} = {{{name}}} with use_vllm false, where it does nothing", Stage.SEARCH,
                    "rlbatch-solver recommend: a setting the engine alone reads keeps one value without it",
                    kind=RuleKind.SEARCH))

    @staticmethod
    def _mode_with_vllm(domains: dict[str, list[Value]], extra: list[Rule], user_set: set[str]) -> None:
        """The search's own --vllm_mode colocate goes with vLLM only: RLHFArguments._init_rollout refuses a
        vllm_mode without use_vllm (swift.args.vllm_mode_needs_use_vllm), so with use_vllm false (the user's, or
        an arm of --search use_vllm=true,false) the printed command leaves it out (a mode the user gave stays)."""
        arms = set(domains.get("use_vllm", ()))
        if "vllm_mode_given" in user_set or domains.get("vllm_mode_given") != [True] or arms == {True}:
            return
        domains["vllm_mode_given"] = sorted(arms)
        if len(arms) > 1:
            vllm, mode = BoolVar("use_vllm"), BoolVar("vllm_mode_given")
            extra.append(Rule(
                "search.vllm_mode_with_vllm", (vllm & mode) | (~vllm & ~mode),
                "vllm_mode is {vllm_mode_given} with use_vllm {use_vllm}: the search writes --vllm_mode with vLLM only",
                Stage.SEARCH, "rlbatch-solver search space: ms-swift refuses a vllm_mode without use_vllm",
                kind=RuleKind.SEARCH))

    def _legacy_search(self, domains: dict[str, list[Value]], extra: list[Rule], per_node: int,
                       async_mode: bool) -> None:
        """The vLLM layouts of 3.2-3.4 (rlhf_args.py ``_check_grpo`` and grpo_trainer.py of 3.4.0), which place the
        engine by ``num_infer_workers``: colocated (workers = NPROC_PER_NODE = the node's GPUs) at the TPs that
        split the node's ranks into whole engines (``GRPOTrainer.tp_group_ranks``: consecutive groups of
        --tensor_parallel_size), or, for the async layout (``--async_generate``, which needs async mode),
        ``num_infer_workers`` TP-1 engines on GPUs of their own beside NPROC_PER_NODE = the rest of the node's GPUs
        (the pack's swift.legacy.async_device_count ties the two)."""
        if not async_mode:
            domains["vllm_tp"] = [t for t in (1, 2, 4, 8) if per_node % t == 0]
            return
        workers = [w for w in (1, 2, 4, 8) if w < per_node]
        if not workers:  # one GPU a node: no GPU of its own for an engine (the pack's rules then say why)
            return
        domains["num_infer_workers"] = workers
        domains["gpus_per_node"] = [per_node - w for w in domains["num_infer_workers"]]
        # num_infer_workers engines on each node (legacy_vllm_layout)
        domains["server_dp"] = sorted({w * int(n) for w in workers for n in domains.get("nnodes", [1])})
        extra.append(Rule(
            "search.legacy_engines", IntVar("server_dp").eq(IntVar("num_infer_workers") * IntVar("nnodes")),
            "async mode runs num_infer_workers ({num_infer_workers}) engines of TP 1 on each node, x {nnodes} "
            "node(s) (priced as {server_dp})",
            Stage.SEARCH, "rlbatch-solver search space: 3.4.0 grpo_trainer.py starts one engine per inference worker",
            kind=RuleKind.SEARCH,
        ))

    def kept_batch(self, scenario: Any) -> dict[str, Any]:
        """The Megatron path keeps its global batch (global_batch_size) and the rest as the base class does. On the
        HF path (and TRL's) the global batch is a product, per-device batch x world x accumulation, whose per-device
        factor is also the micro batch memory depends on: ``kept_totals`` keeps the product instead."""
        return super().kept_batch(scenario) if self.megatron else {}

    def kept_totals(self, scenario: Any) -> dict[str, int]:
        """The HF path's (and TRL's) completions per optimizer step, per_device_train_batch_size x W x
        gradient_accumulation_steps, at the values the user set and the framework's defaults for the rest; the
        search then chooses the per-device batch and the accumulation that multiply to it. A total the GPUs and
        num_generations cannot split (whole prompts per rollout, the same per-device batch on every rank) is the
        nearest that they can. Nothing is kept when the user set both factors (they are pinned) or searches one."""
        fixed, searched = self.normalize(scenario.fixed), self.normalize(scenario.search)
        factors = (PER_DEVICE, ACCUMULATION)
        if self.megatron or set(factors) & set(searched):
            return {}
        if set(factors) <= set(fixed):
            return self._placement_total(scenario)
        domains = self.space(scenario, None).domains
        world = max(domains["gpus_per_node"]) * max(domains["nnodes"])
        n = int(domains["num_generations"][0])
        by_key = self.ruleset.by_key()
        given = {k: int(fixed[k]) if k in fixed else int(by_key[k].default) for k in factors}
        unit = math.lcm(world * math.prod(given[k] for k in factors if k in fixed), n)
        default = world * math.prod(given.values())
        return {"opt_batch": max(unit, unit * round(default / unit))}

    def _placement_total(self, scenario: Any) -> dict[str, int]:
        """The completions per optimizer step of a per-device batch and an accumulation the user set both of, on
        every GPU of the job (colocated, every GPU trains), for ``recommend --placement split|auto``: a layout whose
        trainer has fewer GPUs (a rollout server on the others) would make fewer with the same two flags (another
        algorithm, not another layout); it keeps the total with factors of its own (``placements``)."""
        fixed = self.normalize(scenario.fixed)
        if scenario.placement not in ("split", "auto") or not {PER_DEVICE, ACCUMULATION} <= set(fixed):
            return {}
        return {"opt_batch": int(fixed[PER_DEVICE]) * int(fixed[ACCUMULATION]) * scenario.total_gpus}

    def _own_factors(self, scenario: Any) -> Any:
        """A server layout's scenario where the job's completions per step are kept (``_placement_total``): without
        the user's two factors, which the layout picks for that total."""
        if "opt_batch" not in scenario.kept_totals or not {PER_DEVICE, ACCUMULATION} <= set(self.normalize(scenario.fixed)):
            return scenario
        return replace(scenario, fixed={k: v for k, v in scenario.fixed.items()
                                        if next(iter(self.normalize({k: v}))) not in (PER_DEVICE, ACCUMULATION)})

    def optimizer_steps_per_rollout(self, values: Mapping[str, Value]) -> int | None:
        """ms-swift's logging.jsonl times optimizer steps (train_speed); a rollout spans steps_per_generation."""
        from .cost import rollout_layout

        return rollout_layout(values, self.megatron)[1]

    def cost_spec(self, model: ModelCard, gpu: Any):
        bools = bool_names(self.ruleset.variables)
        optional = optional_names(self.ruleset.variables)
        return swift_cost_spec(model, gpu, self.megatron, bools, optional, release=self.code_release or self.version,
                               engine_release=self.newest_dated_release)

    def _typed_search(self, key: str, spec, value: Any) -> Value:
        if spec.optional and not _present(value):
            return None
        if spec.kind == "bool":
            return flag_bool(key, value)
        return flag_int(key, value)


class SwiftMegatronFramework(SwiftFramework):
    """``megatron rlhf --rlhf_type grpo`` (Megatron-core TP/PP/CP/EP, vLLM colocate or server)."""

    name = "swift-megatron"
    version = MEGATRON_RULESET.version
    releases = None  # the Megatron path follows 4.6.0 only
    versions = (MEGATRON_RULESET.version,)
    ruleset = MEGATRON_RULESET
    command = "megatron rlhf"
    megatron = True
    offload_switch = ("cpu_optimizer_permille", "optimizer_cpu_offload=true")
    oom_advice = errors.MEGATRON_OOM_ADVICE
    doc_intro = docs.INTRO_MEGATRON
    policy = repair.SWIFT_MEGATRON
    error_families = ("swift-megatron",)
    derived_columns = columns.MEGATRON_DERIVED
    column_words = columns.MEGATRON_WORDS
    # ms-swift's Megatron GRPO examples load the Hugging Face checkpoint directly (examples/megatron/grpo)
    example_inputs = ("--load_safetensors true", "--dataset AI-MO/NuminaMath-TIR#1000", "--reward_funcs accuracy")

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
