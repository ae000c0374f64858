"""fix --write: the user's launch script written back with the repair, every other line as it was."""

from __future__ import annotations

from pathlib import Path

from clirun import run
from rlbatch_solver.launch_script import parse_launch_script
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.script_rewrite import rewrite_script

import rlbatch_solver as rb

VERL_SCRIPT = """#!/bin/bash
# a GRPO run on one node
set -x
BS=341
python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    data.train_files=$HOME/data/gsm8k/train.parquet \\
    data.train_batch_size=$BS \\
    data.max_prompt_length=512 \\
    data.max_response_length=1024 \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-1.5B-Instruct \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.n=6 \\
    actor_rollout_ref.actor.ppo_mini_batch_size=31 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \\
    trainer.logger=['console','wandb'] \\
    trainer.n_gpus_per_node=8 \\
    trainer.nnodes=1 $@
"""


def test_fix_write_changes_only_the_repaired_keys(tmp_path: Path):
    script, out = tmp_path / "run.sh", tmp_path / "fixed.sh"
    script.write_text(VERL_SCRIPT)
    proc = run("fix", str(script), "--write", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "wrote" in proc.stdout and "train_batch_size was $BS" in proc.stderr
    before, after = VERL_SCRIPT.split("\n"), out.read_text().split("\n")
    changed = [(a, b) for a, b in zip(before, after) if a != b]
    assert len(before) == len(after)
    assert changed == [("    data.train_batch_size=$BS \\", "    data.train_batch_size=352 \\"),
                       ("    actor_rollout_ref.actor.ppo_mini_batch_size=31 \\",
                        "    actor_rollout_ref.actor.ppo_mini_batch_size=32 \\")]
    # solver-independent: the written script, read as a launch script, passes every rule
    assert rb.check(parse_launch_script(out.read_text()).args, gpus=8).valid


def test_a_key_the_script_lacks_goes_after_the_entry_point_one_a_line():
    text = "python3 -m verl.trainer.main_ppo \\\n    data.train_batch_size=64 \\\n    trainer.nnodes=1\n"
    done = rewrite_script(text, ["data.train_batch_size=96", "actor_rollout_ref.actor.use_dynamic_bsz=True"], "hydra",
                          ("verl.trainer.main_ppo",))
    assert done.text == ("python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.actor.use_dynamic_bsz=True \\\n"
                         "    data.train_batch_size=96 \\\n    trainer.nnodes=1\n")
    assert done.replaced == ["data.train_batch_size"] and done.added == ["actor_rollout_ref.actor.use_dynamic_bsz"]


def test_a_command_whose_every_argument_is_taken_out_gets_its_new_ones_one_a_line():
    """Every argument an old name (OpenRLHF's pre-0.10.2 flags): the command ends at its entry point once they are
    taken out, and the successors go one a line as the script wrote its arguments (they were appended to the entry
    line, one line of every flag)."""
    text = ("ray job submit --address=x \\\n   -- python3 -m openrlhf.cli.train_ppo_ray \\\n   --train_batch_size 128 \\\n"
            "   --bf16\necho done\n")
    done = rewrite_script(text, ["--train.batch_size 128", "--ds.zero_stage 3"], "flags",
                          ("openrlhf.cli.train_ppo_ray",), drop=["train_batch_size", "bf16"])
    assert done.text == ("ray job submit --address=x \\\n   -- python3 -m openrlhf.cli.train_ppo_ray \\\n"
                         "   --train.batch_size 128 \\\n   --ds.zero_stage 3\necho done\n"), done.text
    args = parse_launch_script(done.text).args
    assert args[-4:] == ["--train.batch_size", "128", "--ds.zero_stage", "3"], args


def test_flags_are_replaced_in_place_and_a_launchers_flags_go_after_the_launcher():
    text = ("accelerate launch --num_processes 8 trl/scripts/grpo.py --per_device_train_batch_size=4 "
            "--gradient_accumulation_steps 2 --use_vllm\n")
    done = rewrite_script(text, ["--per_device_train_batch_size 2", "--gradient_accumulation_steps 4",
                                 "--use_vllm true", "--use_deepspeed", "--zero_stage 3", "--dtype bfloat16"], "flags",
                          ("trl/scripts/grpo.py",), ("accelerate launch",), frozenset({"use_deepspeed", "zero_stage"}))
    assert done.text == ("accelerate launch --use_deepspeed --zero_stage 3 --num_processes 8 trl/scripts/grpo.py "
                         "--dtype bfloat16 --per_device_train_batch_size 2 --gradient_accumulation_steps 4 "
                         "--use_vllm true\n")


def test_write_needs_a_script_and_a_new_file(tmp_path: Path):
    script = tmp_path / "run.sh"
    script.write_text(VERL_SCRIPT)
    bad = run("fix", "--gpus", "8", "--write", str(tmp_path / "x.sh"), "--", "data.train_batch_size=64")
    assert bad.returncode == 2 and "error: write" in bad.stderr
    same = run("fix", str(script), "--write", str(script))
    assert same.returncode == 2 and "the script itself" in same.stderr


def test_recommend_from_write_puts_the_best_config_in_the_script(tmp_path: Path):
    """The written script is the best config: read back, its rule values are the answer's, and lines that hold no
    changed key (data paths, the engine, the logger) are as the user wrote them."""
    script, out = tmp_path / "run.sh", tmp_path / "best.sh"
    script.write_text(VERL_SCRIPT.replace("BS=341", "BS=96").replace("ppo_mini_batch_size=31", "ppo_mini_batch_size=24"))
    proc = run("recommend", "--from", str(script), "--gpu", "h100", "--model", "qwen2.5-1.5b", "--json",
               "--write", str(out))
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out}" in proc.stderr  # under --json the note goes to stderr
    written = out.read_text()
    for line in ("    data.train_files=$HOME/data/gsm8k/train.parquet \\", "    actor_rollout_ref.rollout.name=vllm \\",
                 "    trainer.logger=['console','wandb'] \\", "# a GRPO run on one node"):
        assert line in written.split("\n")
    report = rb.check(parse_launch_script(written).args, gpus=8, gpu="h100", model="qwen2.5-1.5b")
    assert report.valid and report.memory.fits


def test_only_the_runs_own_key_changes():
    """A flag that begins another flag's name, a flag that takes no value before the script's name, the command's
    last line, and the same key in a later command: each left as it should be."""
    flags = "swift rlhf --max_length 512 --max_length_ratio 2 --use_vllm\n"
    assert rewrite_script(flags, ["--max_length 4096"], "flags", ("swift rlhf",)).text == \
        "swift rlhf --max_length 4096 --max_length_ratio 2 --use_vllm\n"
    launch = "accelerate launch --use_deepspeed train_grpo.py --beta 0.0\n"
    done = rewrite_script(launch, ["--use_deepspeed", "--zero_stage 3"], "flags", ("train_grpo.py",),
                          ("accelerate launch",), frozenset({"use_deepspeed", "zero_stage"}))
    assert done.text == "accelerate launch --zero_stage 3 --use_deepspeed train_grpo.py --beta 0.0\n"
    last = "python3 -m verl.trainer.main_ppo \\\n    a.b=1 \\\n    c.d=2\necho done\n"
    assert rewrite_script(last, [], "hydra", ("verl.trainer.main_ppo",), drop=["c.d"]).text == \
        "python3 -m verl.trainer.main_ppo \\\n    a.b=1\necho done\n"
    later = "python3 -m verl.trainer.main_ppo data.train_batch_size=64\npython3 eval.py data.train_batch_size=8\n"
    assert rewrite_script(later, ["data.train_batch_size=96"], "hydra", ("verl.trainer.main_ppo",)).text == \
        "python3 -m verl.trainer.main_ppo data.train_batch_size=96\npython3 eval.py data.train_batch_size=8\n"


def test_an_environment_prefix_of_a_flags_framework_is_replaced_where_it_stands():
    text = "NPROC_PER_NODE=4 swift rlhf --rlhf_type grpo --per_device_train_batch_size 2\n"
    done = rewrite_script(text, ["NPROC_PER_NODE=8", "--per_device_train_batch_size 1"], "flags", ("swift rlhf",))
    assert done.text == "NPROC_PER_NODE=8 swift rlhf --rlhf_type grpo --per_device_train_batch_size 1\n"
    assert done.replaced == ["NPROC_PER_NODE", "per_device_train_batch_size"] and not done.added


def test_write_beside_a_missing_script_reports_the_missing_file(tmp_path: Path):
    out = run("recommend", "--from", str(tmp_path / "nope.sh"), "--gpu", "h100", "--write", str(tmp_path / "o.sh"))
    assert out.returncode == 2 and "does not exist" in out.stderr


def test_fix_write_leaves_an_array_line_of_a_branch_the_run_may_not_take():
    """verl 0.9's run_qwen3_8b_fsdp.sh sets ppo_micro_batch_size_per_gpu=1 in the `npu)` arm's EXTRA+=( ... ); its
    DEVICE comes from a command (probing torch_npu), so which arm runs is not known: that line is not the run's to
    edit. The GPU fix goes after the command's last "${EXTRA[@]}", where Hydra's last value wins, and a note says so;
    a key in an array outside any branch is still changed there."""
    text = (Path(__file__).parent / "data/scripts/verl/run_qwen3_8b_fsdp.sh").read_text()
    done = rewrite_script(text, ["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2", "data.train_batch_size=512"],
                          "hydra", get_framework("verl").script_entries())
    before, after = text.split("\n"), done.text.split("\n")
    assert len(before) == len(after)
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    assert [after[i].strip() for i in changed] == [
        "data.train_batch_size=512", '"${EXTRA[@]}" actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \\']
    assert done.replaced == ["data.train_batch_size"]
    assert "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu" in done.added
    assert any("if/case branch" in n and '"${EXTRA[@]}"' in n for n in done.notes)


def test_fix_write_edits_the_array_line_of_the_branch_the_run_takes():
    text = """DEVICE=gpu
EXTRA=()
case "$DEVICE" in
    npu)
        EXTRA+=(
            a.micro=1
        )
        ;;
    gpu)
        EXTRA+=(
            a.micro=4
        )
        ;;
esac
if [ "$DEVICE" = npu ]; then
    EXTRA+=(a.micro=1)
fi
python3 -m verl.trainer.main_ppo a.b=1 \\
    "${EXTRA[@]}"
"""
    done = rewrite_script(text, ["a.micro=2"], "hydra", ("verl.trainer.main_ppo",))
    assert done.replaced == ["a.micro"]
    assert done.text == text.replace("a.micro=4", "a.micro=2")


def test_fix_write_reads_an_array_to_its_closing_parenthesis():
    """An element with a command substitution (``$(pwd)/m``) or a quoted ``)`` does not end the array: a key on a
    later line is changed where the array sets it, not added before it."""
    text = """MODEL=(
    a.path=$(pwd)/m  # the model's folder (local)
    a.note="x)"
    a.micro=4
)
python3 -m verl.trainer.main_ppo a.b=1 "${MODEL[@]}"
"""
    done = rewrite_script(text, ["a.micro=2"], "hydra", ("verl.trainer.main_ppo",))
    assert done.replaced == ["a.micro"]
    assert done.text == text.replace("a.micro=4", "a.micro=2")


def test_fix_write_reads_the_script_in_the_environment_given_after_its_path(tmp_path: Path):
    """verl 0.9's run_qwen3_8b_fsdp.sh finds DEVICE by probing torch_npu unless it is given: with DEVICE=npu after the
    script's path, its `npu)` arm is the one the run takes, so the micro batch its EXTRA+=( ... ) sets is changed
    there, where without it the arm was left alone and the new value went after the command's last "${EXTRA[@]}".
    `fix run.sh DEVICE=npu --write fixed.sh` takes those words (it refused any word after the script before)."""
    text = (Path(__file__).parent / "data/scripts/verl/run_qwen3_8b_fsdp.sh").read_text()
    key = "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"
    done = rewrite_script(text, [f"{key}=2"], "hydra", get_framework("verl").script_entries(),
                          environment={"DEVICE": "npu"})
    assert done.replaced == [key] and not done.added
    changed = [(a, b) for a, b in zip(text.split("\n"), done.text.split("\n")) if a != b]
    assert changed == [(f"            {key}=1", f"            {key}=2")]
    gpu = rewrite_script(text, [f"{key}=2"], "hydra", get_framework("verl").script_entries(),
                         environment={"DEVICE": "gpu"})
    assert gpu.added == [key] and f"            {key}=1" in gpu.text  # the npu arm is not the run's: left alone
    script, out = tmp_path / "run.sh", tmp_path / "fixed.sh"
    script.write_text(text)
    proc = run("fix", str(script), "DEVICE=npu", "--write", str(out))
    assert proc.returncode in (0, 1) and "error: write" not in proc.stderr, proc.stderr
    bad = run("fix", str(script), "NOT_READ=1", "--write", str(out))  # a word that is no environment of the script
    assert bad.returncode == 2 and "error: write" in bad.stderr
