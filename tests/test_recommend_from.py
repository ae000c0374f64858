"""``recommend --from run.sh``: the frameworks' own example scripts as the starting point of a search.

What stays as the script has it (model, GPUs, lengths, samples per prompt, algorithm settings, the batch
per step and per update) must come back unchanged in the answer; the answer must be valid, and never
slower than the script when the script itself runs; a script that does not run is said to, with its
rules and numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clirun import run
from rlbatch_solver import api
from rlbatch_solver.cli import app
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.launch_script import read_launch_script

SCRIPTS = Path(__file__).resolve().parent / "data" / "scripts"
runner = CliRunner()

# script, GPU (from its header, tests/data/scripts/hardware.yaml, or the GPU its README names), catalog model
CASES = [
    ("swift/gspo.sh", "a100-80gb", "qwen2.5-7b"),
    ("verl/run_qwen2-7b.sh", "a100-80gb", "qwen2.5-7b"),  # Qwen2-7B has Qwen2.5-7B's shapes
    ("verl-megatron/run_qwen2-7b_math_megatron.sh", "h100", "qwen2.5-7b"),
    ("swift-megatron/dense_colocate.sh", "a100-80gb", "qwen2.5-3b"),
    ("openrlhf/train_ppo_llama_ray.sh", "a100-80gb", "llama3.1-8b"),
]


def _from(script: str, gpu: str, model: str):
    s = read_launch_script(SCRIPTS / script)
    fw = get_framework(s.framework)
    flat, _ = fw.parse(s.args)
    return fw, flat, api.recommend_from(s.framework, flat, gpu=gpu, model=model, gpus=s.gpus)


@pytest.mark.parametrize("script,gpu,model", CASES, ids=[c[0] for c in CASES])
def test_answer_keeps_what_shapes_training_and_is_never_slower(script, gpu, model):
    _, flat, report = _from(script, gpu, model)
    fw = get_framework(f"{report.framework}=={report.version}")  # the release the config showed (verl: its keys)
    assert report.best is not None and report.status == "optimal"
    start, best = report.start, report.best
    original = fw.to_values(flat, gpus=None, model=None)
    kept = fw.shapes_learning | set(fw.scenario_vars.values()) | {"n"}
    for name in kept & set(original) & set(best.values):
        assert best.values[name] == original[name], name
    # the answer passes every rule of the framework (the solver's answers are re-checked, here by the API)
    assert not fw.ruleset.check({**best.values}).errors
    if start.runs and start.verdict != "tight":  # tight: the best keeps the memory margin yours lacks, at a cost
        assert best.step_time_s <= start.step_time_s + 1e-6
    assert start.searched, "nothing was free to choose"


def test_a_config_that_packs_by_tokens_has_its_token_budget_searched():
    """verl v0.9.0's run_qwen3_30b_a3b_fsdp.sh on 8x H100 (use_dynamic_bsz, ppo_max_token_len_per_gpu 32768: the
    actor update over the usable memory): the dynamic batching the script chose is kept and its token budget is
    searched, as fix moves it (18432 fits); freed, the switch fell to its default in the space, the budget was never
    searched, and the answer was "no valid config fits"."""
    _, flat, report = _from("verl/run_qwen3_30b_a3b_fsdp.sh", "h100", "qwen3-30b-a3b")
    assert not report.start.runs and report.best is not None
    assert report.best.values["actor_dyn"] is True
    assert report.best.values["actor_max_tokens"] < 32768
    assert "actor_rollout_ref.actor.ppo_max_token_len_per_gpu" in report.start.searched


def test_a_script_that_does_not_run_is_said_to_with_its_rules():
    _, _, report = _from("verl/run_qwen2-7b.sh", "a100-80gb", "qwen2.5-7b")
    # verl's own example of its 0.1 days (actor.fsdp_config.grad_offload, gone from 0.3's yaml: checked with 0.2.0,
    # whose workers convert its global micro sizes) trains a critic with no micro batch set, which 0.2's
    # RayPPOTrainer._validate_config refuses ("Please set at least one of ...")
    assert report.version == "0.2.0"
    broken = {v.rule for v in report.start.broken}
    # its actor update (0.2's padded path: the logits sliced to the 16 x 1024 response rows, the entropy eager, its graph
    # kept) is within the memory model's error of the A100's usable memory: tight, not a broken rule
    assert broken == {"verl.critic.micro_exactly_one"}
    assert report.best is not None
    assert "actor_rollout_ref.actor.ppo_micro_batch_size" in report.start.given


def test_cli_from_script_prints_the_comparison_and_json():
    r = runner.invoke(app, ["recommend", "--from", str(SCRIPTS / "swift/gspo.sh"), "--gpu", "a100-80gb"])
    assert r.exit_code == 0, r.output
    assert "Your config" in r.output and "x faster" in r.output and "change:" in r.output
    # the block lists every argument, not only the changed ones (its header said "the arguments that change")
    assert "Best config (your command with the changes above;" in " ".join(r.output.split())
    # the whole command, as it pastes: the environment word before ms-swift's entry point, not alone on a line
    # before the flags (it printed "NPROC_PER_NODE=8 \\" then "--rlhf_type grpo", which runs nothing)
    assert "\n  CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 NPROC_PER_NODE=8 swift rlhf \\\n" in r.output, r.output
    r = runner.invoke(app, ["recommend", "--from", str(SCRIPTS / "swift/gspo.sh"), "--gpu", "a100-80gb", "--json"])
    data = json.loads(r.stdout[r.stdout.index("{"):])
    assert data["start"]["runs"] is True and data["start"]["step_time_s"] >= data["choices"][0]["step_time_s"]


def test_cli_from_needs_a_gpu_and_takes_no_scenario_flags():
    script = str(SCRIPTS / "swift/gspo.sh")
    r = runner.invoke(app, ["recommend", "--from", script])
    assert r.exit_code == 2 and "gpu" in r.output
    r = runner.invoke(app, ["recommend", "--from", script, "--gpu", "a100-80gb", "--n", "4"])
    assert r.exit_code == 2 and "--from" in r.output


def test_cli_from_takes_host_mem_and_refuses_free_batch():
    # both were dropped without a word: the host line assumed the standard node, the batch stayed kept
    script = str(SCRIPTS / "swift/gspo.sh")
    r = runner.invoke(app, ["recommend", "--from", script, "--gpu", "a100-80gb", "--host-mem", "512", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout[r.stdout.index("{"):])
    assert data["host_memory"]["ram_gib"] == 512 and data["host_memory"]["ram_from"] == "given", data["host_memory"]
    # the script's kept offload switches put 71 GiB of actor states on the CPU (ms-swift's offload_optimizer and
    # offload_model: the moments and bf16 partitions of 8 ranks), beside 54 of sleeping engine weights and 32 of
    # processes: no config fits a 64 GiB node
    r = runner.invoke(app, ["recommend", "--from", script, "--gpu", "a100-80gb", "--host-mem", "64", "--json"])
    assert r.exit_code == 1, r.output
    data = json.loads(r.stdout[r.stdout.index("{"):])
    assert data["host_memory_unfit"]["ram_gib"] == 64 and not data["choices"], data["host_memory_unfit"]
    r = runner.invoke(app, ["recommend", "--from", script, "--gpu", "a100-80gb", "--free-batch"])
    assert r.exit_code == 2 and "--free-batch" in r.output and "rlbatch fix" in r.output, r.output


def test_from_judges_your_config_against_the_nodes_ram_as_the_choices_are():
    """The 'runs' line said 'runs: step 389.7 s' for gspo.sh on a 64 GiB node whose RAM (--host-mem) it needs 345 GiB
    of (466 with DeepSpeed's x1.5 estimate of its offloaded states): the choices are held to the given RAM, so is
    yours."""
    script = str(SCRIPTS / "swift/gspo.sh")
    r = runner.invoke(app, ["recommend", "--from", script, "--gpu", "a100-80gb", "--host-mem", "300"])
    out = " ".join(r.output.split())
    assert "vllm_tensor_parallel_size): runs: step" not in out and "does not run: breaks 1 rule(s)" in out, out
    assert "swift.memory.host: a node needs 345 GiB of RAM at checkpoint save" in out and "host out of memory" in out
    assert "the best config below runs: step" in out
    r = runner.invoke(app, ["recommend", "--from", script, "--gpu", "a100-80gb", "--host-mem", "300", "--json"])
    data = json.loads(r.stdout[r.stdout.index("{"):])
    assert data["start"]["runs"] is False and data["host_memory"]["fits"] is True
    # without --host-mem the RAM is assumed (the standard node): a line of the answer, not a verdict on yours
    r = runner.invoke(app, ["recommend", "--from", script, "--gpu", "a100-80gb"])
    assert "runs: step" in r.output, r.output


def test_cli_from_a_script_whose_algorithm_cannot_run_exits_1_with_the_rule():
    # OpenRLHF's hybrid-engine GRPO example sets --advantage_estimator group_norm with one sample per prompt
    r = runner.invoke(app, ["recommend", "--from", str(SCRIPTS / "openrlhf/train_grpo_ray_hybrid_engine.sh"),
                            "--gpu", "a100-80gb", "--model", "llama3.1-8b"])
    assert r.exit_code == 1
    assert "openrlhf.driver.group_estimator_needs_n" in r.output


def test_a_config_that_breaks_a_search_tie_keeps_its_choice():
    """verl's recipe scripts give the log-prob passes a larger token budget than the actor's (3x against 2x the longest
    sample); our search ties them by default, as verl's yaml does. recommend --from keeps the config's choice (it
    answered "No valid config" from the tie before)."""
    from rlbatch_solver.commands.recommend import recommend_from

    script = read_launch_script(Path(__file__).parent / "data" / "scripts" / "verl" /
                                "one_step_off_dapo_7b_math_fsdp2_colocate.sh")
    flat, _ = get_framework("verl").parse(script.args)
    rep = recommend_from("verl", flat, gpu="h20", model="qwen2.5-7b", time_limit_s=20)
    assert rep.best is not None and rep.start.runs
    assert rep.best.step_time_s <= rep.start.step_time_s + 1e-6


def test_the_free_keys_name_only_models_the_run_has():
    """A GRPO script has no critic: recommend --from does not list critic keys among the ones it chose."""
    _, flat, report = _from("verl-megatron/run_qwen2-7b_math_megatron.sh", "h100", "qwen2.5-7b")
    assert flat.get("algorithm.adv_estimator") == "grpo"
    assert report.start.searched and not [k for k in report.start.searched if k.startswith("critic.")]


def _published() -> list[tuple[str, str, str]]:
    import yaml

    hw = yaml.safe_load((SCRIPTS / "hardware.yaml").read_text())
    return [(rel, v["gpu"], v["model"]) for rel, v in hw.items()]


@pytest.mark.parametrize("script,gpu,model", _published(), ids=[c[0] for c in _published()])
def test_every_published_script_gets_an_answer_no_slower_than_itself(script, gpu, model):
    """Each example script runs upstream on its GPU: recommend --from must find a config for it, never slower than the
    script. Two used to come back "No valid config": ms-swift's server-mode examples (the rollout server's GPUs were
    not counted in the job's) and its ZeRO-3-offload MoE example (the search dropped the offload the script fits by)."""
    from rlbatch_solver.commands.recommend import HEADROOM_COST

    _, _, report = _from(script, gpu, model)
    assert report.best is not None, (script, report.status)
    if report.start.runs and report.start.verdict == "tight":  # the best keeps the memory margin yours lacks
        assert report.best.step_time_s <= report.start.step_time_s * (1 + HEADROOM_COST)
    elif report.start.runs:
        assert report.best.step_time_s <= report.start.step_time_s + 1e-6


def test_a_server_mode_job_counts_the_rollout_servers_gpus():
    """ms-swift's external examples train on NPROC_PER_NODE=6 of 8 GPUs; the `swift rollout` server takes the rest."""
    _, flat, report = _from("swift/external_grpo_7b.sh", "a100-80gb", "qwen2.5-7b")
    assert report.scenario.total_gpus == 7  # 6 ranks + the server's tp*dp (1*1: the trainer's flags do not say)
    s = read_launch_script(SCRIPTS / "swift/external_grpo_7b.sh")
    report = api.recommend_from(s.framework, flat, gpu="a100-80gb", model="qwen2.5-7b", gpus=8)
    assert report.scenario.total_gpus == 8 and report.best is not None  # --gpus: the whole job, as its header says


def test_cli_from_a_missing_file_says_so():
    r = runner.invoke(app, ["recommend", "--from", "/no/such/run.sh", "--gpu", "h100"])
    assert r.exit_code == 2 and "does not exist" in r.output and "Traceback" not in r.output


def test_a_tie_keeps_the_users_own_value():
    """OpenRLHF 0.11.2, qwen2.5-7b on 8x H100 with --vllm.gpu_memory_utilization 0.5: the answer changed it to 0.4
    at the same time per sample (0.5 was the next alternative, "ties on time"); now the tie keeps the user's 0.5 and
    the change list holds only what buys time."""
    args = ("--actor.model_name_or_path Qwen/Qwen2.5-7B-Instruct --actor.num_nodes 1 --actor.num_gpus_per_node 8 "
            "--ref.num_nodes 1 --ref.num_gpus_per_node 8 --vllm.num_engines 4 --vllm.tensor_parallel_size 2 "
            "--vllm.gpu_memory_utilization 0.5 --train.colocate_all --vllm.enable_sleep --ds.enable_sleep "
            "--rollout.batch_size 128 --rollout.n_samples_per_prompt 8 --rollout.micro_batch_size 16 "
            "--train.batch_size 1024 --train.micro_batch_size 4 --data.max_len 4096 --rollout.max_new_tokens 3072 "
            "--ds.zero_stage 3 --ds.packing_samples --actor.gradient_checkpointing_enable "
            "--algo.advantage.estimator group_norm --algo.kl.use_loss --algo.kl.estimator k3 "
            "--reward.remote_url /root/reward.py").split()
    fw = get_framework("openrlhf")
    flat, _ = fw.parse(args)
    report = api.recommend_from("openrlhf", flat, gpu="h100", model="qwen2.5-7b", gpus=8)
    best = report.best
    assert best.values["gmu_permille"] == 500, best.native
    assert all(c.objective >= best.objective for c in report.choices)
    assert [c.rank for c in report.choices] == list(range(1, len(report.choices) + 1))


def test_write_without_from_names_recommends_own_form():
    """recommend --write without --from answered "pass the script alone (rlbatch fix run.sh --write fixed.sh)", fix's
    form; now recommend's own."""
    r = runner.invoke(app, ["recommend", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-7b", "--write", "x.sh"])
    text = " ".join(r.output.split())
    assert r.exit_code == 2 and "rlbatch recommend --from run.sh --gpu GPU --write fixed.sh" in text, r.output


def test_every_scenario_variable_is_a_value_the_config_gives():
    # TRL named max_prompt_length, which its values never hold (max_length is the prompt): --from then solved at the
    # default prompt of 1024 while the user's own config was priced at TRL's 512, and called the slower one best
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.frameworks.registry import FRAMEWORKS

    card = load_model("qwen2.5-7b")
    for name in FRAMEWORKS:
        fw = get_framework(name)
        values = fw.to_values({"rollout-batch-size": 8} if name == "slime" else {}, gpus=8, model=card)
        assert set(fw.scenario_vars.values()) <= set(values), (name, set(fw.scenario_vars.values()) - set(values))


def test_a_trl_script_is_solved_at_the_prompt_length_its_own_config_is_priced_at(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("accelerate launch --num_processes 4 --config_file deepspeed_zero2.yaml -m trl.scripts.grpo "
                      "--model_name_or_path Qwen/Qwen2.5-1.5B-Instruct --per_device_train_batch_size 4 "
                      "--gradient_accumulation_steps 4 --num_generations 8 --max_completion_length 1024 --use_vllm "
                      "--vllm_mode colocate --bf16 --gradient_checkpointing --output_dir out\n")
    s = read_launch_script(script)
    flat, _ = get_framework(s.framework).parse(s.args)
    report = api.recommend_from(s.framework, flat, gpu="h100", model="qwen2.5-1.5b", gpus=s.gpus)
    assert report.scenario.prompt_length == 512
    start, best = report.start, report.best
    # the same training batch and ZeRO stage: the same training phases, whatever the rollout's layout
    assert best.phase_seconds["actor_update"] == pytest.approx(start.phase_seconds["actor_update"])
    assert best.step_time_s <= start.step_time_s + 1e-6


def test_a_trl_script_answer_is_its_whole_accelerate_command(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("accelerate launch --num_processes 4 --config_file deepspeed_zero2.yaml -m trl.scripts.grpo "
                      "--model_name_or_path Qwen/Qwen2.5-1.5B-Instruct --per_device_train_batch_size 4 "
                      "--gradient_accumulation_steps 4 --num_generations 8 --max_completion_length 1024 --use_vllm "
                      "--vllm_mode colocate --bf16 --gradient_checkpointing --output_dir out\n")
    r = runner.invoke(app, ["recommend", "--from", str(script), "--gpu", "h100"])
    assert r.exit_code == 0, r.output
    block = r.stdout[r.stdout.index("Best config"):]
    words = block.split()
    # accelerate's flags before the module, the script's after it; the user's model once; no example dataset
    assert words.index("launch") < words.index("--num_processes") < words.index("-m") < words.index(
        "--per_device_train_batch_size"), block
    assert block.count("--model_name_or_path") == 1 and "DeepMath" not in block, block


def _best_words(script) -> list[str]:
    """The best config as the whole command an answer that changes the script prints (``from_command``; an answer
    that keeps it prints the script's own line: test_keep_prints_the_users_command_unchanged)."""
    from rlbatch_solver.commands import inputs
    from rlbatch_solver.commands.recommend import from_command

    name, flat, gpus, model = inputs.from_config(str(script), None, "h100", None, None)
    report = api.recommend_from(name, flat, gpu="h100", model=model, gpus=gpus)
    assert report.best is not None, report.status
    return " ".join(from_command(report)).split()


def test_a_script_of_the_users_own_is_the_command_an_answer_prints(tmp_path):
    """open-r1's launch (`accelerate launch --config_file recipes/accelerate_configs/zero2.yaml src/open_r1/grpo.py
    --config recipes/...yaml`) was answered with `-m trl.scripts.grpo` (TRL's script, not the user's: another
    program, which refuses open-r1's own fields), without the accelerate config file, and with our internal
    `--__entry__ "accelerate launch"` at its end: the printed command did not run as is. It keeps the user's
    launcher, config file and script; `trl grpo` stays `trl grpo`."""
    script = tmp_path / "run.sh"
    script.write_text("ACCELERATE_LOG_LEVEL=info accelerate launch --config_file recipes/accelerate_configs/zero2.yaml "
                      "--num_processes=7 src/open_r1/grpo.py --config recipes/Qwen2.5-1.5B-Instruct/grpo/config_demo.yaml "
                      "--model_name_or_path Qwen/Qwen2.5-1.5B-Instruct --per_device_train_batch_size 4 "
                      "--num_generations 7 --max_completion_length 1024 --output_dir out\n")
    words = _best_words(script)
    assert not any(w.startswith("--__") for w in words) and "trl.scripts.grpo" not in words, words
    assert words[:2] == ["accelerate", "launch"], words
    at = words.index("src/open_r1/grpo.py")
    assert words.index("--config_file") < at < words.index("--config") and at < words.index("--per_device_train_batch_size")
    assert words[words.index("--config_file") + 1] == "recipes/accelerate_configs/zero2.yaml"
    # 8 a rank: `trl grpo` builds GRPOConfig at world size 1 first (8 x 1 x 1 divides by num_generations 8; 4 does
    # not, and recommend --from keeps the batch per step: `rlbatch fix` changes it)
    script.write_text("trl grpo --num_processes 4 --model_name_or_path Qwen/Qwen2.5-1.5B-Instruct "
                      "--per_device_train_batch_size 8 --num_generations 8 --max_completion_length 1024\n")
    words = _best_words(script)
    assert words[:2] == ["trl", "grpo"] and "-m" not in words and "accelerate" not in words, words


def test_equally_fast_configs_are_ordered_the_same_whatever_the_solvers_threads():
    """verl's fully-async DAPO script on 8 H100: the rollout pool is not the bottleneck, so its tensor parallel size and
    vLLM memory share do not change the step time, and thousands of configs tie. CP-SAT's workers returned any of them
    (rollout TP 4 and a 55.8 GiB rollout peak with two threads, TP 1 and 63.7 GiB with eight); recommend orders ties
    by fewest of the user's values changed, then the least memory (``recommend.tie_break``): the script's own TP 1
    and 0.8 share, with one thread or eight."""
    s = read_launch_script(SCRIPTS / "verl/fully_async_dapo_7b_math_fsdp2_4_4.sh")
    fw = get_framework(s.framework)
    flat, _ = fw.parse(s.args)
    answers = [api.recommend_from(s.framework, flat, gpu="h100", model="qwen2.5-7b", gpus=8, top=3,
                                  solver_workers=w) for w in (1, 2, 8)]
    assert all(r.best is not None and r.best.proven for r in answers)
    assert len({tuple(tuple(c.native) for c in r.choices) for r in answers}) == 1
    best = answers[0].best.native
    assert "actor_rollout_ref.rollout.tensor_model_parallel_size=1" in best
    assert "actor_rollout_ref.rollout.gpu_memory_utilization=0.8" in best


OPEN_R1 = ("ACCELERATE_LOG_LEVEL=info accelerate launch --config_file recipes/accelerate_configs/zero2.yaml "
           "--num_processes=7 src/open_r1/grpo.py --config recipes/Qwen2.5-1.5B-Instruct/grpo/config_demo.yaml "
           "--model_name_or_path Qwen/Qwen2.5-1.5B-Instruct --per_device_train_batch_size 4 --num_generations 7 "
           "--max_completion_length 1024 --output_dir out")


def test_trl_batch_per_step_is_the_users_own(tmp_path):
    """open-r1's launch on 7 H100 (per_device_train_batch_size 4, no gradient_accumulation_steps: GRPOConfig 1.16
    inherits TrainingArguments' default 1, so 7 x 4 x 1 = 28 completions a step) was answered with
    --gradient_accumulation_steps 16 (448 a step, 39.1 s against the script's 27.6 s), under a header that says the
    batch per step is kept: TRL's search space tries accumulations the script did not free. The answer keeps 28."""
    script = tmp_path / "run.sh"
    script.write_text(OPEN_R1 + "\n")
    s = read_launch_script(script)
    fw = get_framework(s.framework)
    flat, _ = fw.parse(s.args)
    report = api.recommend_from(s.framework, flat, gpu="h100", model="qwen2.5-1.5b", gpus=s.gpus)
    assert report.start.samples == 7 * 4 * 1
    assert all(c.samples == report.start.samples for c in report.choices), [c.samples for c in report.choices]
    assert all(c.values["gradient_accumulation_steps"] == 1 for c in report.choices)


def test_keep_prints_the_users_command_unchanged(tmp_path):
    """When nothing in the search space is faster, the best config is the user's: "keep your config" sat beside a
    "Best config" with --gradient_accumulation_steps 16 and --use_vllm false added. Now the answer is the script's own
    command line, no flag added, and --write leaves the script as it is."""
    script = tmp_path / "run.sh"
    script.write_text(OPEN_R1 + "\n")
    r = runner.invoke(app, ["recommend", "--from", str(script), "--gpu", "h100"])
    assert r.exit_code == 0, r.output
    assert "keep your config" in r.stdout, r.stdout
    block = r.stdout[r.stdout.index("Best config"):]
    lines = block.splitlines()
    assert lines[1].split() == OPEN_R1.split(), block
    assert "--gradient_accumulation_steps" not in block.split("alternatives")[0], block
    out = tmp_path / "fixed.sh"
    r = runner.invoke(app, ["recommend", "--from", str(script), "--gpu", "h100", "--write", str(out)])
    assert "nothing written" in r.output and not out.exists(), r.output


def test_recommend_says_what_the_config_reading_could_not_read(tmp_path):
    """check said "--config recipes/...yaml is not here: only the flags were read"; recommend --from and fix, whose
    answers are built on the same reading, said nothing of it."""
    script = tmp_path / "run.sh"
    script.write_text(OPEN_R1 + "\n")
    note = "note: --config recipes/Qwen2.5-1.5B-Instruct/grpo/config_demo.yaml is not here: only the flags were read"
    for command in ("recommend", "fix"):  # fix's repair too
        args = ["recommend", "--from", str(script)] if command == "recommend" else ["fix", str(script)]
        r = runner.invoke(app, [*args, "--gpu", "h100"])
        assert note in r.stdout, r.stdout


# the frameworks' example scripts with the GPU their header names: swift's external-server script ties its vLLM memory
# share (the best was chosen for headroom, yours is tight), verl's and ms-swift's keep cases
KEEP_CASES = [
    ("swift/external_grpo_7b.sh", "a100-80gb", "qwen2.5-7b"),
    ("swift/multi_node_qwen2_5_32b_full.sh", "a100-80gb", "qwen2.5-32b"),
    ("verl/fully_async_dapo_7b_math_fsdp2_8_8.sh", "h100", "qwen2.5-7b"),
    ("openrlhf/train_ppo_llama_ray.sh", "a100-80gb", "llama3.1-8b"),
]


@pytest.mark.parametrize("script,gpu,model", KEEP_CASES, ids=[c[0] for c in KEEP_CASES])
def test_keep_never_sits_beside_another_best(script, gpu, model):
    """A "keep your config" verdict answers with the user's config itself; every answer trains the user's batch per
    step."""
    _, _, report = _from(script, gpu, model)
    start = report.start
    assert all(c.samples == start.samples for c in report.choices)
    if start.verdict == "keep":
        assert report.best.native == start.native
    if start.verdict == "tight":  # yours is as fast or faster, but the best keeps a margin yours lacks
        assert report.best.native != start.native and report.margin_note.startswith("kept")


def test_keep_is_not_said_of_an_answer_another_objective_chose():
    """--objective gpus: verl's fully-async script without its trainer GPU count, on 16 H100, is answered with 2
    trainer GPUs; not faster than the script, it was "keep your config" beside that answer. The verdict says the
    best is the best by the objective, and lists its changes."""
    from rlbatch_solver.commands.recommend import start_changes

    s = read_launch_script(SCRIPTS / "verl/fully_async_dapo_7b_math_fsdp2_8_8.sh")
    fw = get_framework(s.framework)
    flat, _ = fw.parse(s.args)
    flat = {k: v for k, v in flat.items() if k not in ("trainer.n_gpus_per_node", "trainer.nnodes")}
    report = api.recommend_from(s.framework, flat, gpu="h100", model="qwen2.5-7b", gpus=16, objective="gpus")
    assert report.best.native != report.start.native
    assert report.start.verdict == "objective"
    assert "trainer.n_gpus_per_node=2" in start_changes(report)[0]


def test_objective_gpus_orders_equally_fast_configs_on_as_few_gpus_the_same_whatever_the_solvers_threads():
    """--objective gpus had no tie-break: on its fewest GPUs (2 trainer GPUs) the fully-async script's configs of one
    time per sample differ in the vLLM memory share, and CP-SAT's workers answered any of them (0.5 with one thread,
    0.3 with eight, 0.7 with two). They are ordered as --objective time orders equally fast configs
    (``recommend.tie_break``): the script's own share of 0.8 (fewest of its values changed), with any thread count."""
    s = read_launch_script(SCRIPTS / "verl/fully_async_dapo_7b_math_fsdp2_8_8.sh")
    fw = get_framework(s.framework)
    flat, _ = fw.parse(s.args)
    flat = {k: v for k, v in flat.items() if k not in ("trainer.n_gpus_per_node", "trainer.nnodes")}
    answers = [api.recommend_from(s.framework, flat, gpu="h100", model="qwen2.5-7b", gpus=16, objective="gpus",
                                  time_limit_s=60, solver_workers=w) for w in (1, 8, 2)]
    assert all(r.best is not None and r.best.proven for r in answers)
    assert len({tuple(tuple(c.native) for c in r.choices) for r in answers}) == 1
    assert "trainer.n_gpus_per_node=2" in answers[0].best.native
    assert "actor_rollout_ref.rollout.gpu_memory_utilization=0.8" in answers[0].best.native


def test_objective_memory_headroom_answers_the_fastest_of_equally_roomy_configs_whatever_the_solvers_threads():
    """--objective memory-headroom had no tie-break: every config of the fully-async script on its 8 + 8 H100 leaves
    the same least memory (1,987 MiB in some phase), and CP-SAT answered any of them (one and two threads: vLLM
    TP 2, Ulysses 2, parameter offload, 332.6 s a step; eight: offload again, 330.1 s), each told to replace the
    script's own as better by the objective. Equal headroom is ordered by the time objective, then as
    ``recommend.tie_break`` orders equally fast configs: the script's own (327.1 s a step), kept, with any thread
    count."""
    s = read_launch_script(SCRIPTS / "verl/fully_async_dapo_7b_math_fsdp2_8_8.sh")
    fw = get_framework(s.framework)
    flat, _ = fw.parse(s.args)
    answers = [api.recommend_from(s.framework, flat, gpu="h100", model="qwen2.5-7b", gpus=16,
                                  objective="memory-headroom", time_limit_s=60, solver_workers=w) for w in (1, 2, 8)]
    assert all(r.best is not None and r.best.proven for r in answers)
    assert len({tuple(tuple(c.native) for c in r.choices) for r in answers}) == 1
    assert len({(r.best.objective, r.start.verdict) for r in answers}) == 1
    assert answers[0].start.verdict == "keep"
    assert answers[0].best.step_time_s == pytest.approx(answers[0].start.step_time_s)



TRL_VLLM_FLAGS = {"vllm_gpu_memory_utilization", "vllm_enable_sleep_mode", "vllm_tensor_parallel_size"}


def _open_r1(tmp_path, extra: str, gpus=None):
    """recommend --from open-r1's grpo.py on 7 training processes with ``extra`` flags; the report and the TRL vLLM
    settings each answer changes."""
    script = tmp_path / "run.sh"
    script.write_text("accelerate launch --num_processes=7 src/open_r1/grpo.py --model_name_or_path "
                      "Qwen/Qwen2.5-1.5B-Instruct --per_device_train_batch_size 4 --num_generations 7 "
                      f"--max_completion_length 1024 {extra} --output_dir out\n")
    s = read_launch_script(script)
    flat, _ = get_framework(s.framework).parse(s.args)
    report = api.recommend_from(s.framework, flat, gpu="h100", model="qwen2.5-1.5b", gpus=gpus or s.gpus)
    changed = [{w.lstrip("-").split("=")[0].split(" ")[0] for w in c.native} & TRL_VLLM_FLAGS for c in report.choices]
    return report, changed


def test_vllm_settings_are_not_free_when_vllm_is_off(tmp_path):
    """A TRL script without --use_vllm generates with transformers' generate: vLLM's memory share, sleep mode and
    tensor-parallel size move nothing, so recommend --from neither lists them as free nor offers them as tied
    alternatives (open-r1's grpo.py on 7 GPUs listed all three and showed vllm_enable_sleep_mode=true as a tie)."""
    report, changed = _open_r1(tmp_path, "")
    assert not TRL_VLLM_FLAGS & set(report.start.searched), report.start.searched
    assert not any(c.values["use_vllm"] for c in report.choices) and not any(changed), changed


def test_trl_server_mode_searches_no_trainer_side_vllm_share(tmp_path):
    """TRL's --vllm_gpu_memory_utilization and --vllm_enable_sleep_mode apply in colocate mode only (a `trl
    vllm-serve` server has its own): recommend --from a server-mode script leaves them alone."""
    report, changed = _open_r1(tmp_path, "--use_vllm true --vllm_mode server", gpus=8)
    assert not TRL_VLLM_FLAGS & set(report.start.searched), report.start.searched
    assert not any(changed), changed


def test_the_printed_verl_command_names_its_rollout_engine_and_keeps_the_users_other_keys():
    """verl 0.6.1 to 0.9.1 leave actor_rollout_ref.rollout.name mandatory (rollout/rollout.yaml "name: ???";
    RolloutConfig.name = MISSING): a command without it stops at launch, and every verl example sets it. The printed
    commands had none: recommend's own, and recommend --from's, which also dropped keys of the user's that the answer
    keeps but does not print (one_step_off's load_format=safetensors, layered_summon=True, save_freq=-1)."""
    r = run("recommend", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-7b", "--top", "1")
    assert r.returncode == 0 and "actor_rollout_ref.rollout.name=vllm" in r.stdout, r.stdout
    r = run("recommend", "--from", str(SCRIPTS / "verl/one_step_off_grpo_3b_gsm8k_fsdp2_2_6.sh"), "--gpu", "h100",
            "--model", "qwen2.5-3b", "--top", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    best = r.stdout[r.stdout.index("Best config"):]
    for kept in ("actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.rollout.load_format=safetensors",
                 "actor_rollout_ref.rollout.layered_summon=True", "trainer.save_freq=-1"):
        assert kept in best, kept


def test_an_old_openrlhf_script_keeps_its_own_flags_in_the_printed_answer():
    """OpenRLHF's train_ppo_llama_ray.sh (0.5.9's underscore flags): the printed "your arguments with the changes
    above" lost every flag of the old releases with no dotted successor: --prompt_data (the run has no data without
    it), --bf16 (the model would load in fp32), --save_path, --actor_learning_rate, --apply_chat_template ..."""
    r = run("recommend", "--from", str(SCRIPTS / "openrlhf/train_ppo_llama_ray.sh"), "--gpu", "a100-80gb",
            "--model", "llama3.1-8b", "--top", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    best = r.stdout[r.stdout.index("Best config"):]
    for kept in ("--prompt_data OpenRLHF/prompt-collection-v0.1", "--bf16", "--flash_attn", "--save_path ",
                 "--actor_learning_rate 5e-07", "--critic_learning_rate 9e-06", "--input_key context_messages",
                 "--apply_chat_template", "--normalize_reward", "--max_samples 100000", "--load_checkpoint"):
        assert kept in best, kept
    assert best.count("--bf16") == 1


def test_what_the_answer_drops_is_what_its_printed_flags_leave_out():
    """train_ppo_llama_ray.sh's answer prints --ref_num_gpus_per_node 2, --vllm_num_engines 2 and
    --colocate_critic_reward (0.5.9's names) but said "drop: ref.num_gpus_per_node ... vllm.num_engines ...
    train.colocate_critic_reward" (the same flags, dotted), and --write took them out of the script."""
    from rlbatch_solver.commands.recommend import start_changes

    _, _, report = _from("openrlhf/train_ppo_llama_ray.sh", "a100-80gb", "llama3.1-8b")
    _, dropped = start_changes(report)
    for kept in ("ref.num_gpus_per_node", "vllm.num_engines", "train.colocate_critic_reward"):
        assert kept not in dropped, dropped


@pytest.mark.parametrize("script,gpu,model", CASES, ids=[c[0] for c in CASES])
def test_the_answer_is_judged_by_the_release_the_script_is(script, gpu, model):
    """The keys whose value dates a config (verl 0.6.1's rollout.mode=sync: 0.7 removed it) stay as the user wrote
    them: run_qwen2-7b_math_megatron.sh's answer dropped rollout.mode, and `check` of the printed answer then judged
    it by verl 0.9.1's rules where the script's own were 0.6.1's."""
    fw, flat, report = _from(script, gpu, model)
    printed, _ = fw.parse(report.best.native)
    assert fw.for_config(printed)[0].version == fw.for_config(flat)[0].version


def test_a_0_6_1_script_written_back_is_checked_as_0_6_1(tmp_path):
    script = SCRIPTS / "verl-megatron/run_qwen2-7b_math_megatron.sh"
    out = tmp_path / "best.sh"
    r = run("recommend", "--from", script, "--gpu", "h100", "--model", "qwen2.5-7b", "--top", "1", "--write", out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "drop" not in r.stdout or "rollout.mode" not in r.stdout.split("drop", 1)[1].split("\n", 1)[0], r.stdout
    assert "actor_rollout_ref.rollout.mode=sync" in r.stdout[r.stdout.index("Best config"):]
    r = run("check", out, "--gpu", "h100", "--model", "qwen2.5-7b")
    assert "verl-megatron 0.6.1 rules" in r.stdout, r.stdout


@pytest.mark.parametrize("prefix", ["+", "++"])
def test_a_dating_key_written_with_a_plus_is_kept_as_written(tmp_path, prefix):
    """A key whose value dates the config, written ``+actor_rollout_ref.rollout.mode=sync`` (Hydra's add) or with
    ``++`` (force-add), is kept like the plain one, and the answer prints it as the user wrote it: the printed
    override had lost the prefix, so that its meaning to Hydra changed (a "+" key the trainer config lacks is
    refused without it)."""
    text = (SCRIPTS / "verl-megatron/run_qwen2-7b_math_megatron.sh").read_text()
    assert "    actor_rollout_ref.rollout.mode=$rollout_mode" in text
    script = tmp_path / "plus.sh"
    key = "actor_rollout_ref.rollout.mode="
    script.write_text(text.replace(f"    {key}", f"    {prefix}{key}"))
    r = run("recommend", "--from", script, "--gpu", "h100", "--model", "qwen2.5-7b", "--top", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    best = r.stdout[r.stdout.index("Best config"):]
    assert f"  {prefix}actor_rollout_ref.rollout.mode=sync " in best, best
    assert best.count("actor_rollout_ref.rollout.mode=") == 1, best
    fw = get_framework("verl-megatron")
    flat, _ = fw.parse(read_launch_script(script).args)
    assert "actor_rollout_ref.rollout.mode" in fw.dated_by_value(flat)
    report = api.recommend_from("verl-megatron", flat, gpu="h100", model="qwen2.5-7b", gpus=8)
    assert f"{prefix}actor_rollout_ref.rollout.mode=sync" in report.best.native
    assert fw.for_config(fw.parse(report.best.native)[0])[0].version == "0.6.1"


def test_the_answer_printed_whole_keeps_the_scripts_environment(tmp_path):
    """The environment a script starts its run with (`export` lines, NAME=value words before the command) was
    dropped from the whole command recommend prints: `CUDA_VISIBLE_DEVICES=0,...,7 NPROC_PER_NODE=8 swift rlhf`
    came back as `NPROC_PER_NODE=8 swift rlhf`, and `ACCELERATE_LOG_LEVEL=info accelerate launch ...` lost its
    log level."""
    text = (SCRIPTS / "swift/gspo.sh").read_text().replace("CUDA_VISIBLE_DEVICES=", "export WANDB_PROJECT=gspo\n"
                                                                "CUDA_VISIBLE_DEVICES=", 1)
    script = tmp_path / "gspo.sh"
    script.write_text(text.replace("NPROC_PER_NODE=8 \\\n", "NPROC_PER_NODE=8 \\\nMASTER_PORT=29501 \\\n", 1))
    r = run("recommend", "--from", script, "--gpu", "a100-80gb", "--model", "qwen2.5-7b", "--top", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    block = r.stdout[r.stdout.index("Best config"):]
    assert "(your command with the changes above" in block, block  # the answer changes the script
    assert ("WANDB_PROJECT=gspo CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 NPROC_PER_NODE=8 MASTER_PORT=29501 swift rlhf"
            in block), block
    script.write_text("ACCELERATE_LOG_LEVEL=info accelerate launch --num_processes 4 --config_file "
                      "deepspeed_zero2.yaml -m trl.scripts.grpo --model_name_or_path Qwen/Qwen2.5-1.5B-Instruct "
                      "--per_device_train_batch_size 4 --gradient_accumulation_steps 4 --num_generations 8 "
                      "--max_completion_length 1024 --use_vllm --vllm_mode colocate --vllm_tensor_parallel_size 4 "
                      "--bf16 --gradient_checkpointing --output_dir out\n")
    # a 1.5B engine split over 4 GPUs: the answer takes it back to one (each decode step gathers the logits over TP)
    r = run("recommend", "--from", script, "--gpu", "h100")
    block = r.stdout[r.stdout.index("Best config"):]
    assert "(your command with the changes above" in block and "ACCELERATE_LOG_LEVEL=info accelerate launch" in block


def test_an_environment_word_the_answer_changes_is_said_and_the_devices_follow_the_count():
    from rlbatch_solver.script_rewrite import with_environment

    head, notes = with_environment("NPROC_PER_NODE=4 swift rlhf",
                                   ["CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7", "NPROC_PER_NODE=8", "X=a b"])  # as read: unquoted
    assert head == 'CUDA_VISIBLE_DEVICES=0,1,2,3 NPROC_PER_NODE=4 X="a b" swift rlhf', head
    assert any("NPROC_PER_NODE=8 in your script is 4" in n for n in notes)
    assert any("CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7" in n and "0,1,2,3" in n for n in notes), notes
    head, notes = with_environment("swift rlhf", ["CUDA_VISIBLE_DEVICES=0,1", "NPROC_PER_NODE=2"])
    assert head == "CUDA_VISIBLE_DEVICES=0,1 NPROC_PER_NODE=2 swift rlhf" and not notes
    # a count the answer raises past the devices listed: they are left out, and the note says why
    head, notes = with_environment("NPROC_PER_NODE=8 swift rlhf", ["CUDA_VISIBLE_DEVICES=0,1,2,3", "NPROC_PER_NODE=4"])
    assert head == "NPROC_PER_NODE=8 swift rlhf", head
    assert any("CUDA_VISIBLE_DEVICES=0,1,2,3 listed 4 devices" in n and "needs 8" in n for n in notes), notes
    # a value holding a variable the script leaves unset still expands where the run starts: double quotes
    # (single quotes set HF_HOME to the text '$HOME/hf')
    head, _ = with_environment("swift rlhf", ["HF_HOME=$HOME/hf", "PYTHONPATH=$PYTHONPATH:/opt/x y", 'Q=say "hi"'])
    assert head == """HF_HOME="$HOME/hf" PYTHONPATH="$PYTHONPATH:/opt/x y" Q='say "hi"' swift rlhf""", head


def test_an_answer_that_replaces_the_keys_dating_the_config_says_how_to_check_it(tmp_path):
    """verl's run_qwen2-7b.sh without its 0.1-0.2 key is dated only by its global micro batches (0.7.1: the legacy
    workers convert them, 0.8 refuses them); the search replaces them with the per-GPU keys by design, so the
    written script checks as 0.9.1: the answer says so and names the release to check it with. A config whose
    dating keys the answer keeps (the 0.6.1 Megatron script) gets no such note."""
    script = tmp_path / "run.sh"
    text = (SCRIPTS / "verl/run_qwen2-7b.sh").read_text()
    script.write_text("\n".join(line for line in text.splitlines() if "grad_offload" not in line) + "\n")
    r = run("recommend", "--from", script, "--gpu", "a100-80gb", "--model", "qwen2.5-7b", "--top", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "verl 0.7.1 ·" in r.stdout, r.stdout
    assert ("replaces actor_rollout_ref.actor.ppo_micro_batch_size" in r.stdout
            and "check it with --framework verl==0.7.1" in r.stdout), r.stdout
    r = run("recommend", "--from", SCRIPTS / "verl-megatron/run_qwen2-7b_math_megatron.sh", "--gpu", "h100",
            "--model", "qwen2.5-7b", "--top", "1")
    assert r.returncode == 0 and "check it with --framework" not in r.stdout, r.stdout


def test_a_key_whose_value_the_answer_keeps_is_not_dropped(tmp_path):
    """verl's one-step-off 3B script sets actor_rollout_ref.model.use_remove_padding=True; the best config keeps it
    on (verl 0.9.1's default, so its export leaves it unwritten), and the answer said "drop ... use_remove_padding"
    and --write took the line out of the script. Now only keys the answer sets otherwise are dropped."""
    from rlbatch_solver.commands.recommend import start_changes

    _, _, report = _from("verl/one_step_off_grpo_3b_gsm8k_fsdp2_2_6.sh", "h100", "qwen2.5-3b")
    assert report.best.values["remove_padding"] is True
    changed, dropped = start_changes(report)
    assert changed and "actor_rollout_ref.model.use_remove_padding" not in dropped, dropped
    script = tmp_path / "run.sh"
    script.write_text((SCRIPTS / "verl" / "one_step_off_grpo_3b_gsm8k_fsdp2_2_6.sh").read_text())
    written = tmp_path / "best.sh"
    res = run("recommend", "--from", str(script), "--gpu", "h100", "--model", "qwen2.5-3b", "--write", str(written))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "actor_rollout_ref.model.use_remove_padding=True" in written.read_text()


def test_a_key_the_printed_verl_command_never_writes_stays_as_the_config_has_it():
    """verl's DAPO 7B recipe as a YAML (fsdp_size 32: hybrid shards over 64 GPUs; a reference token budget of its
    own): recommend --from priced the answer at fsdp_size 32 but printed a command without it (FSDP over all 64 GPUs,
    and the reference budget gone), whose check gave another step time and peak than the answer said."""
    config = Path(__file__).resolve().parent / "data" / "verl" / "dapo_7b_math_fsdp_size.yaml"
    r = run("recommend", "--from", str(config), "--gpu", "h100", "--model", "qwen2.5-7b", "--top", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    block = r.stdout[r.stdout.index("Best config"):].split("\n\n")[0]
    words = [w for line in block.splitlines()[1:] for w in line.replace("\\", " ").split()]
    for kept in ("actor_rollout_ref.actor.fsdp_config.fsdp_size=32",
                 "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu=30720"):
        assert kept in words, block
    said = r.stdout.split("best: ")[1].split(" s per step")[0]
    checked = run("check", "--gpu", "h100", "--model", "qwen2.5-7b", "--", *words)
    assert f"predicted step time: {said} s" in checked.stdout, (said, checked.stdout)


def test_the_answer_to_a_yaml_config_offers_no_write_it_refuses():
    """recommend --from config.yaml said "--write puts them in your script", and --write then refused the YAML
    ("writes a launch script back, and the config was not one")."""
    config = Path(__file__).resolve().parent / "data" / "verl" / "dapo_7b_math_fsdp_size.yaml"
    r = run("recommend", "--from", str(config), "--gpu", "h100", "--model", "qwen2.5-7b", "--top", "1")
    assert r.returncode == 0 and "Best config (your arguments with the changes above):" in r.stdout, r.stdout
    assert "--write" not in r.stdout.split("Best config")[1].split("\n")[0]


def test_recommend_from_a_script_reads_the_environment_words_after_its_path_as_check_does():
    """verl's run_qwen3_8b_fsdp.sh chooses its values by ``case ${DEVICE}``: the note says to give DEVICE=... after
    the script's path, as `check run.sh DEVICE=gpu` takes it, but `recommend --from run.sh DEVICE=gpu` stopped with
    the argument parser's "Got unexpected extra argument(s)". Now its branch is read (and --write reads the script
    in the same environment); words without --from are an input error naming what to do."""
    script = Path(__file__).parent / "data" / "scripts" / "verl" / "run_qwen3_8b_fsdp.sh"
    res = run("recommend", "--from", str(script), "DEVICE=gpu", "--gpu", "h100", "--time-limit", "20")
    said = res.stdout + res.stderr
    assert res.returncode == 0, said
    assert "read as run with DEVICE=gpu (given after the script's path)" in said
    assert "every branch was read" not in said
    bad = run("recommend", "DEVICE=gpu")
    assert bad.returncode == 2 and "recommend takes no arguments without --from" in bad.stderr + bad.stdout


def _corpus_script(tmp_path, name: str) -> Path:
    """A memory corpus record's command saved as the launch script it was (environment words, then the command)."""
    import shlex

    import memory_corpus as mc

    args = next(c for c in mc.cases() if c.name == name).args
    at = args.index("swift")
    script = tmp_path / "run.sh"
    script.write_text(" ".join(args[:at]) + " \\\n" + " ".join(shlex.quote(a) for a in args[at:]) + "\n")
    return script


def test_an_ms_swift_script_dated_to_a_release_without_a_pack_is_recommended_as_check_reads_it(tmp_path):
    """ms-swift's v3.4.0 lora_vllm.sh: --vllm_device dates it to 3.1.0, a release --framework cannot name (3.3.1's pack
    judges it, for_config). recommend --from named its scenario swift==3.1.0 and exited; it keeps the pack and the dated
    release (Scenario.dated_release), and prices the script as check does: the same peaks and step time. Its search
    fixed NPROC_PER_NODE=1 with num_infer_workers=2 (colocated), which the pack refuses: it found no config."""
    script = _corpus_script(tmp_path, "swift_example_v3.4.0_lora_vllm_qwen2_5_7b_lora_2x80g")
    result = runner.invoke(app, ["recommend", "--from", str(script), "--gpu", "a100-80gb", "--model", "qwen2.5-7b"])
    # the search keeps the script's one training rank and offers the layout _check_grpo allows with it (async mode:
    # the second GPU as the engine's), not the colocated one swift.legacy.colocate_device_count refuses
    assert result.exit_code == 0 and "not 3.1.0" not in result.output, result.output
    assert "No valid config fits" not in result.output and "colocate_device_count" not in result.output
    assert "Your config" in result.output and "runs: step" in result.output, result.output
    s = read_launch_script(script)
    flat, _ = get_framework(s.framework).parse(s.args)
    report = api.recommend_from(s.framework, flat, gpu="a100-80gb", model="qwen2.5-7b", gpus=s.gpus)
    assert (report.scenario.framework, report.scenario.dated_release) == ("swift==3.3.1", "3.1.0")
    checked = api.check(s.args, framework=s.framework, gpus=s.gpus, model="qwen2.5-7b", gpu="a100-80gb").memory
    start = report.start
    assert start.runs and start.step_time_s == pytest.approx(checked.step_s, abs=0.05)
    peaks = {p: -(-mib // 1) for p, mib in start.peak_mib().items()}
    assert peaks == {p: pytest.approx(checked.peaks[p], abs=1) for p in checked.peaks}
    # the best is priced with the script's --vllm_gpu_memory_utilization 0.5 on the engine's GPU, as check prices it
    # (async mode's engines take the trainer's share: LEGACY_ENGINE_SHARE), not the share's default 0.9, whose 73 GiB
    # rollout made the answer "memory: tight" beside check's "fits"
    values = api.check(s.args, framework=s.framework, gpus=s.gpus, model="qwen2.5-7b", gpu="a100-80gb").values
    best = report.choices[0]
    assert best.values["server_gmu_permille"] == values["server_gmu_permille"] == 500
    assert {p: -(-mib // 1) for p, mib in best.peak_mib().items()} == {
        p: pytest.approx(checked.peaks[p], abs=1) for p in checked.peaks}
    assert "memory: tight" not in result.output, result.output
