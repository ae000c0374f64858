"""Human-readable output (rich tables). JSON output lives in the CLI."""

from __future__ import annotations

import math

import re
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .costmodel.phase import Phase
from .frameworks.overrides import ListFlag, assignment_words
from .rules.base import RuleKind, format_message, stage_text
from .rules.ids import tied_followers
from .script_rewrite import shell_quoted

if TYPE_CHECKING:
    from .commands.calibrate import CalibrateReport
    from .commands.check import CheckReport, MemoryCheck
    from .commands.enumerate import EnumerateReport
    from .commands.explain import ExplainReport
    from .commands.explain_oom import OomExplanation
    from .commands.fix import FixReport
    from .commands.recommend import Choice, RecommendReport
    from .costmodel.host import HostReport
    from .commands.placement import PlacementSummary
    from .frameworks.base import Framework, Space
    from .scenario import Scenario
    from .solver.explain import Conflict

def shell_word(arg: str) -> str:
    """One exported argument as the shell must see it to pass it on unchanged: quoted when the shell would split,
    expand or glob it (``data.val_files=['a', 'b']``, ``trainer.logger=[console,wandb]``); a ``--flag value``
    pair quotes its value only. Double quotes where they suffice (a ``$NAME`` the script left unset still expands
    as it did there), else single quotes."""
    if isinstance(arg, ListFlag):
        return " ".join([arg.flag, *(shell_word(item) for item in arg.items)])
    if arg.startswith("-") and " " in arg:
        flag, _, value = arg.partition(" ")
        return f"{flag} {shell_word(value)}"
    return shell_quoted(arg)


def print_args(console: Console, args: list[str], prefix: str = "  ", sep: str = " \\\n  ") -> None:
    """Paste-ready arguments: shell-quoted, printed as written (no markup, no wrapping inside an argument)."""
    console.print(prefix + sep.join(shell_word(a) for a in args), markup=False, highlight=False, soft_wrap=True)


def _is_note(arg: str) -> bool:
    """A change said in words, not an argument to paste (``(drop --train.colocate_all)``, ``(no --flag)``)."""
    return arg.startswith("(") and arg.endswith(")")


def diff_word(arg: str) -> str:
    """One side of a change as ``fix`` prints it: an argument shell-quoted, a note in words as it is."""
    return arg if _is_note(arg) else " ".join(shell_word(w) for w in assignment_words(arg))


def print_paste(console: Console, args: list[str], prefix: str = "  ") -> None:
    """The changed arguments to paste over the user's, on one line; what cannot be pasted (a flag to drop) said after
    them in words, never quoted into the line."""
    words = [a for a in args if not _is_note(a)]
    notes = [a[1:-1] for a in args if _is_note(a)]
    if words:
        print_args(console, words, prefix=prefix, sep=" ")
    if notes:
        console.print(f"{' ' * (len(prefix) - len(prefix.lstrip()))}and in yours: " + "; ".join(notes),
                      markup=False, highlight=False, soft_wrap=True)


def print_repaired(console: Console, report: FixReport, indent: str = "", inline: bool = False,
                   write: str = "--write FILE") -> None:
    """A repair's arguments as fix and explain print them: where every argument the user wrote was a name the release
    refuses (``report.whole``), all of them, one line in place of the user's (a few to paste over arguments whose
    names they do not share would be wrong, and so the drops said beside them); else the changed ones to paste over
    the user's. ``inline``: the label and the arguments on one line; ``write``: how the user's script is written
    so."""
    if getattr(report, "whole", False):  # every argument was renamed: these are all of them, not a few to paste over
        console.print(f"{indent}in place of all your arguments (each was a name this release refuses; {write} writes "
                      "your script so):", markup=False, highlight=False)
        print_args(console, [a for a in report.native_after if not _is_note(a)], prefix=indent + "  ", sep=" ")
    elif inline:
        print_paste(console, report.native_after + _renamed_out(report), prefix=f"{indent}paste over yours: ")
    else:
        console.print(f"{indent}paste over yours:")
        print_paste(console, report.native_after + _renamed_out(report), prefix=indent + "  ")


def _renamed_out(report: FixReport) -> list[str]:
    """The user's arguments a repair renames (``report.renamed``: names the release refuses), each as a change in
    words: pasted over the user's arguments, the new names would stand beside the old ones, which the release still
    refuses (``--write`` takes them out: cli.fix)."""
    renamed = set(getattr(report, "renamed", []))
    said = " ".join(a for a in report.native_after if _is_note(a))  # a "(drop --key)" already takes it out
    words: list[str] = []
    for _, old, _ in report.diff:
        word = re.split(r"[\s=]", old, maxsplit=1)[0]
        if word.lstrip("-+") in renamed and word not in words and not re.search(rf"{re.escape(word)}\b", said):
            words.append(word)
    return [f"(take out {word} (renamed above))" for word in words]


def command_text(words: list[str], indent: str = "", background: bool = False) -> str:
    """A whole command as shell text: its start words as they are (environment, launcher), then one quoted argument
    per continued line, each indented by ``indent`` more than the first; ``background``: ended by `` &`` (a server
    the next command talks to)."""
    head, *args = words
    return f" \\\n{indent}  ".join([head, *(shell_word(a) for a in args)]) + (" &" if background else "")


def print_command(console: Console, words: list[str], background: bool = False) -> None:
    """A whole command, indented under the text before it."""
    console.print("  " + command_text(words, indent="  ", background=background), markup=False, highlight=False,
                  soft_wrap=True)


def print_check(console: Console, report: CheckReport) -> None:
    release = getattr(report, "release", "") or report.version
    head = (f"{report.framework} {report.version} rules" if release == report.version
            else f"{report.framework} {release} rules ({report.version}'s)")
    if report.valid:
        console.print(f"[bold green]VALID[/] — passes every one of the {head}.")
    else:
        warned = len(report.warnings)  # a warning is no rule broken: said apart from the count
        console.print(f"[bold red]INVALID[/] — breaks {len(report.errors)} of the {head}"
                      + (f" (and warns of {warned} more)" if warned else "") + ":")
    for v in [*report.errors, *report.warnings]:  # what stops the run first
        color = "red" if v.severity.value == "error" else "yellow"
        console.print(f"\n[{color}]{v.severity.value.upper()}[/] [bold]{v.rule}[/]")
        console.print(f"  {v.message}")
        console.print(f"  {'may fail' if getattr(v, 'tolerated', False) else 'fails'}: {stage_text(v.stage)}")
        console.print(f"  source: {v.source}")
    if getattr(report, "memory", None) is not None:
        print_memory_check(console, report.memory, report.framework, getattr(report, "host", None))
    _print_upgrade(console, report, "\n")
    for note in report.notes:
        console.print(f"\nnote: {note}")
    if report.ignored:
        shown = " ".join(report.ignored[:6]) + (" ..." if len(report.ignored) > 6 else "")
        console.print(f"note: ignored {len(report.ignored)} tokens that are not key=value: {shown}")


def _print_upgrade(console: Console, report: Any, before: str = "") -> None:
    """A config checked with an older release its keys (or its error message) show: what the newest refuses."""
    upgrade = getattr(report, "upgrade", None)
    line = upgrade.text() if upgrade is not None else None
    if line:
        console.print(f"{before}upgrade: {line}", markup=False, highlight=False)


def host_text(host: HostReport) -> str:
    """One line on the node's RAM: the peak per node, when, its largest terms, and the verdict."""
    head = f"host memory per node: {host.peak_gib:.0f} GiB at {host.when} ({host.largest_terms_text()} GiB)"
    if host.fits is None:
        return head + "; node RAM not given (--host-mem GiB to check it)"
    verdict = "fits" if host.fits else "OUT OF MEMORY"
    where = "" if host.ram_from == "given" else f"; RAM assumed: {host.ram_from} (--host-mem to give yours)"
    return head + f" against {host.limit_gib:.0f} GiB usable of {host.ram_gib:.0f}: {verdict}{where}"


def _error_lines(console: Console, framework: str, time: bool = True, memory: bool = True,
                 split: bool = False) -> None:
    """The cost model's error observed on published runs (docs/accuracy.md), where the measured set has one; a split
    placement's step is outside it (docs/async.md holds our ranking of splits against published runs)."""
    from .costmodel.accuracy import memory_error_text, time_error_text

    for line in ((time_error_text(framework) if time else None), (memory_error_text(framework) if memory else None)):
        if line:
            console.print(f"[dim]{line}[/]")
    if split and time:
        console.print("[dim]the measured set holds synchronous runs only: a pipelined step's error is not in it "
                      "(docs/async.md compares our ranking of splits with published runs)[/]")


def lengths_text(lengths: dict) -> str:
    """The mean lengths a step time assumes, and where they come from (check, recommend)."""
    if not lengths:
        return "at the default mean lengths (docs/cost-model.md section 4)"
    def one(kind: str) -> str:
        mean, top, src = lengths[kind], lengths[f"max_{kind}"], lengths[f"{kind}_from"]
        how = {"given": "given", "calibration": "from the calibration profile"}.get(src)
        stated = lengths.get(f"{kind}_given")
        if src == "given" and stated is not None and stated > top:  # priced at the limit: a response never runs past it
            how = f"given {stated:,.0f}, above the limit: taken at it"
        if how is None and kind == "response":
            given = lengths.get("longest_given")
            of_longest = (f", applied to the longest given ({given:,.0f}) as its limit"
                          if given is not None and given < top else "")
            how = (f"assumed: profile {lengths.get('profile', 'default')}{_chosen(lengths)}, "
                   f"{lengths.get('profile_how', '')}{of_longest}; "
                   f"{lengths.get('profile_why', 'docs/cost-model.md section 4')}")
        elif how is None:
            share = lengths.get("profile_prompt_fraction")
            how = (f"assumed: {lengths['data_prompt_why']}" if lengths.get("data_prompt") and mean < top
                   else f"assumed: profile {lengths.get('profile')}'s data mean" if lengths.get("profile_prompt")
                   and mean < top else f"assumed: {share:g} of the limit, the published runs' mean prompt share"
                   if share and mean < top else "assumed: the limit")
        return f"{kind} {mean:,.0f} of {top:,} ({how})"

    text = f"at mean {one('prompt')}, {one('response')}"
    if lengths.get("longest"):
        given = lengths.get("longest_given")
        cap = (f" (the limit: the longest given, {given:,.0f}, is above the limit of {lengths['max_response']:,})"
               if given is not None and given > lengths["max_response"]
               else " (the limit)" if lengths["longest"] >= lengths["max_response"]
               else " (at most the longest given)" if lengths.get("longest_given") is not None
               else " (assumed: the length profile's; state yours with --longest-response-len)")
        text += f"; a synchronous rollout waits for its longest response, ~{lengths['longest']:,.0f} tokens{cap}"
    if "assumed" in (lengths["prompt_from"], lengths["response_from"]):
        text += ("; set yours with --mean-prompt-len / --mean-response-len (a run's log has them, e.g. verl's "
                 "response_length/mean; `rlbatch calibrate` reads them) or name a profile with --response-profile")
    return text


def throughput_text(tokens_per_s: float, samples: int, step_s: float, lengths: dict) -> str:
    """The throughput line: tokens/s, and the tokens per step it counts, at the mean lengths the step is priced at
    (``tables.tokens_per_step``), not at the limits."""
    text = f"throughput: {tokens_per_s:,.0f} tokens/s at the mean lengths priced"
    if not lengths or not samples:
        return text + " (prompt + response tokens per step / step time)"
    return (f"{text}: {samples:,} samples x (prompt {lengths['prompt']:,.0f} + response {lengths['response']:,.0f}) "
            f"tokens per step / {step_s:.1f} s per step")


def _chosen(lengths: dict) -> str:
    """What chose the length profile, for the lengths line: the model's family, the data the config names."""
    by = lengths.get("profile_chosen")
    if by == "the data" and lengths.get("dataset"):
        return f" (from the data, {lengths['dataset'][:60]})"
    return {"the model": " (from the model's family)", "named": " (named)"}.get(by, "")


def pipeline_text(stages: list) -> str:
    """Asynchronous training: each pool's stage and idle ratio, and which side holds the step up (verl's fully-async
    guide: a high rollouter idle ratio and a low trainer one ask for more trainer GPUs, and the reverse)."""
    parts = ", ".join(f"{name} pool {s:.1f} s (idle {idle:.0%})" for name, s, idle in stages)
    slow = max(stages, key=lambda st: st[1])
    fast = min(stages, key=lambda st: st[1])
    text = f"pipelined on separate pools: {parts}; a step takes the slower one plus the weight sync"
    if slow is not fast and fast[2] >= 0.1:
        text += (f". The {slow[0]} pool is the bottleneck and the {fast[0]} pool idles {fast[2]:.0%} of each step: "
                 f"a split with more of the GPUs on the {slow[0]} side would balance them, where the layout allows "
                 "(recommend --placement split compares the splits)")
    return text


def outlook_text(mem: MemoryCheck) -> str:
    """Will it OOM? The verdict of the worst phase with its margin, in GiB and in units of the model's observed
    error, and the same phase's peak at the data's typical lengths where packing makes them differ.

    The worst phase is the worst as the verdict judges it (``MemoryCheck.outlook``: OOM, then tight, then fits),
    then the furthest over at the maximum lengths: a phase far over there but judged to fit at the data's lengths
    never takes the line (and the head) from a phase that breaks; it is named after it."""
    order = {"fits": 0, "tight": 1, "OOM": 2}
    phase = max(mem.peaks, key=lambda p: (order[mem.outlook(p)], -mem.margin_gib(p)))
    title = mem.titles.get(phase) or PHASE_TITLE.get(phase, phase)
    margin, errors = mem.margin_gib(phase), mem.margin_errors(phase)
    side = f"{margin:.1f} GiB to spare" if margin >= 0 else f"{-margin:.1f} GiB over"
    in_errors = "" if errors is None else (f", {abs(errors):.1f}x the model's observed error of "
                                           f"{math.exp(mem.error_log) - 1:.0%}")
    outlook = mem.outlook()
    head = {"fits": "fits", "tight": "TIGHT: may run out of memory", "OOM": "OUT OF MEMORY"}[outlook]
    if outlook == "tight" and mem.verdict(phase) == "no":  # past the margin too: the memory rule broke
        head = "TIGHT, over the line: likely out of memory (within the model's error, so it may still fit)"
    lines = {p: mem.capacity_of(p) for p in mem.peaks}
    lengths = mem.lengths
    typical = mem.typical_peaks.get(phase)
    if mem.fits_judged and mem.fits_at_data(phase):
        # the verdict read the data's lengths: say so, with the assumption and the worst case beside it
        over = (typical or 0) / 1024
        return (f"will it OOM? fits at the data's lengths: the {title} peaks at {over:.1f} of "
                f"{mem.capacity_of(phase) / 1024:.1f} GiB usable{usable_by(phase, lines)}, more than the model's "
                f"observed error of {math.exp(mem.error_log) - 1:.0%} under it (ASSUMED: {judged_lengths_text(lengths)}"
                f"). At the config's maximum lengths, the worst case it allows, it peaks at "
                f"{mem.peaks[phase] / 1024:.1f} GiB ({side}{in_errors}): every sequence at the limits would not fit")
    text = (f"will it OOM? {head}: the {title} peaks at {mem.peaks[phase] / 1024:.1f} of {mem.capacity_of(phase) / 1024:.1f}"
            f" GiB usable{usable_by(phase, lines)} ({side}{in_errors}), at the config's maximum lengths")
    if typical is not None and typical != mem.peaks[phase]:
        if mem.typical_judged:
            text += (f"; at the data's lengths ({judged_lengths_text(lengths)}) {typical / 1024:.1f} GiB"
                     + (", more than the model's error under the line: judged to fit" if mem.clears_at_data(phase)
                        else ""))
        else:
            text += (f"; at typical lengths without a source for both (mean prompt {lengths.get('prompt', 0):,.0f}, "
                     f"response {lengths.get('response', 0):,.0f} tokens, not judged by: --mean-prompt-len / "
                     f"--mean-response-len give yours; a packed micro batch at the 99.9th percentile of its summed "
                     f"lengths) {typical / 1024:.1f} GiB")
    at_data = [p for p in mem.peaks if p != phase and mem.fits_at_data(p)]
    if at_data:  # over the line at the maximum lengths only: judged to fit at the data's (check's warning)
        text += ("; over the line only at the config's maximum lengths, judged to fit at the data's: "
                 + ", ".join(f"the {mem.titles.get(p) or PHASE_TITLE.get(p, p)} ({mem.peaks[p] / 1024:.1f} GiB there, "
                             f"{min(mem.typical_peaks.get(p, mem.peaks[p]), mem.peaks[p]) / 1024:.1f} at the data's)"
                             for p in at_data))
    return text


def judged_lengths_text(lengths: Mapping[str, Any]) -> str:
    """The lengths the memory verdict judged a phase at and where each came from (check's ``judged_prompt_from`` /
    ``judged_response_from``: lengths.judged_sources), in words."""
    def said(source: str | None, profile_words: str) -> str:
        kind, _, name = (source or "").partition(":")
        if kind == "data":
            return f"the {name} data's published mean prompt"
        if kind == "profile":
            return profile_words.format(name=name)
        return "given by you" if kind in ("given", "") else f"from the {kind}"
    prompt = said(lengths.get("judged_prompt_from"), "the {name} profile's run with its longest responses")
    response = said(lengths.get("judged_response_from"), "the {name} profile's law at the longest of its published runs")
    return (f"packed micro batches at the 99.9th percentile of their summed lengths, prompts at a mean of "
            f"{lengths.get('judged_prompt') or lengths.get('prompt', 0):,.0f} tokens ({prompt}), responses at a mean of "
            f"{lengths.get('judged_response') or 0:,.0f} ({response}); --mean-prompt-len / --mean-response-len give "
            f"yours")


def print_memory_check(console: Console, mem: MemoryCheck, framework: str = "", host: HostReport | None = None) -> None:
    lines = {p: mem.capacity_of(p) for p in mem.peaks}
    usable = f"{mem.capacity_mib / 1024:.1f} GiB usable{usable_by('', lines)}" + "".join(
        f", {lines[p] / 1024:.1f}{usable_by(p, lines)}," for p in mem.peaks if lines[p] != mem.capacity_mib)
    table = Table(title=f"predicted memory per GPU on {mem.gpu} ({mem.model}): {usable} of {mem.total_mib / 1024:.1f} "
                        "GiB")
    for col in ("phase", "peak GiB", "fits", "largest terms (GiB)"):
        table.add_column(col)
    for phase, peak in mem.peaks.items():
        over = (peak - mem.capacity_of(phase)) / 1024
        terms = ", ".join(f"{t} {v / 1024:.1f}" for t, v in mem.largest_terms(phase))
        fits = {"yes": "[green]yes[/]", "tight": f"[yellow]tight: {over:.1f} into the margin[/]",
                "no": f"[red]no, {over:.1f} over[/]"}[mem.verdict(phase)]
        table.add_row(mem.titles.get(phase) or PHASE_TITLE.get(phase, phase), f"{peak / 1024:.1f}", fits, terms)
    if host is not None:  # the node's RAM: per node, against its own line
        fits = ("[dim]RAM not given[/]" if host.fits is None else "[green]yes[/]" if host.fits else
                f"[red]no, {host.peak_gib - host.limit_gib:.0f} over[/]")
        table.add_row("host RAM per node", f"{host.peak_gib:.1f}", fits, escape(host.largest_terms_text(1)))
    console.print()
    console.print(table)
    console.print(outlook_text(mem), markup=False, highlight=False)
    if host is not None:
        console.print(host_text(host), markup=False, highlight=False)
    if mem.seconds:
        parts = ", ".join(f"{PHASE_TITLE.get(p, p)} {t:.1f}" for p, t in mem.seconds.items() if t >= 0.05)
        console.print(f"predicted step time: {mem.step_s:.1f} s ({parts}) {lengths_text(mem.lengths)}; "
                      "`rlbatch calibrate` fits it to your own run's log")
        if mem.stages:
            console.print(pipeline_text(mem.stages))
    if framework:
        _error_lines(console, framework, time=bool(mem.seconds), split=bool(mem.stages))


# native key words -> column words after the framework's own (``Framework.column_words``)
_WORDS = (("_", " "),)


def _title(fw: Framework, name: str) -> str:
    """A short column title from the native key: its role (actor, ref, rollout, vllm, ...) and last part."""
    key = fw.native_key(name)
    parts = [p for p in key.split(".") if p not in ("megatron", "actor_rollout_ref", "data", "ds")]
    last = parts[-1] if parts else key
    for long, short in fw.column_words + _WORDS:
        last = last.replace(long, short)
    role = parts[-2] if len(parts) > 1 else ""
    return f"{role} {last}".strip()


def enum_columns(fw: Framework, space: Space | None, solutions: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Columns of the enumerate table: the space's free variables in native key names, then derived values
    (``Framework.derived_columns``).

    A variable is free when its domain has more than one value and no search tie makes it follow
    another (``search.tie.<name>``). A framework with ``table_columns`` (verl FSDP: the seed guide's) keeps those,
    less the ones no solution sets.
    """
    derived = {n for n, _ in fw.derived_columns}
    if fw.table_columns:
        return [c for c in fw.table_columns if any(s.get(c[0]) is not None for s in solutions) or c[0] in derived]
    tied = tied_followers(getattr(space, "extra_rules", []))
    domains = getattr(space, "domains", {}) or {}
    free = [n for n in fw.ruleset.variables if n in domains and len(domains[n]) > 1 and n not in tied]
    free = [n for n in free if len({s.get(n) for s in solutions}) > 1 or len(free) <= 8]
    cols = [(n, _title(fw, n)) for n in free]
    have = {n for n, _ in cols}
    env_names = {d.name for d in fw.ruleset.derived}
    if solutions:
        env_names |= set(fw.column_values(fw.ruleset.full_env(solutions[0])))
    cols += [(n, t) for n, t in fw.derived_columns if n in env_names and n not in have]
    return cols


def _table(titles: list[str], rows: list[list[str]]) -> Table:
    table = Table(show_lines=False)
    for title in titles:
        table.add_column(title, justify="right")
    for cells in rows:
        table.add_row(*cells)
    return table


def _natural_width(console: Console, table: Table) -> int:
    """The width a table takes unconstrained (rich's own measure stops at the console's width)."""
    from rich.measure import Measurement

    return Measurement.get(console, console.options.update_width(10_000), table).maximum


def short_titles(titles: list[str]) -> list[str]:
    """Column titles of a few letters for a narrow table, each once (a legend spells them out): a one-word title's
    first five letters, else each word's initial, a word in capitals whole ("rollout TP" -> "rTP", "logprob micro" ->
    "lm", "micro/gpu" -> "mg"); a title met twice gets a number."""
    out: list[str] = []
    for title in titles:
        words = [w for w in re.split(r"[\s/_.]+", title) if w]
        short = words[0][:5] if len(words) == 1 else "".join(w if w.isupper() else w[0] for w in words)
        taken, n = short, 2
        while taken in out:
            taken, n = f"{short}{n}", n + 1
        out.append(taken)
    return out


def _column_key(fw: Framework, name: str) -> str:
    """The native key a column shows, where it is a rule variable; for a derived value, what it holds
    (``Framework.column_notes``), else ''."""
    return fw.native_key(name) if name in fw.ruleset.variables else dict(fw.column_notes).get(name, "")


def solution_columns(fw: Framework, sol: dict[str, Any], ruleset, columns: list[tuple[str, str]]) -> dict[str, Any]:
    env = ruleset.full_env(sol)
    row = {name: sol.get(name, env.get(name)) for name, _ in columns}
    row.update(fw.column_values(env))
    return row


def _cell(fw: Framework, name: str, value: Any) -> str:
    if value is None:
        return ""
    if name in fw.ruleset.variables:
        value = fw.native_value(name, value)
    if value is True or value is False:
        return "on" if value else "off"
    return str(value)


def print_enumerate(console: Console, report: EnumerateReport, scenario: Scenario, show: int) -> None:
    from .commands.recommend import answer_framework

    fw = answer_framework(report)  # the release whose rules listed them (--framework verl==0.7.1: 0.7.1)
    done = "complete" if report.complete else f"incomplete ({report.status})"
    memory = getattr(report, "memory_applied", False)
    ram = getattr(report, "host_mem_gib", None)
    # each line as check and recommend say it: the training phases', and a vLLM rollout's where it differs
    lines = getattr(report, "phase_capacity_mib", {}) or {}
    usable = (f"{report.capacity_mib / 1024:.1f} GiB usable per GPU{usable_by('', lines) or ', every phase'}" + "".join(
        f", {lines[p] / 1024:.1f}{usable_by(p, lines)}" for p in lines if lines[p] != report.capacity_mib))
    what = (f"valid configs that fit {report.gpu} ({usable})"
            + (f" and a node's {ram:g} GiB of RAM" if ram is not None else "") if memory else "valid configs")
    console.print(
        f"{report.count} {what} for {fw.name} {fw.version} on {scenario.total_gpus} GPU"
        f"{'s' if scenario.total_gpus != 1 else ''} "
        f"({done}; {report.raw_size:,} raw combinations, {report.wall_time_s:.2f} s)."
    )
    for note in getattr(report, "notes", []):
        console.print(f"note: {note}", markup=False, highlight=False)
    if memory:
        console.print("peak / spare: GiB per GPU of each config's phase with the least headroom (--json names it)")
        _print_enumerate_host(console, report)
    else:
        console.print("memory not applied: the rules only (give --gpu and --model to list only configs that fit)")
    if not report.solutions:
        return
    ruleset = fw.ruleset.extended(getattr(report.space, "extra_rules", []) or [])
    cols = enum_columns(fw, report.space, report.solutions)
    titles = [title for _, title in cols] + (["peak", "spare"] if memory else [])  # GiB of the tightest phase
    rows = []
    for i, sol in enumerate(report.solutions[:show]):
        row = solution_columns(fw, sol, ruleset, cols)
        cells = [_cell(fw, k, row.get(k)) for k, _ in cols]
        if memory:
            fit = report.fits[i]
            cells += [f"{fit['peak_mib'] / 1024:.1f}", f"{fit['headroom_mib'] / 1024:.1f}"]
        rows.append(cells)
    table = _table(titles, rows)
    if _natural_width(console, table) > console.width:  # a pipe or a narrow terminal: rich would cut the titles
        short = short_titles(titles)
        table = _table(short, rows)
        keys = [_column_key(fw, name) for name, _ in cols] + ["", ""]
        console.print(table)
        width = max(len(a) for a in short)
        console.print("columns:", markup=False, highlight=False)
        for a, t, k in zip(short, titles, keys):
            if a != t:
                console.print(f"  {a:<{width}}  {t}" + (f": {k}" if k else ""), markup=False, highlight=False)
    else:
        console.print(table)
    if report.count > show:
        console.print(f"... {report.count - show} more (--show N, or --json for all).")
    console.print("\nfirst config as " + ("overrides:" if fw.syntax == "hydra" else "arguments:"))
    print_args(console, report.native[0])


def _print_enumerate_host(console: Console, report: EnumerateReport) -> None:
    """enumerate's host-RAM line: whether the node's RAM was checked, and what it left out (with what would help
    when it left out every config)."""
    ram = getattr(report, "host_mem_gib", None)
    if ram is None:
        console.print("host RAM not checked: --host-mem GiB (or the scenario's host_mem_gib) lists only the configs "
                      "whose host memory (CPU offload, sleeping engines' weights, model loading) fits a node",
                      markup=False, highlight=False)
        return
    least, most = report.host_least, report.host_most
    usable = (least or most).limit_gib if (least or most) is not None else None
    line = f"host RAM checked against {ram:g} GiB per node" + (f" ({usable:.0f} usable)" if usable else "") + ": "
    if report.host_excluded:
        line += (f"{report.host_excluded} valid config(s) that fit the GPUs left out, the least of them needs "
                 f"{least.peak_gib:.1f} GiB at {least.when} ({least.largest_terms_text(1)} GiB)")
        if most is not None:
            line += f"; the most any listed config needs: {most.peak_gib:.1f} GiB at {most.when}"
    elif most is not None:
        line += f"every valid config fits; the most any needs: {most.peak_gib:.1f} GiB at {most.when}"
    else:
        line += "no valid config to check"
    console.print(line, markup=False, highlight=False)
    if report.host_excluded and not report.solutions:
        console.print("  what would help: " + "; ".join(host_helps(least)), markup=False, highlight=False)


def print_conflict(console: Console, conflict: Conflict, space: Space | None, fw: Any = None,
                   headed: bool = False) -> None:
    """The rules no config can satisfy together: each with its numbers where the fixed values give them all (else its
    explanation), and the fixed values they read under the framework's own keys (``fw``; None: the variables').
    ``headed``: the caller has printed its own "No valid config" line."""
    lead = "" if headed else "[bold red]No valid config.[/] "
    if not conflict.rules:
        if conflict.status == "unknown":  # the whole search was proven infeasible; isolating its rules ran out of time
            console.print("  the rules that conflict were not isolated within the time limit (a longer --time-limit "
                          "names them)", markup=False)
        else:
            console.print(f"[red]No valid config[/] (solver status: {conflict.status}).")
        return
    if conflict.each_alone:
        console.print(lead + ("The fixed values break " if lead else "  The fixed values break ") + (
            "this rule:" if len(conflict.rules) == 1 else "each of these rules on its own:"))
    else:
        # a set the time limit left unnarrowed holds rules that may not matter: "drop any one" is not said of it
        why = ("a minimal set; drop any one and the rest can hold" if conflict.proven_minimal else
               "together; the time limit ran out before they were narrowed to a minimal set")
        console.print(lead + ("" if lead else "  ") + f"These rules conflict ({why}):")
    fixed = {k: v[0] for k, v in space.domains.items() if len(v) == 1 and v[0] is not None}
    # and a derived quantity whose inputs are all fixed (a job's training ranks from NPROC_PER_NODE x NNODES)
    fixed.update({k: v for k, v in getattr(conflict, "fixed", {}).items()
                  if k not in fixed and isinstance(v, (int, float)) and not isinstance(v, bool)})
    missing: set[str] = set()

    def named(key: str) -> str:  # a fixed value shows its number, a searched one its name
        missing.add(key)
        return key

    for r in conflict.rules:
        missing.clear()
        numbers = format_message(r.message, fixed, missing=named)
        text = numbers + (f" ({r.explanation})" if r.explanation else "") if not missing else r.explanation or numbers
        console.print(f"  [bold]{r.id}[/] ({r.stage.value}): {escape(text)}")
        console.print(f"     source: {r.source}")
    names = set().union(*[r.reads() for r in conflict.rules])
    variables = fw.ruleset.variables if fw is not None else {}
    derived = {d.name: d.description for d in fw.ruleset.derived} if fw is not None else {}
    shown = {(variables[k].key if k in variables else derived.get(k) or k):
             fw.native_value(k, fixed[k]) if k in variables else fixed[k] for k in sorted(names) if k in fixed}
    if shown:
        console.print("  with fixed values: " + ", ".join(f"{k}={v}" for k, v in shown.items()), markup=False,
                      highlight=False)


def _catalog_table(names: list[str], columns: tuple[str, ...]) -> Table:
    """A catalog table that fits 80 columns without cutting a name (what the user types next): the name column
    never wraps or shortens; the other columns wrap (fold) rather than lose characters."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 1), pad_edge=False, collapse_padding=True)
    table.add_column(columns[0], no_wrap=True, min_width=max(map(len, names), default=4))
    for col in columns[1:]:
        table.add_column(col, overflow="fold")
    return table


def _count(x: int, unit: int) -> str:
    """Thousands at a glance from 10,000 up: a vocabulary in 1000s (152064 -> 152k), a context length in 1024s
    as models state it (131072 -> 128k); smaller counts whole (4096)."""
    return f"{x / unit:.0f}k" if x >= 10_000 else str(x)


def print_gpus(console: Console, gpus: list) -> None:
    table = _catalog_table([g.name for g in gpus],
                           ("name", "GPU", "mem GiB", "BF16 TF/s", "HBM GB/s", "link", "GB/s"))
    for g in gpus:
        table.add_row(g.name, g.display_name, f"{g.memory_gib:.1f}", f"{g.bf16_tflops:g}", f"{g.hbm_bandwidth_gbps:g}",
                      g.intra_node, f"{g.intra_node_bandwidth_gbps:g}")
    console.print(table)


def print_models(console: Console, cards: list) -> None:
    """Model cards; parameters in billions (a mixture of experts: total/active)."""
    table = _catalog_table([c.name for c in cards],
                           ("name", "params", "layers", "hidden", "heads", "kv", "vocab", "ctx"))
    for c in cards:
        total, active = c.total_params() / 1e9, c.active_params() / 1e9
        params = f"{total:.1f}B" if abs(total - active) < 0.005 else f"{total:.0f}B/{active:.0f}B"
        table.add_row(c.name, params, str(c.num_hidden_layers), str(c.hidden_size), str(c.num_attention_heads),
                      str(c.num_key_value_heads), _count(c.vocab_size, 1000), _count(c.max_position_embeddings, 1024))
    console.print(table)


# ----------------------------------------------------------------------------- recommend
GIB = 2**30
PHASE_TITLE = {p: p.label for p in Phase}


def _gib(x: float) -> str:
    return f"{x / GIB:.1f}"


def usable_by(phase: str, lines: dict[str, float]) -> str:
    """Whose usable memory a figure is, where one answer has two (``lines``: phase -> its line): the training phases'
    (the GPU less the safety margin) or the rollout engine's (vLLM reserves its budget whole at start-up: only the
    margin's fixed part is kept, MemoryReport.usable_for); '' where every phase has the same line."""
    if len(set(lines.values())) < 2:
        return ""
    training = {v for p, v in lines.items() if p != Phase.ROLLOUT}
    if phase == Phase.ROLLOUT and lines[phase] not in training:
        return " by the rollout engine (vLLM's own budget: only the fixed margin kept)"
    return " by the training phases"


def _best_line(best: Choice) -> str:
    """The one number and the edge: step time, throughput, and the phase closest to its memory line (whose line it
    is, where the rollout's differs from the training phases'; and where that phase runs on GPUs of its own)."""
    tight = max(best.memory, key=lambda p: best.memory[p].peak(p) / max(1.0, best.memory[p].usable_for(p)))
    r = best.memory[tight]
    lines = {p: round(m.usable_for(p) / 2**20) for p, m in best.memory.items()}
    titles = getattr(best, "titles", None) or {}
    where = f"{PHASE_TITLE.get(tight, tight)}, the tightest phase"
    if tight in titles:  # a rollout server's GPU (check.server_titles): not one the trainer runs on
        own = re.search(r"\((.*)\)", titles[tight])
        where = (f"{PHASE_TITLE.get(tight, tight)} on the {own.group(1) if own else titles[tight]}, apart from the "
                 "training GPUs: the tightest phase")
    return (f"best: {best.step_time_s:.1f} s per step, {best.tokens_per_s:,.0f} tokens/s; peak {_gib(r.peak(tight))} of "
            f"{_gib(r.usable_for(tight))} GiB usable{usable_by(tight, lines)} ({where})")


def _recommend_details(console: Console, report: RecommendReport) -> None:
    """recommend --verbose: the YAML copy, memory and time per phase, the lengths assumed, the error bars."""
    from .frameworks import get_framework

    best = report.best
    fragment = get_framework(report.framework).export_yaml(best.native)
    if fragment:
        console.print("or, in a YAML config file:")
        console.print("\n".join("  " + line for line in fragment.rstrip().splitlines()), markup=False)
    mem = Table(title="memory per GPU, by phase (GiB)")
    for col in ("phase", "peak", "capacity", "largest terms"):
        mem.add_column(col)
    for phase, r in best.memory.items():
        terms = ", ".join(f"{name} {_gib(b)}" for name, b in r.largest_terms(phase, 3))
        mem.add_row(PHASE_TITLE.get(phase, phase), _gib(r.peak(phase)), _gib(r.usable_for(phase)), terms)
    console.print(mem)
    tt = Table(title="time per RL step (s)")
    tt.add_column("phase")
    tt.add_column("seconds", justify="right")
    for phase, sec in best.phase_seconds.items():
        tt.add_row(PHASE_TITLE.get(phase, phase), f"{sec:.1f}")
    tt.add_row("[bold]step[/]" if best.stages else "[bold]total[/]", f"[bold]{best.step_time_s:.1f}[/]")
    console.print(tt)
    if best.stages:
        console.print(pipeline_text(best.stages))
    console.print(f"step times {lengths_text(report.lengths)}")
    console.print(throughput_text(best.tokens_per_s, best.samples, best.step_time_s, report.lengths))
    _error_lines(console, report.framework, split=bool(best.stages))


def print_recommend(console: Console, report: RecommendReport, verbose: bool = False) -> None:
    from .commands.recommend import best_command, companion_commands, from_command

    """The answer first (the best config's step time and tightest phase, what was kept, the config to run), then
    the alternatives; ``verbose`` adds the details: the YAML copy, memory and time per phase, lengths, error bars."""
    sc = report.scenario
    gpu = report.gpu
    from .solver.proof import no_fit_is_proven

    console.print(
        f"[bold]{report.framework} {report.version}[/] · {sc.algorithm or 'as configured'} · {report.model.name} on "
        f"{sc.total_gpus}x {gpu.display_name} ({gpu.memory_gib:.0f} GiB) · prompt {sc.prompt_length}, "
        f"response {sc.response_length}"
    )
    if report.placement is not None:
        proof = ("proven best of every layout" if report.proven else "best of the layouts solved (see below)")
        solved = len(report.placement.options)
        console.print(f"objective: {sc.objective} · --placement {report.placement.asked} · {proof} · "
                      f"{solved} layout{'' if solved == 1 else 's'} solved")
    else:
        unfit = getattr(report, "host_unfit", None)
        if not report.choices and unfit is not None:  # the rules and the GPUs hold: the node's RAM excluded them all
            proof = (f"valid configs exist, but none fits the node's RAM (the least of those excluded needs "
                     f"{unfit.peak_gib:.1f} GiB, {unfit.limit_gib:.1f} usable)")
        elif not report.choices and no_fit_is_proven(report):
            proof = "proven infeasible: no config of the space is valid"
        elif report.proven:
            proof = "proven optimal"
        elif not report.choices:
            proof = f"none found within the time limit ({report.status})"
        else:
            proof = f"best found, not proven ({report.status})"
        console.print(f"objective: {sc.objective} · {proof} · {report.raw_size:,} raw combinations · "
                      f"solved in {report.wall_time_s:.2f} s")
    if report.choices:
        console.print(_best_line(report.best), markup=False, highlight=False)
        if sc.objective == "gpus" and report.placement is None:  # the answer to "how few GPUs?", said first
            from .commands.recommend import answer_framework, gpu_count_keys, gpus_used

            fw = answer_framework(report)
            used = gpus_used(fw, report.best.values)
            domains = getattr(report.space, "domains", None) or {}
            searched = any(len(domains.get(name, ())) > 1 for name in fw.gpu_count_vars)
            keys = gpu_count_keys(fw)
            why = ("" if used < sc.total_gpus else
                   " (fewer break a rule or do not fit)" if searched else
                   f" (the count is fixed: --search {keys['gpus_per_node']}=1,2,4,8 lets it choose fewer)"
                   if keys else f" ({fw.name} runs on the --gpus given)")
            console.print(f"gpus: the best config uses {used} of the {sc.total_gpus} GPUs{why}", markup=False,
                          highlight=False)
    if getattr(report, "margin_note", ""):
        console.print(f"memory: {report.margin_note}", markup=False, highlight=False)
    if report.batch_note:
        console.print(f"batch: {report.batch_note}", markup=False, highlight=False)
    for note in [*report.key_notes, *(getattr(report.space, "notes", None) or [])]:
        console.print(f"note: {note}", markup=False, highlight=False)
    if getattr(report, "host", None) is not None:
        console.print(host_text(report.host), markup=False, highlight=False)
    if report.start is not None:
        print_start(console, report)
    if not report.choices:
        print_no_fit(console, report)
        if report.placement is not None:  # which layouts were solved, and which the time left out
            print_placement(console, report.placement)
        return
    best = report.best
    from .frameworks import get_framework

    fw = get_framework(report.framework)
    changed_env: list[str] = []
    whole = from_command(report, changed_env) if report.start is not None else None
    if report.start is not None and report.start.verdict == "keep":  # the answer is the user's config, unchanged
        script = "; --write leaves your script as it is" if report.start.command else ""
        console.print(f"\n[bold green]Best config[/]: yours, as it is (nothing in the search space is faster{script}):")
        if report.start.command:
            print_args(console, report.start.command, sep=" ")
        else:
            print_args(console, report.start.own)
    elif whole:  # recommend --from, arguments that paste only as a whole command (environment words, a launcher's)
        console.print("\n[bold green]Best config[/] (your command with the changes above; --write puts them in your "
                      "script):")
        print_command(console, whole)
        for note in changed_env:
            console.print(f"note: {note}", markup=False, highlight=False)
    elif report.start is not None:  # recommend --from: the user's script has the rest (--write rewrites it)
        # --write rewrites a launch script, not a YAML config (it refuses one): said only where it applies
        write = "; --write puts them in your script" if report.start.command else ""
        console.print(f"\n[bold green]Best config[/] (your arguments with the changes above{write}):")
        from .commands.recommend import start_arguments

        print_args(console, start_arguments(report))
        entry = fw.entry_point(best.values)
        if entry:
            console.print(f"run it with: {entry}")
    else:
        first = companion_commands(report)
        if first:
            console.print("\n[bold green]Best config[/]: first start (on GPUs of its own; the trainer waits for it)")
            for words in first:
                print_command(console, words, background=True)
        from .costmodel.lengths import dataset_of

        example_timed = (report.lengths.get("profile_chosen") == "the data" or report.lengths.get("data_prompt")) \
            and not dataset_of({k.lstrip("-"): v for k, v in sc.fixed.items()})
        data = ("; the time above is at this data's lengths: put yours and check it, or --set its key"
                if example_timed else "; put yours")
        console.print(f"\n[bold green]Best config[/], as a command to run (data and reward: "
                      f"{escape(fw.example_inputs_source)}{data}):")
        print_command(console, best_command(report))
    _print_check_line(console, report)
    if verbose:
        _recommend_details(console, report)
    if best.waste:
        console.print(f"[yellow]note:[/] no config of the search space avoids padding; this one pads: {best.waste}")
    if report.scenario.price_per_gpu_hour:
        cost = best.step_time_s / 3600 * sc.total_gpus * sc.price_per_gpu_hour
        console.print(f"cost: {cost:.3f} per step at {sc.price_per_gpu_hour} per GPU-hour")
    if report.placement is not None:
        print_placement(console, report.placement)
    if len(report.choices) > 1:
        console.print()
        alt = Table(title="alternatives (next best, in proven order)" if report.proven else "alternatives")
        for col in ("#", "step s"):
            alt.add_column(col)
        alt.add_column("why it lost", max_width=24)  # words wrap between words; the keys keep the room
        alt.add_column("differs in", overflow="fold")  # the keys the user types next: wrapped, never cut
        for c in report.choices[1:]:
            alt.add_row(str(c.rank), f"{c.step_time_s:.1f}", why_lost(best, c), differs(best, c).replace(", ", "\n"))
        console.print(alt)
    if report.left_out:
        console.print(left_out_line(report), markup=False, highlight=False)
    if not verbose:
        console.print("details (YAML copy, memory and time per phase, lengths assumed, error bars): --verbose",
                      markup=False, highlight=False)


def _print_check_line(console: Console, report: RecommendReport) -> None:
    """How to check the answer at the lengths it was priced at (recommend.check_line): the options go to check, the
    command above stays the framework's."""
    from .commands.recommend import check_line, companion_commands

    words = check_line(report)
    if not words:
        return
    line = " ".join(shell_word(w) for w in words)
    target = ("<your script>" if report.start is not None else
              "run.sh  (the commands above, saved as a script)" if companion_commands(report) else
              "-- <the command above>")
    console.print(f"check it at the lengths it was priced at (the command has no flag for them): {line} {target}",
                  markup=False, highlight=False, soft_wrap=True)


def print_placement(console: Console, summary: PlacementSummary) -> None:
    """recommend --placement: every layout's best, and the verdict with its reasons."""
    table = Table(title=f"placements compared (--placement {summary.asked}: one solve per layout)")
    for col in ("layout", "step s", "samples", "tokens/s", "pools (s per step, idle)", "status"):
        table.add_column(col)
    for o in summary.options:
        best = o.best
        if best is None:
            why = "no answer in its share of the time" if o.report.status == "unknown" else "nothing valid fits"
            if o.report.status != "unknown" and o.report.conflict is not None and o.report.conflict.ids:
                why += ": " + ", ".join(o.report.conflict.ids)  # the rules no config of the layout keeps together
            table.add_row(o.label, "-", "-", "-", "-", why)
            continue
        turns = "two pools, in turn" if o.placement == "split" else "one pool, phases in turn"
        pools = ", ".join(f"{n} {s:.0f} ({i:.0%})" for n, s, i in best.stages) or turns
        status = "proven best" if best.proven else "best found, not proven"
        table.add_row(o.label, f"{best.step_time_s:.1f}", f"{o.samples:,}", f"{best.tokens_per_s:,.0f}", pools,
                      status)
    console.print(table)
    console.print(f"{summary.scope()}.")
    console.print(summary.verdict())


def print_start(console: Console, report: RecommendReport) -> None:
    """``recommend --from``: the user's own config, judged like the choices, and what the best one gains."""
    start, best = report.start, report.best
    console.print(f"\n[bold]Your config[/] (kept: model, GPUs, lengths, algorithm, batch per step; "
                  f"free: {', '.join(k.removeprefix('actor_rollout_ref.') for k in start.searched) or 'nothing'}):")
    if start.broken:
        console.print(f"  [bold red]does not run[/]: breaks {len(start.broken)} rule(s)")
        for v in start.broken[:5]:
            console.print(f"    [bold]{v.rule}[/]: {v.message}")
    else:
        console.print(f"  runs: step {start.step_time_s:.1f} s, {start.tokens_per_s:,.0f} tokens/s")
    if start.waste:
        console.print(f"  [yellow]pads:[/] {start.waste}")
    if start.verdict == "no-config":
        return
    if start.verdict == "does-not-run":
        console.print(f"  the best config below runs: step {best.step_time_s:.1f} s")
    elif start.verdict == "faster":
        console.print(f"  the best config below is {start.step_time_s / best.step_time_s:.2f}x faster "
                      f"({start.step_time_s - best.step_time_s:.1f} s less per step)")
    elif start.verdict == "within-error":
        console.print(f"  the best config below is only {100 * (1 - best.step_time_s / start.step_time_s):.1f}% faster "
                      f"({start.step_time_s - best.step_time_s:.1f} s less per step), far inside the cost model's "
                      "error (docs/accuracy.md): keep yours unless the changes below cost you nothing")
    elif start.verdict == "tight":
        faster = (f"{100 * (best.step_time_s / start.step_time_s - 1):.1f}% faster"
                  if best.step_time_s > start.step_time_s + 0.05 else "as fast")
        console.print(f"  yours is {faster}, but its peak is "
                      "within the memory model's error of the GPU's usable memory (tight: it may run out of memory "
                      "on a long batch); the best config below keeps that margin")
    elif start.verdict == "objective":
        console.print(f"  nothing in the search space is faster; the best config below is the best by --objective "
                      f"{report.scenario.objective}")
    else:
        console.print("  nothing in the search space is faster: keep your config")
    if start.verdict == "keep":
        return  # no gain: the best config's differences (ties) are not worth listing as changes
    from .commands.recommend import start_changes

    changed, dropped = start_changes(report)
    if changed:
        print_args(console, changed, prefix="  change: ", sep=" ")
    refused = [k for k in dropped if k.lstrip("+-") in start.renamed]  # old names: out, successors in the change
    if refused:
        print_args(console, refused, prefix="  take out (names the release refuses; the change above writes their "
                   "successors, where they have one): ", sep=" ")
    dropped = [k for k in dropped if k not in refused]
    if dropped:
        print_args(console, dropped, prefix="  drop (the best config leaves them at the default, or does not use them): ",
                   sep=" ")


def left_out_line(report: RecommendReport) -> str:
    """How many configs the search found that a listed one makes pointless (commands/alike.py), and how they differ
    from the best, so that the user knows the table is short on purpose."""
    n, best = len(report.left_out), report.choices[0]
    ways = list(dict.fromkeys(differs(best, c) for c in report.left_out))
    return (f"not listed: {n} more config{'s' if n > 1 else ''} the search found, no better than a listed one and "
            f"needing no less memory in any phase ({'; '.join(ways[:3])}{'; ...' if len(ways) > 3 else ''})")


def why_lost(best: Choice, other: Choice) -> str:
    """The phase whose time grew most against the best config (or the padding it makes the framework do)."""
    if getattr(other, "waste", "") and not getattr(best, "waste", ""):
        return "pads the step: " + other.waste.split(":")[0] + " (ranked as if its padding were real samples)"
    deltas = {p: other.phase_seconds.get(p, 0.0) - best.phase_seconds.get(p, 0.0) for p in other.phase_seconds}
    phase, delta = max(deltas.items(), key=lambda kv: kv[1])
    if delta <= 0.05:
        return "ties on time (same step time within 0.05 s)"
    return f"{PHASE_TITLE.get(phase, phase)} +{delta:.1f} s" + _roomier_text(best, other)


def _roomier_text(best: Choice, other: Choice) -> str:
    """What a slower config buys where it needs at least 1 GiB less at the best's highest peak (the roomier
    alternatives, commands/roomier.py): that phase's peak against the best's."""
    peaks, theirs = (getattr(c, "peak_mib", dict)() for c in (best, other))
    if not peaks or not theirs:
        return ""
    phase = max(peaks, key=peaks.get)
    if phase not in theirs or theirs[phase] > peaks[phase] - 1024:
        return ""
    return f", for {PHASE_TITLE.get(phase, phase)} peak {theirs[phase] / 1024:.1f} GiB, not {peaks[phase] / 1024:.1f}"


def _pairs(native: list[str]) -> dict[str, str]:
    """Paste-ready arguments as {key: value}: ``key=value`` (Hydra, env prefixes) or ``--flag value``."""
    from .frameworks.overrides import exported_pair

    return {key: value or "" for key, value in map(exported_pair, native)}


def short_keys(keys: list[str], among: Iterable[str] = ()) -> dict[str, str]:
    """Each key's shortest dotted suffix that no other of ``keys`` (or of ``among``, the config's other keys)
    shares (actor... and ref...param_offload)."""
    out = {}
    others = {*keys, *among}
    for k in keys:
        parts = k.split(".")
        for n in range(1, len(parts) + 1):
            tail = ".".join(parts[-n:])
            if not any(o != k and (o == tail or o.endswith("." + tail)) for o in others):
                break
        out[k] = tail
    return out


def differs(best: Choice, other: Choice) -> str:
    a, b = _pairs(best.native), _pairs(other.native)
    # what the other sets differently, then what it leaves out (the framework's default: TRL without --dtype)
    keys = [k for k in b if a.get(k) != b.get(k)] + [k for k in a if k not in b]
    short = short_keys(keys[:4], among=[*a, *b])  # rollout. or train.micro_batch_size: the one that differs

    def said(k: str) -> str:  # a bare --flag (a switch the best leaves off) is "on", not "flag="
        return f"no {short[k]}" if k not in b else f"{short[k]}={b[k]}" if b[k] else f"{short[k]} on"

    return ", ".join(said(k) for k in keys[:4]) or "-"


def print_host_unfit(console: Console, host: HostReport) -> None:
    """recommend --host-mem with no config whose host estimate fits the node: the best one's estimate term by term,
    and what would help."""
    console.print(f"\n[bold red]No valid config fits the node's RAM[/] ({host.ram_gib:.0f} GiB given, "
                  f"{host.limit_gib:.0f} usable: the OOM killer keeps {1 - host.limit_share:.0%}).")
    console.print(f"  the config the search excluded with the least host memory needs {host.peak_gib:.1f} GiB per node "
                  f"at {host.when}:",
                  markup=False, highlight=False)
    for term, gib in sorted(host.terms_gib.items(), key=lambda kv: -kv[1]):
        console.print(f"    {host.label(term)}: {gib:.1f} GiB", markup=False, highlight=False)
    console.print("  what would help: " + "; ".join(host_helps(host)), markup=False, highlight=False)


def host_helps(host: HostReport) -> list[str]:
    """What would let a config whose host estimate is ``host`` fit the node, from its largest terms."""
    from .costmodel.host import T_CKPT, T_ENGINE, T_OFF_ACTOR, T_OFF_CRITIC, T_OFF_REF, T_PROC

    terms = host.terms_gib
    helps = [f"a node with at least {host.peak_gib / host.limit_share:.0f} GiB of RAM (--host-mem)",
             f"fewer GPU ranks per node (one worker process each: {terms.get(T_PROC, 0.0):.1f} GiB here)"]
    offloaded = sum(terms.get(t, 0.0) for t in (T_OFF_ACTOR, T_OFF_CRITIC, T_OFF_REF, T_CKPT))
    if offloaded:
        helps.append(f"no CPU offload ({offloaded:.1f} GiB of the peak: turn the offload switches off)")
    if terms.get(T_ENGINE):
        helps.append(f"no sleeping engine's weights in host RAM ({terms[T_ENGINE]:.1f} GiB: sleep level 2 or none)")
    return helps


def print_no_fit(console: Console, report: RecommendReport | EnumerateReport) -> None:
    from .costmodel.phase import Phase
    from .solver.proof import no_fit_is_proven

    if getattr(report, "host_unfit", None) is not None:
        print_host_unfit(console, report.host_unfit)
        return
    if not no_fit_is_proven(report):
        console.print(f"\n[bold yellow]No config found within the time limit[/] ({report.wall_time_s:.1f} s, solver "
                      f"status {report.status}): the search did not finish, so this is no proof that none fits. "
                      "Raise --time-limit, or fix more keys (--set) to narrow the search.")
        return
    console.print("\n[bold red]No valid config fits.[/]")
    if report.conflict is not None:
        from .commands.recommend import answer_framework

        print_conflict(console, report.conflict, report.space, answer_framework(report), headed=True)
    for rule_id, (least, cap) in report.memory_floor.items():
        if least > cap:
            console.print(f"  {rule_id}: no config of the search space fits: the nearest needs {least / 1024:.1f} GiB "
                          f"per GPU, {(least - cap) / 1024:.1f} GiB more than its {cap / 1024:.1f} GiB usable")
    unnamed = report.conflict is None or not report.conflict.rules
    if unnamed and report.memory_floor and all(least <= cap for least, cap in report.memory_floor.values()):
        # each phase fits alone somewhere: it is the phases and rules together that no config satisfies
        console.print("  each phase fits alone in some config (least per GPU: " + ", ".join(
            f"{Phase(rule_id.rsplit('.', 1)[-1]).label} {least / 1024:.1f} of {cap / 1024:.1f} GiB"
            for rule_id, (least, cap) in report.memory_floor.items()) + "), but no config fits them all and keeps "
            "every rule", markup=False)
    helps = no_fit_helps(report)
    if helps:
        console.print("  what would help: " + (", ".join(helps[:-1]) + ", or " if len(helps) > 1 else "")
                      + helps[-1], markup=False)


def no_fit_helps(report: RecommendReport | EnumerateReport) -> list[str]:
    """What would help a search that no config satisfies (the text's "what would help" and the JSON's ``helps``):
    for memory, more or bigger GPUs, shorter responses, and the framework's offload and LoRA switches as --set pairs
    where the search did not try them; for rules, where to look."""
    unnamed = report.conflict is None or not report.conflict.rules
    memory = any(r.kind is RuleKind.MEMORY for r in getattr(report.conflict, "rules", [])) or any(
        least > cap for least, cap in report.memory_floor.values()) or (unnamed and bool(report.memory_floor))
    if memory:
        from .frameworks import get_framework

        fw = get_framework(report.framework)
        domains = getattr(report.space, "domains", {}) or {}
        helps = ["more GPUs (--gpus)", "a bigger GPU (--gpu)", "shorter responses (--response-len)"]
        switches = getattr(report, "switches_fit", None)
        if switches:  # enumerate held the switches recommend searches at their defaults, and with them one fits
            fewest = "" if getattr(report, "switches_fit_fewest", True) else \
                " (found within the time limit, not proven the fewest: fewer of them may do)"
            helps.insert(0, "the memory switches this listing holds at the framework's defaults: with, for one, "
                         f"{' '.join(switches)} a config fits{fewest} (`rlbatch recommend` searches them)")
        for switch, what in ((fw.offload_switch, "offload"), (fw.lora_switch, "LoRA instead of full fine-tuning")):
            variable, pairs = switch or (None, None)
            tried = any(v not in (None, False, 0) for v in domains.get(variable, [])) or \
                variable in getattr(report, "switches_tried", ())  # searched (enumerate's switches: for a fit)
            if pairs and not tried:
                helps.append(f"{what} ({' '.join(f'--set {kv}' for kv in pairs.split())})")
        return helps
    if report.conflict is not None and report.conflict.rules and getattr(report, "start", None) is not None:
        return ["`rlbatch fix` on your script, which finds the nearest valid config (recommend --from keeps the "
                "values of your script these rules read, listed above, and these rules refuse them)"]
    if report.conflict is not None and report.conflict.rules:
        return ["a different value of one of the keys these rules read (above), or --gpus if a rule counts GPUs"]
    return []


def recommend_dict(report: RecommendReport) -> dict[str, Any]:
    from .commands.recommend import best_command, check_line, companion_commands

    from .costmodel.accuracy import error_bars_dict
    from .frameworks import get_framework
    from .solver.proof import no_fit_is_proven

    def choice(c: Choice) -> dict[str, Any]:
        return {
            "rank": c.rank,
            "native": c.native,
            "yaml": get_framework(report.framework).export_yaml(c.native),
            "step_time_s": round(c.step_time_s, 3),
            "phase_seconds": {k: round(v, 3) for k, v in c.phase_seconds.items()},
            "tokens_per_s": round(c.tokens_per_s, 1),
            "memory_gib": {p: {"peak": round(r.peak(p) / GIB, 3),
                               "terms": {k: round(v / GIB, 3) for k, v in r.phases[p].items()}}
                           for p, r in c.memory.items()},
            "proven": c.proven,
            "waste": c.waste,
            "pipeline": [{"pool": n, "seconds": round(s, 3), "idle_ratio": round(i, 3)} for n, s, i in c.stages],
            "entry_point": get_framework(report.framework).entry_point(c.values),
        }

    return {
        "framework": report.framework,
        "rules_version": report.version,
        "status": report.status,
        # proven: the answer is (the best config is proven optimal, or no config is proven to exist)
        "proven": report.proven or (not report.choices and no_fit_is_proven(report)),
        "capacity_gib": round(report.capacity_mib / 1024, 3),
        "headroom": getattr(report, "margin_note", ""),
        "batch": report.batch_note,
        # what the command could not say in the framework's flags (a setting the release has no flag for)
        "notes": list(getattr(report.space, "notes", None) or []),
        "batch_kept": report.batch_kept,
        "unknown_keys": [u.to_dict() for u in report.unknown_keys],
        "key_notes": report.key_notes,
        "host_memory": report.host.to_dict() if getattr(report, "host", None) is not None else None,
        "host_memory_unfit": report.host_unfit.to_dict() if getattr(report, "host_unfit", None) is not None else None,
        "choices": [choice(c) for c in report.choices],
        # the configs found that a listed one makes pointless (commands/alike.py): how each differs from the best
        "not_listed": [differs(report.choices[0], c) for c in getattr(report, "left_out", [])],
        # the best config as a whole command (its start words, then one argument each), without the user's script
        "command": [] if report.start is not None else best_command(report),
        "start_first": [] if report.start is not None else companion_commands(report),
        # rlbatch check with the lengths the answer was priced at (the command has no flag for them), to run on it
        "check": check_line(report),
        "conflict": report.conflict.ids if report.conflict else None,
        "memory_floor_mib": {k: {"least": a, "capacity": b} for k, (a, b) in report.memory_floor.items()},
        # no config: what would help, as the text says it (the framework's switches as --set pairs)
        "helps": no_fit_helps(report) if not report.choices and getattr(report, "host_unfit", None) is None
        and no_fit_is_proven(report) else [],
        "error_bars": error_bars_dict(report.framework),
        "mean_lengths": report.lengths,
        "placement": None if report.placement is None else report.placement.to_dict(),
        "start": None if report.start is None else {
            "native": report.start.native,
            "searched": report.start.searched,
            "runs": report.start.runs,
            "broken": [v.to_dict() for v in report.start.broken],
            "step_time_s": round(report.start.step_time_s, 3),
            "phase_seconds": {k: round(v, 3) for k, v in report.start.phase_seconds.items()},
            "tokens_per_s": round(report.start.tokens_per_s, 1),
            "memory_peak_gib": {p: round(r.peak(p) / GIB, 3) for p, r in report.start.memory.items()},
            "waste": report.start.waste,
            "samples": report.start.samples,
            # what the user wrote (the config's own arguments; a launch script's command line): the answer, unchanged,
            # when the verdict is "keep"
            "own": report.start.own,
            "command": report.start.command,
            "environment": report.start.environment,  # the script's exports and the command's NAME=value words
            "verdict": report.start.verdict,
        },
    }


# ----------------------------------------------------------------------------- fix
def print_fix(console: Console, report: FixReport) -> None:
    release = getattr(report, "release", "") or report.version
    head = (f"{report.framework} {report.version}" if release == report.version
            else f"{report.framework} {release} ({report.version}'s)")
    from .commands.check import only_at_max_lengths

    if report.before_violations and all(only_at_max_lengths(v) for v in report.before_violations):
        # check's VALID with its warning: over the line only at the maximum lengths, judged to fit at the data's
        console.print(f"[bold green]VALID[/] — passes every {head} rule at the data's lengths; at the config's "
                      f"maximum lengths {len(report.before_violations)} phase(s) are over the line (repaired below):")
        for v in report.before_violations:
            console.print(f"  [bold]{v.rule}[/]: {v.message}")
    elif report.before_violations and all(getattr(v, "tolerated", False) for v in report.before_violations):
        console.print(f"[bold yellow]TIGHT[/] — passes every {head} rule, but {len(report.before_violations)} "
                      "phase(s) reach into the memory safety margin:")
        for v in report.before_violations:
            console.print(f"  [bold]{v.rule}[/]: {v.message}")
    elif report.before_violations:
        # counted as check counts them (check.breaks): a warning is no rule broken, said apart from the count
        errors = report.before_errors
        warned = len(report.before_violations) - len(errors)
        console.print(f"[bold red]INVALID[/] — breaks {len(errors)} of the {head} rules"
                      + (f" (and warns of {warned} more)" if warned else "") + ":")
        for v in [*errors, *(v for v in report.before_violations if v not in errors)]:  # what stops the run first
            console.print(f"  [bold]{v.rule}[/]: {v.message}")
    else:
        console.print(f"[bold green]VALID[/] — passes every {head} rule" +
                      (" and fits in memory." if report.memory_evaluated else "."))
    _print_upgrade(console, report)
    for note in report.notes:
        console.print(f"note: {note}")
    if getattr(report, "host", None) is not None:
        console.print(host_text(report.host), markup=False, highlight=False)
        unfit = getattr(report, "host_unfit", None)
        if unfit is not None:  # --host-mem given: every repair the search reached was excluded by the RAM
            console.print(f"  no repair within the values fix may change fits the node's RAM: the least of those "
                          f"excluded needs {unfit.peak_gib:.1f} GiB at {unfit.when} ({unfit.largest_terms_text(1)} "
                          f"GiB); what would help: " + "; ".join(host_helps(unfit)), markup=False, highlight=False)
        elif report.host.fits is False:
            console.print("  the RAM is assumed: give your node's with --host-mem and fix searches for a repair that "
                          "fits it (fewer offloaded states or sleeping engines per node), or use a node with more RAM",
                          markup=False, highlight=False)
    if report.after is None:
        print_fix_conflict(console, report)
        return
    if not report.diff:
        return
    # the header says the count and the proof; what "nearest" counts as changes besides the keys (solver/costs.py)
    # and the candidates it was proven among are the fine print, after the paste
    proof = "proven nearest" if report.proven else f"nearest found, not proven ({report.status})"
    if getattr(report, "cut_short_repair", False):
        proof = f"nearest found, not proven: cut short at {report.cut_short_s:.1f} s"
    fine = [report.counted] if report.proven and report.counted else []
    if report.proven and (report.method != "direct" or getattr(report, "grid_only", False)):
        # a repair of one or two keys is proven over every integer of a wide range (solver/nearest.py) when that
        # search finished; a larger one (CP-SAT) over the candidate grid (repair_policies.candidates), narrower
        # when priced
        steps = " and +-2" if report.memory_evaluated else ", multiples of the GPU count and +-4"
        fine.append(f"among the candidates: powers of two, divisors, doubles and triples{steps} of each value "
                    "(of an unset key: of the related value the framework would use, else of 8)")
    renames = _renames_only(report)
    count = len(report.diff) - len(renames) + bool(renames)  # the renames are one change
    changes = f"{count} change{'' if count == 1 else 's'}"
    nearest = getattr(report, "nearest_diff", [])
    if nearest:  # the nearest repair, plus one key for memory headroom: not itself the nearest valid config
        proved = "proven nearest" if report.nearest_proven else "nearest found, not proven"
        console.print(f"\n[bold green]Valid config with memory headroom[/] ({changes}, "
                      f"{report.wall_time_s:.1f} s): the nearest repair ({proved}) is "
                      + escape(" ".join(new for _, _, new in nearest)) + "; this one keeps the memory headroom:")
    else:
        console.print(f"\n[bold green]Nearest valid config[/] ({changes}, {proof}, {report.wall_time_s:.1f} s):")
    print_cut_short(console, report)
    if renames:
        console.print("  [yellow]rename[/] " + escape(renames_text(renames)))
    for key, old, new in report.diff:
        if (key, old, new) in renames:
            continue
        fixes = ", ".join(report.satisfies.get(key, []))
        why = "; ".join(([f"satisfies {fixes}"] if fixes else [])
                        + ([report.headroom[key]] if key in getattr(report, "headroom", {}) else []))
        console.print(f"  [red]- {escape(diff_word(old))}[/]")
        console.print(f"  [green]+ {escape(diff_word(new))}[/]" + (f"   ({escape(why)})" if why else ""))
    if report.memory_before:
        mem = Table(title="memory per GPU, by phase (GiB)")
        for col in ("phase", "before", "after", "capacity"):
            mem.add_column(col, justify="right" if col != "phase" else "left")
        for phase, (peak, cap) in report.memory_before.items():
            after = report.memory_after.get(phase, (None, cap))[0]
            mem.add_row(PHASE_TITLE.get(phase, phase), f"{peak / 1024:.1f}",
                        "-" if after is None else f"{after / 1024:.1f}", f"{cap / 1024:.1f}")
        console.print(mem)
    if getattr(report, "waste", ""):
        console.print(f"[yellow]note:[/] the repaired config pads: {report.waste}")
    for rule, text, new in getattr(report, "advice", []):  # the repair's cost weighs each as one doubling
        why = " (a repair that meets it too moves the values more than one doubling further or changes another " \
              "key)" if report.proven else ""
        console.print(f"[yellow]note:[/] the repaired config {'breaks' if new else 'still breaks'} the advice "
                      f"{rule}{why}: " + escape(text))
    console.print()
    print_repaired(console, report)
    if fine and not nearest:
        console.print(f"\n{proof}: " + "; ".join(fine), markup=False, highlight=False)


def renames_text(renames: list[tuple[str, str, str]]) -> str:
    """The diff's renames (``_renames_only``) as one change: old name -> new name, for each."""
    return ", ".join(f"{old.split()[0]} -> {new.split()[0]}" for _, old, new in renames)


def print_fix_changes(console: Console, fix: FixReport, bold: bool = False) -> None:
    """A repair's changes as explain prints them (its rule fix and its out-of-memory fix): the renames as one change,
    as fix says them, each other changed key (``bold``: its new value), then the arguments (``print_repaired``)."""
    renames = _renames_only(fix)
    if renames:
        console.print("  rename " + renames_text(renames), markup=False, highlight=False)
    for key, old, new in fix.diff:
        if (key, old, new) in renames:
            continue
        if bold:
            console.print(f"  {escape(diff_word(old))} -> [bold]{escape(diff_word(new))}[/]")
        else:
            console.print(f"  {diff_word(old)} -> {diff_word(new)}", markup=False, highlight=False)
    print_repaired(console, fix, "  ", inline=True, write="`rlbatch fix --write FILE`")


def _renames_only(report: FixReport) -> list[tuple[str, str, str]]:
    """The diff's lines that rename a key (one the release refuses) and keep its value: printed as one change."""
    renamed = {f"--{k}" for k in getattr(report, "renamed", [])}
    return [(k, o, n) for k, o, n in report.diff
            if o.split(" ", 1)[0] in renamed and o.partition(" ")[2] == n.partition(" ")[2]]


def print_cut_short(console: Console, report: FixReport) -> None:
    """The steps the clock stopped (``FixReport.cut_short``): each is bounded by work counted the same at any load,
    the seconds only its safety net, so an answer they cut may differ from the one a less loaded machine gives."""
    cut = getattr(report, "cut_short", [])
    if cut:
        # a later step's cut (headroom, RAM, relaxations) leaves the repair's own proof: only that step is said
        lead = "not proven: cut short" if getattr(report, "cut_short_repair", False) else "cut short"
        console.print(f"[yellow]{lead} at {report.cut_short_s:.1f} s[/] by the time limit (" +
                      escape("; ".join(cut)) + "): what was found so far is shown. Raise --time-limit for the "
                      "answer a less loaded machine gives.")


def print_fix_conflict(console: Console, report: FixReport) -> None:
    """No repair: the conflicting rules in words with the config's numbers, the pins, what would help."""
    if report.status == "infeasible":
        console.print("\n[bold red]No repair exists[/] within the values fix may change (proven).")
    else:
        console.print(f"\n[bold yellow]No repair found[/] within the time limit ({report.wall_time_s:.1f} s; status: "
                      f"{report.status}): one may exist with more changes. Raise --time-limit, or pin fewer keys.")
    print_cut_short(console, report)
    if getattr(report, "partial_diff", None):
        console.print("closest config found (still breaks " + ", ".join(report.partial_broken) + "):")
        for key, old, new in report.partial_diff:
            console.print(f"  {escape(shell_word(old))} -> {escape(shell_word(new))}")
    conflict = report.conflict
    floors = getattr(report, "memory_floor", {})
    if floors:  # proven by the least memory anywhere: no set of rules to drop, a phase that fits nowhere
        texts = dict(report.conflict_text)
        for rule, (least, cap) in floors.items():
            r = next((r for r in conflict.rules if r.id == rule), None) if conflict is not None else None
            console.print(f"  [bold]{rule}[/]: at least {least / 1024:.1f} GiB per GPU with any values fix may "
                          f"change; {cap / 1024:.1f} GiB usable")
            if r is not None:
                console.print(f"     yours: {texts.get(r.id) or r.explanation or r.message}")
                console.print(f"     source: {r.source}")
    elif conflict is not None and conflict.rules:
        if report.status != "infeasible" and conflict.status != "infeasible":
            # nothing is proven: the rules no candidate met, not a claim that they cannot hold (the line above
            # says a repair may exist)
            console.print("The rules no candidate searched met:")
        elif conflict.each_alone:
            console.print("The values held fixed break " + ("this rule:" if len(conflict.rules) == 1 else
                                                            "each of these rules on its own:"))
        else:
            why = ("a minimal set; drop any one and the rest can" if conflict.proven_minimal else
                   "together; the time limit ran out before they were narrowed to a minimal set")
            console.print(f"These rules cannot all hold ({why}):")
        texts = dict(report.conflict_text)
        for r in conflict.rules:
            console.print(f"  [bold]{r.id}[/] ({r.stage.value}): {texts.get(r.id) or r.explanation or r.message}")
            console.print(f"     source: {r.source}")
    elif conflict is not None:
        console.print(f"  (no conflict set: solver status {conflict.status})")
    if report.pinned_in_conflict:
        console.print("  held fixed and part of the conflict: " +
                      ", ".join(f"{k}={_shown(v)}" for k, v in report.pinned_in_conflict.items()))
    console.print("what would help:")
    for text in report.relaxations:
        console.print(f"  - {text}")


def _shown(value: Any) -> str:
    return "null (unset)" if value is None else str(value)


# ----------------------------------------------------------------------------- explain
_NUMBER_NAME = re.compile(r"[{](\w+)(?::\w+)?[}]")  # a rule message's {number} slots ({mem_rollout:gib} too)


def print_explain(console: Console, report: ExplainReport) -> None:
    if not report.matched:
        from .frameworks.error_text import all_patterns

        fws = sorted({p.framework for p in all_patterns()})
        console.print("[yellow]No known message matched.[/] We map the batch-size and parallelism errors of: "
                      + ", ".join(fws) + ", and out-of-memory messages (CUDA, NCCL's and cuBLAS's, vLLM's and "
                      "SGLang's KV cache, Ray's node memory). Paste the line with the numbers, or run `rlbatch check` on the config.")
        return
    if getattr(report, "oom", None) is not None:
        print_oom(console, report.oom)
        return
    if report.numbers:
        console.print("numbers in the message: " + ", ".join(f"{k}={v}" for k, v in report.numbers.items()))
    meaning = getattr(report, "meaning", [])
    # one message several frameworks print: each reading names its framework
    of = getattr(report, "meaning_of", [])
    several = len(of) == len(meaning) and len(set(of)) > 1
    for i, text in enumerate(meaning):
        label = f" ({of[i]})" if several else ""
        console.print(f"in plain words{label}: " + _NUMBER_NAME.sub(r"<\1>", text), markup=False, highlight=False)
    for text in report.notes:
        console.print(f"note: {text}", markup=False, highlight=False)
    for r in report.rules:
        console.print(f"\n[bold]{r.rule}[/] ({r.framework}, fails at: {stage_text(r.stage)})")
        # a rule's message names its numbers {like_this}: without the config they stay names; one the plain words
        # above said already is not said again
        if r.why not in getattr(report, "meaning", []):
            console.print("  " + _NUMBER_NAME.sub(r"<\1>", r.why), markup=False)
        console.print(f"  source: {r.source}")
    if report.rules and report.check is None:
        console.print("\n<names> are values of your config: paste it after -- to see its numbers and the fix.")
    if report.check is not None:
        if report.check.violations:
            console.print("\nyour config breaks:")
            for v in report.check.violations:
                console.print(f"  [bold]{v.rule}[/]: {v.message}")
        else:
            console.print("\nyour config passes every rule we know: the error came from values not pasted here.")
        _print_upgrade(console, report.check)
    if report.fix is not None and report.fix.diff:  # changes, or a refused key renamed
        console.print("\nsmallest fix:")
        print_fix_changes(console, report.fix, bold=True)
    elif report.fix is not None and report.fix.after is None:
        print_fix_conflict(console, report.fix)


def print_oom(console: Console, exp: OomExplanation) -> None:
    """An out-of-memory message: what it is, the phase and whence, its numbers, our prediction, the fix or advice."""
    from .commands.explain_oom import KIND_TEXT, PHASE_TEXT

    say = lambda text: console.print(text, markup=False, highlight=False)  # noqa: E731 - one print style
    msg = exp.message
    say(f"out of memory: {KIND_TEXT.get(msg.kind, msg.kind)}")
    if msg.numbers:
        say("numbers in the message: " + ", ".join(
            f"{k.removesuffix('_gib')} {v:.2f} GiB" if k.endswith("_gib") else f"{k} {v:g}"
            for k, v in msg.numbers.items()))
    where = PHASE_TEXT.get(exp.phase or "", "not named (paste the traceback with the message to name it)")
    say(f"phase: {where}" + (f", from {exp.phase_from}" if exp.phase_from else "")
        + (f" ({exp.framework})" if exp.framework else ""))
    if exp.gpu_from not in ("", "given"):  # inferred from the message's capacity, or why it could not be
        say(f"GPU: {exp.gpu_from}")
    for line in exp.lines:
        say(f"  {line}")
    fix = exp.fix
    if fix is not None and fix.changes:
        say("\nnearest change that fits " + (
            f"(it moves {', '.join(exp.moves_batch)}, which decide{'s' if len(exp.moves_batch) == 1 else ''} what "
            "each update trains on: `rlbatch fix --keep KEY` holds a key):" if exp.moves_batch
            else "(your algorithm's batch sizes kept):"))
        print_fix_changes(console, fix)
        if exp.fixed_tight:
            say("  check on the changed config: fits, but still tight (within the memory model's observed error)")
            for note in fix.notes:
                if note.startswith("tight:"):
                    say(f"  {note}")
        elif exp.fixed_fits is not None:
            say("  check on the changed config: " + ("fits" if exp.fixed_fits else "still over (see check)"))
    elif fix is not None and fix.after is None:
        print_fix_conflict(console, fix)
    elif fix is not None:
        say("\nno change needed by our model" + (" even priced at what the message shows" if exp.offset_gib else "")
            + ": see what usually helps below")
    if exp.advice and (fix is None or not fix.changes):
        say(f"\nwhat usually helps in the {PHASE_TEXT.get(exp.phase or '', 'phase')}, most first:")
        for i, tip in enumerate(exp.advice, 1):
            say(f"  {i}. {tip}")
    if exp.check is None:
        say("\npaste the config after -- (with --model) to compare this with our prediction and get the fix")


def print_calibration(console: Console, report: CalibrateReport) -> None:
    """``calibrate``: each timed phase measured / predicted before / after, and the fitted efficiencies."""
    from .costmodel.efficiency import DEFAULT_EFFICIENCY

    for note in report.notes:
        console.print(f"note: {note}")
    console.print(f"read a {report.log_format} log: steps {', '.join(map(str, report.steps))} "
                  f"(the first step is left out when there are more)")
    t = Table(title="measured against predicted")
    for col in ("phase", "measured", "before", "error", "after", "error"):
        t.add_column(col, justify="left" if col == "phase" else "right")
    for r in report.fit.phases:
        unit = "" if "GiB" in r["phase"] else " s"

        def err(x: float | None) -> str:
            return f"{x / r['measured_s'] - 1:+.0%}" if x and r["measured_s"] else "-"

        t.add_row(r["phase"], f"{r['measured_s']:.1f}{unit}", f"{r['before_s'] or 0:.1f}{unit}", err(r["before_s"]),
                  f"{r['after_s'] or 0:.1f}{unit}", err(r["after_s"]))
    console.print(t)
    after = report.fit.efficiency.as_dict()
    from .costmodel.efficiency import FITTED_NAMES

    for name, before in DEFAULT_EFFICIENCY.as_dict().items():
        if name in FITTED_NAMES:  # fitted to the measured set, not to a user's log
            continue
        if name == "train_memory_offset_bytes":
            if after[name]:
                console.print(f"  training-phase memory offset: {after[name] / 2**30:+.2f} GiB")
            continue
        mark = "" if abs(after[name] - before) < 1e-9 else "  (fitted)"
        console.print(f"  {name}: {before:.3f} -> {after[name]:.3f}{mark}")
    if not report.profile.path:
        console.print("[yellow]no profile written[/]: a fitted efficiency ended at its bound (see the note above)")
        return
    console.print(f"profile written to {report.profile.path}: check, recommend, fix and sweep use it for "
                  f"{report.profile.gpu} (--calibration FILE for another path)")
