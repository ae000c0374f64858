"""TRL's rule packs for 0.29.1, 0.19.1, 0.16.1 and 0.14.0 (frameworks/trl/versions.py): each built from a newer one's
rules by its own edits,
the checker and the solver agreeing on each, the release read from a config's fields or named, each release's verdict
on the configs of the threads users opened (open-r1 #249, trl #2858, #3061: read from each release's code), and each
release's defaults in the memory model."""

from __future__ import annotations

import json

import pytest

import rlbatch_solver as rb
from clirun import run
from rlbatch_solver.errors import InputError
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.base import resolve_release
from rlbatch_solver.frameworks.trl import versions as TV
from rlbatch_solver.frameworks.trl.release_fields import RELEASE_FIELDS
from rlbatch_solver.frameworks.trl.rules import CONFIG as R_CONFIG
from rlbatch_solver.frameworks.trl.rules import REMOVED_FIELDS
from rlbatch_solver.rules.base import Stage

OLD = ("0.29.1", "0.19.1", "0.18.2", "0.17.0", "0.16.1", "0.15.2", "0.14.0")
# open-r1 #249 (and #236 with 3 GPUs): open-r1's first recipe, 8 GPUs with vLLM on the last one (vllm_device 'auto'),
# 7 training processes, one prompt per GPU, 8 generations; TRL 0.14.0 ran it, 0.15's per-device batch of completions
# made it "The global train batch size (7 x 1) must be evenly divisible by the number of generations per prompt (8)"
OPEN_R1_249 = ["accelerate", "launch", "--num_processes", "7", "grpo.py", "--per_device_train_batch_size", "1",
               "--num_generations", "8", "--use_vllm", "true"]
# trl #2858: one GPU, per_device_train_batch_size 1, gradient_accumulation_steps 8, num_generations 8 ("(1 x 1)")
TRL_2858 = ["--num_processes", "1", "--per_device_train_batch_size", "1", "--gradient_accumulation_steps", "8",
            "--num_generations", "8"]


def _broken(result) -> set[str]:
    return {v.rule for v in result.violations if ".memory." not in v.rule}


@pytest.mark.parametrize("version", TV.VERSIONS)
def test_every_pack_builds_and_cites_its_sources(version):
    rs = TV.ruleset_for(version)
    assert rs.version == version
    assert all(r.source and isinstance(r.stage, Stage) for r in rs.rules)
    known = set(rs.variables) | {d.name for d in rs.derived} | {f"{n}_set" for n in rs.variables}
    for r in rs.rules:
        assert r.reads() <= known, (r.id, r.reads() - known)
    if version != TV.NEWEST:
        assert not any(f"TRL {TV.NEWEST}" in r.message for r in rs.rules)


def test_packs_differ_from_1_16_as_their_summaries_say():
    # 1.16.0's rules but auto_find_batch_size, which 0.29.1's GRPOConfig takes (found by its parity run)
    diff = TV.changes("0.29.1")
    assert {i for i, _ in diff["absent"]} == {"trl.config.auto_find_batch_size_unsupported"} | TV.FRONTEND_RULES
    assert diff["added"] == diff["changed"] == []
    assert ("trl.config.auto_find_batch_size_unsupported", R_CONFIG) in diff["absent"]
    diff = {kind: {i for i, _ in rows} for kind, rows in TV.changes("0.14.0").items()}
    assert {"trl.config.gen_divisible_by_num_generations", "trl.config.num_generations_at_least_two",
            "trl.frontend.gen_divisible_by_num_generations", "trl.trainer.sync_ref_model_needs_beta"} <= diff["absent"]
    assert diff["changed"] == {"trl.gpus.budget", "trl.config.removed_fields"}


@pytest.mark.parametrize("version", OLD)
def test_enumerate_equals_the_checker_for_each_pack(version):
    from bruteforce import assert_enumerate_equals_checker

    rs = TV.ruleset_for(version)
    base = {name: [spec.default] for name, spec in rs.variables.items()}
    base.update({"num_heads": [12], "num_kv_heads": [2]})
    spaces = [
        {"gpus_per_node": [2, 3, 4, 7], "per_device_train_batch_size": [1, 2, 4],
         "gradient_accumulation_steps": [1, 2], "num_generations": [1, 2, 8], "use_vllm": [False, True],
         "cluster_num_gpus": [None, 4, 8], "removed_fields": [False, True]},
        {"gpus_per_node": [2, 4], "generation_batch_size": [None, 8, 12], "steps_per_generation": [None, 2],
         "eval_on": [False, True], "per_device_eval_batch_size": [1, 4], "sync_ref_model": [False, True],
         "kl_on": [False, True], "removed_fields": [False, True]},
    ]
    for space in spaces:
        assert_enumerate_equals_checker(rs, {**base, **space})


def test_open_r1_249_runs_on_0_14_and_fails_on_the_later_releases_with_its_message():
    ok = rb.check(OPEN_R1_249, framework="trl==0.14.0", gpus=8)
    assert _broken(ok) == set()
    for fw in ("trl==0.29.1", "trl"):
        bad = rb.check(OPEN_R1_249, framework=fw, gpus=8)
        assert _broken(bad) == {"trl.config.gen_divisible_by_num_generations"}, fw
        (v,) = bad.violations
        assert "generation_batch_size = 7 is not divisible by num_generations = 8" in v.message
    # the 8th GPU is 0.14.0's vLLM engine: with 7 GPUs its 'auto' device does not exist
    short = rb.check(OPEN_R1_249, framework="trl==0.14.0", gpus=7)
    assert _broken(short) == {"trl.gpus.budget"}
    assert "The requested device for vllm (cuda:7) is not available" in short.violations[0].message


def test_trl_2858_runs_on_0_14_and_from_0_19_on():
    """Its "(1 x 1)" was 0.15-0.16's check of the per-step batch W x B; 0.14.0 checked nothing, and from 0.19 the
    generation batch (x gradient_accumulation_steps 8 = 8 completions) is what must hold whole groups."""
    for fw in ("trl==0.14.0", "trl==0.29.1", "trl"):
        assert _broken(rb.check(TRL_2858, framework=fw, gpus=1)) == set(), fw
    fewer = [*TRL_2858[:5], "4", *TRL_2858[6:]]  # 4 steps: 4 completions per rollout
    assert _broken(rb.check(fewer, framework="trl==0.29.1", gpus=1)) == {"trl.config.gen_divisible_by_num_generations"}
    assert _broken(rb.check(fewer, framework="trl==0.14.0", gpus=1)) == set()


def test_a_config_of_newer_fields_fails_on_0_14_and_passes_later():
    """generation_batch_size (0.18+) and vllm_mode are not 0.14.0 GRPOConfig fields: its parser refuses them."""
    flags = ["--num_processes", "4", "--per_device_train_batch_size", "4", "--num_generations", "8",
             "--generation_batch_size", "32", "--vllm_mode", "colocate"]
    old = rb.check(flags, framework="trl==0.14.0", gpus=4)
    assert _broken(old) == {"trl.config.removed_fields"}
    assert any("0.14.0's GRPOConfig does not have: generation_batch_size, vllm_mode" in n for n in old.notes)
    for fw in ("trl==0.29.1", "trl"):
        assert _broken(rb.check(flags, framework=fw, gpus=4)) == set(), fw


def test_foreign_fields_of_1_16_are_exactly_the_removed_fields():
    everything = set().union(*RELEASE_FIELDS.values())
    assert set(TV.foreign_fields("1.16.0", everything)) == set(REMOVED_FIELDS)
    assert set(TV.foreign_fields("0.29.1", everything)) == set(REMOVED_FIELDS) | (
        RELEASE_FIELDS["1.16.0"] - RELEASE_FIELDS["0.29.1"])


@pytest.mark.parametrize("text, version, note", [
    ("0.14.0", "0.14.0", False), ("0.29.1", "0.29.1", False), ("0.29.0", "0.29.1", True), ("v0.14.0", "0.14.0", False),
    ("0.19", "0.19.1", True), ("0.16.0", "0.16.1", True),
    # releases whose fields we know, judged by a neighbour's pack (RULES_OF), as when their fields date a config
    ("0.20.0", "0.19.1", True), ("0.25", "0.29.1", True), ("1.0.0", "1.16.0", True),
])
def test_resolve(text, version, note):
    got, why = resolve_release(text, TV)
    assert got == version and bool(why) == note
    assert get_framework(f"trl=={text}").version == version


def test_a_named_release_reads_its_own_fields():
    """--framework trl==0.25: 0.29.1's pack with 0.25.1's GRPOConfig fields (max_prompt_length still a field)."""
    assert get_framework("trl==0.25").fields_version == "0.25.1"
    assert get_framework("trl==0.29.1").fields_version == "0.29.1"


@pytest.mark.parametrize("text", ["0.13.0", "1.15.0", "0.12"])
def test_a_release_we_do_not_follow_is_refused(text):
    with pytest.raises(InputError):
        get_framework(f"trl=={text}")


@pytest.mark.parametrize("flags, version, why", [
    # no field that dates it: the newest
    (["--per_device_train_batch_size", "4"], None, "no field of the config is specific"),
    # vllm_device and max_prompt_length: 0.14.0 to 0.17.0's; the oldest
    (["--vllm_device", "cuda:7", "--max_prompt_length", "512"], "0.14.0", "the oldest of them 0.14.0"),
    # with a field 0.15 added (sync_ref_model): 0.15.2
    (["--vllm_device", "cuda:7", "--sync_ref_model", "true"], "0.15.2", "the oldest of them 0.15.2"),
    # vllm_mode with max_prompt_length: 0.18 to 0.27's: 0.18.2 (open-r1's recipes ran 0.18)
    (["--vllm_mode", "colocate", "--max_prompt_length", "256"], "0.18.2", "TRL 0.18.2 to 0.27.2"),
    # max_prompt_length with a field of 0.23: 0.23.1, whose checks are 0.29.1's
    (["--max_prompt_length", "256", "--vllm_importance_sampling_correction", "true"], "0.29.1",
     "0.23.1 to 0.27.2, the oldest of them 0.23.1, whose checks are TRL 0.29.1's"),
    # scale_rewards as a word (0.22 on) with max_prompt_length (to 0.27)
    (["--scale_rewards", "batch", "--max_prompt_length", "256"], "0.29.1", "0.22.2 to 0.27.2"),
    # a field every release from 0.16 on has: nothing dates it before the newest
    (["--scale_rewards", "true", "--num_iterations", "2"], "1.16.0", "nothing dates it before 1.16.0"),
    # loss_type dapo (0.22 on) with max_prompt_length (to 0.27): 0.22.2, checked as 0.29.1
    (["--loss_type", "dapo", "--max_prompt_length", "256"], "0.29.1", "loss_type=dapo) are those of TRL 0.22.2"),
    # loss_type dapo with vllm_device (to 0.17): no release
    (["--loss_type", "dapo", "--vllm_device", "auto"], None, "belong to no single TRL release"),
    # vllm_dtype (0.15-0.17) with loss_type (0.17 on): 0.17.0 only
    (["--vllm_dtype", "bfloat16", "--loss_type", "bnpo"], "0.17.0", "TRL 0.17.0 only"),
    # num_generations_eval (0.2x) with a 1.16-only field
    (["--num_generations_eval", "4", "--use_adaptive_entropy", "true"], "1.16.0", "its fields"),
    # fields of no one release: vllm_device (removed in 0.18) with vllm_enable_sleep_mode (0.2x)
    (["--vllm_device", "cuda:1", "--vllm_enable_sleep_mode", "true"], None, "belong to no single TRL release"),
])
def test_detect(flags, version, why):
    flat = {flags[i].lstrip("-"): flags[i + 1] for i in range(0, len(flags), 2)}
    got, text = TV.detect(flat)
    assert got == version and why in text, text


def test_unpinned_trl_says_which_release_it_checked_with():
    """open-r1 #249's config as its recipe wrote it (vllm_device, max_prompt_length, log_completions): dated to 0.15.2
    (0.15.2 to 0.17.0 have the fields), whose trainer stops it with the thread's message; with no dating field,
    1.16.0."""
    r = rb.check([*OPEN_R1_249, "--vllm_device", "auto", "--max_prompt_length", "512", "--log_completions", "true"],
                 framework="trl", gpus=8)
    assert any(n.startswith("checked with the TRL 0.15.2 rules") and "TRL 0.15.2 to 0.17.0" in n for n in r.notes), \
        r.notes
    assert _broken(r) == {"trl.trainer.global_batch_divisible_by_num_generations"}
    assert "The global train batch size (7 x 1) must be evenly divisible by the number of generations per prompt (8)" \
        in r.violations[0].message
    plain = rb.check(OPEN_R1_249, framework="trl", gpus=8)
    assert any("checked with the TRL 1.16.0 rules, the newest we follow" in n for n in plain.notes)


def test_memory_follows_each_releases_defaults():
    """0.14.0: micro batches of prompts x num_generations completions and a reference model whatever beta is; 0.29.1:
    --use_vllm without a mode runs a server elsewhere (the training GPUs hold no engine), 1.16.0 colocates it."""
    model = "Qwen/Qwen2.5-1.5B-Instruct"
    flags = ["--num_processes", "4", "--per_device_train_batch_size", "2", "--num_generations", "8",
             "--use_vllm", "true"]
    fws = {v: get_framework(f"trl=={v}") for v in TV.VERSIONS}
    values = {v: fw.to_values(fw.parse(flags)[0], gpus=8, model=None) for v, fw in fws.items()}
    assert values["1.16.0"]["vllm_server"] is False and values["0.29.1"]["vllm_server"] is True
    assert values["0.14.0"]["vllm_server"] is True and values["0.14.0"]["kl_on"] is True
    assert values["1.16.0"]["kl_on"] is False and values["0.29.1"]["kl_on"] is False
    assert values["0.29.1"]["max_completion_length"] == 256 and values["1.16.0"]["max_completion_length"] == 512
    plans = {}
    for v, fw in fws.items():
        from rlbatch_solver.catalog.gpus import load_gpu
        from rlbatch_solver.catalog.models import load_model

        spec = fw.cost_spec(load_model(model), load_gpu("h100"))
        plans[v] = spec.plan(values[v], "actor_update")
    assert plans["0.14.0"].train_micro == 16 and plans["0.29.1"].train_micro == 2
    assert plans["0.14.0"].need_ref and not plans["0.29.1"].need_ref
    assert plans["1.16.0"].engine_colocated and not plans["0.29.1"].engine_colocated


def test_releases_before_0_17_generate_once_per_accumulation_step_and_0_14_0_15_run_vllm_v0():
    """0.14.0 (GRPOTrainer.compute_loss), 0.15.2 and 0.16.1 (_prepare_inputs) generate on every gradient-accumulation
    micro step: one engine call per micro step of the ranks' completions, each drained to its longest; 0.17.0 generates
    the accumulated batch at once. The vLLM of 0.14.0 and 0.15.2 (0.7.x) runs the V0 engine; 0.16.1's extra allows V1."""
    from rlbatch_solver.catalog.gpus import load_gpu
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.costmodel.time import estimate_time

    flags = ["--num_processes", "3", "--per_device_train_batch_size", "8", "--num_generations", "8",
             "--gradient_accumulation_steps", "4", "--use_vllm", "true", "--max_completion_length", "1024"]
    plans, reports = {}, {}
    for v in ("0.17.0", "0.16.1", "0.15.2", "0.14.0"):
        fw = get_framework(f"trl=={v}")
        values = fw.to_values(fw.parse(flags)[0], gpus=4, model=None)
        plans[v] = fw.cost_spec(load_model("Qwen/Qwen2.5-3B-Instruct"), load_gpu("h100")).plan(values, "rollout")
        reports[v] = estimate_time(plans[v])
    # 0.14.0 counts prompts per device: 8 prompts x 8 generations x 3 ranks a micro step
    assert {v: p.engine_call_samples for v, p in plans.items()} == {"0.17.0": None, "0.16.1": 24, "0.15.2": 24,
                                                                     "0.14.0": 192}
    assert {v: p.engine_v0 for v, p in plans.items()} == {"0.17.0": False, "0.16.1": False, "0.15.2": True,
                                                          "0.14.0": True}
    # four calls, each decoding to its own longest response, against one call of the whole step's completions
    assert reports["0.16.1"].decode_steps > 2 * reports["0.17.0"].decode_steps
    assert reports["0.16.1"].phases["rollout"] > reports["0.17.0"].phases["rollout"]
    # without vLLM each rank generates its own micro batch a micro step: 8 completions (0.14.0: 8 prompts x 8)
    hf = [f for f in flags if f not in ("--use_vllm", "true")]
    micro = {}
    for v in ("0.17.0", "0.16.1", "0.14.0"):
        fw = get_framework(f"trl=={v}")
        values = fw.to_values(fw.parse(hf)[0], gpus=4, model=None)
        micro[v] = fw.cost_spec(load_model("Qwen/Qwen2.5-3B-Instruct"), load_gpu("h100")).plan(
            values, "rollout").hf_generate_micro
    assert micro == {"0.17.0": None, "0.16.1": 8, "0.14.0": 64}


@pytest.mark.parametrize("command", ["check", "explain", "fix"])
def test_commands_take_a_pinned_old_release(command):
    message = ["ValueError: The requested device for vllm (cuda:7) is not available."] if command == "explain" else []
    args = [command, "--framework", "trl==0.14.0", "--gpus", "7", "--json", *message, "--", *OPEN_R1_249]
    proc = run(*args)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    text = json.dumps(out)
    assert "trl.gpus.budget" in text
    if command == "fix":
        assert "num_processes" in text


def test_0_19_checks_the_eval_batch_against_num_generations_and_0_16_the_step_batch_in_the_trainer():
    evalc = ["--num_processes", "2", "--per_device_train_batch_size", "4", "--num_generations", "4",
             "--eval_strategy", "steps", "--per_device_eval_batch_size", "3"]
    for fw, rule in (("trl==0.19.1", "trl.config.eval_batch_divisible_by_num_generations_eval"),
                     ("trl==0.16.1", "trl.trainer.eval_batch_divisible_by_num_generations"),
                     ("trl==1.16.0", "trl.config.eval_batch_divisible_by_num_generations_eval")):
        assert _broken(rb.check(evalc, framework=fw, gpus=2)) == {rule}, fw
    # 1.16.0 and 0.29.1 read num_generations_eval; 0.19.1 has no such field
    with_eval_g = [*evalc, "--num_generations_eval", "3"]
    assert _broken(rb.check(with_eval_g, framework="trl==1.16.0", gpus=2)) == set()
    assert _broken(rb.check(with_eval_g, framework="trl==0.19.1", gpus=2)) == {
        "trl.config.removed_fields", "trl.config.eval_batch_divisible_by_num_generations_eval"}
    # 0.16.1: no generation batch field, and num_generations 1 is refused by the same trainer check
    assert "trl.config.removed_fields" in _broken(rb.check([*TRL_2858, "--generation_batch_size", "8"],
                                                            framework="trl==0.16.1", gpus=1))
    one = ["--num_processes", "2", "--per_device_train_batch_size", "2", "--num_generations", "1"]
    assert _broken(rb.check(one, framework="trl==0.16.1", gpus=2)) == {
        "trl.trainer.global_batch_divisible_by_num_generations"}
    assert _broken(rb.check(one, framework="trl==0.19.1", gpus=2)) == {
        "trl.config.num_generations_at_least_two"}


def test_0_16_loads_a_reference_model_by_default_and_runs_vllm_on_a_server_only():
    fw = get_framework("trl==0.16.1")
    flags = ["--num_processes", "4", "--per_device_train_batch_size", "8", "--use_vllm", "true", "--vllm_mode",
             "colocate"]
    values = fw.to_values(fw.normalize(fw.parse(flags)[0]), gpus=8, model=None)
    assert values["kl_on"] is True and values["vllm_server"] is True
    assert values["max_completion_length"] == 256 and values["gmu_permille"] == 900
    zero = fw.to_values(fw.parse([*flags, "--beta", "0"])[0], gpus=8, model=None)
    assert zero["kl_on"] is False


@pytest.mark.parametrize("version", OLD)
def test_recommend_for_an_old_release_prints_a_command_that_release_takes(version):
    """The answer's flags are that release's (no vllm_mode where it has none, torch_dtype before 0.2x's dtype,
    max_prompt_length where its prompts are cut at it), and they check back valid and fitting under its rules."""
    fw = f"trl=={version}"
    proc = run("recommend", "--framework", fw, "--gpus", "8", "--gpu", "h100", "--model", "qwen2.5-1.5b", "--n", "8",
               "--prompt-len", "512", "--response-len", "1024", "--time-limit", "10", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    command = json.loads(proc.stdout)["command"]
    args = [w for a in command[1:] for w in a.split(" ") if not a.startswith("-m ")]
    keys = {a.lstrip("-") for a in args if a.startswith("--")}
    assert not TV.foreign_fields(version, keys), keys
    assert ("max_prompt_length" in keys) == (TV.prompt_cut(version) is not None)
    back = rb.check(args, framework=fw, gpus=8, model="qwen2.5-1.5b", gpu="h100")
    assert back.valid, [v.rule for v in back.violations]
    if TV.RELEASES[version].vllm_mode == "device":  # vLLM in the main process on cuda:{W}: no server, every GPU seen
        out = json.loads(proc.stdout)
        assert not out["start_first"] and "CUDA_VISIBLE_DEVICES" not in " ".join(command), out["start_first"]
    if version == "0.14.0":  # its defaults kept: one prompt per GPU, 8 accumulation steps
        assert "--per_device_train_batch_size 1" in command and "--gradient_accumulation_steps 8" in command


@pytest.mark.parametrize("version", ["0.23.1", "0.26.2", "0.28.0"])
def test_recommend_for_a_release_a_neighbours_pack_judges_prints_that_releases_fields(version):
    """TRL 0.23.1 (judged by 0.29.1's pack) cuts its prompts at max_prompt_length and has no vllm_max_model_length;
    0.26.2 keeps max_prompt_length, deprecated and never read, beside vllm_max_model_length; 0.28.0 has only the
    latter: the printed command carries the prompt length in the field that bounds it in the named release, checks
    back valid under it, and the answer's re-read of its command (its notes) reads it with that release's fields,
    not the pack's."""
    fw = f"trl=={version}"
    proc = run("recommend", "--framework", fw, "--gpus", "8", "--gpu", "h100", "--model", "qwen2.5-1.5b", "--n", "8",
               "--prompt-len", "512", "--response-len", "1024", "--time-limit", "10", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    args = [w for a in out["command"][1:] for w in a.split(" ") if not a.startswith("-m ")]
    keys = {a.lstrip("-") for a in args if a.startswith("--")}
    assert out["rules_version"] == TV.RULES_OF[version] != version
    assert not TV.foreign_fields(version, keys), keys
    assert ("max_prompt_length" in keys) == (TV.prompt_cut(version) is not None) != (
        "vllm_max_model_length" in keys), keys
    assert not [n for n in out["key_notes"] if "GRPOConfig does not have" in n], out["key_notes"]
    back = rb.check(args, framework=fw, gpus=8, model="qwen2.5-1.5b", gpu="h100")
    assert back.valid, [v.rule for v in back.violations]


def test_0_17_checks_the_optimizer_steps_completions_in_the_trainer():
    """TRL 0.17.0's GRPOTrainer.__init__: num_processes x per_device_train_batch_size x gradient_accumulation_steps must
    be whole groups (0.16.1: without gradient_accumulation_steps)."""
    flags = ["--num_processes", "3", "--per_device_train_batch_size", "2", "--num_generations", "4",
             "--gradient_accumulation_steps", "2"]  # 3 x 2 = 6 (not groups of 4); x 2 = 12 (3 groups)
    assert _broken(rb.check(flags, framework="trl==0.17.0", gpus=3)) == set()
    assert _broken(rb.check(flags, framework="trl==0.16.1", gpus=3)) == {
        "trl.trainer.global_batch_divisible_by_num_generations"}
    odd = [*flags[:-1], "3"]  # 18 completions: not groups of 4
    msg = rb.check(odd, framework="trl==0.17.0", gpus=3).errors[0].message
    assert msg.startswith("The effective train batch size (3 x 2 x 3) = 18 must be evenly divisible"), msg


def test_0_18_checks_generation_batch_size_against_the_per_device_batch_only():
    """TRL 0.18.2's GRPOConfig.__post_init__ reads `generation_batch_size % per_device_train_batch_size *
    num_processes`: 12 with 2 per device on 4 processes passes there (12 % 2 == 0), 0.19.1 refuses it (12 % 8)."""
    flags = ["--num_processes", "4", "--per_device_train_batch_size", "2", "--num_generations", "4",
             "--generation_batch_size", "12"]
    assert "trl.config.gen_divisible_by_global_batch" not in _broken(rb.check(flags, framework="trl==0.18.2", gpus=4))
    assert "trl.config.gen_divisible_by_global_batch" in _broken(rb.check(flags, framework="trl==0.19.1", gpus=4))
    odd = [*flags[:-1], "13"]
    assert "trl.config.gen_divisible_by_global_batch" in _broken(rb.check(odd, framework="trl==0.18.2", gpus=4))


def test_0_15_runs_vllm_on_the_gpu_after_the_training_ranks_unless_the_machine_has_one():
    """TRL 0.15.2's GRPOTrainer.__init__: vllm_device 'auto' is cuda:{num_processes}, which must exist; on a machine of
    one GPU it shares cuda:0."""
    flags = ["--per_device_train_batch_size", "4", "--num_generations", "4", "--use_vllm", "true"]
    full = rb.check(["--num_processes", "4", *flags], framework="trl==0.15.2", gpus=4)
    assert "trl.gpus.budget" in _broken(full)
    assert "trl.gpus.budget" not in _broken(rb.check(["--num_processes", "3", *flags], framework="trl==0.15.2",
                                                     gpus=4))
    assert "trl.gpus.budget" not in _broken(rb.check(["--num_processes", "1", *flags], framework="trl==0.15.2",
                                                     gpus=1))
    assert "trl.gpus.budget" in _broken(rb.check(["--num_processes", "1", *flags], framework="trl==0.14.0", gpus=1))


@pytest.mark.parametrize("version", ["0.14.0", "0.15.2"])
def test_recommend_turns_gradient_checkpointing_on_where_the_release_leaves_it_off(version):
    """qwen2.5-7b on 8x H100 with TRL 0.14.0/0.15.2 (gradient_checkpointing off by default before 0.22) answered
    "No valid config fits": the actor update's activations (123 GiB) with no checkpointing, a switch the search never
    tried. Now it searches --gradient_checkpointing there, and 1.16.0 (on by default) neither searches nor prints it."""
    from rlbatch_solver.commands.recommend import best_command
    from rlbatch_solver.scenario import Scenario

    def best(framework):
        sc = Scenario(framework=framework, gpu="h100", gpus=8, model="qwen2.5-7b", algorithm="grpo", n=8,
                      prompt_length=1024, response_length=1024)
        return rb.recommend(sc, time_limit_s=20)

    report = best(f"trl=={version}")
    assert report.best is not None, report.status
    assert "--gradient_checkpointing true" in best_command(report)
    assert not any("gradient_checkpointing" in w for w in best_command(best("trl")))


@pytest.mark.parametrize("version,prompt", [("0.23.1", 512), ("0.25.1", 512), ("0.21.0", 512), ("0.26.2", 7168),
                                            ("0.29.1", 7168)])
def test_a_release_that_cuts_prompts_prices_them_at_its_cut(version, prompt):
    """TRL 0.14 to 0.25 cut each prompt at max_prompt_length (GRPOConfig default 512) whichever pack judges the
    release (0.23.1 and 0.25.1 by 0.29.1's, which has no such field); 0.26 no longer reads the field: a server whose
    max_model_len leaves 7168 prompt tokens prices 7168 there, 512 where the release cuts."""
    flags = ["--num_processes", "4", "--per_device_train_batch_size", "8", "--num_generations", "8",
             "--use_vllm", "true", "--vllm_mode", "server", "--server.max_model_len", "8192",
             "--max_completion_length", "1024"]
    fw = f"trl=={version}"
    assert TV.prompt_cut(version) == (512 if prompt == 512 else None)
    assert rb.check(flags, framework=fw, gpus=4, model="qwen2.5-1.5b", gpu="h100").values["max_length"] == prompt
    given = rb.check([*flags, "--max_prompt_length", "2048"], framework=fw, gpus=4, model="qwen2.5-1.5b", gpu="h100")
    # the user's own cut where the release reads it; 0.26 and 0.27 keep the field, deprecated, and never read it (the
    # engine's bound stands, with a note); from 0.28 a config with it was written for a release that reads it
    ignored = TV.prompt_field_ignored(version)
    assert given.values["max_length"] == (7168 if ignored else 2048)
    assert any("--max_prompt_length is deprecated" in n for n in given.notes) == ignored, given.notes


@pytest.mark.parametrize("named,why", [
    ("0.26.0", "(its GRPOConfig's max_prompt_length is deprecated and never read, from 0.26 on)"),
    ("0.27.2", "(its GRPOConfig's max_prompt_length is deprecated and never read, from 0.26 on)"),
    ("0.28.0", "(GRPOConfig has no max_prompt_length since 0.28)"),
    ("1.16.0", "(GRPOConfig has no max_prompt_length since 0.28)")])
def test_without_vllm_the_prompt_note_speaks_of_the_release_named(named, why):
    """An answer without vLLM is priced at the prompt check reads for its command: its note said "TRL 0.29.1 ...
    (GRPOConfig has no max_prompt_length since 0.28)" for trl==0.26.0, whose GRPOConfig has the field (deprecated,
    never read) and which 0.29.1's pack judges: it names the release the user named and what that release does."""
    from rlbatch_solver.scenario import Scenario

    report = rb.recommend(Scenario(framework=f"trl=={named}", gpu="h100", gpus=8, model="qwen2.5-1.5b",
                                   fixed={"use_vllm": False}), top=1, time_limit_s=30)
    notes = [n for n in report.key_notes if "has no flag that carries the prompt length" in n]
    assert len(notes) == 1, report.key_notes
    assert f"TRL {named} without vLLM has no flag that carries the prompt length {why}" in notes[0], notes[0]


def test_the_deprecated_prompt_field_note_names_the_release_named():
    flags = ["--num_processes", "4", "--per_device_train_batch_size", "8", "--num_generations", "8",
             "--max_prompt_length", "128"]
    report = rb.check(flags, framework="trl==0.26.0", gpus=4)
    assert any(n.startswith("--max_prompt_length is deprecated in TRL 0.26.0 and never read") for n in report.notes), \
        report.notes


@pytest.mark.parametrize("version,cut,field", [
    ("0.14.0", 512, True), ("0.19.1", 512, True), ("0.23.1", 512, True), ("0.25.1", 512, True),
    ("0.26.0", None, True), ("0.26.2", None, True), ("0.27.2", None, True),
    ("0.28.0", None, False), ("0.29.1", None, False), ("1.0.0", None, False), ("1.16.0", None, False)])
def test_each_band_of_releases_does_what_its_wheel_does_with_max_prompt_length(version, cut, field):
    """One statement (versions.PROMPT_CUT_FROM) of where a release cuts its prompts: 0.14 to 0.25 at max_prompt_length,
    default 512; 0.26 and 0.27 keep the field (release_fields.py), deprecated and never read; from 0.28 no field. The
    printed command carries the prompt length in max_prompt_length only where the release cuts there."""
    assert TV.prompt_cut(version) == cut
    fields = TV.RELEASE_FIELDS[TV.fields_release_of(version)]
    assert ("max_prompt_length" in fields) == field
    assert TV.prompt_field_ignored(version) == (field and cut is None)
    assert get_framework(f"trl=={version}").prompt_limit == (cut is not None)
