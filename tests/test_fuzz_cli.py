"""Malformed command lines, in-process: never a traceback, never a run past its time limit.

About 1,100 command lines are made deterministically from valid ones of every command and
framework: a value replaced by an out-of-range, negative, fractional, non-numeric, empty or
5,000-digit one; a GPU, model or framework name mistyped; a flag's value cut off; an unknown
flag; a binary or malformed file where a file is expected. Each must end with exit code 0, 1 or
2 and no exception other than the exit itself, and within its ``--time-limit`` (plus start-up):
a run that hangs is the defect this catches, so the bound is generous.
"""

from __future__ import annotations

import random
import time

import pytest
from typer.testing import CliRunner

from rlbatch_solver.cli import app

FAQ = ["data.train_batch_size=64", "actor_rollout_ref.rollout.n=8", "actor_rollout_ref.actor.ppo_mini_batch_size=32",
       "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=24", "algorithm.adv_estimator=grpo"]
SWIFT = ["NPROC_PER_NODE=4", "swift", "rlhf", "--rlhf_type", "grpo", "--per_device_train_batch_size", "4",
         "--num_generations", "8", "--gradient_accumulation_steps", "2"]
OPENRLHF = ["--train.batch_size", "64", "--rollout.batch_size", "64", "--train.micro_batch_size", "4",
            "--rollout.n_samples_per_prompt", "8"]
TRL = ["--num_processes", "4", "--per_device_train_batch_size", "4", "--num_generations", "8",
       "--gradient_accumulation_steps", "2", "--use_vllm", "true", "--vllm_gpu_memory_utilization", "0.5",
       "--max_completion_length", "512", "--beta", "0.04", "--lora_r", "8"]
SCENARIO = ["--gpu", "rtx4090", "--gpus", "4", "--model", "qwen2.5-1.5b", "--algo", "grpo", "--n", "8",
            "--prompt-len", "512", "--response-len", "512"]
LIMIT = "0.5"

BASES = [
    ["check", "--gpus", "4", "--"] + FAQ,
    ["check", "--gpus", "4", "--gpu", "rtx4090", "--model", "qwen2.5-1.5b", "--"] + FAQ,
    ["check", "--framework", "swift", "--"] + SWIFT,
    ["check", "--framework", "openrlhf", "--gpus", "8", "--"] + OPENRLHF,
    ["check", "--framework", "verl-megatron", "--gpus", "8", "--", "data.train_batch_size=64",
     "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2"],
    ["fix", "--gpus", "4", "--time-limit", LIMIT, "--"] + FAQ,
    ["fix", "--gpus", "4", "--gpu", "rtx4090", "--model", "qwen2.5-1.5b", "--time-limit", LIMIT, "--"] + FAQ,
    ["fix", "--framework", "openrlhf", "--gpus", "8", "--time-limit", LIMIT, "--"] + OPENRLHF,
    ["explain", "normalized ppo_mini_batch_size should be divisible by ppo_micro_batch_size_per_gpu",
     "--gpus", "4", "--time-limit", LIMIT, "--"] + FAQ,
    ["enumerate", "--limit", "5", "--time-limit", LIMIT] + SCENARIO,
    ["recommend", "--top", "1", "--time-limit", LIMIT] + SCENARIO,
    ["recommend", "--framework", "swift", "--top", "1", "--time-limit", LIMIT] + SCENARIO,
    ["recommend", "--from", "@SCRIPT", "--gpu", "rtx4090", "--model", "qwen2.5-1.5b", "--top", "1",
     "--time-limit", LIMIT],
    ["rules", "--framework", "openrlhf"],
    ["check", "--framework", "trl", "--gpu", "rtx4090", "--model", "qwen2.5-1.5b", "--"] + TRL,
    ["fix", "--framework", "trl", "--time-limit", LIMIT, "--"] + TRL,
    ["recommend", "--framework", "trl", "--top", "1", "--time-limit", LIMIT] + SCENARIO,
    ["catalog", "gpus"],
    ["calibrate", "@LOG", "--gpu", "rtx4090", "--model", "qwen2.5-1.5b", "--"] + FAQ,
    ["check", "--gpus", "4", "--gpu", "rtx4090", "--model", "qwen2.5-1.5b", "--calibration", "@PROFILE", "--"] + FAQ,
    ["check", "--gpus", "4", "--gpu", "rtx4090", "--model", "qwen2.5-1.5b", "--mean-prompt-len", "300",
     "--mean-response-len", "700", "--longest-response-len", "2000", "--"] + FAQ,
    ["recommend", "--top", "1", "--time-limit", LIMIT, "--mean-response-len", "400"] + SCENARIO,
]

BAD_VALUES = ["99999999999999999999", "9" * 5000, "-3", "0", "1.5", "nan", "inf", "-inf", "1e400", "", " ",
              "abc", "$BATCH", "${N:-8}", "0x10", "\u0663", "null", "[1,2]", "{a: 1}", "true", "64;rm", "--"]
BAD_NAMES = {"--gpu": ["rtx4909", "h1OO", "", "a100-80", "../gpus.yaml"],
             "--model": ["qwen9", "qwen2.5-1.5", "", "/nonexistent/config.json"],
             "--framework": ["verll", "swift==9.9", "openrlhf@0.1", "", "VERL"],
             "--algo": ["grpoo", ""], "--objective": ["fastest"]}


def _mutations(base: list[str], rng: random.Random, files: dict[str, str]) -> list[list[str]]:
    out: list[list[str]] = []
    for i, tok in enumerate(base):
        key, eq, value = tok.partition("=")
        if eq and value:  # a Hydra override or an env prefix: replace its value
            for bad in rng.sample(BAD_VALUES, 10):
                out.append(base[:i] + [f"{key}={bad}"] + base[i + 1:])
        elif i > 0 and base[i - 1].startswith("--") and not tok.startswith("--"):
            flag = base[i - 1]
            for bad in BAD_NAMES.get(flag, []) + rng.sample(BAD_VALUES, 9):
                out.append(base[:i] + [bad] + base[i + 1:])
            if flag in ("--model", "--gpu-file", "--config", "--from", "--calibration"):
                out.append(base[:i] + [files["binary"]] + base[i + 1:])
        if tok.startswith("--") and tok != "--":
            out.append(base[:i + 1])  # the line cut right after a flag
    out.append(base + ["--bogus-flag"])
    out.append(base + ["--gpu-file", files["binary"]])
    out.append(base + ["--gpu-file", "9" * 5000])
    out.append(base + ["--config", files["bad_yaml"]] if base[0] in ("check", "fix") else base + ["--scenario",
                                                                                                   files["bad_yaml"]])
    if base[0] in ("check", "fix"):
        out.append(base + ["--config", files["binary"]])
        out.append(base + ["--config", files["list_yaml"]])
        out.append(base + ["--model", files["binary"]])
        out.append(base + ["--config", "9" * 5000])
    return out


def _command_lines(files: dict[str, str]) -> list[list[str]]:
    rng = random.Random(20261124)
    lines: list[list[str]] = []
    for base in BASES:
        base = [files[tok[1:].lower()] if tok in ("@SCRIPT", "@LOG", "@PROFILE") else tok for tok in base]
        lines += _mutations(base, rng, files)
    return lines


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz")
    binary = d / "weights.bin"
    binary.write_bytes(bytes(random.Random(1).randrange(256) for _ in range(4096)))
    bad_yaml = d / "bad.yaml"
    bad_yaml.write_text("data:\n  train_batch_size: [64\n  n: : 8\n")
    list_yaml = d / "list.yaml"
    list_yaml.write_text("- 1\n- 2\n")
    script = d / "run.sh"
    script.write_text("#!/bin/bash\nMICRO=24\npython3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=4 \\\n"
                      "  data.train_batch_size=64 actor_rollout_ref.rollout.n=8 algorithm.adv_estimator=grpo \\\n"
                      "  actor_rollout_ref.actor.ppo_mini_batch_size=32 \\\n"
                      "  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=$MICRO \\\n"
                      "  data.max_prompt_length=880 data.max_response_length=1280\n")
    log = d / "run.log"
    log.write_text("step:1 - timing_s/gen:30 - timing_s/update_actor:20\nstep:2 - timing_s/gen:30 - "
                   "timing_s/update_actor:20 - response_length/mean:600\n")
    profile = d / "profile.yaml"
    profile.write_text("rlbatch_calibration: 1\ngpu: rtx4090\nefficiency: {mfu_train: 0.3}\n")
    return {"binary": str(binary), "bad_yaml": str(bad_yaml), "list_yaml": str(list_yaml), "script": str(script),
            "log": str(log), "profile": str(profile)}


def test_malformed_command_lines_never_end_in_a_traceback_or_overrun(files, tmp_path, monkeypatch):
    monkeypatch.setenv("RLBATCH_CONFIG_DIR", str(tmp_path))  # calibrate's default profile stays out of other tests
    runner = CliRunner()
    lines = _command_lines(files)
    assert len(lines) >= 1000, len(lines)
    failures, slow, codes = [], [], set()
    for args in lines:
        t = time.monotonic()
        result = runner.invoke(app, args)
        wall = time.monotonic() - t
        codes.add(result.exit_code)
        exc = result.exception
        if result.exit_code not in (0, 1, 2) or (exc is not None and not isinstance(exc, SystemExit)) \
                or "Traceback" in result.output:
            failures.append((args[:12], result.exit_code, repr(exc)[:300]))
        limit = float(args[args.index("--time-limit") + 1]) if "--time-limit" in args and \
            args.index("--time-limit") + 1 < len(args) and args[args.index("--time-limit") + 1] == LIMIT else 10.0
        if wall > 4 * limit + 5:
            slow.append((args[:12], round(wall, 1)))
    assert not failures, failures[:10]
    assert not slow, slow[:10]
    assert 2 in codes and (0 in codes or 1 in codes)  # the mutations reach both refusals and real answers


@pytest.mark.parametrize("args,field", [
    (["check", "--gpus", "99999999999999999999", "--"] + FAQ, "gpus"),
    (["check", "--gpus", "4", "--", "data.train_batch_size=99999999999999999999"], "data.train_batch_size"),
    (["check", "--gpus", "4", "--", "data.train_batch_size=" + "9" * 5000], "data.train_batch_size"),
    (["check", "--framework", "swift", "--gpus", "8", "--", "--per_device_train_batch_size",
      "99999999999999999999"], "per_device_train_batch_size"),
    (["enumerate", "--gpu", "rtx4909", "--gpus", "4"], "gpu"),
    (["fix", "--gpus", "4", "--gpu", "rtx4909", "--"] + FAQ, "gpu"),
    (["recommend", "--gpus", "4", "--response-len", "99999999999999999999"], "response_length"),
    # a memory share that is not a fraction: ms-swift's and TRL's readers share overrides.memory_share_permille
    (["check", "--framework", "swift", "--gpu", "h100", "--model", "qwen2.5-1.5b", "--"] + SWIFT
     + ["--vllm_gpu_memory_utilization", "nan"], "vllm_gpu_memory_utilization"),
    (["check", "--framework", "trl", "--gpu", "h100", "--model", "qwen2.5-1.5b", "--"] + TRL
     + ["--vllm_gpu_memory_utilization", "1.5"], "vllm_gpu_memory_utilization"),
])
def test_reported_defects_exit_2_naming_the_field(args, field):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert f"{field}:" in result.output and "Traceback" not in result.output


def test_binary_model_file_exits_2(files):
    result = CliRunner().invoke(app, ["check", "--gpus", "4", "--gpu", "rtx4090", "--model", files["binary"], "--"]
                                + FAQ)
    assert result.exit_code == 2 and "model:" in result.output and "Traceback" not in result.output
