"""The frameworks' published working configs (tests/data), as pasted arguments, and one- or two-key breaks of them.

Used by the fix property test (tests/test_fix_published.py) and benchmarks/bench_fix.py: a broken
real config is a published one with one or two of its batch or layout values multiplied by a small
odd factor, so that the published value is a divisor of the broken one (every repair domain holds
it) and the known break size bounds the repair size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import yaml
from doc_sections import rewrite_marked

DATA = Path(__file__).resolve().parent / "data"

# the values a user mistypes or scales wrongly, per framework (native keys)
BREAK_KEYS = {
    "verl": ["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "actor_rollout_ref.actor.ppo_mini_batch_size",
             "data.train_batch_size", "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu",
             "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
             "actor_rollout_ref.rollout.tensor_model_parallel_size"],
    "swift": ["per_device_train_batch_size", "gradient_accumulation_steps", "steps_per_generation",
              "generation_batch_size", "vllm_tensor_parallel_size", "global_batch_size", "micro_batch_size",
              "tensor_model_parallel_size"],
    "openrlhf": ["train.batch_size", "rollout.batch_size", "train.micro_batch_size", "rollout.micro_batch_size",
                 "vllm.tensor_parallel_size", "vllm.num_engines"],
    "trl": ["per_device_train_batch_size", "gradient_accumulation_steps", "per_device_eval_batch_size",
            "vllm_tensor_parallel_size"],
}
FACTORS = (3, 5, 7)


@dataclass
class Published:
    name: str
    framework: str  # as --framework takes it
    family: str  # verl | swift | openrlhf (the keys BREAK_KEYS names)
    values: dict[str, Any]  # native key -> value, in the order of the source
    gpus: int | None = None
    gpu: str | None = None
    model: str | None = None
    length_fraction: float = 1.0
    source: str = ""
    env: dict[str, Any] = field(default_factory=dict)

    def args(self, values: dict[str, Any] | None = None) -> list[str]:
        """The config as pasted: Hydra overrides (verl) or ``--flag value`` (ms-swift, OpenRLHF)."""
        vals = self.values if values is None else values
        if self.family == "verl":
            return [k if v is None and k.startswith("--") else f"{k}={_hydra(v)}" for k, v in vals.items()]
        out: list[str] = []
        if self.family == "swift":
            out = [f"{k}={v}" for k, v in self.env.items()] + ["swift", "rlhf"]
        for k, v in vals.items():
            if self.family == "openrlhf" and v is True:
                out.append(f"--{k}")
            elif self.family == "openrlhf" and v is False:
                continue
            else:
                out += [f"--{k}", ("true" if v else "false") if isinstance(v, bool) else str(v)]
        return out


def _hydra(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, list):
        return "[" + ",".join(_hydra(v) for v in value) + "]"
    return str(value)


def _verl(path: Path, framework: str) -> Iterator[Published]:
    for ex in yaml.safe_load(path.read_text()):
        values: dict[str, Any] = {}
        for item in ex["overrides"]:
            key, eq, raw = item.partition("=")
            if key.startswith("--"):  # --config-name=...: kept as pasted
                values[item] = None
                continue
            values[key] = yaml.safe_load(raw) if eq else None
        yield Published(ex["name"], framework, "verl", values, gpus=ex.get("gpus"), gpu=ex.get("gpu"),
                        model=ex.get("model"), length_fraction=float(ex.get("length_fraction", 1.0)),
                        source=ex.get("source", ""))


def _flags(path: Path, framework: str, family: str) -> Iterator[Published]:
    for name, ex in yaml.safe_load(path.read_text()).items():
        flags = dict(ex["flags"])
        env = {k: flags.pop(k) for k in list(flags) if k.isupper()}
        if family == "swift":  # the server's own sizes (rollout.*) are not training flags
            flags = {k: v for k, v in flags.items() if not k.startswith("rollout.")}
        yield Published(name, framework, family, flags, gpus=ex.get("gpus") if family == "openrlhf" else None,
                        gpu=ex.get("gpu"), model=ex.get("model"), source=ex.get("source", name), env=env)


def _trl(path: Path) -> Iterator[Published]:
    from rlbatch_solver.frameworks.trl.framework import parse_trl_args

    for ex in yaml.safe_load(path.read_text()):
        if ex["expect"] != "valid":
            continue  # recorded as invalid under 1.16 on purpose (the data file says why)
        values, _ = parse_trl_args(ex["args"])
        yield Published(ex["name"], "trl", "trl", values, gpus=ex.get("gpus"), gpu=ex.get("gpu"),
                        model=ex.get("model"), source=ex.get("source", ""))


def published_configs() -> list[Published]:
    """Every published working config we record, all frameworks."""
    out = list(_verl(DATA / "verl" / "fsdp_examples.yaml", "verl"))
    out += _verl(DATA / "verl" / "megatron_examples.yaml", "verl-megatron")
    out += _flags(DATA / "swift" / "hf_examples.yaml", "swift", "swift")
    out += _flags(DATA / "swift" / "megatron_examples.yaml", "swift-megatron", "swift")
    out += _flags(DATA / "openrlhf" / "examples.yaml", "openrlhf", "openrlhf")
    out += _trl(DATA / "trl" / "examples.yaml")
    return out


# GPUs of configs whose record names none but whose script's name does (verl Megatron tuning names)
GPU_FROM_NAME = (("h20", "h20"), ("96gb", "h20"), ("h800", "h800"))


def gpu_of(config: Published) -> str | None:
    """The GPU the config's source names: its record's, or its script's name's."""
    if config.gpu:
        return config.gpu
    for hint, gpu in GPU_FROM_NAME:
        if hint in config.name.lower():
            return gpu
    return None


@dataclass
class Break:
    config: Published
    changed: dict[str, tuple[Any, Any]]  # native key -> (published value, broken value)

    @property
    def size(self) -> int:
        return len(self.changed)

    def args(self) -> list[str]:
        values = dict(self.config.values)
        values.update({k: new for k, (_, new) in self.changed.items()})
        return self.config.args(values)

    @property
    def label(self) -> str:
        return f"{self.config.name}: " + ", ".join(f"{k} {o}->{n}" for k, (o, n) in self.changed.items())


def breaks(config: Published, keys: int = 1) -> Iterator[Break]:
    """Candidate breaks: ``keys`` of the config's batch/layout values multiplied by 3 (or 5, 7).

    Whether a candidate really breaks a rule is for the caller to check (with or without memory)."""
    present = [k for k in BREAK_KEYS[config.family] if isinstance(config.values.get(k), int)
               and not isinstance(config.values.get(k), bool) and config.values[k] > 0]
    if keys == 1:
        for k in present:
            for f in FACTORS:
                yield Break(config, {k: (config.values[k], config.values[k] * f)})
    else:
        for i, a in enumerate(present):
            for b in present[i + 1:]:
                yield Break(config, {a: (config.values[a], config.values[a] * 3),
                                     b: (config.values[b], config.values[b] * 3)})


TABLE_BEGIN = "<!-- published-memory-table: generated by `python tests/published.py`, checked by tests -->"
TABLE_END = "<!-- end of published-memory-table -->"
PHASES = ("rollout", "old_log_prob", "ref", "actor_update", "critic_update")


VERDICT_CELL = {"yes": "yes", "tight": "tight", "no": "**no**"}


def memory_table() -> str:
    """Markdown: the published configs whose source names the GPU and whose record holds every memory setting
    (verl's FSDP examples), and the example scripts read whole (tests/data/scripts/hardware.yaml), with the
    predicted peak per phase. Megatron records list batch and layout keys only, so their scripts stand in."""
    import rlbatch_solver as rb

    head = ("| config (source) | GPU x count | length share | " + " | ".join(PHASES) + " | usable GiB | fits |\n"
            "|---|---|---|" + "---|" * len(PHASES) + "---|---|\n")
    rows = []

    def row(name: str, source: str, gpu: str, fraction: float, r, gpus: int | None = None) -> str:
        values = r.values
        count = int(values.get("gpus_per_node", 0) or 0) * int(values.get("nnodes", 1) or 1) or (gpus or 0)
        peaks = [f"{r.memory.peaks[p] / 1024:.1f}" if p in r.memory.peaks else "-" for p in PHASES]
        return (f"| {name} ({source.replace('|', '/')}) | {gpu} x {count} | {fraction:g} | " + " | ".join(peaks)
                + f" | {r.memory.capacity_mib / 1024:.1f} | " + VERDICT_CELL[r.memory.verdict()] + " |")

    for cfg in published_configs():
        if cfg.framework != "verl" or not (cfg.gpu and cfg.model):
            continue
        r = rb.check(cfg.args(), framework=cfg.framework, gpus=cfg.gpus, model=cfg.model, gpu=cfg.gpu,
                     length_fraction=cfg.length_fraction)
        rows.append(row(cfg.name, cfg.source, cfg.gpu, cfg.length_fraction, r))
    for rel, hw in script_hardware().items():
        r = check_script(rel, hw)
        rows.append(row(rel, "tests/data/scripts", hw["gpu"], hw.get("length_fraction", 1.0), r))
    for point in memory_points():  # known misses (``predicted_memory``) included: the table shows them
        r = rb.check(point["args"], framework=point["framework"], gpus=point.get("gpus"), model=point["model"],
                     gpu=point["gpu"])
        rows.append(row(point["name"], "tests/data/measured, ran as published", point["gpu"], 1.0, r, point.get("gpus")))
    oom_rows = []
    for rep in oom_reports():
        r = check_oom_report(rep)
        oom_rows.append(row(rep.name, rep.url, rep.gpu, 1.0, r, rep.gpus))
    oom = ("\n\nPublished out-of-memory reports (each must be predicted not to fit: no, or tight):\n\n" + head
           + "\n".join(oom_rows))
    return TABLE_BEGIN + "\n\n" + head + "\n".join(rows) + oom + "\n\n" + TABLE_END


@dataclass
class OomReport:
    """A published out-of-memory report (an issue that states the config and the GPU)."""
    name: str
    framework: str
    url: str
    gpu: str
    model: str
    args: list[str]
    gpus: int | None = None


def oom_reports() -> list[OomReport]:
    """tests/data/<framework>/oom_reports.yaml: verl (Hydra overrides, or a script of tests/data/scripts with the
    reporter's overrides appended) and OpenRLHF (flags as posted)."""
    from rlbatch_solver.launch_script import read_launch_script

    out: list[OomReport] = []
    for rec in yaml.safe_load((DATA / "verl" / "oom_reports.yaml").read_text()):
        args, fw = list(rec["overrides"]), rec.get("framework", "verl")
        if "script" in rec:
            script = read_launch_script(DATA / "scripts" / rec["script"])
            changed = {a.split("=", 1)[0] for a in args}
            args = [a for a in script.args if a.split("=", 1)[0] not in changed] + args
            fw = script.framework
        out.append(OomReport(rec["name"], fw, rec["url"], rec["gpu"], rec["model"], args, rec.get("gpus")))
    for rec in yaml.safe_load((DATA / "openrlhf" / "oom_reports.yaml").read_text()):
        out.append(OomReport(rec["name"], "openrlhf", rec["url"], rec["gpu"], rec["model"], list(rec["args"]),
                             rec.get("gpus")))
    return out


def check_oom_report(rep: OomReport):
    import rlbatch_solver as rb

    return rb.check(rep.args, framework=rep.framework, gpus=rep.gpus, model=rep.model, gpu=rep.gpu)


def script_hardware() -> dict[str, dict[str, Any]]:
    """tests/data/scripts/hardware.yaml: script -> gpu, model, fits (today's prediction), length_fraction (the share
    of the worst case the script's data reaches, where its data set is known)."""
    return yaml.safe_load((DATA / "scripts" / "hardware.yaml").read_text())


def check_script(rel: str, hw: dict[str, Any]):
    """``check`` of a recorded script on its GPU, at its data's share of the maximum lengths."""
    import rlbatch_solver as rb
    from rlbatch_solver.launch_script import read_launch_script

    script = read_launch_script(DATA / "scripts" / rel)
    return rb.check(script.args, framework=script.framework, gpus=script.gpus, model=hw["model"], gpu=hw["gpu"],
                    length_fraction=hw.get("length_fraction", 1.0))


def margin_evidence() -> dict[str, Any]:
    """What the published runs say the safety margin may be, as a share of the GPU's memory, from the phases the
    whole margin applies to (every phase but a vLLM rollout, which is held to its own reservation): the largest
    predicted free share among reported OOMs that we predict under the GPU's memory (``low``: a margin below it
    would call a failing run safe), and the smallest among runs that ran (``high``: a margin above it would call
    a working run unsafe); scripts recorded "tight" are the band between and are left out of ``high``, as are
    measured runs whose memory we record as a known miss (``predicted_memory``)."""
    import rlbatch_solver as rb

    def free_share(memory) -> tuple[float, str]:
        shares = [((memory.total_mib - peak) / memory.total_mib, phase) for phase, peak in memory.peaks.items()
                  if memory.capacity_of(phase) == memory.capacity_mib]  # not a vLLM rollout's own line
        return min(shares)

    ran: list[tuple[float, str, str]] = []
    for rel, hw in script_hardware().items():
        if hw["fits"] is True:
            ran.append((*free_share(check_script(rel, hw).memory), rel))
    for point in memory_points():
        if point.get("predicted_memory", "yes") != "yes":
            continue  # a known miss of ours (its reason beside it): no evidence either way
        r = rb.check(point["args"], framework=point["framework"], gpus=point.get("gpus"), model=point["model"],
                     gpu=point["gpu"])
        ran.append((*free_share(r.memory), point["name"]))
    failed = [(*free_share(check_oom_report(rep).memory), rep.name) for rep in oom_reports()]
    failed_under = [f for f in failed if f[0] > 0]
    return {"low": max(failed_under) if failed_under else None, "high": min(ran)}


def measured_points() -> list[dict[str, Any]]:
    """The measured set (tests/data/measured/points.yaml): runs that ran as published, so they fit."""
    return yaml.safe_load((DATA / "measured" / "points.yaml").read_text())


def memory_points() -> list[dict[str, Any]]:
    """The measured points whose args are what ran, the memory evidence: not those a record marks ``unjudged`` (its
    source leaves out what decides memory, e.g. OpenRLHF's 2024 README rows give no vLLM engines), which the memory
    corpus counts neither way either."""
    return [p for p in measured_points() if not p.get("unjudged")]


if __name__ == "__main__":  # rewrite the table in docs/cost-model.md
    rewrite_marked(DATA.parents[1] / "docs" / "cost-model.md", TABLE_BEGIN, TABLE_END, memory_table())
