"""Keys a config sets that the framework's release lacks (frameworks/key_names.py): a misspelling is named with the key
it likely means, in check, fix and recommend (--set, --from) and their JSON; a key the framework's own parser refuses
(OpenRLHF's argparse, TRL's HfArgumentParser) is an error; a real key we do not follow is never flagged."""

from __future__ import annotations

import json

import pytest

from clirun import run
from memory_corpus import cases
from rlbatch_solver.commands.common import framework_for, read_config
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.key_names import findings, nearest, slips
from rlbatch_solver.launch_script import read_launch_script

VERL_KNOWN = get_framework("verl").key_list({}).keys


def test_a_slip_in_a_verl_key_is_matched_to_the_key_it_misspells():
    assert nearest("data.train_bach_size", VERL_KNOWN, complete=False) == "data.train_batch_size"
    assert nearest("actor_rollout_ref.acter.ppo_mini_batch_size", VERL_KNOWN, complete=False) == \
        "actor_rollout_ref.actor.ppo_mini_batch_size"
    assert slips("bach", "batch") == 1 and slips("actor", "atcor") == 1 and slips("port", "host") == 2
    slime = get_framework("slime").key_list({}).keys  # dashed flags: words between dashes
    assert nearest("rollout-bach-size", slime, complete=False) == "rollout-batch-size"
    assert nearest("train-batch-size", slime, complete=False) is None  # a whole word apart


@pytest.mark.parametrize("key", [
    "data.val_batch_size",  # verl 0.1-0.3: a real key, one word from data.train_batch_size
    "actor_rollout_ref.actor.fsdp_config.grad_offload",  # verl 0.1-0.3, beside param_offload
    "critic.ppo_max_token_len_per_gpu",  # beside ppo_infer_max_token_len_per_gpu
    "actor_rollout_ref.rollout.top_k",  # beside top_p: short words are not judged
    "trainer.some_key_we_do_not_follow",  # far from every known key
])
def test_a_real_key_we_do_not_know_is_not_taken_for_a_misspelling(key):
    assert nearest(key, VERL_KNOWN, complete=False) is None


def _flat(case):
    fw = get_framework(case.framework)
    return fw, read_config(fw, case.args)[0]


def test_no_config_of_the_corpus_gets_a_note_on_its_keys():
    """Every script, published config, measured run and memory-corpus record (real configs, each run by its
    framework): no key flagged, neither refused nor suspected."""
    judged, flagged = 0, []
    for case in cases():
        fw, flat = _flat(case)
        chosen, _ = framework_for(fw, flat)
        unknown, _, _ = findings(chosen.key_list(flat), chosen.name, chosen.version)
        judged += 1
        flagged += [(case.name, u.key, u.suggestion) for u in unknown]
    for script in ("run_gsm8k.sh", "run_ppo.sh", "run_32b_gsm8k.sh"):
        s = read_launch_script(f"tests/data/skyrl/{script}")
        fw = get_framework(s.framework)
        flat = read_config(fw, list(s.args))[0]
        flagged += [(script, u.key, u.suggestion) for u in findings(fw.key_list(flat), fw.name, fw.version)[0]]
        judged += 1
    assert judged > 240  # 248 on writing
    assert flagged == []


def test_check_names_the_key_a_verl_typo_misspells_and_keeps_the_verdict():
    """verl 0.3.0 (no key list of its trainer config held): a near miss is a note, not an error."""
    res = run("check", "--framework", "verl==0.3.0", "data.train_bach_size=8")
    assert res.returncode == 1  # the rules it breaks (micro sizes unset), not the typo: a note
    assert "data.train_bach_size is not a verl 0.3.0 key we know: did you mean data.train_batch_size?" in res.stdout
    assert "Key 'train_bach_size' is not in struct" in res.stdout
    data = json.loads(run("check", "--framework", "verl==0.3.0", "--json", "data.train_bach_size=8").stdout)
    assert data["unknown_keys"] == [{"key": "data.train_bach_size", "did_you_mean": "data.train_batch_size",
                                     "refused": False}]
    assert not any(v["rule"].endswith("unknown_key") for v in data["violations"])


def test_check_refuses_a_flag_openrlhf_does_not_have_with_argparses_error():
    res = run("check", "--framework", "openrlhf", "--json", "--", "--train.bach_size", "8")
    assert res.returncode == 1
    data = json.loads(res.stdout)
    broken = [v for v in data["violations"] if v["rule"] == "openrlhf.launch.unknown_key"]
    assert len(broken) == 1
    assert "--train.bach_size" in broken[0]["message"] and "did you mean --train.batch_size?" in broken[0]["message"]
    assert "unrecognized arguments: --train.bach_size" in broken[0]["message"]
    assert broken[0]["source"].startswith("openrlhf/cli/train_ppo_ray.py")
    assert data["unknown_keys"][0]["refused"] is True


def test_an_old_releases_flag_is_left_to_the_release_checks():
    """--micro_train_batch_size is 0.10.1's spelling: the legacy-name rule speaks of it, not a typo error."""
    data = json.loads(run("check", "--framework", "openrlhf", "--json", "--", "--micro_train_batch_size", "8").stdout)
    assert data["unknown_keys"] == []


def test_fix_renames_a_refused_flag_to_the_one_it_misspells():
    args = ["--train.bach_size", "8", "--vllm.num_engines", "4", "--actor.num_gpus_per_node", "4",
            "--rollout.batch_size", "8", "--rollout.n_samples_per_prompt", "4"]
    res = run("fix", "--framework", "openrlhf", "--", *args)
    assert "rename --train.bach_size -> --train.batch_size" in res.stdout
    assert "paste over yours:\n  --train.batch_size 8" in res.stdout
    data = json.loads(run("fix", "--framework", "openrlhf", "--json", "--", *args).stdout)
    assert "--train.batch_size 8" in data["fixed_config"]
    assert data["valid_before"] is False and data["unknown_keys"][0]["did_you_mean"] == "train.batch_size"
    assert data["renamed_keys"] == ["train.bach_size"]


def test_recommend_notes_a_verl_typo_in_set():
    """verl 0.3.0 (no key list of its trainer config held): a note; 0.5.0 on refuses it (below)."""
    res = run("recommend", "--framework", "verl==0.3.0", "--gpu", "rtx4090", "--gpus", "4", "--model", "qwen2.5-1.5b",
              "--json",
              "--set", "data.train_bach_size=8")
    data = json.loads(res.stdout)
    assert data["unknown_keys"][0]["did_you_mean"] == "data.train_batch_size"
    assert any("did you mean data.train_batch_size?" in n for n in data["key_notes"])


@pytest.mark.parametrize("framework, key, meant", [
    ("openrlhf", "train.bach_size", "train.batch_size"),
    ("trl", "per_device_train_bach_size", "per_device_train_batch_size"),
    ("verl", "data.train_bach_size", "data.train_batch_size"),  # 0.9.1's trainer config: data is a struct section
])
def test_recommend_refuses_a_set_key_the_framework_would_refuse(framework, key, meant):
    res = run("recommend", "--framework", framework, "--gpu", "rtx4090", "--gpus", "4", "--model", "qwen2.5-1.5b",
              "--set", f"{key}=8")
    assert res.returncode == 2
    text = " ".join((res.stdout + res.stderr).split())
    assert f"{key} is not an option" in text and f"did you mean {meant}?" in text and f"--set {meant}=8" in text


def test_recommend_from_notes_a_misspelt_key_of_the_script(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.train_batch_size=16 "
                      "actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct actor_rollout_ref.rollout.n=4 "
                      "actor_rollout_ref.actor.ppo_mini_batch_size=8 actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 "
                      "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2 "
                      "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2 "
                      "actor_rollout_ref.rollout.gpu_memory_utilisation=0.5 trainer.n_gpus_per_node=2\n")
    data = json.loads(run("recommend", "--from", script, "--gpu", "h100", "--model", "qwen2.5-0.5b", "--json").stdout)
    assert data["unknown_keys"][0]["did_you_mean"] == "actor_rollout_ref.rollout.gpu_memory_utilization"


def test_trl_grpo_refuses_an_unknown_flag_and_pasted_flags_get_a_note():
    res = run("check", "--framework", "trl", "--gpus", "4", "--json", "--", "trl", "grpo",
              "--per_device_train_bach_size", "8")
    data = json.loads(res.stdout)
    broken = [v for v in data["violations"] if v["rule"] == "trl.launch.unknown_key"]
    assert broken and "did you mean --per_device_train_batch_size?" in broken[0]["message"]
    assert "not used by the HfArgumentParser" in broken[0]["message"] and res.returncode == 1
    # the flags alone may be a script of the user's own: a note, with the flag it likely means
    data = json.loads(run("check", "--framework", "trl", "--gpus", "4", "--json", "--",
                          "--per_device_train_bach_size", "8").stdout)
    assert not any(v["rule"] == "trl.launch.unknown_key" for v in data["violations"])
    assert any("--per_device_train_bach_size (did you mean --per_device_train_batch_size?)" in n
               for n in data["notes"])


def test_fix_write_takes_the_misspelt_flag_out_of_the_script(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(
        "python3 -m openrlhf.cli.train_ppo_ray --actor.num_nodes 1 --actor.num_gpus_per_node 4 --vllm.num_engines 4 "
        "--actor.model_name_or_path Qwen/Qwen2.5-1.5B-Instruct --train.micro_batch_size 4 --train.bach_size 64 "
        "--rollout.micro_batch_size 8 --rollout.batch_size 64 --rollout.n_samples_per_prompt 4\n")
    out = tmp_path / "fixed.sh"
    res = run("fix", script, "--write", out)
    assert res.returncode == 0
    text = out.read_text()
    assert "--train.bach_size" not in text and "--train.batch_size 64" in text
    assert run("check", out).returncode == 0


def test_recommend_search_of_a_refused_key_names_the_one_it_misspells_with_its_values():
    res = run("recommend", "--framework", "openrlhf", "--gpu", "rtx4090", "--gpus", "4", "--model", "qwen2.5-1.5b",
              "--search", "train.bach_size=8,16")
    text = " ".join((res.stdout + res.stderr).split())
    assert res.returncode == 2 and "--search train.batch_size=8,16." in text


def test_a_misspelt_required_slime_flag_is_named_in_the_error():
    res = run("check", "--framework", "slime", "--gpus", "8", "--", "--rollout-bach-size", "8")
    text = " ".join((res.stdout + res.stderr).split())
    assert res.returncode == 2 and "--rollout-bach-size is no slime flag: did you mean --rollout-batch-size?" in text


def test_many_stray_keys_are_ten_errors_and_one_count_and_json_lists_them_all():
    """A pasted file of 30 keys verl has no section for: each was one four-line error (20,000 of them printed 9.6 MB
    in 11 s); the first ten are shown one each, the rest counted in one line, and --json keeps every key."""
    stray = [f"k{i}=1" for i in range(30)]
    base = ["--gpus", "4", "--", "data.train_batch_size=64", "actor_rollout_ref.rollout.n=8"]
    r = run("check", *base, *stray)
    assert r.returncode == 1 and r.stdout.count("ERROR verl.launch.unknown_key") == 11, r.stdout
    assert "20 more keys are not options of verl 0.9.1 either (k10, k11, k12, ..." in " ".join(r.stdout.split())
    data = json.loads(run("check", "--json", *base, *stray).stdout)
    assert len(data["unknown_keys"]) == 30


def test_unsloths_load_in_fp8_is_a_key_of_from_pretrained():
    """load_in_fp8 (Unsloth 2026.10.9 unsloth/models/loader.py FastLanguageModel.from_pretrained) was named among the
    keys 'neither from_pretrained, get_peft_model nor Unsloth's GRPOConfig has' for Unsloth's FP8 GRPO notebooks; a
    misspelt key beside it still is."""
    [case] = [c for c in cases() if c.name == "unsloth_nb_qwen3_8b_fp8_grpo_standby_1xl4"]
    fw, flat = _flat(case)
    notes = " ".join(fw.config_notes(flat))
    assert "load_in_fp8: the linear weights are FP8" in notes and "has: " not in notes, notes
    assert "has: load_in_fp9" in " ".join(fw.config_notes({**flat, "load_in_fp9": True}))
