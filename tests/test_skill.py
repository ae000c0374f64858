"""SKILL.md, the page that tells an agent when and how to call rlbatch: its front matter, and every command it shows
run as shown on a broken launch script standing for the reader's run.sh (and a CUDA out-of-memory line for the
job's log), answering one JSON document where it passes --json."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import yaml

from clirun import ROOT, run
from test_docs_commands import _commands

SKILL = ROOT / "SKILL.md"
RUN_SH = ("#!/bin/bash\nset -x\npython3 -m verl.trainer.main_ppo \\\n"
          "    data.train_batch_size=64 actor_rollout_ref.rollout.n=8 \\\n"
          "    actor_rollout_ref.actor.ppo_mini_batch_size=32 \\\n"
          "    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=24 \\\n"
          "    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \\\n"
          "    trainer.n_gpus_per_node=4 trainer.nnodes=1 $@\n")
JOB_LOG_TAIL = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
                "of 79.10 GiB of which 1.50 GiB is free.")
COMMANDS = _commands(SKILL)


def test_the_front_matter_names_the_skill_and_says_when_to_use_it():
    text = SKILL.read_text()
    assert text.startswith("---\n")
    front = yaml.safe_load(text.split("---\n")[1])
    assert front["name"] == "rlbatch"
    assert "before" in front["description"] and "OOM" in front["description"]
    assert len(COMMANDS) >= 9 and all("--json" in c or "--write" in c or "catalog" in c for c in COMMANDS)


@pytest.mark.parametrize("command", COMMANDS, ids=[c[:70] for c in COMMANDS])
def test_every_command_the_skill_shows_runs(command, tmp_path: Path):
    script = tmp_path / "run.sh"
    script.write_text(RUN_SH)
    command = command.replace('"$(tail -60 job.log)"', shlex.quote(JOB_LOG_TAIL))
    args = [str(script) if a == "run.sh" else str(tmp_path / a) if a == "fixed.sh" else a
            for a in shlex.split(command)[1:]]
    proc = run(*args)
    assert proc.returncode in (0, 1), f"{command}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    if "--json" in args:
        json.loads(proc.stdout)
    if "--write" in args:
        written = (tmp_path / "fixed.sh").read_text()
        assert re.search(r"ppo_micro_batch_size_per_gpu=(?!24)\d+", written) and "$@" in written
