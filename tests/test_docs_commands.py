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
NEEDS_THE_READERS_OWN = ("run.sh", "<", "...", ".log", "profile.yaml", "my-gpus.yaml", "results.jsonl", "$(",
                         "rlbatch sweep", "rlbatch serve")  # serve: a server, it does not return


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


CASES = [(p.relative_to(ROOT).as_posix(), c) for p in DOCS for c in _commands(p)
         if not any(word in c for word in NEEDS_THE_READERS_OWN)]


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
