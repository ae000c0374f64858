"""The TRL releases GRPO configs are written for: 0.29.1, 0.19.1, 0.16.1 and 0.14.0 beside 1.16.0, each a small edit
of the next newer one's rules (0.14.0: of 1.16.0's).

1.16.0's rules (``rules.py``) are written once. A release's pack names what its GRPO does differently, read from that
release's wheel (paths below are inside it):

* **0.29.1** (the last 0.x) has 1.16.0's batch checks (``GRPOConfig.__post_init__``: the generation batch resolution,
  whole prompt groups per rollout, the eval batch against ``num_generations_eval``; ``GRPOTrainer.__init__``'s
  ``sync_ref_model`` checks; the colocated engine's ``vllm_tensor_parallel_size`` dividing the world) but two: it
  takes ``auto_find_batch_size``, and ``trl grpo`` launches without building GRPOConfig at world size 1. Also ``vllm_mode`` defaults to ``"server"`` (vLLM on
  GPUs of its own, a ``trl vllm-serve`` process; 1.16.0: ``"colocate"``), ``max_completion_length`` to 256 (1.16.0:
  512), and the fields its GRPOConfig has (1.16.0 added the entropy and VESPO ones, among others).
* **0.19.1** checks the generation batch as 0.29.1 does (its messages: "The effective train batch size (W x B x
  steps_per_generation) must be evenly divisible by the number of generations per prompt"), the eval batch against
  ``num_generations`` (no ``num_generations_eval``), and nothing of ``sync_ref_model``; the colocated engine is built
  in ``GRPOTrainer.__init__``. ``max_prompt_length`` (512) is still a field.
* **0.16.1** checks in ``GRPOTrainer.__init__`` only, on the per-step batch: "The global train batch size (W x B) must
  be evenly divisible by the number of generations per prompt" with ``num_generations`` from 2 up (the message of
  open-r1 #249, trl #2858 and #3061; 0.15 brought it with per-device completions), the eval batch likewise. No
  generation batch; ``use_vllm`` talks to a ``trl vllm-serve`` server (``vllm_device`` is deprecated and unused);
  ``beta`` defaults to 0.04, so a reference model is loaded.
* **0.14.0** (the first GRPO release, open-r1's first recipes) checks no batch size at all: ``GRPOConfig`` has no
  ``__post_init__`` and ``GRPOTrainer.__init__`` no batch check. ``per_device_train_batch_size`` counts *prompts*
  (default 1; each prompt generates ``num_generations`` completions on its own GPU, so a micro batch is
  ``per_device_train_batch_size*num_generations`` completions), ``gradient_accumulation_steps`` defaults to 8. The
  reference model is always built (``create_reference_model``; with ZeRO-3 loaded again), ``beta`` 0.04 only weighs
  the KL term; with PEFT the adapter is disabled instead. ``use_vllm`` runs one vLLM engine, in the main process, on
  ``vllm_device`` ("auto": ``cuda:{num_processes}``, the GPU after the training ones), which must exist: "The requested
  device for vllm (...) is not available".

A pack drops rules (ids), adds or replaces rules (same id), replaces derived quantities and variables (a default that
changed), and names its release in messages ("TRL 1.16.0" becomes its version). ``ruleset_for(version)`` assembles it;
``detect`` dates a pasted config from the fields only some releases' GRPOConfig has (``release_fields.py``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ...rules.base import Derived, Rule, RuleSet, Stage, is_set
from ...rules.expr import BoolVar, IntVar, divides
from ...rules.packs import Pack, pack_ruleset, rule_changes
from ...release_numbers import release_numbers
from . import rules as R
from .fields import GRPO_SCRIPT_OPTIONS
from .release_fields import RELEASE_FIELDS
from ..dating import dated, listed

NAME = "TRL"  # in messages about a release (base.resolve_release)
NEWEST = R.VERSION
# the releases whose rules we follow, newest first
VERSIONS = ("1.16.0", "0.29.1", "0.19.1", "0.18.2", "0.17.0", "0.16.1", "0.15.2", "0.14.0")
SERIES = {v.rsplit(".", 1)[0]: v for v in VERSIONS}  # "0.29" -> "0.29.1": a patch we do not list reads its series'




@dataclass(frozen=True)
class Release:
    """A release's defaults that decide what runs where (the memory model) and how its flags are read."""

    version: str
    # what --use_vllm runs without --vllm_mode: "colocate", "server", "server_only" (no vllm_mode field: `trl
    # vllm-serve` always), or "device" (one engine on vllm_device)
    vllm_mode: str
    beta: float  # GRPOConfig.beta's default
    ref_always: bool  # the reference model is built whatever beta is (0.14: create_reference_model)
    completion_length: int  # GRPOConfig.max_completion_length's default
    # (no prompt length here: where a release cuts its prompts, and at what default, is prompt_cut(version), read by
    # the release the config runs, not by the pack that judges it)
    batch_counts_prompts: bool  # per_device_train_batch_size counts prompts (0.14), not completions
    fused_logits: bool  # log-probs through the fused lm head (1.16), not the whole logits tensor
    frontend: bool  # `trl grpo` builds GRPOConfig at world size 1 before it launches the ranks
    gmu_permille: int  # vllm_gpu_memory_utilization's default, per 1000
    # gradient_checkpointing's default: GRPOConfig sets it True from 0.22.0 (trl/trainer/grpo_config.py; 0.29.1 and
    # 1.16.0 in trl/trainer/base_config.py); before, GRPOConfig inherits transformers' TrainingArguments default False
    grad_ckpt: bool = True
    # the vLLM of the release sizes a vllm_device engine's KV cache as util x total with its weights, activations and
    # CUDA graphs on top (Plan.engine_kv_of_total): 0.14.0 and 0.15.2 start ``LLM(device=vllm_device)`` in training
    # rank 0's process (current GPU cuda:0), and vLLM 0.7.0-0.7.2 profile the current GPU. 0.15.2's ``vllm`` extra
    # pins vllm==0.7.2 (its wheel's METADATA); 0.14.0's pins none, and vLLM 0.7.0-0.7.2 were the only vLLM releases
    # while it was TRL's newest (0.14.0 2025-01-29, 0.15.0 2025-02-13; vLLM 0.7.3, 2025-02-20, profiles the engine's
    # own GPU)
    engine_kv_of_total: bool = False
    # compute_loss runs the reference forward beside the policy's autograd graph and, with vLLM under ZeRO-3, holds the
    # gathered state_dict of the weight load through both forwards (0.14.0 grpo_trainer.py GRPOTrainer.compute_loss;
    # 0.15 moved the reference pass into _prepare_inputs, before the loss, and the state_dict into
    # _move_model_to_vllm, freed on return): Plan.ref_beside_policy_graph / held_gathered_model
    ref_in_loss: bool = False
    # the vLLM the release's ``vllm`` extra allows counts its CUDA graphs inside gpu_memory_utilization (vLLM >= 0.21:
    # 1.16.0 pins 0.22-0.31); before, they are captured after the KV cache is sized, outside it
    # (Plan.engine_graphs_in_budget; 0.29.1 pins vllm<0.13, 0.18.2/0.19.1 >=0.8.3, 0.16.1 >=0.7.0, 0.15.2 ==0.7.2)
    vllm_graphs_in_budget: bool = False
    # the oldest DeepSpeed its ``deepspeed`` extra accepts (the wheel's METADATA: ``deepspeed>=0.14.4`` for 0.14.0 to
    # 0.29.1, ``deepspeed>=0.18.6`` for 1.16.0): which ZeRO-Offload host buffers the run allocates (host memory only,
    # costmodel/host.py DS_*_FROM)
    deepspeed: str = "0.14.4"
    # each gradient-accumulation micro step generates its own completions: one engine call per micro step of the
    # ranks' micro batches (num_processes x per_device_train_batch_size completions), drained to its longest before
    # the next (0.14.0 grpo_trainer.py GRPOTrainer.compute_loss: gather_object of the prompts, llm.generate on the
    # main process; 0.15.2 and 0.16.1 _prepare_inputs, 0.16.1 once per micro step of every num_iterations-th
    # step; without vLLM each rank's model generates its own micro batch so, Plan.hf_generate_micro). 0.17.0 generates
    # once for the accumulated local batch (_prepare_inputs: "Generates completions once for
    # the entire accumulated batch"), 0.18 on once per steps_per_generation (generation_batch_size)
    generate_per_micro_step: bool = False
    # the release's vLLM runs the V0 engine (Plan.engine_v0; V1 is vLLM's default from 0.8.0, vllm/envs.py
    # VLLM_USE_V1): 0.15.2's ``vllm`` extra pins vllm==0.7.2, and 0.14.0 was TRL's newest only while vLLM 0.7.0-0.7.2
    # were vLLM's (above); 0.16.1's extra allows vllm>=0.7.0, V1 included, so it is priced V1
    vllm_v0: bool = False


RELEASES = {
    "1.16.0": Release("1.16.0", "colocate", 0.0, False, 512, False, True, True, 300, vllm_graphs_in_budget=True,
                      deepspeed="0.18.6"),
    "0.29.1": Release("0.29.1", "server", 0.0, False, 256, False, False, False, 300),
    "0.19.1": Release("0.19.1", "server", 0.0, False, 256, False, False, False, 300, grad_ckpt=False),
    # 0.16.1's server has its GPUs to itself (trl vllm-serve --gpu_memory_utilization 0.9)
    # 0.18.2: 0.19.1's GRPOConfig with beta 0.04 (GRPOConfig.beta's default until 0.19.0)
    "0.18.2": Release("0.18.2", "server", 0.04, False, 256, False, False, False, 300, grad_ckpt=False),
    "0.17.0": Release("0.17.0", "server_only", 0.04, False, 256, False, False, False, 900, grad_ckpt=False),
    "0.16.1": Release("0.16.1", "server_only", 0.04, False, 256, False, False, False, 900, grad_ckpt=False,
                      generate_per_micro_step=True),
    # 0.15.2's engine runs in the main process on vllm_device (0.14.0's way) at vllm_gpu_memory_utilization 0.9
    "0.15.2": Release("0.15.2", "device", 0.04, False, 256, False, False, False, 900, grad_ckpt=False,
                      engine_kv_of_total=True, generate_per_micro_step=True, vllm_v0=True),
    # 0.14.0's engine has its GPU to itself: vllm_gpu_memory_utilization 0.9
    "0.14.0": Release("0.14.0", "device", 0.04, True, 256, True, False, False, 900, grad_ckpt=False,
                      engine_kv_of_total=True, ref_in_loss=True, generate_per_micro_step=True, vllm_v0=True),
}


# when GRPOTrainer._generate_and_score_completions runs the old log-prob forward (Phase.OLD_LOG_PROB), by the release
# whose code the config runs (read in each wheel's trl/trainer/grpo_trainer.py; ``generate_every`` is
# steps_per_generation x num_iterations, steps_per_generation defaulting to gradient_accumulation_steps):
# * "never": 0.14-0.15 (no num_iterations; the loss detaches the policy's own log-probs, 0.15.2 has no
#   old_per_token_logps);
# * "iterations": 0.16-0.17, ``if self.num_iterations > 1`` ("When using num_iterations == 1, old_per_token_logps ==
#   per_token_logps, so we can skip it's computation");
# * "iterations_or_spg": 0.18-0.19, ``if self.num_iterations > 1 or self.args.steps_per_generation >
#   self.args.gradient_accumulation_steps``;
# * "misaligned": 0.20-0.22, ``if self.args.gradient_accumulation_steps % generate_every != 0``;
# * "misaligned_or_is": 0.23 on (1.16.0 too), also ``or (self.use_vllm and self.vllm_importance_sampling_correction)``
#   (GRPOConfig.vllm_importance_sampling_correction, new in 0.23.0, default True).
OLD_LOG_PROB_FROM = (((0, 23), "misaligned_or_is"), ((0, 20), "misaligned"), ((0, 18), "iterations_or_spg"),
                     ((0, 16), "iterations"))

# the flags that switch GRPOTrainer's Liger path on (``if self.use_liger_...`` in trl/trainer/grpo_trainer.py
# GRPOTrainer.__init__ and compute_loss, trl/trainer/grpo_config.py GRPOConfig), by the release whose code the config
# runs, the first of them the config sets deciding:
# * none before 0.17.0;
# * GRPOConfig.use_liger_loss: 0.17.0 to 0.24.0 (0.17.0-0.24.0 read; their use_liger_kernel, transformers'
#   TrainingArguments field, patches the model's layers only);
# * use_liger_kernel from 0.25.0, use_liger_loss its deprecated alias that, when given, overrides it
#   (GRPOConfig.__post_init__ ``self.use_liger_kernel = self.use_liger_loss``) until 0.28.0 drops it (0.25.0, 0.25.1,
#   0.26.0, 0.26.2, 0.27.0, 0.27.2 read);
# * use_liger_kernel alone from 0.28.0 (0.28.0, 0.29.1, 1.0.0-1.16.0 read).
LIGER_FLAGS_FROM = (((0, 28), ("use_liger_kernel",)), ((0, 25), ("use_liger_loss", "use_liger_kernel")),
                    ((0, 17), ("use_liger_loss",)))
# where that path is Liger's chunked GRPO loss (LigerFusedLinearGRPOLoss, from the last hidden states: no logits in
# the update; costmodel/constants.py LIGER_GRPO_*): 0.17.0 to 1.12.0. From 1.13.0 the switch builds other losses,
# priced as the whole logits (an upper bound):
# * 1.13.0: TRL's own FusedLinearGRPOLoss (trl/losses/fused_linear_ppo.py, "Adapted from Liger-Kernel v0.8.2"),
#   whose selective log-probs stream 2048-row x 4096-vocab chunks (_selective_logprob_forward/_backward);
# * 1.14.0-1.14.2: no loss object; _get_per_token_logps_and_entropies takes a chunked projection path for every pass
#   (old, reference and update log-probs);
# * 1.15.0, 1.16.0: Liger's layer kernels only (fused_linear_cross_entropy forced off); the fused lm head of 1.16.0 is
#   priced as "trl-fused" whatever the flag.
# No release from 1.1 to 1.15 is one a config is judged as (RULES_OF): 1.13 and 1.14 are read for the record.
LIGER_LOSS_UNTIL = (1, 13)

# what GRPOConfig.__post_init__ and GRPOTrainer.__init__ refuse beside that switch, each [first, end) by the release
# whose code the config runs (end None: still in 1.16.0), read in every wheel named above (grpo_trainer.py
# GRPOTrainer.__init__ unless said):
# * a PEFT model, 0.17 only: TypeError "Liger loss is not supported with a PEFT model." (0.18 drops the check);
# * loss_type other than bnpo, 0.17 only: "The provided loss type (`...`) is not supported with `use_liger_loss`.
#   Liger loss only supports `bnpo` for now." (0.18 hands loss_type to Liger's loss);
# * delta (two-sided GRPO clipping), 0.18 to 1.3: GRPOConfig.__post_init__ "Liger loss does not support two-sided
#   GRPO loss yet." (0.25 on "Liger kernel ..."; 1.4 hands delta to Liger's loss);
# * top_entropy_quantile < 1.0, 0.20 to 1.13: NotImplementedError "Liger Kernels don't currently support masking
#   token positions based on entropy.";
# * importance_sampling_level other than token, 0.20 to 0.29: NotImplementedError "Liger Kernels currently only
#   support token-level importance sampling." (1.0 on refuses only a level that is neither token nor sequence);
# * off_policy_mask_threshold set, 0.27 to 1.13: "Liger kernel does not support off-policy sequence masking yet.";
# * liger_kernel_config {"fused_linear_cross_entropy": true}, 1.15 on: ValueError "... is not supported: it replaces
#   the model's forward, which this trainer patches with a fused LM head."
# Not rules, as no release a config is judged as (RULES_OF) runs them: the entropy bonus (entropy_coef != 0 or
# use_adaptive_entropy), 1.8 to 1.13, and a PEFT adapter on lm_head or a prompt-learning PEFT method, 1.8 to 1.14.
LIGER_REFUSES = {"liger_peft_refused": ((0, 17), (0, 18)), "liger_bnpo_only": ((0, 17), (0, 18)),
                 "liger_no_two_sided": ((0, 18), (1, 4)), "liger_no_entropy_mask": ((0, 20), (1, 14)),
                 "liger_token_level_only": ((0, 20), (1, 0)), "liger_no_off_policy_mask": ((0, 27), (1, 14)),
                 "liger_no_fused_ce": ((1, 15), None)}


# Whether GRPOTrainer's log-prob forward divides the logits by the temperature out of place (a second copy of the
# response logits: costmodel/constants.py TEMPERATURE_COPY_FWD_BYTES_PER_LOGIT): not in 0.15.2 (no division);
# ``logits = logits / self.temperature`` in 0.16.0 and 0.16.1 ``_get_per_token_logps`` and 0.29.1
# ``_get_per_token_logps_and_entropies``; ``logits.div_(self.temperature)`` in 1.0.0 (1.16.0 hands the temperature to its
# fused lm head, "trl-fused", whose logits are never materialized).
TEMPERATURE_COPY_FROM = (((1, 0), False), ((0, 16), True))


# Where GRPOTrainer cuts each prompt to its last ``max_prompt_length`` tokens (GRPOConfig default 512) before the
# engine and the trainer see it: 0.14.0 ``_prepare_inputs`` (``prompt_inputs["input_ids"][:, -self.max_prompt_length:]``)
# through 0.23.1 ``_generate_and_score_completions`` (``truncate_with_protected_tokens``), 0.24.0 and 0.25.1
# ``_generate_single_turn`` (vLLM's ``truncate_prompt_tokens``, the tokenizer's ``max_length`` with ``truncation``);
# from 0.26.0 the field defaults to None, is deprecated ("filter your dataset before training") and GRPOTrainer no
# longer reads it (0.28.0 removed it): the data decides. (since, default cut), newest first; None: no cut. The one
# statement of where a release cuts its prompts: the printed command's prompt flag (framework.TRL.prompt_limit), the
# price (cost.cost_values), the note on a given field it never reads (prompt_field_ignored) and docs/rules-trl.md's
# table read it; whether GRPOConfig still has the field is release_fields.py's.
PROMPT_CUT_FROM = (((0, 26), None), ((0, 14), 512))


def _by_release(table: tuple, version: str, before: Any) -> Any:
    """The value of ``table`` (``((since, value), ...)``, newest first) for TRL ``version``; ``before`` under all."""
    numbers = release_numbers(version)
    return next((value for since, value in table if numbers >= since), before)


def old_log_prob_rule(version: str) -> str:
    """Which of ``OLD_LOG_PROB_FROM``'s conditions TRL ``version``'s GRPOTrainer computes the old log-probs under."""
    return _by_release(OLD_LOG_PROB_FROM, version, "never")


def temperature_copy(version: str) -> bool:
    """Whether TRL ``version`` divides the logits by the temperature out of place (``TEMPERATURE_COPY_FROM``)."""
    return _by_release(TEMPERATURE_COPY_FROM, version, False)


# GRPOTrainer casts a quantized (bitsandbytes) base's trainable parameters, the LoRA adapter, to bf16 from 0.26.0
# (0.26.0 grpo_trainer.py GRPOTrainer.__init__: "When using QLoRA, the PEFT adapter weights are converted to bf16",
# ``param.data = param.data.to(torch.bfloat16)`` under ``is_loaded_in_4bit``/``is_loaded_in_8bit``; 1.16.0 the same
# under ``_is_quantized_model``); 0.14-0.25 leave peft's fp32 upcast (0.25.1 prepare_peft_model's
# peft_module_casting_to_bf16 casts the norms, embedding and lm_head only)
LORA_BF16_ON_QUANTIZED_FROM = (0, 26)


def lora_bf16_on_quantized(version: str) -> bool:
    """Whether TRL ``version`` casts a quantized base's LoRA adapter to bf16 (``LORA_BF16_ON_QUANTIZED_FROM``)."""
    return release_numbers(version) >= LORA_BF16_ON_QUANTIZED_FROM


def prompt_cut(version: str) -> int | None:
    """The prompt length TRL ``version`` cuts prompts at when the config leaves max_prompt_length unset
    (``PROMPT_CUT_FROM``); None where it cuts none."""
    return _by_release(PROMPT_CUT_FROM, version, None)


def prompt_field_ignored(version: str) -> bool:
    """Whether TRL ``version`` has GRPOConfig's max_prompt_length (its fields, release_fields.py) and never reads it
    (no cut, ``PROMPT_CUT_FROM``: 0.26 and 0.27, where it is deprecated): a value the config gives bounds nothing
    there. From 0.28 the field is gone, so a config that gives it was written for a release that cuts."""
    fields = fields_release_of(version)
    return (prompt_cut(version) is None and fields is not None
            and "max_prompt_length" in RELEASE_FIELDS[fields])


def liger_flags(version: str) -> tuple[str, ...]:
    """The flags that switch TRL ``version``'s Liger path on (``LIGER_FLAGS_FROM``), the first the config sets
    deciding."""
    return _by_release(LIGER_FLAGS_FROM, version, ())


def liger_loss_flags(version: str) -> tuple[str, ...]:
    """The flags that switch TRL ``version``'s GRPO loss to Liger's (``LIGER_LOSS_UNTIL``): ``liger_flags`` up to
    1.12."""
    return liger_flags(version) if release_numbers(version) < LIGER_LOSS_UNTIL else ()


def liger_refusals(version: str, liger: bool) -> dict[str, bool]:
    """The rules' liger_* variables: which of ``LIGER_REFUSES``' checks TRL ``version`` runs, where ``liger`` (its
    ``liger_flags``) is on."""
    numbers = release_numbers(version)
    return {name: liger and first <= numbers and (end is None or numbers < end)
            for name, (first, end) in LIGER_REFUSES.items()}


def _removed_fields(version: str, source: str) -> Rule:
    return Rule(
        "trl.config.removed_fields",
        ~BoolVar("removed_fields"),
        f"the config sets fields that TRL {version}'s GRPOConfig does not have (the note names them): a --config "
        "YAML under `trl grpo` or flags stop with HfArgumentParser's 'Some specified arguments are not used'",
        Stage.DRIVER, source,
        explanation="Written for another TRL release: drop them, or name the release you run with --framework "
                    "trl==VERSION.",
    )


# ---------------------------------------------------------------------------------------------- 0.29.1
FRONTEND_RULES = frozenset({"trl.frontend.gen_divisible_by_num_generations",
                            "trl.frontend.eval_batch_divisible_by_num_generations_eval"})
V0291 = Pack(
    "0.29.1", NEWEST,
    # its GRPOConfig.__post_init__ takes auto_find_batch_size (1.16.0 refuses it); its `trl grpo` parses the flags
    # into an argparse namespace and launches (trl/cli/main.py main, trl/cli/commands/training.py TrainingCommand.run:
    # no GRPOConfig at world size 1, which 1.16.0's TrainingCommand.run builds with make_parser)
    drop=frozenset({"trl.config.auto_find_batch_size_unsupported"}) | FRONTEND_RULES,
    rules=(_removed_fields("0.29.1", "trl/scripts/utils.py:TrlParser.parse_args_and_config (fail_with_unknown_args)"),),
    variables=(
        ("vllm_server", "vllm_mode", "bool", True, False, "vllm_mode is server (the default in 0.29.1: "
         "`trl vllm-serve` on GPUs of its own)"),
    ),
    summary="1.16.0's GRPOConfig checks but auto_find_batch_size (not refused); `trl grpo` builds no GRPOConfig "
            "before it launches; vllm_mode defaults to server (vLLM on GPUs of its own), max_completion_length "
            "to 256; log-probs from the whole logits tensor",
)

# ---------------------------------------------------------------------------------------------- 0.14.0
TRAINER_014 = "trl/trainer/grpo_trainer.py:GRPOTrainer.__init__"
B, G, GA, W = (IntVar(n) for n in ("per_device_train_batch_size", "num_generations", "gradient_accumulation_steps",
                                    "W"))
V0140 = Pack(
    "0.14.0", NEWEST,
    drop=frozenset({
        # GRPOConfig has no __post_init__, GRPOTrainer.__init__ no batch check (0.15 added them), the `trl grpo`
        # front-end only parses (trl/cli.py: parser.parse_args(), no dataclass is built)
        "trl.config.auto_find_batch_size_unsupported", "trl.config.gen_and_spg_exclusive",
        "trl.config.gen_divisible_by_global_batch", "trl.config.eval_batch_divisible_by_num_generations_eval",
        "trl.config.gen_divisible_by_num_generations", "trl.config.num_generations_at_least_two",
        "trl.frontend.gen_divisible_by_num_generations", "trl.frontend.eval_batch_divisible_by_num_generations_eval",
        # no sync_ref_model field, no colocated engine
        "trl.trainer.sync_ref_model_needs_beta", "trl.trainer.sync_ref_model_not_with_peft",
        "trl.vllm.colocate_tp_divides_world",
    }),
    rules=(
        _removed_fields("0.14.0", "trl/scripts/utils.py:TrlParser.parse_args_and_config (via "
                        "HfArgumentParser.parse_args_into_dataclasses)"),
        Rule(
            "trl.gpus.budget",
            IntVar("gpus_needed") <= IntVar("cluster_num_gpus"),
            "the job needs {gpus_needed} GPUs (num_processes = {W} training ranks, plus the vLLM engine's GPU: "
            "vllm_device 'auto' is cuda:{W}, the GPU after the training ones) but {cluster_num_gpus} are given: "
            "\"The requested device for vllm (cuda:{W}) is not available\"",
            Stage.TRAINER_INIT, TRAINER_014, when=is_set("cluster_num_gpus"),
            explanation="Lower --num_processes by one (the message's own advice) or give the job another GPU.",
        ),
    ),
    derived=(
        Derived("gen_base", B * G * W, "completions one micro step generates and trains on: "
                "per_device_train_batch_size*num_generations*W (per_device_train_batch_size counts prompts)"),
        Derived("opt_batch", B * G * W * GA, "completions per optimizer step: "
                "per_device_train_batch_size*num_generations*W*gradient_accumulation_steps"),
    ),
    variables=(
        ("per_device_train_batch_size", "per_device_train_batch_size", "int", 1, False,
         "prompts per GPU per forward/backward, each with num_generations completions (GRPOConfig 0.14.0 default 1)"),
        ("gradient_accumulation_steps", "gradient_accumulation_steps", "int", 8, False,
         "micro steps per optimizer step (GRPOConfig 0.14.0 default 8)"),
        ("vllm_server", "(vllm_device)", "bool", True, False,
         "vLLM generates on a GPU of its own (vllm_device, default the GPU after the training ones)"),
        ("kl_on", "(reference model)", "bool", True, False,
         "a reference model: always built in 0.14.0 (beta 0.04 only weighs the KL term), except with PEFT"),
    ),
    summary="no batch check at all (per_device_train_batch_size counts prompts, each with num_generations "
            "completions); a reference model whatever beta is; vLLM on one GPU after the training ones "
            "(vllm_device 'auto')",
)

# ---------------------------------------------------------------------------------------------- 0.19.1
CONFIG = R.CONFIG
TRAINER = R.TRAINER
G_, GEN_, EVAL_ = IntVar("num_generations"), IntVar("gen"), IntVar("eval_batch")
V0191 = Pack(
    "0.19.1", "0.29.1",
    # GRPOTrainer.__init__ adds the SyncRefModelCallback without checking beta or PEFT
    drop=frozenset({"trl.trainer.sync_ref_model_needs_beta", "trl.trainer.sync_ref_model_not_with_peft"}),
    rules=(
        _removed_fields("0.19.1", "trl/scripts/utils.py:TrlParser.parse_args_and_config (via "
                        "HfArgumentParser.parse_args_into_dataclasses)"),
        Rule(
            "trl.config.gen_divisible_by_num_generations",
            divides(G_, GEN_),
            "The effective train batch size num_processes x per_device_train_batch_size x steps_per_generation = "
            "{W} x {per_device_train_batch_size} x {spg} = {gen} must be evenly divisible by the number of "
            "generations per prompt ({num_generations})",
            Stage.DRIVER, CONFIG,
            explanation="A rollout must hold whole prompt groups (0.19 moved the check from the per-step batch to the "
                        "generation batch, which counts gradient_accumulation_steps).",
        ),
        Rule(
            "trl.config.eval_batch_divisible_by_num_generations_eval",
            divides(G_, EVAL_),
            "The global eval batch size num_processes x per_device_eval_batch_size = {W} x "
            "{per_device_eval_batch_size} = {eval_batch} must be evenly divisible by the number of generations per "
            "prompt ({num_generations}) (0.19.1 has no num_generations_eval)",
            Stage.DRIVER, CONFIG, when=BoolVar("eval_on"),
        ),
    ),
    sources=(("trl/generation/vllm_generation.py:VLLMGeneration._init_vllm", TRAINER),),
    summary="the generation batch's checks of 0.29.1, in its words; the eval batch against num_generations (no "
            "num_generations_eval); no sync_ref_model check; the colocated engine built in GRPOTrainer.__init__; "
            "max_prompt_length (default 512) still a field",
)

# ---------------------------------------------------------------------------------------------- 0.16.1
B_, W_ = IntVar("per_device_train_batch_size"), IntVar("W")
GLOBAL_016 = ("The global train batch size ({W} x {per_device_train_batch_size}) must be evenly divisible by the "
              "number of generations per prompt ({num_generations})")
V0161 = Pack(
    "0.16.1", "0.19.1",
    # GRPOConfig.__post_init__ only warns about deprecated vLLM fields; the batch checks are GRPOTrainer.__init__'s;
    # no generation batch, no colocated vLLM (use_vllm talks to `trl vllm-serve`)
    drop=frozenset({"trl.config.gen_and_spg_exclusive", "trl.config.gen_divisible_by_global_batch",
                    "trl.config.gen_divisible_by_num_generations", "trl.config.num_generations_at_least_two",
                    "trl.config.eval_batch_divisible_by_num_generations_eval", "trl.vllm.colocate_tp_divides_world"}),
    rules=(
        _removed_fields("0.16.1", "trl/scripts/utils.py:TrlParser.parse_args_and_config (via "
                        "HfArgumentParser.parse_args_into_dataclasses)"),
        Rule(
            "trl.trainer.global_batch_divisible_by_num_generations",
            (G_ >= 2) & divides(G_, B_ * W_),
            GLOBAL_016 + ": each step's num_processes x per_device_train_batch_size completions must be whole "
            "prompt groups of at least 2",
            Stage.TRAINER_INIT, "trl/trainer/grpo_trainer.py:GRPOTrainer.__init__",
            explanation="The message of open-r1 #249 and trl #2858, #3061 (TRL 0.15-0.16): from 0.15 "
                        "per_device_train_batch_size counts completions, and the per-step batch must hold whole "
                        "groups; the valid values it lists are the divisors from 2 up.",
        ),
        Rule(
            "trl.trainer.eval_batch_divisible_by_num_generations",
            (G_ >= 2) & divides(G_, EVAL_),
            "The global eval batch size ({W} x {per_device_eval_batch_size}) must be evenly divisible by the number "
            "of generations per prompt ({num_generations})",
            Stage.TRAINER_INIT, "trl/trainer/grpo_trainer.py:GRPOTrainer.__init__", when=BoolVar("eval_on"),
        ),
    ),
    variables=(
        ("vllm_server", "(use_vllm)", "bool", True, False, "vLLM generates on a `trl vllm-serve` server (the only "
         "vLLM mode of 0.16.1)"),
        ("kl_on", "(beta != 0)", "bool", True, False, "a KL term: beta != 0 (default 0.04: a reference model)"),
    ),
    summary="the batch checks in GRPOTrainer.__init__, on the per-step batch num_processes x "
            "per_device_train_batch_size (the message of open-r1 #249, trl #2858); no generation batch; vLLM only "
            "on a `trl vllm-serve` server; beta 0.04 (a reference model)",
)

# ---------------------------------------------------------------------------------------------- 0.18.2
V0182 = Pack(
    "0.18.2", "0.19.1",
    rules=(
        _removed_fields("0.18.2", "trl/scripts/utils.py:TrlParser.parse_args_and_config (via "
                        "HfArgumentParser.parse_args_into_dataclasses)"),
        # GRPOConfig.__post_init__ writes `self.generation_batch_size % self.per_device_train_batch_size *
        # num_processes != 0`: Python reads it as (generation_batch_size % per_device_train_batch_size) *
        # num_processes, so only per_device_train_batch_size must divide it (0.19.0 added the parentheses)
        Rule(
            "trl.config.gen_divisible_by_global_batch",
            divides(IntVar("per_device_train_batch_size"), IntVar("generation_batch_size")),
            "generation_batch_size = {generation_batch_size} is not divisible by per_device_train_batch_size = "
            "{per_device_train_batch_size} (TRL 0.18's check, which lacks the parentheses around the global batch)",
            Stage.DRIVER, CONFIG, when=is_set("generation_batch_size") & ~is_set("steps_per_generation"),
            explanation="TRL 0.18 checks generation_batch_size % per_device_train_batch_size (an operator-precedence "
                        "slip); steps_per_generation = generation_batch_size / the global batch is then floored. "
                        "0.19 checks the global batch.",
        ),
    ),
    summary="0.19.1's generation batch checks, but generation_batch_size need only be divisible by "
            "per_device_train_batch_size (0.18's check lacks the parentheses around the global batch); beta 0.04 (a "
            "reference model)",
)

# ---------------------------------------------------------------------------------------------- 0.17.0
GA_ = IntVar("gradient_accumulation_steps")
V0170 = Pack(
    "0.17.0", "0.16.1",
    rules=(
        _removed_fields("0.17.0", "trl/scripts/utils.py:TrlParser.parse_args_and_config (via "
                        "HfArgumentParser.parse_args_into_dataclasses)"),
        Rule(
            "trl.trainer.global_batch_divisible_by_num_generations",
            (IntVar("num_generations") >= 2) & divides(IntVar("num_generations"), IntVar("opt_batch")),
            "The effective train batch size ({W} x {per_device_train_batch_size} x {gradient_accumulation_steps}) = "
            "{opt_batch} must be evenly divisible by the number of generations per prompt ({num_generations}), "
            "itself at least 2",
            Stage.TRAINER_INIT, "trl/trainer/grpo_trainer.py:GRPOTrainer.__init__",
            explanation="TRL 0.17 generates once per gradient_accumulation_steps micro steps: the completions of an "
                        "optimizer step (num_processes x per_device_train_batch_size x gradient_accumulation_steps) "
                        "must be whole prompt groups of at least 2 (0.16 checked the per-step batch).",
        ),
        Rule(
            "trl.trainer.eval_batch_divisible_by_num_generations",
            (IntVar("num_generations") >= 2) & divides(IntVar("num_generations"), IntVar("eval_batch")),
            "The effective eval batch size ({W} x {per_device_eval_batch_size}) must be evenly divisible by the number "
            "of generations per prompt ({num_generations})",
            Stage.TRAINER_INIT, "trl/trainer/grpo_trainer.py:GRPOTrainer.__init__", when=BoolVar("eval_on"),
        ),
    ),
    summary="the batch checks in GRPOTrainer.__init__ on the optimizer step's completions num_processes x "
            "per_device_train_batch_size x gradient_accumulation_steps (0.16.1: without gradient_accumulation_steps); "
            "vLLM only on a `trl vllm-serve` server; beta 0.04",
)

# ---------------------------------------------------------------------------------------------- 0.15.2
V0152 = Pack(
    "0.15.2", "0.16.1",
    rules=(
        _removed_fields("0.15.2", "trl/scripts/utils.py:TrlParser.parse_args_and_config (via "
                        "HfArgumentParser.parse_args_into_dataclasses)"),
        Rule(
            "trl.gpus.budget",
            (IntVar("gpus_needed") <= IntVar("cluster_num_gpus")) | IntVar("cluster_num_gpus").eq(1),
            "the job needs {gpus_needed} GPUs (num_processes = {W} training ranks, plus the vLLM engine's GPU: "
            "vllm_device 'auto' is cuda:{W}, the GPU after the training ones) but {cluster_num_gpus} are given: "
            "\"The requested device for vllm (cuda:{W}) is not available\"",
            Stage.TRAINER_INIT, "trl/trainer/grpo_trainer.py:GRPOTrainer.__init__", when=is_set("cluster_num_gpus"),
            explanation="Lower --num_processes by one (the message's own advice) or give the job another GPU. On a "
                        "machine with one GPU, 0.15 shares it (vllm_device 'auto' is cuda:0).",
        ),
    ),
    variables=(
        ("vllm_server", "(vllm_device)", "bool", True, False,
         "vLLM generates on a GPU of its own (vllm_device, default the GPU after the training ones)"),
    ),
    summary="0.16.1's batch checks (the per-step batch num_processes x per_device_train_batch_size); vLLM as in "
            "0.14.0, one engine in the main process on vllm_device (default the GPU after the training ones, which "
            "must exist; a machine of one GPU shares it); beta 0.04",
)

PACKS = {p.version: p for p in (V0291, V0191, V0182, V0161, V0170, V0152, V0140)}


# ---------------------------------------------------------------------------------------------- assembly
@functools.lru_cache(maxsize=None)
def ruleset_for(version: str) -> RuleSet:
    """The rules of a TRL release we follow."""
    if version == NEWEST:
        return R.RULESET
    pack = PACKS[version]
    return pack_ruleset("trl", pack, ruleset_for(pack.edits), (f"TRL {NEWEST}", f"TRL {pack.version}"),
                        explanations=True)


def changes(version: str) -> dict[str, list[tuple[str, str]]]:
    """What a release's rules do differently from 1.16.0's: {"absent", "added", "changed"} -> (rule id, source)."""
    return rule_changes(R.RULESET.rules, ruleset_for(version).rules)


# ---------------------------------------------------------------------------------------------- fields and dating
ALL_FIELDS = frozenset().union(*RELEASE_FIELDS.values())
# ModelConfig names the weights' dtype torch_dtype in these releases (trl/trainer/model_config.py), dtype after
TORCH_DTYPE_RELEASES = frozenset({"0.19.1", "0.18.2", "0.17.0", "0.16.1", "0.15.2", "0.14.0"})
# the options of the grpo script that are not GRPOConfig's own (TrainingArguments, ModelConfig, the script's): read as
# every release's (their changes between transformers releases are not followed)
OTHER_OPTIONS = GRPO_SCRIPT_OPTIONS - RELEASE_FIELDS[NEWEST]


def foreign_fields(version: str, keys: Iterable[str]) -> list[str]:
    """The keys that are GRPOConfig fields of some release but not options of ``version``'s grpo script (for 1.16.0:
    exactly ``rules.REMOVED_FIELDS``' names)."""
    known = RELEASE_FIELDS[version] | OTHER_OPTIONS
    return [k for k in keys if k in ALL_FIELDS and k not in known]


# the pack that judges each release whose fields we know (release_fields.py): its own, or the nearest whose GRPOConfig
# checks and memory defaults it shares. 0.20-0.21 check as 0.19.1 (their GRPOConfig.__post_init__ and GRPOTrainer
# checks are 0.19.1's; gradient_checkpointing still False); 0.22-0.28 as 0.29.1 (gradient_checkpointing True, vllm_mode
# server, log-probs from the whole logits tensor; 0.22-0.25 check the eval batch against num_generations as 0.19.1
# does: num_generations_eval came in 0.26); 1.0.0 as 1.16.0 (vllm_mode colocate).
RULES_OF = {
    **{v: v for v in VERSIONS},
    "0.20.0": "0.19.1", "0.21.0": "0.19.1",
    **{v: "0.29.1" for v in ("0.22.2", "0.23.1", "0.24.0", "0.25.1", "0.26.2", "0.27.2", "0.28.0")},
    "1.0.0": NEWEST,
}
assert set(RULES_OF) == set(RELEASE_FIELDS), "every release whose fields we know is judged by one pack"
# a minor series whose fields we know but a neighbour's pack judges ("0.23" -> "0.23.1", checked as 0.29.1): naming
# any of its releases (--framework trl==0.23.0) resolves to that pack (base.resolve_release) with the series' fields
FIELDS_OF_SERIES = {v.rsplit(".", 1)[0]: v for v in RULES_OF}
SERIES.update({series: RULES_OF[v] for series, v in FIELDS_OF_SERIES.items() if series not in SERIES})


def fields_release_of(named: str) -> str | None:
    """The release whose GRPOConfig fields a release the user names has (release_fields.py): itself, or its series'
    listed release; None when we know no release of its series."""
    v = named.strip().lstrip("v").partition(".post")[0]
    return v if v in RULES_OF else FIELDS_OF_SERIES.get(".".join(v.split(".")[:2]))

# values only some releases take (trl/trainer/grpo_config.py of each wheel): scale_rewards became a string ("group",
# "batch", "none") in 0.22 (a bool before); loss_type's values by the first minor release whose GRPOConfig names them
SCALE_REWARDS_WORDS = ("group", "batch", "none")
LOSS_TYPE_SINCE = {"dapo": (0, 22), "cispo": (0, 26), "sapo": (0, 26), "luspo": (0, 28), "vespo": (1, 0)}


def _value_dated(flat: Mapping[str, object]) -> tuple[list[str], set[str]]:
    """(what dates the config by a value, the releases that take it)."""
    words, allowed = [], set(RELEASE_FIELDS)
    value = str(flat.get("scale_rewards", "")).strip().lower()
    if value in SCALE_REWARDS_WORDS:
        words.append(f"scale_rewards={value}")
        allowed &= {v for v in RELEASE_FIELDS if release_numbers(v) >= (0, 22, 0)}
    loss = str(flat.get("loss_type", "")).strip().lower()
    if loss in LOSS_TYPE_SINCE:
        words.append(f"loss_type={loss}")
        allowed &= {v for v in RELEASE_FIELDS if release_numbers(v)[:2] >= LOSS_TYPE_SINCE[loss]}
    return words, allowed


def dated_by_value(flat: Mapping[str, object]) -> set[str]:
    """The fields of a config whose value ``detect_release`` reads to date it (``_value_dated``)."""
    return {w.partition("=")[0] for w in _value_dated(flat)[0]}


def detect_release(flat: Mapping[str, object]) -> tuple[str | None, str]:
    """The release a config was most likely written for, from the GRPOConfig fields it sets that not all releases
    have (and the values that date it), and why; (None, why) when no release has them all or nothing dates it.

    The policy of every framework here (``dating.dated``, docs/architecture.md): when the newest release has them all,
    nothing says the config is old: the newest. Otherwise a field it sets was removed later, and the config is judged
    by the *oldest* release that has them all: the fields a config sets
    were there when it was written, and most configs with removed fields were written when those fields were new
    (open-r1's recipes with max_prompt_length and vllm_mode ran TRL 0.18; the vllm_device recipes of early 2025, 0.14).
    On the memory corpus' TRL records this agrees with the release named 31 of 32 times (tests/trl_releases.py)."""
    dating = sorted(k for k in flat if k in ALL_FIELDS and not all(k in f | OTHER_OPTIONS for f in
                                                                   RELEASE_FIELDS.values()))
    words, allowed = _value_dated(flat)
    if not dating and not words:
        return None, "no field of the config is specific to a TRL release"
    have = sorted((v for v, f in RELEASE_FIELDS.items() if v in allowed and all(k in f | OTHER_OPTIONS
                                                                                for k in dating)), key=release_numbers)
    shown = listed(dating + words)
    first, last = min(RELEASE_FIELDS, key=release_numbers), max(RELEASE_FIELDS, key=release_numbers)
    if not have:
        return None, f"its fields ({shown}) belong to no single TRL release from {first} to {last}"
    return dated(have, NEWEST, NAME, shown, "fields")


def detect(flat: Mapping[str, object]) -> tuple[str | None, str]:
    """The pack that judges the release ``detect_release`` finds, and why; (None, why) when nothing dates the
    config."""
    release, why = detect_release(flat)
    if release is None:
        return None, why
    pack = RULES_OF[release]
    if pack != release:
        why += f", whose checks are TRL {pack}'s"
    return pack, why
