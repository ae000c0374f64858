"""A deterministic corpus of hostile invocations: every command, every option that reads a file, every attack shape.

``attack_files`` writes the hostile files once (YAML nested thousands of levels deep in flow and block style,
alias bombs in values and in keys, an alias loop, scripts whose variables double at every line, a 1 MB line,
binary and non-UTF-8 bytes, NUL bytes, empty files, oversize files, deep JSON) and adds the paths that are no
regular file (``/dev/zero``, ``/dev/urandom``, ``/dev/null``, a FIFO, a directory, a path too long, one that
does not exist). ``invocations`` puts each into every slot where a command reads a file, then adds malformed
arguments (numbers out of range, unknown names, deep or huge ``--set``/``--search`` values and overrides, a
1 MB error message). ``HEAVY`` names the invocations also run in a subprocess under a memory watch.

The bar every invocation is held to (tests/test_fuzz_inputs.py): exit code 0, 1 or 2, no traceback, under
10 seconds, under 1 GiB of memory.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

FAQ = ["data.train_batch_size=64", "actor_rollout_ref.rollout.n=8", "actor_rollout_ref.actor.ppo_mini_batch_size=32",
       "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4", "algorithm.adv_estimator=grpo"]
TRL = ["--num_processes", "4", "--per_device_train_batch_size", "4", "--num_generations", "8",
       "--gradient_accumulation_steps", "2"]
SCENARIO = ["--gpu", "rtx4090", "--gpus", "4", "--model", "qwen2.5-1.5b", "--algo", "grpo", "--n", "8",
            "--prompt-len", "512", "--response-len", "512"]
FAST = ["--time-limit", "0.5"]
RULE_ERROR = "normalized ppo_mini_batch_size should be divisible by ppo_micro_batch_size_per_gpu"
OOM_ERROR = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of " \
            "23.65 GiB of which 1.10 GiB is free."

MB = 1024 * 1024

# Where each command reads a file: "@F" is the hostile file; "@SCRIPT", "@LOG", "@GRID" a good one of its kind;
# "@NEW" a path no case has used.
SLOTS: dict[str, list[str]] = {
    "check script": ["check", "--gpus", "4", "@F"],
    "check --config": ["check", "--gpus", "4", "--config", "@F"],
    "check --model": ["check", "--gpus", "4", "--gpu", "rtx4090", "--model", "@F", "--", *FAQ],
    "check --gpu-file": ["check", "--gpus", "4", "--gpu", "rtx4090", "--gpu-file", "@F", "--", *FAQ],
    "check --calibration": ["check", "--gpus", "4", "--gpu", "rtx4090", "--model", "qwen2.5-1.5b",
                            "--calibration", "@F", "--", *FAQ],
    "check trl --config": ["check", "--framework", "trl", "--", *TRL, "--config", "@F"],
    "check trl --config_file": ["check", "--framework", "trl", "--", *TRL, "--config_file", "@F"],
    "fix script": ["fix", *FAST, "@F"],
    "fix --config": ["fix", "--gpus", "4", *FAST, "--config", "@F"],
    "fix --write": ["fix", *FAST, "@SCRIPT", "--write", "@F"],
    "fix script --write": ["fix", *FAST, "@F", "--write", "@NEW"],
    "explain script": ["explain", RULE_ERROR, *FAST, "--", "@F"],
    "explain --config": ["explain", RULE_ERROR, "--gpus", "4", *FAST, "--config", "@F"],
    "explain --model": ["explain", OOM_ERROR, "--gpus", "4", "--gpu", "rtx4090", "--model", "@F", *FAST, "--",
                        *FAQ],
    "recommend --scenario": ["recommend", "--top", "1", *FAST, "--scenario", "@F"],
    "recommend --from": ["recommend", "--top", "1", *FAST, "--gpu", "rtx4090", "--model", "qwen2.5-1.5b",
                         "--from", "@F"],
    "recommend --model": ["recommend", "--top", "1", *FAST, "--gpu", "rtx4090", "--gpus", "4", "--model", "@F"],
    "recommend --gpu-file": ["recommend", "--top", "1", *FAST, "--gpu", "rtx4090", "--gpus", "4",
                             "--gpu-file", "@F"],
    "recommend --calibration": ["recommend", "--top", "1", *FAST, "--calibration", "@F"],
    "enumerate --scenario": ["enumerate", "--limit", "5", *FAST, "--scenario", "@F"],
    "enumerate --model": ["enumerate", "--limit", "5", *FAST, "--gpu", "rtx4090", "--gpus", "4", "--model", "@F"],
    "sweep grid": ["sweep", "@F", "--out", "@NEW", "--no-progress"],
    "sweep --summary": ["sweep", "--summary", "@F"],
    "sweep --calibration": ["sweep", "@GRID", "--out", "@NEW", "--no-progress", "--calibration", "@F"],
    "calibrate log": ["calibrate", "@F", "--gpu", "rtx4090", "--model", "qwen2.5-1.5b", "--out", "@NEW", "--",
                      *FAQ],
    "calibrate script": ["calibrate", "@LOG", "--gpu", "rtx4090", "--model", "qwen2.5-1.5b", "--out", "@NEW",
                         "@F"],
    "calibrate --model": ["calibrate", "@LOG", "--gpu", "rtx4090", "--model", "@F", "--out", "@NEW", "--", *FAQ],
    "calibrate --config": ["calibrate", "@LOG", "--gpu", "rtx4090", "--model", "qwen2.5-1.5b", "--out", "@NEW",
                           "--config", "@F"],
    "catalog gpus --extra": ["catalog", "gpus", "--extra", "@F"],
}
# Slots that write the file they are given: only the paths that are no regular file go there (a hostile file
# written over would change the corpus under the cases after it).
WRITE_SLOTS = {
    "fix --write": ["fix", *FAST, "@SCRIPT", "--write", "@F"],
    "calibrate --out": ["calibrate", "@LOG", "--gpu", "rtx4090", "--model", "qwen2.5-1.5b", "--out", "@F", "--",
                        *FAQ],
    "sweep --out": ["sweep", "@GRID", "--out", "@F", "--resume", "--no-progress"],
    "sweep --plot": ["sweep", "--summary", "@RESULTS", "--plot", "@F"],
}


def _deep_block_map(levels: int) -> str:
    return "".join(" " * i + "a:\n" for i in range(levels)) + " " * levels + "1\n"


def _laughs(keys: bool) -> str:
    """Nine levels of nine aliases each: 9**9 values once expanded; with ``keys`` the keys are aliases too."""
    anchors = [f"a{j}: &k{j} key{j}" for j in range(9)] if keys else []
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, 10):
        if keys:
            lines.append(f"l{i}: &l{i} {{" + ", ".join(f"*k{j} : *l{i - 1}" for j in range(9)) + "}")
        else:
            lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(anchors + lines) + "\n"


def _doubling_script(lines: int) -> str:
    body = "A0=xxxxxxxxxxxxxxxx\n" + "".join(f"A{i}=$A{i - 1}$A{i - 1}$A{i - 1}$A{i - 1}\n" for i in range(1, lines))
    return "#!/bin/bash\n" + body + f"python3 -m verl.trainer.main_ppo data.train_batch_size=$A{lines - 1}\n"


GOOD_SCRIPT = ("#!/bin/bash\nMICRO=4\npython3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=4 \\\n"
               "  data.train_batch_size=64 actor_rollout_ref.rollout.n=8 algorithm.adv_estimator=grpo \\\n"
               "  actor_rollout_ref.model.path=Qwen/Qwen2.5-1.5B-Instruct \\\n"
               "  actor_rollout_ref.actor.ppo_mini_batch_size=32 \\\n"
               "  actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=$MICRO \\\n"
               "  data.max_prompt_length=512 data.max_response_length=512\n")
GOOD_LOG = ("step:1 - timing_s/gen:30 - timing_s/update_actor:20 - response_length/mean:400\n"
            "step:2 - timing_s/gen:30 - timing_s/update_actor:20 - response_length/mean:400\n")
GOOD_GRID = ("framework: verl\ngpu: [rtx4090]\ngpus: [4]\nmodel: qwen2.5-1.5b\nalgorithm: grpo\nn: 8\n"
             "prompt_length: 512\nresponse_length: 512\ntime_limit_s: 0.5\n")


def _text_attacks() -> dict[str, str | bytes]:
    """Hostile file contents by name."""
    rng = random.Random(27)
    return {
        "deep_flow_seq.yaml": "[" * 100_000 + "]" * 100_000,
        "deep_flow_map.yaml": "{a: " * 50_000 + "1" + "}" * 50_000,
        "deep_block_map.yaml": _deep_block_map(1_200),
        "deep_block_seq.yaml": "- " * 20_000 + "1\n",
        "deep_under_key.yaml": "data:\n  train_batch_size: " + "[" * 5_000 + "]" * 5_000 + "\n",
        "laughs_values.yaml": _laughs(keys=False),
        "laughs_keys.yaml": _laughs(keys=True),
        "alias_loop.yaml": "a: &a [*a, *a]\n",
        "many_aliases.yaml": "x: &x 1\nl: [" + ", ".join(["*x"] * 5_000) + "]\n",
        "merge_bomb.yaml": "b0: &b0 {a: 1}\n" + "".join(f"b{i}: &b{i} {{<<: [*b{i - 1}, *b{i - 1}]}}\n"
                                                         for i in range(1, 40)),
        "oversize.yaml": "a: 1\n" * (400_000),
        "long_value.yaml": "data:\n  train_batch_size: 64\n  note: " + "x" * 900_000 + "\n",
        "many_keys.yaml": "".join(f"k{i}: {i}\n" for i in range(120_000)),
        "huge_int.yaml": "data:\n  train_batch_size: " + "9" * 5_000 + "\n",
        "huge_float.yaml": "data:\n  train_batch_size: 1e999\nrlbatch_calibration: 1\ngpu: rtx4090\n",
        "bad_syntax.yaml": "data:\n  train_batch_size: [64\n  n: : 8\n",
        "tabs.yaml": "data:\n\ttrain_batch_size: 64\n",
        "python_tag.yaml": "a: !!python/object/apply:os.system ['true']\n",
        "binary_tag.yaml": "a: !!binary " + "A" * 1_000 + "\n",
        "multi_doc.yaml": "a: 1\n---\nb: 2\n",
        "scalar.yaml": "42\n",
        "list.yaml": "- 1\n- 2\n",
        "null.yaml": "~\n",
        "empty.yaml": "",
        "blank.yaml": "\n\n   \n",
        "bom.yaml": "\ufeffdata: {train_batch_size: 64}\n",
        "binary.bin": bytes(rng.randrange(256) for _ in range(8_192)),
        "latin1.yaml": "caf\xe9: 1\n".encode("latin-1"),
        "nul.yaml": b"a: 1\x00\nb: 2\n",
        "deep.json": "[" * 100_000 + "]" * 100_000,
        "deep_object.json": '{"a":' * 20_000 + "1" + "}" * 20_000,
        "huge_number.json": '{"num_hidden_layers": ' + "9" * 5_000 + ', "hidden_size": 1e999}',
        "not_object.json": "[1, 2, 3]",
        "truncated.json": '{"hidden_size": 4096, "num_hidden_layers"',
        "doubling.sh": _doubling_script(40),
        "long_line.sh": "#!/bin/bash\npython3 -m verl.trainer.main_ppo data.train_batch_size=" + "9" * MB + "\n",
        "long_line_hashes.sh": "#!/bin/bash\necho " + "'#' #" * 12_000 + "\n",
        "many_continuations.sh": "#!/bin/bash\npython3 -m verl.trainer.main_ppo \\\n" + " a=1 \\\n" * 150_000,
        "arith_bomb.sh": "#!/bin/bash\nA=999999999999\n" + "A=$((A*A*A*A*A*A*A*A))\n" * 30
                         + "python3 -m verl.trainer.main_ppo data.train_batch_size=$((A*A))\n",
        "paren_bomb.sh": "#!/bin/bash\nP=" + "(" * 5_000 + "1" + ")" * 5_000
                         + "\npython3 -m verl.trainer.main_ppo data.train_batch_size=$((P))\n",
        "default_nest.sh": "#!/bin/bash\npython3 -m verl.trainer.main_ppo data.train_batch_size="
                           + "${A:-" * 2_000 + "64" + "}" * 2_000 + "\n",
        "many_lines.sh": "#!/bin/bash\n" + "# a comment line of a long script\n" * 25_000 + GOOD_SCRIPT.split("\n", 1)[1],
        "many_variables.sh": "#!/bin/bash\n" + "".join(f"V{i}=${{V{i - 1}:-{i}}}\n" for i in range(1, 30_000))
                             + GOOD_SCRIPT.split("\n", 1)[1],
        "unbalanced.sh": "#!/bin/bash\npython3 -m verl.trainer.main_ppo 'data.train_batch_size=64 \"\n",
        "no_entry.sh": "#!/bin/bash\necho hello\n",
        "binary.sh": b"#!" + bytes(rng.randrange(256) for _ in range(4_096)),
        "deep_lines.log": ('{"step": 1, "data": ' + "[" * 50_000 + "]" * 50_000 + "}\n") * 3,
        "huge_step.log": "step:" + "9" * 5_000 + " - timing_s/gen:30\n" + '{"step": 1e999, "data": {"a": 1}}\n'
                         + "Global step " + "9" * 5_000 + ": {'a': 1}\n",
        "openrlhf_repeat.log": "Global step 1: {" * 40_000 + "\n",
        "literal_bomb.log": "Global step 1: {'a': " + "(" * 50_000 + ")" * 50_000 + "}\n",
        "long_line.log": "step:1 - timing_s/gen:" + "3" * (2 * MB) + "\n",
        "results_garbage.jsonl": "\n".join(['{"id": 1}', '{"id": "a", "point": 5}', '{"id": "b", "point": {"gpus": '
                                            '"x"}, "status": "ok"}', '{"id": "c", "point": {}, "status": "ok", '
                                            '"tokens_per_s": "fast"}', '{"id": "d", "point": {}, "memory_gib": '
                                            '{"rollout": "big"}}', "[" * 10_000, "not json"]) + "\n",
        "results_host.jsonl": '{"id": "e", "point": {"model": "m", "gpu": "g", "gpus": 4}, "status": "ok", '
                              '"tokens_per_s": 1.0, "host_memory": {"fits": false}}\n',
        "calibration_bad.yaml": "rlbatch_calibration: 1\ngpu: rtx4090\nefficiency: {mfu_train: " + "[" * 3_000
                                + "]" * 3_000 + "}\n",
        "calibration_nan.yaml": "rlbatch_calibration: 1\ngpu: rtx4090\nefficiency: {mfu_train: .nan}\n",
        "scenario_bad.yaml": "framework: verl\ngpus: -4\nmodel: " + "q" * 10_000 + "\nn: 1e400\n",
        "grid_huge.yaml": "framework: verl\ngpu: [rtx4090, h100]\nmodel: qwen2.5-1.5b\nalgorithm: grpo\ngpus: ["
                          + ", ".join(str(i) for i in range(1, 201)) + "]\nn: ["
                          + ", ".join(str(i) for i in range(1, 101)) + "]\ntime_limit_s: .inf\n",
        "grid_forever.yaml": GOOD_GRID.replace("time_limit_s: 0.5", "time_limit_s: 1e300"),
        "gpu_entries_bad.yaml": "- name: x1\n  memory_gib: " + "9" * 400 + "\n  bf16_tflops: .inf\n",
    }


def attack_files(directory: Path) -> dict[str, str]:
    """Write the hostile files under ``directory``; name -> path, with the paths that are no regular file."""
    paths: dict[str, str] = {}
    for name, content in _text_attacks().items():
        path = directory / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        paths[name] = str(path)
    fifo = directory / "fifo.yaml"
    os.mkfifo(fifo)  # nothing ever writes it: a read would block forever
    folder = directory / "folder.yaml"
    folder.mkdir()
    paths.update({"fifo": str(fifo), "folder": str(folder), "missing": str(directory / "missing.yaml"),
                  "too_long": "x" * 5_000 + ".yaml", "missing_dir": str(directory / "no" / "such" / "dir.yaml"),
                  "/dev/zero": "/dev/zero", "/dev/urandom": "/dev/urandom", "/dev/null": "/dev/null"})
    for name, text in (("script", GOOD_SCRIPT), ("log", GOOD_LOG), ("grid", GOOD_GRID)):
        path = directory / f"good_{name}"
        path.write_text(text, encoding="utf-8")
        paths[f"@{name.upper()}"] = str(path)
    results = directory / "good_results.jsonl"
    results.write_text('{"id": "p", "point": {"model": "m", "algorithm": "grpo", "gpu": "rtx4090", "gpus": 4}, '
                       '"status": "ok", "tokens_per_s": 10.0, "step_time_s": 1.0}\n', encoding="utf-8")
    paths["@RESULTS"] = str(results)
    return paths


NOT_REGULAR = ("fifo", "folder", "/dev/zero", "/dev/urandom", "/dev/null", "missing_dir", "too_long")
# Shapes that parse slowly where they are accepted (a legal 900 KB value, 120,000 keys, 150,000 continuation
# lines): each goes to a sample of the slots, not to all of them.
SLOW_SHAPES = ("long_value.yaml", "many_keys.yaml", "many_continuations.sh", "long_line.log", "oversize.yaml",
               "many_lines.sh", "many_variables.sh")

# The attack shapes of issue 27 go to every slot; the other files to a sample of them.
ALWAYS = NOT_REGULAR + ("deep_flow_seq.yaml", "deep_flow_map.yaml", "deep_block_map.yaml", "laughs_values.yaml",
                        "laughs_keys.yaml", "alias_loop.yaml", "doubling.sh", "long_line.sh", "binary.bin",
                        "latin1.yaml", "empty.yaml", "deep.json")

HUGE = ["9" * 100, "1" + "0" * 80, "-1", "0", "-0", "nan", "inf", "-inf", "1e308", "1.5", "abc", "", "0x10", "\u0663"]
NUMERIC_OPTIONS = {
    "check": ["--gpus", "--length-fraction", "--mean-prompt-len", "--mean-response-len", "--host-mem"],
    "fix": ["--gpus", "--time-limit", "--length-fraction", "--host-mem"],
    "explain": ["--gpus", "--time-limit"],
    "enumerate": ["--gpus", "--nnodes", "--n", "--prompt-len", "--response-len", "--limit", "--show",
                  "--time-limit"],
    "recommend": ["--gpus", "--nnodes", "--n", "--prompt-len", "--response-len", "--top", "--time-limit",
                  "--length-fraction", "--mean-prompt-len", "--mean-response-len", "--host-mem"],
    "sweep": ["--workers"],
    "calibrate": ["--gpus"],
}
BASES = {
    "check": ["check", "--gpus", "4", "--gpu", "rtx4090", "--model", "qwen2.5-1.5b", "--", *FAQ],
    "fix": ["fix", "--gpus", "4", *FAST, "--", *FAQ],
    "explain": ["explain", RULE_ERROR, "--gpus", "4", *FAST, "--", *FAQ],
    "enumerate": ["enumerate", "--limit", "5", *FAST, *SCENARIO],
    "recommend": ["recommend", "--top", "1", *FAST, *SCENARIO],
    "sweep": ["sweep", "@GRID", "--out", "@NEW", "--no-progress"],
    "calibrate": ["calibrate", "@LOG", "--gpu", "rtx4090", "--model", "qwen2.5-1.5b", "--out", "@NEW", "--", *FAQ],
}
NAMES = {"--gpu": ["rtx4909", "", "h100" * 5_000, "../gpus.yaml", "\x00"], "--model": ["qwen9", "", "q" * 5_000,
         "/", "~", "\x00x.json"], "--framework": ["verll", "swift==9.9", "openrlhf@0.1", "", "v" * 5_000],
         "--algo": ["grpoo", "", "a" * 5_000], "--objective": ["fastest", ""], "--placement": ["both", ""],
         "--metric": ["speed", ""]}
DEEP_VALUE = "[" * 20_000 + "]" * 20_000
# rlbatch serve listens (and never returns) when its options are good, and rlbatch mcp reads its stdin: only bad ones
SERVER_BAD = {"--port": ["-1", "65536", "9" * 100, "nan", "abc", "1.5", ""],
              "--timeout": ["0", "-1", "nan", "inf", "-inf", "1e308", "abc", ""],
              "--memory": ["0", "255", "-1", "9" * 100, "abc", "1.5"],
              "--workers": ["0", "-1", "2000", "9" * 100, "abc", "nan"]}


def _argument_cases(rng: random.Random) -> list[list[str]]:
    """Malformed arguments of every command: numbers out of range, unknown names, deep and huge values."""
    out: list[list[str]] = []
    for command, options in NUMERIC_OPTIONS.items():
        base = BASES[command]
        cut = base.index("--") if "--" in base else len(base)
        for option in options:
            for bad in HUGE:
                out.append(base[:cut] + [option, bad] + base[cut:])
        for option, bads in NAMES.items():
            if command in ("sweep", "calibrate") and option not in ("--gpu", "--model"):
                continue
            if command == "sweep" and option != "--metric":
                continue
            for bad in bads:
                out.append(base[:cut] + [option, bad] + base[cut:])
        out.append(base + ["--no-such-flag"])
        out.append(base[:2])
    for key in ("worker.actor.global_batch_size", "data.rollout_batch_size", "worker.rollout.n",
                "worker.actor.fsdp.fsdp_size", "worker.rollout.gpu_memory_utilization"):  # EasyR1's keys
        for value in ("-3", "0", "-1", "9" * 100, "1.5", "abc", "null", DEEP_VALUE[:2000]):
            out.append(["check", "--framework", "easyr1", "--", f"{key}={value}"])
    for key in ("--rollout-batch-size", "--global-batch-size", "--tensor-model-parallel-size", "--rollout-num-gpus",
                "--sglang-mem-fraction-static", "--max-tokens-per-gpu", "--recompute-granularity",
                "--advantage-estimator", "--kl-coef"):  # slime's flags
        for value in ("-3", "0", "-1", "9" * 100, "1.5", "abc", "null", DEEP_VALUE[:2000]):
            out.append(["check", "--framework", "slime", "--", "--rollout-batch-size", "8", key, value])
    for key in ("trainer.policy_mini_batch_size", "trainer.train_batch_size", "generator.n_samples_per_prompt",
                "trainer.policy.fsdp_config.fsdp_size", "generator.gpu_memory_utilization",
                "generator.num_inference_engines", "trainer.placement.policy_num_gpus_per_node",
                "trainer.policy.model.lora.rank", "trainer.strategy"):  # SkyRL's keys
        for value in ("-3", "0", "-1", "9" * 100, "1.5", "abc", "null", DEEP_VALUE[:2000]):
            out.append(["check", "--framework", "skyrl", "--", f"{key}={value}"])
    for option, bads in SERVER_BAD.items():
        out.extend(["serve", option, bad] for bad in bads)
    out += [["serve", "--no-such-flag"], ["serve", "--host"], ["mcp", "--no-such-flag"], ["mcp", "extra"]]
    for command in ("enumerate", "recommend"):
        base = BASES[command]
        for value in (DEEP_VALUE, "x" * MB, "{a: " * 5_000, "9" * 5_000, "1e999", "-5", "[1,2]", "*a", "&a [*a]"):
            out.append(base + ["--set", f"data.train_batch_size={value}"])
            out.append(base + ["--set", f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={value}"])
            out.append(base + ["--search", f"data.train_batch_size={value}"])
        out.append(base + ["--search", "data.train_batch_size=" + ",".join(str(i) for i in range(1, 100_000))])
        out.append(base + ["--search", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu="
                           + ",".join("9" * 19 for _ in range(1_000))])
        out.append(base + ["--set", "no_equals_sign"])
        out.append(base + ["--set", "=64"])
    for override in (f"data.val_files={DEEP_VALUE}", "data.train_batch_size=" + "1" * MB,
                     "trainer.logger=" + "[" * 5_000, "data.train_batch_size=" + "${A:-" * 3_000,
                     "+" * 5_000 + "a=1", "actor_rollout_ref.rollout.n=$((9*9*9*9*9*9*9*9*9*9*9*9*9*9*9*9*9*9*9*9))"):
        out.append(["check", "--gpus", "4", "--", *FAQ, override])
        out.append(["fix", "--gpus", "4", *FAST, "--", *FAQ, override])
        out.append(["recommend", "--top", "1", *FAST, *SCENARIO, "--set", override])
    big = ["data.train_batch_size=1000000000", "actor_rollout_ref.rollout.n=1000000000",
           "actor_rollout_ref.actor.ppo_mini_batch_size=999999999",
           "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=999999937"]  # sizes at the limit (10**9)
    for gpus in ("4", "65536"):
        out.append(["check", "--gpus", gpus, "--gpu", "h100", "--model", "qwen2.5-7b", "--", *big])
        out.append(["fix", "--gpus", gpus, *FAST, "--", *big])
        out.append(["fix", "--gpus", gpus, "--gpu", "h100", "--model", "qwen2.5-7b", *FAST, "--", *big])
        out.append(["explain", RULE_ERROR.replace("size should", "size 999999999 should") + " 24", "--gpus", gpus,
                    *FAST, "--", *big])
        out.append(["recommend", "--top", "1", *FAST, "--gpus", gpus, "--gpu", "h100", "--model", "qwen2.5-7b",
                    *[arg for item in big[:2] for arg in ("--set", item)]])
        out.append(["enumerate", "--limit", "5", *FAST, "--gpus", gpus, "--set", big[0], "--set", big[1]])
    for framework, args in (("openrlhf", ["--train.batch_size", "1000000000", "--rollout.batch_size", "999999999",
                                          "--rollout.n_samples_per_prompt", "1000000000"]),
                            ("swift", ["--per_device_train_batch_size", "1000000000", "--num_generations",
                                       "999999937", "--gradient_accumulation_steps", "1000000000"]),
                            ("trl", ["--num_processes", "65536", "--per_device_train_batch_size", "1000000000",
                                     "--num_generations", "999999937"])):
        out.append(["check", "--framework", framework, "--gpus", "65536", "--", *args])
        out.append(["fix", "--framework", framework, "--gpus", "65536", *FAST, "--", *args])
    out.append(["check", "--gpus", "4", "--", *FAQ, *[f"k{i}=1" for i in range(20_000)]])
    out.append(["check", "--framework", "trl", "--", *TRL, "--lora_target_modules", DEEP_VALUE])
    out.append(["fix", "--gpus", "4", "--keep", "," * 100_000 + "data.train_batch_size", *FAST, "--", *FAQ])
    for error in (RULE_ERROR * 20_000, "x" * MB, "[" * 100_000, OOM_ERROR + " Tried to allocate " + "9" * 5_000
                  + " GiB.", "\x00\xff\ud7ff" * 1_000, ""):
        out.append(["explain", error, "--gpus", "4", *FAST, "--", *FAQ])
    out += [["rules", "--framework", bad] for bad in ("verll", "", "v" * 5_000)]
    out += [["rules", "--framework", fw, "--markdown"] for fw in ("verl", "swift", "openrlhf", "trl")]
    out += [["catalog", "models", "--json"], ["catalog", "gpus"], ["catalog", "nothing"], ["sweep"],
            ["sweep", "--summary", "@RESULTS", "--metric", "speed"],
            ["sweep", "--summary", "@RESULTS", "--memory-plot", "@NEW", "--point", "q" * 5_000]]
    rng.shuffle(out)
    return out


def invocations(files: dict[str, str], new_path) -> list[list[str]]:
    """Every hostile file in every slot (the slow shapes in a sample of them, the paths that are no regular file
    in the writing slots too), then the malformed arguments. ``new_path()`` gives a path no case has used."""
    rng = random.Random(20261126)
    hostile = [name for name in files if not name.startswith("@")]
    cases: list[list[str]] = []
    for slot, template in SLOTS.items():
        for name in hostile:
            if rng.random() > (0.25 if name in SLOW_SHAPES else 1.0 if name in ALWAYS else 0.4):
                continue
            cases.append(_fill(template, files, files[name], new_path))
    for template in WRITE_SLOTS.values():
        for name in NOT_REGULAR:
            cases.append(_fill(template, files, files[name], new_path))
    cases += [_fill(args, files, "", new_path) for args in _argument_cases(rng)]
    return cases


def _fill(template: list[str], files: dict[str, str], hostile: str, new_path) -> list[str]:
    out = []
    for token in template:
        if token == "@F":
            out.append(hostile)
        elif token == "@NEW":
            out.append(new_path())
        else:
            out.append(files.get(token, token) if token.startswith("@") else token)
    return out


# Run again in a subprocess, with their peak memory measured: the shapes that cost gigabytes or never ended.
HEAVY = [
    ["check", "--gpus", "4", "--config", "deep_flow_seq.yaml"],
    ["check", "--gpus", "4", "--config", "deep_block_map.yaml"],
    ["recommend", "--top", "1", *FAST, "--scenario", "laughs_values.yaml"],
    ["enumerate", "--limit", "5", *FAST, "--scenario", "laughs_keys.yaml"],
    ["recommend", "--top", "1", *FAST, "--scenario", "merge_bomb.yaml"],
    ["check", "--gpus", "4", "--gpu", "rtx4090", "--gpu-file", "many_aliases.yaml", "--", *FAQ],
    ["catalog", "gpus", "--extra", "deep_flow_map.yaml"],
    ["check", "--gpus", "4", "--gpu", "rtx4090", "--model", "/dev/zero", "--", *FAQ],
    ["check", "--gpus", "4", "--gpu", "rtx4090", "--model", "/dev/urandom", "--", *FAQ],
    ["check", "--gpus", "4", "--gpu", "rtx4090", "--model", "fifo", "--", *FAQ],
    ["check", "--gpus", "4", "--gpu", "rtx4090", "--model", "deep.json", "--", *FAQ],
    ["sweep", "--summary", "/dev/zero"],
    ["sweep", "--summary", "/dev/urandom"],
    ["sweep", "--summary", "fifo"],
    ["sweep", "--summary", "results_garbage.jsonl"],
    ["check", "--gpus", "4", "doubling.sh"],
    ["fix", *FAST, "doubling.sh"],
    ["check", "--gpus", "4", "long_line.sh"],
    ["check", "--gpus", "4", "long_line_hashes.sh"],
    ["check", "--gpus", "4", "arith_bomb.sh"],
    ["check", "--gpus", "4", "paren_bomb.sh"],
    ["check", "--gpus", "4", "many_continuations.sh"],
    ["fix", *FAST, "many_variables.sh", "--write", "@NEW"],
    ["fix", *FAST, "many_lines.sh", "--write", "@NEW"],
    ["recommend", "--top", "1", *FAST, "--gpu", "rtx4090", "--model", "qwen2.5-1.5b", "--from", "doubling.sh"],
    ["enumerate", "--show", "1" + "0" * 80],
    ["enumerate", "--limit", "1" + "0" * 80],
    ["calibrate", "deep_lines.log", "--gpu", "rtx4090", "--model", "qwen2.5-1.5b", "--out", "@NEW", "--", *FAQ],
    ["calibrate", "openrlhf_repeat.log", "--gpu", "rtx4090", "--model", "qwen2.5-1.5b", "--out", "@NEW", "--",
     *FAQ],
    ["calibrate", "/dev/zero", "--gpu", "rtx4090", "--model", "qwen2.5-1.5b", "--out", "@NEW", "--", *FAQ],
    ["sweep", "grid_huge.yaml", "--out", "@NEW", "--no-progress"],
    ["recommend", "--top", "1", *FAST, *SCENARIO, "--set", "data.train_batch_size=" + "[" * 20_000],
    ["explain", "[" * 100_000, "--gpus", "4", *FAST, "--", *FAQ],
    ["check", "--gpus", "4", "--config", "oversize.yaml"],
    ["check", "--gpus", "4", "--config", "long_value.yaml"],
    ["fix", *FAST, "@SCRIPT", "--write", "fifo"],
]


def heavy_invocations(files: dict[str, str], new_path) -> list[list[str]]:
    return [[files.get(token, token) if token != "@NEW" else new_path() for token in args] for args in HEAVY]
