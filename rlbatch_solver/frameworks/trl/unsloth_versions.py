"""The Unsloth releases we price (``--framework unsloth==VERSION``): 2026.10.9, whose code the pack follows, and
2025.9.6, the September 2025 release most published Unsloth GRPO runs used (its notebooks and its docs' Standby
table), whose code differs where the update's memory is decided.

Both are checked with the same rules (``unsloth_rules.py``: TRL 1.15.0's GRPOConfig checks with Unsloth's); what a
release changes here is its memory, read by ``unsloth.py`` from ``Release``:

* ``batch_rewrite``: the condition under which the generated ``UnslothGRPOConfig.__init__`` raises
  ``per_device_train_batch_size`` to ``num_generations`` (unsloth/models/rl.py ``_patch_trl_rl_trainers_impl``,
  ``check_num_generations``). Up to 2025.11.3 (2025.9.6's wheel): whenever ``per_device_train_batch_size`` is not a
  multiple of ``num_generations``, so a batch of 1 trains ``num_generations`` sequences a micro step. From 2025.11.4
  (unsloth commit 5b0f196 "Remove grpo requirement bs=num_generations", #3609; 2025.11.4's and 2026.10.9's wheels):
  only with neither ``steps_per_generation`` nor ``generation_batch_size`` set and
  ``gradient_accumulation_steps*WORLD_SIZE*per_device_train_batch_size`` not a multiple of ``num_generations``.
* ``loss_chunks``: how the loss's log-probs hold their logits. unsloth_zoo 2025.9.7 (the least unsloth_zoo
  2025.9.6's METADATA accepts) ``rl_replacements.py`` ``grpo_accumulated_loss`` splits the micro batch into
  ``n_chunks = bsz`` chunks (``unsloth_num_chunks`` -1) of one sequence each and ``UnslothEfficientGRPO.forward``'s
  ``compute_loss`` projects that sequence's completion positions to 16-bit logits (``new_logits``, and the old and
  reference policies' ``old_logits``/``ref_logits`` from their hidden states when the trainer kept them), then
  ``grpo_compute_loss`` takes their log-softmax; the old and reference passes (``_get_per_token_logps``,
  ``UNSLOTH_RETURN_HIDDEN_STATES``) return hidden states, no logits. 2026.10.9's unsloth_zoo projects row chunks
  of at most 2 GiB of fp32 logits (fused_losses/chunked_logprob.py), the same in every pass, and sizes each pass's
  rows to the free memory (``autotune_batch_and_chunks``, which 2025.9.7 has not).
* ``standby_share``: what ``UNSLOTH_VLLM_STANDBY=1`` makes of ``gpu_memory_utilization``. unsloth_zoo 2025.9.7
  ``vllm_utils.py`` ``load_vllm``: at least 0.9 ("Standby mode is enabled. Increasing `gpu_memory_utilization` to
  0.9"), a larger share kept; 2026.10.9: a share by the GPU's size, whatever the script asks (``unsloth.py``
  ``standby_utilization``).

A config carries no word on its Unsloth release (its keys are the same in both), so nothing dates it: a config is
priced as 2026.10.9 runs it unless ``--framework unsloth==2025.9.6`` names the older release, and the answer names
the release it priced (``UnslothFramework.config_notes``). Another 2025.9.x is priced as 2025.9.6, with a note
(``base.resolve_release``); the releases between (2025.10 to 2026.10.8) mix the two packs' code (the batch rewrite
changed in 2025.11.4, the Standby share with unsloth_zoo PR #340 of 2025-11-04, the loss's chunks with unsloth_zoo
PR #357 of 2026-01-15) and are refused.
"""

from __future__ import annotations

from dataclasses import dataclass

NAME = "Unsloth"
NEWEST = "2026.10.9"


@dataclass(frozen=True)
class Release:
    version: str
    batch_rewrite: str  # "not-multiple" (per_device % num_generations) | "generation-batch" (ga*world*per_device)
    loss_chunks: str  # "sequence" (one sequence's 16-bit logits a chunk) | "rows" (fp32 row chunks, autotuned)
    standby_share: str  # "at-least-0.9" | "by-gpu-size"


RELEASES = {
    "2026.10.9": Release("2026.10.9", "generation-batch", "rows", "by-gpu-size"),
    "2025.9.6": Release("2025.9.6", "not-multiple", "sequence", "at-least-0.9"),
}
VERSIONS = tuple(RELEASES)  # newest first
SERIES = {"2026.10": "2026.10.9", "2025.9": "2025.9.6"}
# the share UNSLOTH_VLLM_STANDBY raises gpu_memory_utilization to, at least, in 2025.9 (unsloth_zoo 2025.9.7
# vllm_utils.py load_vllm)
STANDBY_LEAST_SHARE = 0.9


def ruleset_for(version: str):
    """The rules a release is checked with: the pack's (``unsloth_rules.RULESET``) under the release's name."""
    from ...rules.base import RuleSet
    from .unsloth_rules import RULESET
    if version == NEWEST:
        return RULESET
    return RuleSet(RULESET.framework, version, RULESET.variables, RULESET.derived, RULESET.rules,
                   compiled_like=RULESET)
