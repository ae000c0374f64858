"""What recommend prices is what it prints: the command it prints, pasted back into ``check`` as the docs give it
(saved as a script, ``rlbatch check run.sh``, with a rollout server's line where the answer has one; and
``rlbatch check -- <the command>``, the shell having expanded it), gets the same memory verdict, the same peaks and
the same step time.

The cases that found it: the printed command names the framework example's data (verl's GSM8K, ms-swift's
NuminaMath-TIR, TRL's DeepMath-103K, slime's DAPO-Math-17k), whose length profile check prices, while recommend priced
the default profile (verl's default scenario: 57.5 s recommended, 39.3 s checked); TRL 1.16 has no prompt-length flag
(check read 512 for the 880 priced); Unsloth's engine was priced at TP 4 where the command runs TP 1. Then: lengths
given to recommend (--mean-response-len 900) that no flag of the command carries, named on the answer's check line;
EasyR1's data, which its config file sets (examples/config.yaml: math12k), read by both; TRL 1.16 with vLLM off, priced
at the prompt check reads for its command (512: no flag carries one)."""

from __future__ import annotations

import io
from dataclasses import replace
import shlex

import pytest
from rich.console import Console

from rlbatch_solver import api
from rlbatch_solver.commands import entry
from rlbatch_solver.commands.recommend import best_command, companion_commands
from rlbatch_solver.frameworks.registry import FRAMEWORKS
from rlbatch_solver.render import command_text, print_recommend
from rlbatch_solver.scenario import Scenario, default_scenario


def _pasted(words: list[str], home: str) -> list[str]:
    """The printed command as the shell hands it to ``rlbatch check --``: lines joined, variables expanded."""
    text = command_text(words).replace("\\\n", " ")
    return shlex.split(text.replace("$HOME", home))


def _round_trip(scenario: Scenario, tmp_path) -> None:
    """recommend, then check of what it printed in both forms a user pastes it: saved as the script it is (the
    commands one a line, a server's in the background), and, where it is one command, after ``--`` as the shell
    passes it on; with the options the answer's check line names (the lengths it was priced at), as a user reads
    them off it."""
    report = api.recommend(scenario, top=1, time_limit_s=30)
    lengths = _check_line_options(report)
    assert report.choices, f"{scenario.framework}: no answer"
    first = companion_commands(report)
    script = tmp_path / "run.sh"
    script.write_text("".join(command_text(w) + " &\n" for w in first) + command_text(best_command(report)) + "\n")
    forms = [[str(script)]] + ([] if first else [_pasted(best_command(report), str(tmp_path))])
    for pasted in forms:
        _same(report, entry.check(pasted, framework=scenario.framework if "==" in scenario.framework else None,
                                  gpus=None, model=scenario.model, gpu=scenario.gpu, extra_gpus=None, config=None,
                                  calibration=None, host_mem=None, **lengths))


CHECK_OPTIONS = {"--response-profile": ("response_profile", str), "--mean-prompt-len": ("mean_prompt_len", float),
                 "--mean-response-len": ("mean_response_len", float), "--length-fraction": ("length_fraction", float)}


def _printed(report) -> str:
    console = Console(file=io.StringIO(), record=True, width=200, force_terminal=False)
    print_recommend(console, report)
    return console.export_text()


def _check_line_options(report) -> dict:
    """The length options of the answer's ``rlbatch check`` line (None for each it does not name); no line: none."""
    out = {name: None for name, _ in CHECK_OPTIONS.values()}
    lines = [line for line in _printed(report).splitlines()
             if line.startswith("check it at the lengths") and "rlbatch check" in line]  # not a note naming check
    if not lines:
        return out
    words = shlex.split(lines[0].split("rlbatch check", 1)[1].split(" -- ")[0].split(" run.sh")[0])
    for flag, value in zip(words, words[1:]):
        if flag in CHECK_OPTIONS:
            name, kind = CHECK_OPTIONS[flag]
            out[name] = kind(value)
    return out


def _same(report, checked) -> None:
    best, mem = report.best, checked.memory
    name = report.framework
    assert checked.valid, f"{name}: the printed command breaks {[v.rule for v in checked.errors]}"
    assert mem is not None and mem.verdict() == "yes", f"{name}: check says {mem and mem.verdict()}"
    peaks = {p: -(-r.peak(p) // 2**20) for p, r in best.memory.items()}
    assert set(peaks) == set(mem.peaks), f"{name}: phases {sorted(peaks)} priced, {sorted(mem.peaks)} checked"
    for phase, peak in peaks.items():  # each rounded up to a MiB on its own
        assert abs(peak - mem.peaks[phase]) <= 1, f"{name} {phase}: {peak} MiB priced, {mem.peaks[phase]} checked"
    assert mem.step_s == pytest.approx(best.step_time_s, abs=0.05), (
        f"{name}: {best.step_time_s:.2f} s priced, {mem.step_s:.2f} s checked (lengths priced {report.lengths}, "
        f"checked {mem.lengths})")


def _default_of(framework: str) -> Scenario:
    """The built-in default scenario (verl's), on another framework: the same GPUs, model, lengths and samples."""
    base = default_scenario()
    if framework == "verl":
        return base
    return Scenario(framework=framework, gpu=base.gpu, gpus=base.gpus, model=base.model, algorithm="grpo", n=base.n,
                    prompt_length=base.prompt_length, response_length=base.response_length)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_printed_command_checks_back_as_priced(framework, tmp_path):
    _round_trip(_default_of(framework), tmp_path)


# the verl packs before 0.6 (0.4.x is judged by 0.5.0's): their trainer configs lack keys that 0.6 added
# (rollout.data_parallel_size, rollout.expert_parallel_size), which check refuses under them (verl.launch.unknown_key)
OLD_VERL = ("verl==0.1.0", "verl==0.2.0", "verl==0.3.0", "verl==0.5.0", "verl-megatron==0.5.0")


@pytest.mark.parametrize("framework", OLD_VERL)
def test_an_older_verl_release_gets_a_command_of_its_own_keys(framework, tmp_path):
    """The command recommend prints for a named release holds only keys its trainer config has (the keys check
    refuses under it are left out at the value the release runs without them), and checks back as priced."""
    from rlbatch_solver.frameworks.verl import versions

    scenario = replace(_default_of(framework.split("==")[0]), framework=framework)
    report = api.recommend(scenario, top=1, time_limit_s=30)
    keys = [str(k) for k in (w.partition("=")[0].split()[-1] for w in best_command(report)) if "." in k]
    release = framework.split("==")[1]
    assert not [k for k in keys if versions.lacks(k, release)], f"{framework}: prints keys it lacks"
    assert f"{AR_ROLLOUT}.tensor_model_parallel_size" in keys  # the release's own rollout keys stay
    _round_trip(scenario, tmp_path)


AR_ROLLOUT = "actor_rollout_ref.rollout"


NON_DEFAULT = {
    # a rollout server of its own: two commands, the server's line carrying the length TRL has no flag for
    "trl-server": Scenario(framework="trl", gpu="h100", gpus=8, model="qwen2.5-7b", n=8, prompt_length=1024,
                           response_length=2048, fixed={"vllm_mode": "server"}),
    # an older release: its default beta (0.0) said, not the oldest of the releases its fields fit (0.04)
    "trl-0.19.1": Scenario(framework="trl==0.19.1", gpu="a100-80gb", gpus=4, model="qwen2.5-3b", n=8,
                           prompt_length=512, response_length=1024),
    # the user's own data: its profile and its mean prompt (DAPO-Math-17k's), not the example's
    "verl-own-data": Scenario(framework="verl", gpu="h100", gpus=8, model="qwen2.5-7b", n=8, prompt_length=2048,
                              response_length=4096, fixed={"data.train_files": "/data/dapo-math-17k.parquet"}),
    "unsloth-one-gpu": Scenario(framework="unsloth", gpu="rtx4090", gpus=1, model="qwen2.5-3b", n=8,
                                prompt_length=256, response_length=1024),
    # TRL 1.16 with vLLM off: no flag carries the prompt length, so the answer is priced at check's 512
    "trl-without-vllm": Scenario(framework="trl", gpu="rtx4090", gpus=4, model="qwen2.5-1.5b", n=8, prompt_length=880,
                                 response_length=1280, fixed={"use_vllm": False}),
    "swift-server": Scenario(framework="swift", gpu="h100", gpus=8, model="qwen2.5-7b", n=8, prompt_length=1024,
                             response_length=2048, fixed={"vllm_mode": "server"}),
    # a release without --vllm_mode (3.2-3.4): the colocated engine's TP is --tensor_parallel_size, and async mode
    # (--async_generate) runs --num_infer_workers engines on GPUs of their own beside NPROC_PER_NODE
    "swift-3.4.0": Scenario(framework="swift==3.4.0", gpu="a100-80gb", gpus=8, model="qwen2.5-7b"),
    "swift-3.4.0-async": Scenario(framework="swift==3.4.0", gpu="a100-80gb", gpus=8, model="qwen2.5-7b",
                                  fixed={"async_generate": True}),
    "swift-3.3.1-async": Scenario(framework="swift==3.3.1", gpu="h100", gpus=8, model="qwen2.5-3b", n=8,
                                  prompt_length=512, response_length=2048, fixed={"async_generate": True}),
}


@pytest.mark.parametrize("case", NON_DEFAULT)
def test_a_non_default_answer_checks_back_as_priced(case, tmp_path):
    _round_trip(NON_DEFAULT[case], tmp_path)


def test_the_price_names_the_data_the_command_trains_on():
    """The lengths an answer is timed at name the data its command carries (verl's example: GSM8K's profile)."""
    report = api.recommend(default_scenario(), top=1, time_limit_s=30)
    assert report.lengths["profile"] == "gsm8k" and "gsm8k" in report.lengths["dataset"]
    assert any("gsm8k/train.parquet" in w for w in best_command(report))


def test_pasting_expands_as_the_shell_does():
    """_pasted pastes as bash would: $HOME expanded, the continuation lines joined, quotes removed."""
    words = _pasted(["python3 -m verl.trainer.main_ppo", "data.train_files=$HOME/d.parquet",
                     "trainer.logger=['console']"], "/h")
    assert words == ["python3", "-m", "verl.trainer.main_ppo", "data.train_files=/h/d.parquet",
                     "trainer.logger=['console']"]


GIVEN_LENGTHS = {
    # the user's lengths, given to recommend: the answer says to check at them (not as flags of the command)
    "verl-lengths": Scenario(framework="verl", gpu="h100", gpus=8, model="qwen2.5-7b", n=8, prompt_length=1024,
                             response_length=2048, response_profile="math", mean_response_length=900),
    "openrlhf-lengths": Scenario(framework="openrlhf", gpu="rtx4090", gpus=4, model="qwen2.5-1.5b", n=8,
                                 prompt_length=880, response_length=1280, mean_prompt_length=300,
                                 mean_response_length=700),
    "trl-server-lengths": Scenario(framework="trl", gpu="h100", gpus=8, model="qwen2.5-7b", n=8,
                                   prompt_length=1024, response_length=2048, response_profile="reasoning",
                                   fixed={"vllm_mode": "server"}),
}


@pytest.mark.parametrize("case", GIVEN_LENGTHS)
def test_given_lengths_are_named_on_the_check_line_not_in_the_command(case, tmp_path):
    scenario = GIVEN_LENGTHS[case]
    report = api.recommend(scenario, top=1, time_limit_s=30)
    options = _check_line_options(report)
    assert options["response_profile"] == scenario.response_profile
    assert options["mean_prompt_len"] == scenario.mean_prompt_length
    assert options["mean_response_len"] == scenario.mean_response_length
    commands = [*companion_commands(report), best_command(report)]
    assert not any(w.startswith(("--mean-", "--response-profile")) for c in commands for w in c), commands
    _round_trip(scenario, tmp_path)


def _easyr1_check(words: list[str]):
    return entry.check(["python3", "-m", "verl.trainer.main", *words], framework="easyr1", gpus=None,
                       model="qwen2.5-1.5b", gpu="rtx4090", extra_gpus=None, config=None, length_fraction=None,
                       calibration=None, mean_prompt_len=None, mean_response_len=None, host_mem=None)


def test_easyr1_reads_the_data_its_config_file_sets(tmp_path):
    """EasyR1 takes its data from the ``config=`` file (verl/trainer/main.py merges it under the command line): the
    published examples/config.yaml trains on hiyouga/math12k (the math profile), a user's file on its own
    data.train_files, and a data.train_files on the command line wins over either."""
    example = _easyr1_check(["config=examples/config.yaml", "trainer.n_gpus_per_node=4"]).memory.lengths
    assert example["profile"] == "math" and "math12k" in example["dataset"]
    own = tmp_path / "mine.yaml"
    own.write_text("data:\n  train_files: openai/gsm8k@train\n  max_response_length: 1024\n")
    assert _easyr1_check([f"config={own}", "trainer.n_gpus_per_node=4"]).memory.lengths["profile"] == "gsm8k"
    line = _easyr1_check([f"config={own}", "data.train_files=/d/dapo_math.parquet", "trainer.n_gpus_per_node=4"])
    assert "dapo_math" in line.memory.lengths["dataset"]


def test_easyr1_answer_is_priced_at_its_example_data():
    report = api.recommend(_default_of("easyr1"), top=1, time_limit_s=30)
    assert report.lengths["profile"] == "math" and "math12k" in report.lengths["dataset"]


def test_trl_without_vllm_says_the_prompt_it_priced():
    """TRL 1.16 with vLLM off has no flag for the prompt length (GRPOConfig has no max_prompt_length since 0.28):
    the answer is priced at what check reads for its command (cost.DEFAULT_PROMPT), and its header says so."""
    from rlbatch_solver.frameworks.trl.cost import DEFAULT_PROMPT

    report = api.recommend(NON_DEFAULT["trl-without-vllm"], top=1, time_limit_s=30)
    assert report.lengths["max_prompt"] == DEFAULT_PROMPT
    head = _printed(report).split("Best config")[0]
    assert f"prompt {DEFAULT_PROMPT}," in head.splitlines()[0]
    assert any("880" in line and "no flag" in line for line in head.splitlines() if line.startswith("note:")), head
    with_vllm = api.recommend(replace(NON_DEFAULT["trl-without-vllm"], fixed={}), top=1, time_limit_s=30)
    assert with_vllm.lengths["max_prompt"] == 880  # the engine's max_model_len carries it


@pytest.mark.parametrize("objective,arm", [("time", True), ("memory-headroom", False)])
def test_trl_searching_use_vllm_prices_each_arm_as_printed(objective, arm, tmp_path):
    """--search use_vllm=true,false: the vLLM arm is priced at the prompt asked (its command carries it as
    --vllm_max_model_length), the other at the one check reads for its command (no flag carries it), and the
    answer says so; whichever arm wins checks back as priced."""
    from rlbatch_solver.frameworks.trl.cost import DEFAULT_PROMPT

    scenario = replace(NON_DEFAULT["trl-without-vllm"], fixed={}, search={"use_vllm": [True, False]},
                       objective=objective)
    report = api.recommend(scenario, top=1, time_limit_s=30)
    assert report.choices and bool(report.best.values["use_vllm"]) is arm
    assert report.lengths["max_prompt"] == (880 if arm else DEFAULT_PROMPT)
    notes = [line for line in _printed(report).splitlines() if line.startswith("note:")]
    assert any(f"use_vllm=false configs are priced at prompt {DEFAULT_PROMPT}, not the 880" in n for n in notes), notes
    _round_trip(scenario, tmp_path)



@pytest.mark.parametrize("fixed,flags", [
    ({"use_peft": True, "lora_r": 32}, ["--use_peft true", "--lora_r 32"]),
    ({"sync_ref_model": True, "beta": 0.04}, ["--sync_ref_model true", "--beta 0.04"]),
])
def test_trl_flags_the_user_set_stay_in_the_printed_command(fixed, flags, tmp_path):
    """--set use_peft=true or sync_ref_model=true (rule variables the export writes from no solution value): the
    printed command carries them as given, so check prices LoRA as recommend did (--use_peft was dropped, and the
    command checked back as full fine-tuning)."""
    scenario = Scenario(framework="trl", gpu="rtx4090", gpus=4, model="qwen2.5-7b", n=8, prompt_length=1024,
                        response_length=1024, fixed=fixed)
    if "sync_ref_model" in fixed:
        scenario = replace(scenario, gpu="h100", model="qwen2.5-1.5b")
    report = api.recommend(scenario, top=1, time_limit_s=30)
    words = best_command(report)
    assert all(flag in words for flag in flags), words
    _round_trip(scenario, tmp_path)


@pytest.mark.parametrize("framework", ["verl", "openrlhf", "swift", "trl"])
def test_the_printed_command_loads_the_model_id_the_user_gave(framework, tmp_path):
    """--model Qwen/Qwen2.5-1.5B-Instruct is priced as the catalog's qwen2.5-1.5b (the same architecture), but the
    command must load the model asked for: it printed the catalog's base id (Qwen/Qwen2.5-1.5B), another model."""
    scenario = replace(_default_of(framework), model="Qwen/Qwen2.5-1.5B-Instruct")
    report = api.recommend(scenario, top=1, time_limit_s=30)
    words = " ".join(best_command(report))
    assert "Qwen/Qwen2.5-1.5B-Instruct" in words and "Qwen/Qwen2.5-1.5B " not in words + " ", words
    _round_trip(scenario, tmp_path)
