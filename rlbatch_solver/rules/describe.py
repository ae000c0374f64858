"""Render a rule set as Markdown (docs/rules-<framework>.md and ``rlbatch rules``)."""

from __future__ import annotations

from ..costmodel.phase import MEMORY_PHASES
from .base import RuleSet, Stage, stage_text


def rules_markdown(ruleset: RuleSet, title: str, intro: str = "") -> str:
    lines = [f"# {title}", ""]
    if intro:
        lines += [intro, ""]
    lines += [
        f"Rule set version: {ruleset.framework} {ruleset.version}. Generated from the code "
        "(`rlbatch rules --framework " + ruleset.framework + " --markdown`); a test keeps it in sync.",
        "",
    ]
    for stage in (*Stage, *MEMORY_PHASES):
        rules = [r for r in ruleset.rules if r.stage is stage]
        if not rules:
            continue
        lines += [f"## {stage.value}: {stage_text(stage)}", "", "| rule | message (numbers filled in) | source |",
                  "|---|---|---|"]
        for r in rules:
            sev = " (warning)" if r.severity.value == "warning" else ""
            msg = r.message.replace("|", "\\|")
            lines.append(f"| `{r.id}`{sev} | {msg} | `{r.source}` |")
        lines.append("")
    lines += ["## Variables", "", "| name in rules | native key | default | meaning |", "|---|---|---|---|"]
    for v in ruleset.variables.values():
        default = "unset" if v.optional and v.default is None else v.default
        lines.append(f"| `{v.name}` | `{v.key}` | {default} | {v.description} |")
    lines += ["", "## Derived quantities", "", "| name | meaning |", "|---|---|"]
    for d in ruleset.derived:
        lines.append(f"| `{d.name}` | {d.description} |")
    return "\n".join(lines) + "\n"
