"""``calibrate``: fit the cost model's efficiencies to one run's own log (and the config it ran)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..costmodel.phase import Phase
from ..calibration import Fit, Observation, Profile, fit, make_run
from ..costmodel.efficiency import DEFAULT_EFFICIENCY, GIB
from ..errors import InputError
from ..runlog import RunLog, read_log
from ..safe_input import output_file


@dataclass
class CalibrateReport:
    log_format: str
    steps: list[int]
    fit: Fit
    profile: Profile
    notes: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"log_format": self.log_format, "steps_used": self.steps, "fitted": self.fit.fitted,
                "efficiency_before": DEFAULT_EFFICIENCY.as_dict(), "efficiency_after": self.fit.efficiency.as_dict(),
                "phases": self.fit.phases, "profile": self.profile.path or None, "at_bound": self.fit.at_bound,
                "notes": self.notes}


def observation_from_log(log: RunLog, framework: str, config: Sequence[str] | Mapping[str, Any], *, gpu: str,
                         model: str, gpus: int | None) -> tuple[Observation, list[str]]:
    """The run the config describes, at the mean lengths the log reports, and what the log measured."""
    notes = []
    prompt, response = log.mean_lengths()
    if response is None:
        notes.append("the log gives no mean response length: the model's default share of the maximum is used")
    run = make_run(framework, config, gpu=gpu, model=model, gpus=gpus, prompt_mean=prompt, response_mean=response,
                   response_longest=log.longest_response())
    limit = run.spec.plan(run.values, Phase.ROLLOUT).response_len
    if run.response_longest is not None and run.response_longest < limit:
        notes.append(f"a step's longest response is {run.response_longest:,.0f} tokens (the log's median "
                     f"response_length/max), under the {limit:,}-token limit: the rollout is timed to it")
    groups = log.phase_groups()
    from ..frameworks import get_framework

    spg = get_framework(framework).optimizer_steps_per_rollout(run.values)
    if spg is not None:
        notes.append(f"the log times optimizer steps ({log.format}); one rollout is {spg} of them")
    step = log.step_seconds(spg or 1) if not groups else None
    peak = log.peak_memory_gib()
    peak_bytes = None
    p_max, r_max = log.max_lengths()
    if peak is not None and (p_max is None or r_max is None):
        notes.append("the log gives no longest prompt/response: memory is not fitted (a peak measured on shorter "
                     "sequences than the limits would hide the worst case)")
        peak = None
    elif peak is not None:
        plan = run.spec.plan(run.values, Phase.ACTOR_UPDATE)
        run.peak_fraction = (p_max + r_max) / max(1, plan.prompt_len + plan.response_len)
    if peak is not None:
        gib, kind = peak
        peak_bytes = gib * GIB
        if kind == "reserved":
            notes.append("the log's memory is the allocator's reserved peak (it includes cached blocks): "
                         "the fitted offset is an upper bound")
    if not groups and not step and peak_bytes is None:
        raise InputError("log", "the log has no phase times, step time or memory to fit.",
                         "give the log of a run that completed at least one step.")
    return Observation(run, groups, peak_bytes, step), notes


def calibrate(log_path: str | Path, config: Sequence[str] | Mapping[str, Any], *, framework: str, gpu: str,
              model: str, gpus: int | None = None, out: str | Path | None = None) -> CalibrateReport:
    log = read_log(log_path)
    obs, notes = observation_from_log(log, framework, config, gpu=gpu, model=model, gpus=gpus)
    result = fit([obs])
    profile = Profile(obs.run.gpu, result.efficiency, obs.run.framework, obs.run.model, str(log_path),
                      prompt_mean=obs.run.prompt_mean, response_mean=obs.run.response_mean)
    if result.at_bound:
        from ..costmodel.efficiency import BOUNDS

        shown = ", ".join(f"{n} = {getattr(result.efficiency, n):.3g} (bounds {BOUNDS[n][0]:g}-{BOUNDS[n][1]:g})"
                          for n in result.at_bound)
        notes.append(f"the fit ended at a bound: {shown}. The log's times are outside what these efficiencies can "
                     "explain (a term the model lacks, such as a long generation tail or an engine it does not "
                     "describe), so no profile was written; check the config and the log belong to the same run")
        out = None
        profile.path = ""
    if out is not None:
        path = output_file(out, "out", "a new file for the profile (--out profile.yaml)")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(profile.to_yaml(result.phases), encoding="utf-8")
        except OSError as e:
            raise InputError("out", f"cannot write {out} ({e.strerror}).", "pass --out with a writable path.")
        profile.path = str(path)
    return CalibrateReport(log.format, log.used_steps(), result, profile, notes)
