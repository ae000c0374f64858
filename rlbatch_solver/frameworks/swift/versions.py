"""The ms-swift releases GRPO configs are written for: 4.3.2, 3.12.6, 3.10.3, 3.4.1, 3.4.0 and 3.3.1 beside 4.6.0, each a
small edit of the next newer one's rules (HF/DeepSpeed path, ``swift rlhf``; the Megatron path follows 4.6.0 only).

4.6.0's rules (``rules.py``) are written once. A release's pack names what its GRPO does differently, read from that
release's wheel (paths below are inside it):

* **4.6.0** also judges 4.4 and 4.5 (read from the 4.4.2 and 4.5.3 wheels): the same GRPO checks.
  ``RLHFArguments._init_rollout`` (swift/arguments/rlhf_args.py) is 4.6.0's but for an audio-backend default;
  ``_check_teacher`` (num_generations > 1 unless a teacher is set) differs only in when a LoRA teacher reuses the
  student (``teacher_adapters``); 4.6.0's ``_check_grpo`` adds ``_check_rlsd`` and ``_check_sdar``, checks of the
  RLSD and SDAR loss options (no batch or layout check). ``GRPOConfig.__post_init__``
  (swift/rlhf_trainers/arguments.py) is the same file: it skips TRL's ``__post_init__`` and resolves the generation
  batch with ``RolloutTrainerArgumentsMixin._init_generation_batch_params`` (swift/rlhf_trainers/args_mixin.py, the
  same code; from 4.4.2's the file gains only fields: ``min_p`` and RLSD's and SDAR's). The colocated engine's TP
  check (``RolloutTrainerMixin._prepare_vllm``), the sequence-parallel mesh (``SequenceParallel._init_device_mesh``,
  ``prepare``) and the server's device count (``RolloutArguments._check_device_count``) are unchanged.
* **4.3.2** (judges 4.0 to 4.3): ``GRPOConfig.__post_init__`` still runs TRL's ``GRPOConfig.__post_init__`` first,
  in the TRL a fresh install resolves (4.0-4.1 ``trl>=0.15,<0.30``, 4.2-4.3 ``trl<1.0``: 0.29.1 for all four), which
  refuses ``generation_batch_size`` and ``steps_per_generation`` together; then it refuses ``num_generations < 2``
  itself (GRPO takes no teacher before 4.4: no exemption), then checks the generation batch
  (4.2-4.3 ``_init_generation_batch_params``, 4.0-4.1 ``GRPOConfig.check_num_generations``: whole groups of
  ``num_generations`` from 2 up, the eval batch against ``num_generations_eval``, the same tests). The rest is
  4.6.0's (the same files as 4.4's above; 4.0-4.2 keep the sequence-parallel code in
  swift/sequence_parallel/ulysses.py, with the same checks).
* **3.12.6** (judges 3.11 and 3.12): 4.3.2's under swift/llm/argument and swift/trainers:
  ``GRPOConfig.check_num_generations`` (swift/trainers/rlhf_arguments.py) refuses ``num_generations < 2`` whatever
  the teacher, and the generation batch is resolved by the TRL it installs (``trl>=0.20,<0.25``:
  trl/trainer/grpo_config.py ``GRPOConfig.__post_init__``), which refuses ``generation_batch_size`` and
  ``steps_per_generation`` together (4.4.0 lets them agree). ``vllm_mode`` has no default
  (``RLHFArguments._init_rollout``: required with ``use_vllm``, refused without), as in 4.6.0.
  ``num_generations_eval`` came in 3.12 (3.11 checks the eval batch against ``num_generations``: the same test).
* **3.10.3** (judges 3.5 to 3.10): ``vllm_mode`` defaults to ``colocate`` and the host decides it: with ``use_vllm``,
  ``server`` when ``vllm_server_host`` (or ``vllm_server_base_url``) is given, else ``colocate``
  (``RLHFArguments._init_grpo`` to 3.9, ``_init_rollout`` in 3.10), so no mode is required or refused and server mode
  always has its host; ``async_generate`` still needs server mode. ``GRPOConfig.check_num_generations`` checks the
  generation batch itself after the TRL one's ``__post_init__``. 3.5's own check lacks the parentheses around the
  global batch (``generation_batch_size % per_device_train_batch_size * num_processes``, as TRL 0.18's), but the TRL
  a fresh 3.5 install resolves (``trl<0.20``: 0.19.1) checks the global batch first, so 3.5 reads as 3.10.3.
  What ``_check_grpo`` refuses beside ``--use_liger_kernel`` grew over the span (``LIGER_REFUSES_FROM``): the release
  the config runs decides.
* **3.4.1** (judges 3.4.1 and every 3.4 patch but 3.4.0; 3.4.1.post1's checks are the same code): no generation batch,
  no ``vllm_mode``. ``GRPOTrainer.__init__`` (swift/trainers/rlhf_trainer/grpo_trainer.py) checks the optimizer step's
  completions ``num_processes x per_device_train_batch_size x gradient_accumulation_steps`` against
  ``num_generations`` (from 2 up), the eval batch likewise. ``RLHFArguments._check_grpo``
  (swift/llm/argument/rlhf_args.py) places vLLM by the visible GPUs: colocated when they equal ``num_infer_workers``
  (then they must equal NPROC_PER_NODE, and ``async_generate`` is refused), else "async mode" (visible GPUs =
  NPROC_PER_NODE + ``num_infer_workers``, ``tensor_parallel_size`` 1); not with ``vllm_server_host``. Sequence
  parallelism is back (swift/trainers/sequence_parallel/ulysses.py, no RLHF refusal): the world splits into
  sequence ranks, and Ulysses attention, with no ring attention for the rest, needs the KV heads to split over them.
* **3.4.0** (judges 3.4.0): 3.4.1's, but ``RLHFArguments._check_rlhf`` refuses sequence parallelism for every RLHF
  trainer (the one difference of the two wheels' rlhf_args.py; their grpo_trainer.py batch checks are the same).
* **3.3.1** (judges 3.2 and 3.3): 3.4.0's, but ``GRPOTrainer.__init__`` checks the per-step batch
  ``num_processes x per_device_train_batch_size`` (the global train batch) against ``num_generations``.

Not followed: 3.0 has no GRPO (``rlhf_type`` has no ``grpo`` in the 3.0.3 wheel). 3.1 (the 3.1.1 wheel) is not
3.3.1's: its rlhf_args.py has no ``_check_grpo`` and no ``_check_rlhf`` (no num_infer_workers layouts, no
sequence-parallel refusal), and ``GRPOTrainer.__init__`` places one vLLM engine by ``--vllm_device`` (``auto``: the GPU
after the NPROC_PER_NODE training ranks, which must be visible unless only one is); its batch checks are 3.3.1's.

The defaults the memory model reads are the same in every release here: ``beta`` 0.04 for GRPO when unset
(``RLHFArguments._init_grpo``: a reference model unless ``--beta 0``), ``num_iterations`` 1,
``max_completion_length`` 512 (``GRPOArguments``), ``vllm_gpu_memory_utilization`` 0.9, ``sleep_level`` 0,
``offload_model`` off and ``gradient_checkpointing`` on (swift/trainers/arguments.py); what differs for memory is
where vLLM runs, which the framework reads per release (``legacy_layout``, ``mode_follows_host``). ``ruleset_for(version)`` assembles a pack; ``detect`` dates a pasted config from the flags only
some releases have (``KEY_RELEASES``).
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Mapping

from ...release_numbers import release_numbers
from ...rules.base import Derived, Rule, RuleSet, Stage, is_set
from ...rules.expr import BoolConst, BoolVar, IntVar, divides, if_then_else
from ...rules.packs import Pack, pack_ruleset, rule_changes
from ..dating import dated, listed
from . import rules as R

NAME = "ms-swift"  # in messages about a release (base.resolve_release)
NEWEST = R.VERSION
VERSIONS = ("4.6.0", "4.3.2", "3.12.6", "3.10.3", "3.4.1", "3.4.0", "3.3.1")
# a minor series -> the pack that judges it (resolve_release: "3.7.0" is checked with 3.10.3's rules; a listed
# release is its own pack's: 3.4.0 is 3.4.0's, 3.4.1.post1 and any other 3.4 patch 3.4.1's)
SERIES = {**{f"4.{m}": "4.6.0" for m in range(4, 7)}, **{f"4.{m}": "4.3.2" for m in range(0, 4)},
          "3.12": "3.12.6", "3.11": "3.12.6",
          **{f"3.{m}": "3.10.3" for m in range(5, 11)}, "3.4": "3.4.1", "3.3": "3.3.1", "3.2": "3.3.1"}

CONFIG_4 = "swift/rlhf_trainers/arguments.py:GRPOConfig.__post_init__"
TRL_CONFIG_4 = ("trl/trainer/grpo_config.py:GRPOConfig.__post_init__ (TRL 0.29.1, the newest that ms-swift 4.0-4.3 "
                "install)")
RESOLVER_4 = (f"{TRL_CONFIG_4}, then {R.HF_PATH.resolver}; 4.0-4.1: "
              "swift/rlhf_trainers/arguments.py:GRPOConfig.check_num_generations")
CONFIG_3 = "swift/trainers/rlhf_arguments.py:GRPOConfig.check_num_generations"
ARGS_3 = "swift/llm/argument/rlhf_args.py:RLHFArguments"
TRAINER_3 = "swift/trainers/rlhf_trainer/grpo_trainer.py:GRPOTrainer.__init__"
TRL_CONFIG = "trl/trainer/grpo_config.py:GRPOConfig.__post_init__ (the TRL ms-swift installs, >= 0.18)"
# 4.3.2's paths -> 3.x's (the argument classes moved under swift/arguments and swift/rlhf_trainers in 4.0)
SOURCES_3 = (
    (RESOLVER_4, f"{TRL_CONFIG}, then {CONFIG_3}"),
    (TRL_CONFIG_4, TRL_CONFIG),
    (CONFIG_4, CONFIG_3),
    ("swift/arguments/rlhf_args.py:RLHFArguments", ARGS_3),
    ("swift/rlhf_trainers/rollout_mixin.py:RolloutTrainerMixin._prepare_vllm",
     "swift/trainers/rlhf_trainer/rollout_mixin.py:RolloutTrainerMixin._prepare_vllm"),
    ("swift/arguments/deploy_args.py", "swift/llm/argument/deploy_args.py"),
    ("swift/sequence_parallel/sequence_parallel.py", "swift/trainers/sequence_parallel/ulysses.py"),
)

G, W = IntVar("num_generations"), IntVar("W")
B, GA = IntVar("per_device_train_batch_size"), IntVar("gradient_accumulation_steps")
USE_VLLM, SERVER = BoolVar("use_vllm"), BoolVar("vllm_server")

# ---------------------------------------------------------------------------------------------- 4.3.2
V432 = Pack(
    "4.3.2", NEWEST,
    sources=((R.HF_PATH.resolver, RESOLVER_4),),
    rules=(
        Rule(
            "swift.args.gen_equals_base_times_spg",
            ~(is_set("generation_batch_size") & is_set("steps_per_generation")),
            "generation_batch_size = {generation_batch_size} and steps_per_generation = {steps_per_generation} are "
            "both set: \"'generation_batch_size' and 'steps_per_generation' can not be both configured at the same "
            "time\"",
            Stage.DRIVER, TRL_CONFIG_4,
            explanation="Before 4.4, ms-swift's GRPOConfig runs the __post_init__ of the TRL it installs, which "
                        "resolves the generation batch from one of the two; ms-swift 4.4.0 skips it and lets them be "
                        "set together when they agree.",
        ),
        Rule(
            "swift.args.num_generations_at_least_two",
            G > 1,
            "num_generations = {num_generations}: 'GRPO requires at least 2 generations per prompt to calculate the "
            "advantages'",
            Stage.DRIVER, CONFIG_4,
            explanation="Before 4.4, ms-swift checks it for every GRPO run (4.4 moved it to "
                        "RLHFArguments._check_teacher, which exempts on-policy distillation with a teacher).",
        ),
    ),
    summary="the generation batch resolved first by the TRL it installs (generation_batch_size and "
            "steps_per_generation not both), num_generations >= 2 with or without a teacher",
)

# ---------------------------------------------------------------------------------------------- 3.12.6
V3126 = Pack(
    "3.12.6", "4.3.2",
    sources=SOURCES_3,
    summary="4.3.2's (the generation batch resolved by the TRL it installs: generation_batch_size and "
            "steps_per_generation not both; num_generations >= 2 with or without a teacher); sources under "
            "swift/llm/argument and swift/trainers",
)

# ---------------------------------------------------------------------------------------------- 3.10.3
V3103 = Pack(
    "3.10.3", "3.12.6",
    # the mode follows the host: none is required or refused, and server mode always has its host
    drop=frozenset({"swift.args.vllm_mode_required", "swift.args.vllm_mode_needs_use_vllm",
                    "swift.rollout.server_needs_host"}),
    rules=(
        Rule(
            "swift.args.async_generate_needs_server",
            SERVER,
            "async_generate = {async_generate} requires vllm_mode = server: 'async generate require vllm_mode == "
            "server' (with use_vllm = {use_vllm}, server mode is set by --vllm_server_host)",
            Stage.DRIVER, f"{ARGS_3}._check_grpo (3.10: _init_rollout)", when=BoolVar("async_generate"),
            explanation="ms-swift 3.5-3.10 set vllm_mode from the host when use_vllm is on: server with "
                        "--vllm_server_host, else colocate.",
        ),
    ),
    summary="vllm_mode follows the host (server with --vllm_server_host, else colocate): no mode is required or "
            "refused; async_generate needs the server",
)

# ---------------------------------------------------------------------------------------------- 3.4.1
GEN_RULES = frozenset({"swift.args.gen_divisible_by_base", "swift.args.gen_equals_base_times_spg",
                       "swift.args.gen_divisible_by_num_generations",
                       "swift.args.eval_batch_divisible_by_num_generations_eval"})
VISIBLE = IntVar("visible_per_node")
WORKERS = IntVar("num_infer_workers")
COLOCATED = VISIBLE.eq(WORKERS)
LEGACY = USE_VLLM & ~BoolVar("server_host_given")


def _trainer_batch_rule(batch: str, shown: str, what: str, from_two: bool = False) -> Rule:
    """GRPOTrainer.__init__'s check of the batch it generates for. Its valid values start at 2; 3.4's _check_grpo
    refuses num_generations < 2 first (swift.args.num_generations_at_least_two), 3.2-3.3's does not (``from_two``:
    the trainer's check is then the one that refuses it)."""
    return Rule(
        "swift.trainer.batch_divisible_by_num_generations",
        ((G >= 2) & divides(G, IntVar(batch))) if from_two else divides(G, IntVar(batch)),
        f"The {what} ({shown}) must be evenly divisible by the number of generations per prompt "
        "({num_generations})" + (", itself at least 2" if from_two else ""),
        Stage.TRAINER_INIT, TRAINER_3, when=BoolConst(True) if from_two else G > 1,
        explanation="Before the generation batch (3.5), the trainer generates for the batch it trains on: it must "
                    "hold whole prompt groups of at least 2 completions.",
    )


# The whole job's GPU count (4.6.0's swift.gpus.budget, cited to RolloutArguments._check_device_count, which 3.3.1 to
# 3.4.1 do not have): torchrun's training ranks plus an external server's engines. In async mode the trainer's own
# engines are counted by _check_grpo's "Async mode requires total GPUs" (swift.legacy.async_device_count), which
# implies it: the budget is not said twice, in 4.6.0's words of a `swift rollout` server.
_BUDGET = next(r for r in R.RULESET.rules if r.id == "swift.gpus.budget")
BUDGET_3 = replace(
    _BUDGET, when=_BUDGET.when & ~(LEGACY & ~COLOCATED),
    source="the job's GPUs: torchrun needs one per training rank, an external vLLM server (--vllm_server_host) its "
           "tensor_parallel_size*data_parallel_size of its own (3.3.1 to 3.4.1 check no device count for it)")

# 3.4.1 brought sequence parallelism back (swift/trainers/sequence_parallel, Ulysses unless SEQUENCE_PARALLEL_IMPL is
# xtuner) without 4.6.0's ring attention: the heads must split over the sequence ranks
ULYSSES_341 = "swift/trainers/sequence_parallel/ulysses.py"
_MESH = next(r for r in R.RULESET.rules if r.id == "swift.sp.world_divisible_by_sp")
SP_MESH_341 = replace(_MESH, source=f"{ULYSSES_341}:Ulysses.init_sequence_parallel (device mesh of "
                                    "world_size // sequence_parallel_size data x sequence ranks)")
SP_HEADS_341 = Rule(
    "swift.sp.heads_divisible_by_sp",
    divides(R.SP, IntVar("num_kv_heads")),
    "sequence_parallel_size = {sequence_parallel_size} does not divide num_key_value_heads = {num_kv_heads}: "
    "Ulysses attention scatters the heads over the sequence ranks (NotImplementedError)",
    Stage.FIRST_STEP, f"{ULYSSES_341}:single_all_to_all (the heads scattered over the sequence ranks)",
    when=R.SP > 1,
    explanation="ms-swift 3.4.1 has no ring attention for heads that do not split, nor --padding_free (4.6.0 runs "
                "the rest as ring attention with --padding_free).",
)

V341 = Pack(
    "3.4.1", "3.10.3",
    drop=GEN_RULES | {"swift.args.num_generations_at_least_two", "swift.args.async_generate_needs_server",
                      "swift.rollout.colocate_tp_divides_world", "swift.sp.ring_attention_needs_padding_free",
                      # no Liger GRPO loss before 3.5.0 (cost.py LIGER_LOSS_FROM), nothing refused beside it
                      "swift.liger.no_sequence_parallel", "swift.liger.no_padding_free",
                      "swift.liger.grpo_advantage_only"},
    rules=(
        _trainer_batch_rule("opt_batch", "{W} x {per_device_train_batch_size} x {gradient_accumulation_steps} = "
                            "{opt_batch}", "effective train batch size"),
        BUDGET_3,
        Rule(
            "swift.trainer.eval_batch_divisible_by_num_generations",
            divides(G, IntVar("eval_batch")),
            "The effective eval batch size ({W} x {per_device_eval_batch_size} = {eval_batch}) must be evenly "
            "divisible by the number of generations per prompt ({num_generations})",
            Stage.TRAINER_INIT, TRAINER_3, when=BoolVar("eval_on") & (G > 1),
        ),
        Rule(
            "swift.args.num_generations_at_least_two",
            G > 1,
            "num_generations = {num_generations}: 'GRPO requires at least 2 generations per prompt to calculate the "
            "advantages'",
            Stage.DRIVER, f"{ARGS_3}._check_grpo",
        ),
        SP_MESH_341,
        SP_HEADS_341,
        Rule(
            "swift.legacy.colocate_device_count",
            VISIBLE.eq(IntVar("gpus_per_node")),
            "colocate mode (visible GPUs per node = num_infer_workers = {num_infer_workers}) requires the visible "
            "GPUs {visible_per_node} to equal NPROC_PER_NODE = {gpus_per_node}",
            Stage.DRIVER, f"{ARGS_3}._check_grpo", when=LEGACY & COLOCATED,
        ),
        Rule(
            "swift.legacy.async_device_count",
            VISIBLE.eq(IntVar("gpus_per_node") + WORKERS),
            "async mode requires the visible GPUs per node ({visible_per_node}) = training GPUs NPROC_PER_NODE "
            "({gpus_per_node}) + inference workers num_infer_workers ({num_infer_workers})",
            Stage.DRIVER, f"{ARGS_3}._check_grpo", when=LEGACY & ~COLOCATED & is_set("cluster_num_gpus"),
            explanation="Without --gpus the visible GPUs are not known: then the check is not made.",
        ),
        Rule(
            "swift.legacy.async_no_tensor_parallel",
            IntVar("legacy_tp").eq(1),
            "async mode (num_infer_workers = {num_infer_workers} engines on GPUs of their own) does not support "
            "tensor parallel: tensor_parallel_size = {legacy_tp}",
            Stage.DRIVER, f"{ARGS_3}._check_grpo", when=LEGACY & ~COLOCATED,
        ),
        Rule(
            "swift.legacy.async_generate_needs_async_mode",
            ~BoolVar("async_generate"),
            "async_generate = {async_generate} requires async mode, but the visible GPUs ({visible_per_node}) equal "
            "num_infer_workers ({num_infer_workers}): colocate mode",
            Stage.DRIVER, f"{ARGS_3}._check_grpo", when=LEGACY & COLOCATED,
        ),
    ),
    derived=(
        Derived("visible_per_node",
                if_then_else(is_set("cluster_num_gpus"), IntVar("cluster_num_gpus") // IntVar("nnodes"),
                             IntVar("gpus_per_node")),
                "GPUs visible on a node: --gpus over the nodes, else NPROC_PER_NODE"),
    ),
    variables=(
        ("num_infer_workers", "num_infer_workers", "int", 1, False, "vLLM engines per node (3.2-3.5)"),
        ("legacy_tp", "tensor_parallel_size", "int", 1, False, "tensor parallel size of the vLLM engine (3.x)"),
    ),
    summary="no generation batch: GRPOTrainer.__init__ checks W x per_device_train_batch_size x "
            "gradient_accumulation_steps against num_generations; vLLM placed by the visible GPUs "
            "(num_infer_workers: colocate or async mode); sequence parallelism by Ulysses alone (no ring attention)",
)

# ---------------------------------------------------------------------------------------------- 3.4.0
V340 = Pack(
    "3.4.0", "3.4.1",
    # sequence parallelism never starts: its mesh and head checks are not reached
    drop=frozenset({"swift.sp.world_divisible_by_sp", "swift.sp.heads_divisible_by_sp"}),
    rules=(
        Rule(
            "swift.args.rlhf_no_sequence_parallel",
            IntVar("sequence_parallel_size") <= 1,
            "sequence_parallel_size = {sequence_parallel_size}: 'RLHF do not support sequence parallel'",
            Stage.DRIVER, f"{ARGS_3}._check_rlhf",
            explanation="ms-swift 3.2-3.4.0 refuse sequence parallelism for every RLHF trainer (3.4.1 dropped the "
                        "check).",
        ),
    ),
    summary="3.4.1's, but no sequence parallelism: RLHFArguments._check_rlhf refuses it for every RLHF trainer",
)

# ---------------------------------------------------------------------------------------------- 3.3.1
V331 = Pack(
    "3.3.1", "3.4.0",
    # _check_grpo has no num_generations check before 3.4: the trainer's possible values (from 2) refuse 1
    drop=frozenset({"swift.args.num_generations_at_least_two"}),
    rules=(
        _trainer_batch_rule("step_batch", "{W} x {per_device_train_batch_size} = {step_batch}",
                            "global train batch size", from_two=True),
        Rule(
            "swift.trainer.eval_batch_divisible_by_num_generations",
            (G >= 2) & divides(G, IntVar("eval_batch")),
            "The global eval batch size ({W} x {per_device_eval_batch_size} = {eval_batch}) must be evenly "
            "divisible by the number of generations per prompt ({num_generations}), itself at least 2",
            Stage.TRAINER_INIT, TRAINER_3, when=BoolVar("eval_on"),
        ),
    ),
    derived=(Derived("step_batch", B * W, "completions per step: per_device_train_batch_size*W"),),
    summary="3.4.0's, but GRPOTrainer.__init__ checks the per-step batch W x per_device_train_batch_size (the "
            "global train batch) against num_generations, and is the one to refuse num_generations < 2 (_check_grpo "
            "does not before 3.4)",
)

PACKS = {p.version: p for p in (V432, V3126, V3103, V341, V340, V331)}


@functools.lru_cache(maxsize=None)
def ruleset_for(version: str) -> RuleSet:
    """The rules of an ms-swift release we follow (HF path)."""
    if version == NEWEST:
        return R.RULESET
    pack = PACKS[version]
    return pack_ruleset("swift", pack, ruleset_for(pack.edits), (f"ms-swift {pack.edits}", f"ms-swift {version}"))


def changes(version: str) -> dict[str, list[tuple[str, str]]]:
    """What a release's rules do differently from 4.6.0's: {"absent", "added", "changed"} -> (rule id, source)."""
    return rule_changes(R.RULESET.rules, ruleset_for(version).rules)


def mode_follows_host(version: str) -> bool:
    """Before 3.11, ``--use_vllm`` runs in server mode exactly when a server host is given (3.5-3.10: vllm_mode is
    overwritten from it; 3.2-3.4: no vllm_mode, the host means an external server)."""
    return release_numbers(version) < (3, 11, 0)


# --vllm_server_base_url names the rollout server from 3.7.2 on. In 3.5.0-3.7.1 RLHFArguments._init_grpo
# (swift/llm/argument/rlhf_args.py) sets vllm_mode from --vllm_server_host alone: "server" when it is given, else
# "colocate" ("set vllm_mode to `colocate` since vllm_server_host is not provided"), whatever --vllm_mode says, and
# _init_external_vllm makes no VLLMClient without the host; GRPOTrainer.__init__ then builds a colocated engine on
# every training rank (grpo_trainer.py prepare_vllm, at --vllm_gpu_memory_utilization). The base URL (added by
# ms-swift #4449, 2025-06-03, first released in 3.5.0) counts as a host from #5483 ("fix grpoargs check
# server_base_url", 2025-08-21): 3.7.1's rlhf_args.py tests the host alone, 3.7.2's the host or the base URL.
BASE_URL_NAMES_SERVER_FROM = (3, 7, 2)


def base_url_names_server(release: str) -> bool:
    """Whether --vllm_server_base_url alone puts the release's GRPO in server mode (BASE_URL_NAMES_SERVER_FROM)."""
    return release_numbers(release) >= BASE_URL_NAMES_SERVER_FROM


def legacy_layout(version: str) -> bool:
    """Releases without --vllm_mode (3.2-3.4): vLLM placed by num_infer_workers and the visible GPUs."""
    return release_numbers(version) < (3, 5, 0)


# what RLHFArguments._check_grpo refuses beside --use_liger_kernel (Liger's GRPO loss, from 3.5.0: cost.py
# LIGER_LOSS_FROM), each from the first release whose check has it (swift/llm/argument/rlhf_args.py, 4.x
# swift/arguments/rlhf_args.py; read: 3.5.0-3.5.3, 3.6.0, 3.7.0, 3.8.0, 3.8.3, 3.9.0, 3.9.3, 3.10.0, 3.10.3, 3.11.0,
# 3.12.6, 4.0.0, 4.6.0): sequence parallelism from 3.5.3, padding_free from 3.6.0, an advantage_estimator other than
# grpo from 3.10.0. The 3.10.3 pack judges 3.5-3.10, so the release the config runs decides (the rules'
# liger_* variables); 3.9.0 on GRPOTrainer.compute_liger_loss also asserts ``not self.template.padding_free`` (3.10.0
# on ``self.advantage_estimator == 'grpo'``), later than the same refusals
LIGER_REFUSES_FROM = {"liger_no_sp": "3.5.3", "liger_no_padding_free": "3.6.0", "liger_grpo_only": "3.10.0"}


def liger_refusals(release: str, liger: bool) -> dict[str, bool]:
    """The rules' liger_* variables: which of ``LIGER_REFUSES_FROM``'s checks ms-swift ``release`` runs, where
    ``liger`` (--use_liger_kernel) is on."""
    numbers = release_numbers(release)
    return {name: liger and numbers >= release_numbers(first) for name, first in LIGER_REFUSES_FROM.items()}


# ---------------------------------------------------------------------------------------------- dating
# flags only some releases have: (first, last) minor release whose arguments (swift/llm/argument, swift/trainers
# arguments.py / rlhf_arguments.py; 4.x swift/arguments, swift/rlhf_trainers) declare them; last None: still in 4.6.0.
# Of the 4.0.4-4.5.3 wheels' argument fields, only --train_type is gone from 4.6.0: no other flag dates a config to
# 4.0-4.3 (a config with --train_type and --tuner_type, both taken by 4.0 only, is 4.3.2's to judge: SPANS)
KEY_RELEASES: dict[str, tuple[str, str | None]] = {
    "mini_batch_size": ("3.2.0", "3.3.1"),
    "num_infer_workers": ("3.2.0", "3.5.3"),
    "vllm_device": ("3.1.0", "3.5.3"),
    "vllm_server_host": ("3.3.0", None),
    "vllm_mode": ("3.5.0", None),
    "vllm_tensor_parallel_size": ("3.5.0", None),
    "generation_batch_size": ("3.5.0", None),
    "steps_per_generation": ("3.5.0", None),
    "vllm_server_base_url": ("3.5.0", None),
    "num_generations_eval": ("3.12.0", None),
    # GRPO came in 3.1; 4.0 renamed it --tuner_type and still takes it (4.0.4 base_args.py: "compat swift3.x"),
    # 4.6.0 does not
    "train_type": ("3.1.0", "4.0.4"),
    "tuner_type": ("4.0.0", None),
}
# a dating flag's successor of the same meaning in the releases that lack it (4.0.4 swift/arguments/base_args/
# base_args.py takes --train_type as "compat swift3.x" for --tuner_type; 4.6.0 only the new name)
SUCCESSOR_OF = {"train_type": "tuner_type"}
# the first release of each pack's span, oldest first: a dated release -> the pack that judges it
# (3.1's trainer checks the per-step batch as 3.3.1's does, without 3.2's vLLM device-count asserts)
SPANS = (("3.1.0", "3.3.1"), ("3.4.0", "3.4.0"), ("3.5.0", "3.10.3"), ("3.11.0", "3.12.6"), ("4.0.0", "4.3.2"),
         ("4.4.0", "4.6.0"))
# the releases a dating key's span can start or end at, and the newest
KNOWN = sorted({r for span_ in KEY_RELEASES.values() for r in span_ if r} | {NEWEST}, key=release_numbers)


def _pack_of(release: str) -> str | None:
    judged = [pack for first, pack in SPANS if release_numbers(first) <= release_numbers(release)]
    return judged[-1] if judged else None


def has_key(release: str, key: str) -> bool:
    """Whether ``release``'s arguments declare the dating flag ``key`` (KEY_RELEASES)."""
    first, last = KEY_RELEASES[key]
    return release_numbers(first) <= release_numbers(release) <= release_numbers(last or NEWEST)


def dated_span(flat: Mapping[str, object]) -> tuple[str, str] | None:
    """The oldest and the newest release whose arguments declare every dating flag of a config (KEY_RELEASES: each
    bound is a flag's first or last release, so the span is exact); None when no flag dates it or none has them all.
    A config the newest release reads has no dating flag or all of 4.6.0's: its span ends at ``NEWEST``."""
    keys = [k for k in flat if k in KEY_RELEASES]
    have = [r for r in KNOWN if all(has_key(r, k) for k in keys)]
    return (have[0], have[-1]) if keys and have else None


def dated_release(flat: Mapping[str, object]) -> tuple[str | None, str]:
    """The release a config's flags date it to (``dating.dated``: the newest when it has them all, else the oldest
    release that has them all), and why; (None, why) when nothing dates it."""
    keys = sorted(k for k in flat if k in KEY_RELEASES)
    if not keys:
        return None, "no flag of the config is specific to an ms-swift release"
    have = [r for r in KNOWN if all(has_key(r, k) for k in keys)]
    return dated(have, NEWEST, NAME, listed([f"--{k}" for k in keys]))


def detect(flat: Mapping[str, object]) -> tuple[str | None, str]:
    """The pack that judges the release a config's flags date it to (``dated_release``), and why; (None, why) when
    nothing dates it."""
    release, why = dated_release(flat)
    if release is None or release == NEWEST:
        return release, why
    pack = _pack_of(release)
    if pack is None:
        return None, f"{why}, and we follow no release that old"
    return pack, why + (f", checked with the rules of {pack}" if pack != release else "")
