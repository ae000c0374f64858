"""Every self-contained command README.md and docs/ show runs as shown: no input error (exit 2), no traceback.

Commands that need the reader's own files (run.sh, a log, a profile, a GPU file, a results file) or stand for
something (``<error line>``, ``...``) are left out, and so are sweeps (minutes) and ``rlbatch serve`` (a server); the
rest run in-process."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from clirun import run

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NEEDS_THE_READERS_OWN = ("run.sh", "<", "...", "profile.yaml", "my-gpus.yaml", "results.jsonl", "$(",
                         "rlbatch sweep", "rlbatch serve")  # serve: a server, it does not return
LOG_FILE = re.compile(r"\.log(\s|$)")  # a run's log file (not log_prob_... keys)
# files the pages name for an example of the reader's own, and the example they stand for (the page says which)
STANDS_FOR = {"run.sh": "tests/data/scripts/swift/gspo.sh"}


def _commands(path: Path) -> list[str]:
    """The ``rlbatch ...`` commands of a page's bash blocks, continuation lines joined, comments dropped."""
    out, block = [], False
    lines = path.read_text().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            block = line.strip() in ("```bash", "```sh", "```shell")
        elif block and line.startswith("rlbatch "):
            command = line
            while command.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                command = command.rstrip()[:-1] + " " + lines[i].strip()
            out.append(re.sub(r"\s+#.*$", "", command).strip())
        i += 1
    return out


def _self_contained(command: str) -> bool:
    return not any(word in command for word in NEEDS_THE_READERS_OWN) and not LOG_FILE.search(command)


CASES = [(p.relative_to(ROOT).as_posix(), c) for p in DOCS for c in _commands(p) if _self_contained(c)]


def test_the_pages_show_commands():
    assert len(CASES) >= 10 and any(page == "README.md" for page, _ in CASES)


@pytest.mark.parametrize("page,command", CASES, ids=[f"{p}:{c[:60]}" for p, c in CASES])
def test_a_documented_command_runs_as_shown(page, command):
    args = shlex.split(command)[1:]
    proc = run(*args)
    assert proc.returncode in (0, 1), f"{page}: {command}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"


def test_the_sweep_example_in_docs_is_what_the_sweep_prints_today(tmp_path: Path):
    """docs/sweeps.md's example table is the summary of its grid swept now (regenerate: rlbatch sweep
    docs/examples/grid-qwen2.5-7b-grpo.yaml --out docs/examples/grid-qwen2.5-7b-grpo.results.jsonl, then
    --summary), so the page never shows an older cost model's numbers."""
    out = tmp_path / "results.jsonl"
    swept = run("sweep", "docs/examples/grid-qwen2.5-7b-grpo.yaml", "--out", str(out), "--no-progress")
    assert swept.returncode == 0, swept.stderr
    summary = run("sweep", "--summary", str(out)).stdout.split("\n")
    page = (ROOT / "docs" / "sweeps.md").read_text()
    start = page.index("```\n20 points") + 4
    shown = page[start:page.index("```", start)].rstrip("\n").split("\n")
    assert summary[:len(shown)] == shown, "docs/sweeps.md's table is stale: regenerate it (see this test)"


def _shown_outputs(path: Path) -> list[tuple[int, str, list[str]]]:
    """(line, command, output lines) where a page's bash block of one ``rlbatch`` command is followed at once by a
    plain block: the output the page says it prints."""
    lines, out = path.read_text().split("\n"), []
    for i, line in enumerate(lines):
        if line.strip() != "```bash":
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        if end + 1 >= len(lines) or lines[end + 1].strip() not in ("```", "```text"):
            continue
        stop = next(j for j in range(end + 2, len(lines)) if lines[j].startswith("```"))
        command = re.sub(r"\s+#.*$", "", " ".join(x.strip().rstrip("\\") for x in lines[i + 1:end])).strip()
        if command.count("rlbatch ") == 1 and command.startswith("rlbatch "):
            out.append((i + 1, command, lines[end + 2:stop]))
    return out


SHOWN = [(p.relative_to(ROOT).as_posix(), n, c, o) for p in DOCS for n, c, o in _shown_outputs(p)]


def test_the_pages_show_outputs():
    assert len(SHOWN) >= 2


@pytest.mark.parametrize("page,line,command,shown", SHOWN, ids=[f"{p}:{n}" for p, n, _, _ in SHOWN])
def test_a_shown_output_is_what_the_command_prints_today(page, line, command, shown):
    """The output a page shows under a command is what the command prints now, line for line (notes on stderr
    first), up to a ``...`` line where the page cuts it; a page may stop early. A file the page names for the
    reader's own runs as the example it stands for, and is named as the page names it."""
    args = shlex.split(command)[1:]
    real = {a: STANDS_FOR[a] for a in args if a in STANDS_FOR}
    proc = run(*(real.get(a, a) for a in args))
    printed = proc.stderr + proc.stdout
    for name, path in real.items():
        printed = printed.replace(path, name)
    printed_lines = [x.rstrip() for x in printed.split("\n")]
    for n, want in enumerate(shown):
        if want.strip() == "...":
            break
        got = printed_lines[n] if n < len(printed_lines) else None
        assert got == want.rstrip(), (f"{page}:{line} `{command}` prints, at output line {n + 1}:\n{got}\n"
                                      f"the page shows:\n{want}")


def test_repo_text_dates_its_records_by_issue_not_by_working_session():
    """Records in the repo (the corpora's comments, docs, code) say when and why they were added by date and issue
    number; a count of the working sessions that wrote them means nothing to a reader of the repo."""
    numbered = re.compile(r"\bsession \d+\b", re.IGNORECASE)
    found = []
    for folder, pattern in (("rlbatch_solver", "*.py"), ("rlbatch_solver", "*.yaml"), ("docs", "*.md"),
                            ("tests", "*.py"), ("tests/data", "*.yaml"), ("benchmarks", "*.py")):
        for path in sorted((ROOT / folder).rglob(pattern)):
            for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
                if numbered.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{n}")
    assert not found, found
