"""``fix`` with no repair: each way out (unpinning, the algorithm, LoRA, another GPU count, shorter lengths, a
bigger GPU) tried with a solve, and what would help, in words."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ..catalog.models import ModelCard
from ..frameworks import Framework
from ..frameworks.base import LORA_RANK
from ..rules.base import Value
from ..rules.ids import is_memory_rule_id
from ..costmodel.efficiency import Efficiency
from .fix_report import FixReport, diff_rows
from .fix_search import repair_once

if TYPE_CHECKING:
    from ..costmodel.tables import CostSpec
    from ..deadline import Deadline
    from ..frameworks.repair_policies import RepairPolicy




def relax(fw: Framework, policy: RepairPolicy, values: Mapping[str, Value], *, kept: set[str], involved: set[str],
          spec: CostSpec | None, gpu: str | None, card: ModelCard | None, conflict_ids: list[str], deadline: Deadline,
          extra_gpus: str | Path | None, length_fraction: float = 1.0,
          calibration: "Efficiency | None" = None, cut: list[str] | None = None) -> list[dict[str, Any]]:
    """Try each way out of an infeasible repair with a solve; say which work and what they change (and in ``cut``
    the ones the clock stopped or left untried: ``FixReport.cut_short``)."""
    cut = cut if cut is not None else []
    from ..frameworks.repair_policies import candidates, hardware_candidates

    tried: list[dict[str, Any]] = []

    from ..deadline import Deadline

    def attempt(kind: str, what: str, *, new_values=None, keep=kept, free=None, new_spec=spec) -> bool:
        if deadline.left() < 0.05:
            tried.append({"kind": kind, "feasible": False, "text": f"{what}: not tried (time limit)", "changes": []})
            cut.append(f"the relaxation '{kind}' (not tried)")
            return False
        vals = dict(values if new_values is None else new_values)
        res = repair_once(fw, policy, vals, kept=keep, spec=new_spec, deadline=Deadline(deadline.share(0.3)),
                          free=free).result
        cut.extend(f"the relaxation '{kind}' ({c})" for c in res.cut_short)
        changes = [c for c in res.changes]
        _, diff, _ = diff_rows(fw, changes)
        if new_values is not None:  # the relaxed values themselves are part of the change
            from ..solver.repair import Change

            moved = [Change(n, values.get(n), v) for n, v in new_values.items() if values.get(n) != v]
            _, first, _ = diff_rows(fw, moved)
            diff = first + [d for d in diff if d[0] not in {k for k, _, _ in first}]
        ok = res.solution is not None
        args = [new for _, _, new in diff]
        text = f"{what}: " + (" ".join(args) if ok and args else "enough as is" if ok else
                              ("none found within the time limit" if res.status == "unknown"
                                                   else "still no valid config"))
        tried.append({"kind": kind, "feasible": ok, "text": text, "changes": args})
        return ok

    pins = kept & involved
    if kept:
        names = sorted(fw.native_key(k) for k in (pins or kept))
        attempt("unpin", "unpin --keep " + ",".join(names) + ", then", keep=kept - (pins or kept))
    algo = [n for n in policy.algorithm if n in involved and n in values]
    if algo:
        free = {}
        for n in algo:
            spec_n = fw.ruleset.variables[n]
            free[n] = candidates(n, spec_n.kind, spec_n.optional, values[n], policy, total_gpus=1, seq_len=0,
                                 narrow=True)
        attempt("algorithm", ", ".join(f"{fw.native_key(n)} = {values[n]}" for n in algo)
                + " is an algorithm setting, which fix never changes; changing it yourself works", free=free)
    hw = hardware_candidates(policy, dict(values))
    hw = {n: c for n, c in hw.items() if n not in kept}
    memory_conflict = any(is_memory_rule_id(i) for i in conflict_ids)
    if memory_conflict and spec is not None and values.get("lora_rank") == 0 and "lora_rank" not in kept:
        # full fine-tuning does not fit: LoRA keeps gradients and optimizer states for the adapter only, the usual
        # way to train on one small GPU
        attempt("lora", "LoRA instead of full fine-tuning (gradients and optimizer states of the adapter only; "
                "with it a LoRA alpha, target modules and a learning rate ~10x higher, as the framework's LoRA guide "
                "sets them)", new_values={**values, "lora_rank": LORA_RANK})
    if hw and (memory_conflict or involved & set(hw) or not tried or not any(t["feasible"] for t in tried)):
        what = "another GPU count (now " + ", ".join(f"{fw.native_key(n)} = {values[n]}" for n in hw) + ")"
        # more GPUs in the node before another node (whose every all-reduce crosses the network): the node count held
        in_node = {n: c for n, c in hw.items() if policy.hardware[n] == "per_node" and int(values[n]) < 8}
        if not in_node or len(in_node) == len(hw):
            attempt("gpus", what, free=hw)
        elif not attempt("gpus", what, free={**{n: [values[n]] for n in hw}, **in_node}):
            tried.pop()
            attempt("gpus", what, free=hw)
    if memory_conflict and spec is not None:
        lengths = [n for n in policy.lengths if isinstance(values.get(n), int) and n not in kept]
        for n in lengths:
            for factor in (2, 4):
                shorter = max(1, int(values[n]) // factor)
                if attempt("shorter", f"a shorter {fw.native_key(n)} ({values[n]} -> {shorter})",
                           new_values={**values, n: shorter}):
                    break
        from ..catalog.gpus import list_gpus, load_gpu
        from ..costmodel.tables import with_length_fraction

        here = load_gpu(gpu, extra_gpus)
        bigger = sorted((g for g in list_gpus() if g.memory_bytes > here.memory_bytes), key=lambda g: g.memory_bytes)
        for g in bigger[:3]:
            if attempt("bigger_gpu", f"a bigger GPU (--gpu {g.name}, {g.memory_gib:.0f} GiB)",
                       new_spec=with_length_fraction(fw.cost_spec(card, g), length_fraction)):  # a profile is per GPU
                break
    return tried


def relaxations(fw: Framework, report: FixReport, kept: set[str], memory: bool) -> list[str]:
    """What would make an infeasible repair feasible, in words: the relaxations that were solved first."""
    out = [t["text"] for t in report.relaxations_tried if t["feasible"]]
    ids = [r.id for r in report.conflict.rules] if report.conflict else []
    if kept and not any(t["kind"] == "unpin" and t["feasible"] for t in report.relaxations_tried):
        out.append("drop some --keep pins (they are held fixed): " + ", ".join(sorted(kept)))
    if any(is_memory_rule_id(i) for i in ids):
        tried = {t["kind"] for t in report.relaxations_tried}  # one tried and not feasible is no help either
        if "gpus" not in tried:
            out.append("more GPUs (shards the training state further)")
        if "bigger_gpu" not in tried:
            out.append("a GPU with more memory (--gpu)")
        if "shorter" not in tried:
            out.append("a shorter max response length")
        out += fw.memory_relaxations(report.before)  # advice the config has taken already is none
    if not out and any(k for k in report.pinned_in_conflict if fw.is_gpu_count_key(k)):
        out.append("a different GPU count (the pinned count is part of the conflict)")
    if not out:
        out.append("change one of the pinned values listed with the conflict")
    return out
