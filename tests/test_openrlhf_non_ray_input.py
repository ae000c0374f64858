"""OpenRLHF's launcher without Ray (openrlhf/cli/train_ppo.py, the releases before 0.6.2) as a user meets it: its
bare script under torchrun or deepspeed, and the messages its parser and its traceback print."""

import json

from clirun import run

FLAGS = ["--pretrain", "OpenRLHF/Llama-3-8b-sft-mixture", "--reward_pretrain", "OpenRLHF/Llama-3-8b-rm-mixture",
         "--micro_train_batch_size", "2", "--train_batch_size", "128", "--micro_rollout_batch_size", "4",
         "--rollout_batch_size", "1024", "--zero_stage", "2", "--bf16"]


def test_a_bare_train_ppo_py_under_torchrun_or_deepspeed_is_the_launcher_without_ray(tmp_path):
    """OpenRLHF's examples of 0.4-0.6 run the script from its folder (`torchrun --nproc_per_node 4 train_ppo.py`,
    `deepspeed train_ppo.py`): it was "none of the entry points we know". The bare name is any project's, so it is
    OpenRLHF's only with a flag of train_ppo.py's own parser among its arguments."""
    for launcher in ("torchrun --nproc_per_node 4", "deepspeed --num_gpus 4"):
        script = tmp_path / "run.sh"
        script.write_text(f"{launcher} train_ppo.py \\\n  " + " ".join(FLAGS) + "\n")
        res = run("check", str(script), "--json")
        assert res.returncode == 0, res.stderr
        data = json.loads(res.stdout)
        assert data["framework"] == "openrlhf", data["framework"]
        assert any("the launcher without Ray" in n for n in data["notes"]), data["notes"]
    # a Ray-only flag given to it is refused as train_ppo.py's parser refuses it, naming the release named
    res = run("check", "--framework", "openrlhf==0.6.1", "--gpus", "4", "--json", "--", "torchrun",
              "--nproc_per_node", "4", "train_ppo.py", *FLAGS, "--vllm_num_engines", "2")
    broken = [v["message"] for v in json.loads(res.stdout)["violations"] if v["rule"] == "openrlhf.launch.unknown_key"]
    assert res.returncode == 1 and len(broken) == 1, broken
    assert "--vllm_num_engines is not an option of openrlhf 0.6.1" in broken[0] and "train_ppo.py: error" in broken[0]
    # another project's train_ppo.py (no flag of OpenRLHF's parser) is still no entry point of ours
    other = tmp_path / "other.sh"
    other.write_text("torchrun --nproc_per_node 4 train_ppo.py --config my.yaml\n")
    res = run("check", str(other))
    assert res.returncode == 2 and res.stderr.startswith("error: script:"), res.stderr


def test_a_message_of_train_ppo_py_is_read_as_the_launcher_without_ray():
    """argparse's refusal printed by train_ppo.py (a release before 0.6.2, whose flags are the underscore names) was
    read as train_ppo_ray 0.10.2's old-name refusal ("--micro_train_batch_sz is an old name since OpenRLHF 0.10.2");
    it is that parser's unknown flag, judged against its own flags (a train_ppo_ray-only flag: drop it)."""
    res = run("explain", "train_ppo.py: error: unrecognized arguments: --micro_train_batch_sz 8", "--json")
    data = json.loads(res.stdout)
    assert res.returncode == 0 and not data["rules"], data["rules"]
    assert data["unknown_keys"][0]["did_you_mean"] == "micro_train_batch_size", data["unknown_keys"]
    assert data["meaning"][0].startswith("openrlhf 0.6.1's parser has no --micro_train_batch_sz"), data["meaning"]
    res = run("explain", "usage: train_ppo.py [-h]\ntrain_ppo.py: error: unrecognized arguments: --vllm_num_engines 2",
              "--json")
    data = json.loads(res.stdout)
    assert "a flag of train_ppo_ray.py only" in data["meaning"][0] and "drop it" in data["meaning"][0], data["meaning"]
    # train_ppo_ray's message is still the old-name rule
    res = run("explain", "train_ppo_ray.py: error: unrecognized arguments: --micro_train_batch_size 8", "--json")
    assert [r["rule"] for r in json.loads(res.stdout)["rules"]] == ["openrlhf.driver.legacy_flag_names"]


def test_an_oom_traceback_of_train_ppo_py_advises_its_own_flags():
    """A CUDA OOM whose traceback runs through openrlhf/cli/train_ppo.py: its advice was train_ppo_ray 0.11.2's
    (--train.micro_batch_size, --actor.num_gpus_per_node), flags train_ppo.py's parser refuses."""
    text = ('Traceback (most recent call last):\n'
            '  File "/usr/lib/python3/dist-packages/openrlhf/cli/train_ppo.py", line 230, in train\n'
            '    trainer.fit(args, prompts_dataloader, pretrain_dataloader, consumed_samples, steps)\n'
            '  File "/usr/lib/python3/dist-packages/openrlhf/trainer/ppo_trainer.py", line 243, in fit\n'
            '    status = self.ppo_train(steps)\n'
            'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of '
            '79.15 GiB of which 1.20 GiB is free.')
    data = json.loads(run("explain", text, "--json").stdout)
    advice = data["out_of_memory"]["advice"]
    assert advice and advice[0].startswith("--micro_train_batch_size"), advice
    assert not any("--train." in a or "num_gpus_per_node" in a for a in advice), advice
