"""``explain`` for out-of-memory messages: the phase, the message's numbers, our prediction beside them, and the fix.

A message (``frameworks/oom_text.py``) says how much memory the process held when an allocation failed; the
traceback pasted with it says which phase. Given the config (and the GPU, or the GPU the message's capacity
identifies) we price that phase: the largest terms, whether we predicted this OOM (when we did not, it is a miss of
ours and the output says so), and the nearest change that fits, keeping the user's algorithm (``fix`` with memory,
whose policy never moves the batch semantics). The run went out of memory, so it needed at least what the phase may
use (our line) and at least what the message shows the process held: when our peak is below either, the fix is
searched with the training phases priced that high (a calibration offset), so that the change it proposes would have
held the memory the run really needed (a rule repair that moves no memory is no answer to an OOM). Without the config: what usually helps in that phase, in
the framework's own keys.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..costmodel.phase import Phase
from ..catalog.gpus import load_gpu
from ..frameworks import get_framework
from ..frameworks.oom_text import (CUDA_OOM, ENGINE_FREE, KILLED, KV_NONE, KV_SHORT, LIBRARY_OOM, RAY_NODE, SGLANG,
                                   OomMessage, gpus_with_capacity, parse_oom, phase_of)
from ..frameworks.registry import FRAMEWORKS

if TYPE_CHECKING:
    from .check import CheckReport
    from .fix import FixReport

GIB_MIB = 1024
KIND_TEXT = {
    CUDA_OOM: "CUDA out of memory (torch's caching allocator)",
    LIBRARY_OOM: "CUDA out of memory in a library's own allocation (NCCL's buffers, cuBLAS's handle), outside torch's "
                 "caching allocator: the GPU was already full; the message says no sizes",
    KV_NONE: "the inference engine found no memory for its KV cache at start-up",
    KV_SHORT: "the inference engine's KV cache cannot hold one sequence of its max_model_len",
    ENGINE_FREE: "the GPU had less free memory at the engine's start than its gpu_memory_utilization asks for",
    SGLANG: "SGLang found too little memory for its KV pool at start-up",
    RAY_NODE: "Ray's memory monitor killed a worker: the node's RAM, not the GPU's",
    KILLED: "a process was killed (exit code -9 / SIGKILL): usually the kernel's OOM killer, the node's RAM",
}
PHASE_TEXT = {p: p.text for p in Phase if p.text}


@dataclass
class OomExplanation:
    message: OomMessage
    framework: str | None
    phase: str | None
    phase_from: str  # "traceback: <frame>", "the message", or "" (not named)
    gpu: str | None = None
    gpu_from: str = ""  # "given", or the inference from the message's capacity
    lines: list[str] = field(default_factory=list)  # the comparison with our prediction, in words
    predicted_oom: bool | None = None  # None: no config to price
    advice: list[str] = field(default_factory=list)
    check: CheckReport | None = None  # of the pasted config
    fix: FixReport | None = None  # memory, the user's algorithm kept
    fixed_fits: bool | None = None  # check on the fixed config: fits (None: no fix)
    fixed_tight: bool = False  # ... but within the memory model's observed error, as the run that died may have been
    offset_gib: float = 0.0  # what the fix was priced with beyond our model, from the message's numbers
    # the fix's keys that decide what each step or update trains on (Framework.shapes_learning: verl's
    # ppo_mini_batch_size), in native keys: the header then says the fix moves them, not that it keeps the batch
    moves_batch: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.message.kind, "numbers": {k: round(v, 3) for k, v in self.message.numbers.items()},
                "framework": self.framework, "phase": self.phase, "phase_from": self.phase_from, "gpu": self.gpu,
                "gpu_from": self.gpu_from, "prediction": self.lines, "predicted_oom": self.predicted_oom,
                "advice": self.advice, "offset_gib": round(self.offset_gib, 2),
                "fix": None if self.fix is None else self.fix.to_dict(), "fixed_config_fits": self.fixed_fits,
                "fixed_config_tight": self.fixed_tight, "fix_moves_batch": self.moves_batch}


def read_oom(text: str, framework: str | None = None) -> tuple[OomMessage, str | None] | None:
    """The out-of-memory message in ``text`` with the phase its traceback names, and the framework whose frames
    named it (the one given, else the first whose frames match)."""
    msg = parse_oom(text)
    if msg is None:
        return None
    names = [framework.split("==")[0]] if framework else [n for n in FRAMEWORKS if n != "verl-megatron"]
    for name in names:
        fw = get_framework(name)
        hit = phase_of(text, [(fw.name, pattern, phase) for pattern, phase in fw.oom_frames])
        if hit is not None:
            msg.framework, msg.frame = fw.name, hit[2]
            if msg.gpu_memory:  # a host kill is the node's RAM whatever phase the traceback was in
                msg.phase, msg.phase_from = hit[1], "traceback"
            else:
                msg.during = hit[1]
            return msg, framework or fw.name
    return msg, framework


def infer_gpu(msg: OomMessage) -> tuple[str | None, str]:
    """The catalog GPU whose memory is the capacity the message reports, said as an inference."""
    cap = msg.numbers.get("capacity_gib")
    if cap is None:
        return None, ""
    from ..catalog.gpus import list_gpus

    names = gpus_with_capacity(cap, [(g.name, g.memory_gib) for g in list_gpus()])
    if not names:
        return None, f"no GPU of the catalog has {cap:.2f} GiB: give --gpu"
    alike = f" (as {', '.join(names[1:])})" if len(names) > 1 else ""
    return names[0], f"inferred from the message's {cap:.2f} GiB total: {names[0]}{alike}; --gpu to name yours"


def explain_oom(text: str, *, framework: str | None = None, config: Sequence[str] | Mapping[str, Any] | None = None,
                gpus: int | None = None, model: Any = None, gpu: str | None = None, time_limit_s: float = 10.0,
                started: float | None = None) -> OomExplanation | None:
    """The out-of-memory message in ``text`` explained (None: there is none)."""
    found = read_oom(text, framework)
    if found is None:
        return None
    msg, fw_name = found
    if fw_name is None and config is not None:
        fw_name = "verl"  # the config was read as verl's (the CLI's default): price it so
    exp = OomExplanation(msg, fw_name, msg.phase, _phase_from(msg))
    exp.gpu, exp.gpu_from = (gpu, "given") if gpu else infer_gpu(msg)
    fw = get_framework(fw_name) if fw_name else None
    if fw is not None:
        key = "engine_start" if msg.kind in (KV_NONE, KV_SHORT, SGLANG) else msg.phase or ""
        exp.advice = list(fw.oom_advice_for(text).get(key, ()))
    if config is None or fw is None or model is None or exp.gpu is None:
        return exp
    _compare(exp, fw_name, config, gpus, model, time_limit_s, started if started is not None else time.monotonic())
    return exp


def _phase_from(msg: OomMessage) -> str:
    if msg.phase_from == "traceback":
        return f"the traceback ({msg.frame})"
    if msg.during:
        return f"the message; the traceback was in the {PHASE_TEXT.get(msg.during, msg.during)} ({msg.frame})"
    return "the message" if msg.phase else ""


def _compare(exp: OomExplanation, fw_name: str, config: Any, gpus: int | None, model: Any, time_limit_s: float,
             started: float) -> None:
    """Our prediction for the message's phase beside its numbers, and the fix."""
    from .check import check

    msg = exp.message
    if msg.kind in (RAY_NODE, KILLED):
        _compare_host(exp, fw_name, config, gpus, model)
        return
    report = check(config, framework=fw_name, gpus=gpus, model=model, gpu=exp.gpu)
    exp.check = report
    mem = report.memory
    phase = exp.phase if exp.phase in mem.peaks else max(mem.peaks, key=lambda p: mem.peaks[p] - mem.capacity_of(p))
    if exp.phase not in mem.peaks:
        # a named phase this config's release skips (TRL's and ms-swift's old log-prob forward at some settings) is
        # named as such, not as no phase
        why = (f"the {PHASE_TEXT.get(exp.phase, exp.phase)} is not among the phases we price for this config"
               if exp.phase else "the phase is not named")
        exp.lines.append(f"{why}: compared with our worst phase, the {PHASE_TEXT.get(phase, phase)}")
    peak, line = mem.peaks[phase] / GIB_MIB, mem.capacity_of(phase) / GIB_MIB
    terms = ", ".join(f"{t} {b / GIB_MIB:.1f}" for t, b in mem.largest_terms(phase))
    # check's verdict: a phase over the line only at the maximum lengths that it judges to fit at the data's
    # (MemoryCheck.fits_at_data) was predicted to fit, and is said so below
    at_data = mem.fits_at_data(phase)
    exp.predicted_oom = (mem.verdict(phase) != "yes" and not at_data) or _engine_refuses(msg, mem, phase)
    exp.lines.append(f"we predict the {PHASE_TEXT.get(phase, phase)} at {peak:.1f} GiB per GPU of {line:.1f} usable "
                     f"on {exp.gpu} (largest: {terms} GiB)")
    need = msg.needed_gib
    if need is not None:
        exp.lines.append(f"the message: this process held {need - msg.numbers['tried_gib']:.2f} GiB and asked for "
                         f"{msg.numbers['tried_gib']:.2f} GiB more, {need:.2f} GiB at that moment, of "
                         f"{msg.numbers['capacity_gib']:.2f} GiB")
    _engine_lines(exp, msg, mem)
    _kv_change(exp, report, model)
    if exp.predicted_oom:
        exp.lines.append("we predicted this out-of-memory")  # what the fix found is said with it, below
    elif at_data:  # check's "fits at the data's lengths": a miss of the verdict, with the worst case it showed
        from ..render import judged_lengths_text

        exp.lines.append(f"we predicted this phase to fit at the data's lengths ({mem.typical_peaks[phase] / GIB_MIB:.1f} "
                         f"GiB; ASSUMED: {judged_lengths_text(mem.lengths)}), over the line only at the config's "
                         f"maximum lengths ({peak:.1f} GiB): your data reached longer samples than assumed, a miss of "
                         f"the verdict")
    elif mem.outlook(phase) == "tight":  # check's "TIGHT: may run out of memory": one we warned of
        exp.lines.append(f"we predicted this phase tight: {mem.margin_gib(phase):.1f} GiB to spare, within the memory "
                         f"model's observed error ({math.exp(mem.error_log) - 1:.0%}): an out-of-memory we warned of")
    else:
        exp.lines.append("we predicted this phase fits: a miss of ours, worth reporting with this message and the "
                         "config (docs/accuracy.md lists the misses we know)")
    offset, why = 0.0, ""
    if phase != Phase.ROLLOUT:
        # the run went out of memory in this phase: it needed at least the memory it may use there (our line), and
        # at least what the message shows it held. Priced that high, the fix moves memory: a phase we called tight
        # (70.5 of 75.0 GiB) got a rule repair moving none, the OOM the user pasted left as it was
        tried = msg.numbers.get("tried_gib", 0.0)
        over = line + max(tried, 0.01)  # more than the line, by the allocation that failed where the message says it
        if need is not None and need > over:
            offset, why = need - peak, "what the message shows the run needed"
        elif over > peak:
            offset = over - peak
            why = (f"the run went out of memory there: it needed the {line:.1f} GiB usable and the {tried:.2f} GiB "
                   "it asked for" if tried else f"the run went out of memory there: it needed more than the "
                   f"{line:.1f} GiB usable")
        exp.offset_gib = offset
    _fix(exp, fw_name, config, gpus, model, offset, why, phase if exp.phase in mem.peaks else None, time_limit_s,
         started)


def _engine_refuses(msg: OomMessage, mem: Any, phase: str) -> bool:
    return phase == Phase.ROLLOUT and any("cannot start" in t for t, b in mem.phases.get(Phase.ROLLOUT, {}).items()
                                          if b > 0)


def _engine_lines(exp: OomExplanation, msg: OomMessage, mem: Any) -> None:
    """An engine-start message beside the engine's budget we predict."""
    n = msg.numbers
    if msg.kind == KV_SHORT and "kv_tokens" in n:
        exp.lines.append(f"the message: the KV cache holds {n['kv_tokens']:,.0f} tokens, one sequence of max_model_len "
                         f"needs {n['max_len']:,.0f}")
    if msg.kind == KV_SHORT and "kv_available_gib" in n:
        exp.lines.append(f"the message: {n['kv_needed_gib']:.2f} GiB of KV cache needed for one sequence of "
                         f"{n['max_len']:,.0f} tokens, {n['kv_available_gib']:.2f} GiB available")
    if msg.kind == ENGINE_FREE:
        exp.lines.append(f"the message: {n['free_gib']:.2f} GiB free of {n['capacity_gib']:.2f} at the engine's start, "
                         f"gpu_memory_utilization {n['utilization']} asks for {n['wanted_gib']:.2f} GiB: what else holds "
                         "the GPU then (the trainer's states, another process) must shrink, or the share")
    kv = [b for t, b in mem.phases.get(Phase.ROLLOUT, {}).items() if "KV cache" in t]
    if msg.kind in (KV_NONE, KV_SHORT, SGLANG) and kv:
        exp.lines.append(f"we predict a KV cache of {kv[0] / GIB_MIB:.2f} GiB per GPU in the engine's budget")


def _kv_change(exp: OomExplanation, report: Any, model: Any) -> None:
    """For "max seq len larger than the KV cache": how much more of the GPU the engine needs for one sequence, from the
    message's token counts and the model's KV bytes per token at the rollout's tensor parallel size."""
    from ..catalog.models import load_model
    from ..costmodel import constants as C

    n = exp.message.numbers
    if exp.message.kind != KV_SHORT or "kv_tokens" not in n or not exp.gpu:
        return
    card = model if hasattr(model, "kv_bytes_per_token") else load_model(model)
    values = report.values
    tp = int(values.get("rollout_tp") or values.get("vllm_tp") or values.get("server_tp") or 1)
    short = max(0.0, n["max_len"] - n["kv_tokens"])
    gib = short * card.kv_bytes_per_token(tp, C.KV_DTYPE_BYTES) / 2**30
    share = gib / load_gpu(exp.gpu).memory_gib
    exp.lines.append(f"one sequence of {n['max_len']:,.0f} tokens needs {short:,.0f} more tokens of KV cache: "
                     f"{gib:.2f} GiB per GPU at TP {tp}, {share:.3f} more of the GPU's memory share; or a max_model_len "
                     f"of at most {n['kv_tokens']:,.0f}")


def _fix(exp: OomExplanation, fw_name: str, config: Any, gpus: int | None, model: Any, offset_gib: float, why: str,
         phase: str | None, time_limit_s: float, started: float) -> None:
    """The nearest fitting config (the user's algorithm kept), priced ``offset_gib`` higher where the message showed the
    run needed that much more than we predict: in ``phase``, the one the message or traceback names (so the fix lowers
    that phase's own memory first: its micro batch, not one key that shrinks every phase), or in every training phase
    when it names none; checked afterwards by plain ``check``."""
    from ..costmodel.efficiency import Efficiency
    from .check import check
    from .fix import fix

    calibration = None
    if offset_gib > 0:
        extra = offset_gib * 2**30
        calibration = (Efficiency(phase_memory_offsets=((str(getattr(phase, "value", phase)), extra),)) if phase
                       else Efficiency(train_memory_offset_bytes=extra))
        where = f"the {PHASE_TEXT.get(phase, phase)}" if phase else "the training phases"
        exp.lines.append(f"the fix is searched with {where} {offset_gib:.2f} GiB higher than we predict: {why}")
    exp.fix = fix(config, framework=fw_name, gpus=gpus, model=model, gpu=exp.gpu, time_limit_s=time_limit_s,
                  started=started, calibration=calibration)
    if exp.fix.after is not None and exp.fix.changes:
        from .common import read_config

        fw = get_framework(fw_name)
        exp.moves_batch = [fw.native_key(c.name) for c in exp.fix.changes if c.name in fw.shapes_learning]

        flat, _ = read_config(get_framework(fw_name), config)  # the pasted config with the fix's keys changed
        changed = {**flat, **{key: new for key, _, new in exp.fix.native_changes}}
        after = check(changed, framework=fw_name, gpus=gpus, model=model, gpu=exp.gpu)
        exp.fixed_fits = after.memory is not None and after.memory.fits
        exp.fixed_tight = exp.fixed_fits and after.memory.outlook() == "tight"


def _compare_host(exp: OomExplanation, fw_name: str, config: Any, gpus: int | None, model: Any) -> None:
    """Ray's node message: our host estimate against the node's RAM the message states."""
    from .check import check

    total = exp.message.numbers.get("node_total_gib")
    report = check(config, framework=fw_name, gpus=gpus, model=model, gpu=exp.gpu or "h100", host_mem_gib=total)
    exp.check = report
    host = report.host
    if host is None:
        return
    exp.lines.append(f"we estimate {host.peak_gib:.0f} GiB per node at {host.when} ({host.largest_terms_text()} GiB)")
    if total is not None:
        exp.lines.append(f"the message: the node used {exp.message.numbers['node_used_gib']:.1f} of {total:.1f} GB")
        exp.predicted_oom = host.fits is False
        exp.lines.append("we predicted this host out-of-memory" if exp.predicted_oom else
                         "we predicted the node's RAM suffices: a miss of ours (a leak over steps, Ray's object "
                         "store or a checkpoint save are not in the estimate: docs/cost-model.md section 11.3)")
