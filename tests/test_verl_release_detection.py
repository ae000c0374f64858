"""With no release named, a real verl config is judged by the release its keys show (versions.detect), and a config
judged by an older release says in one line what verl 0.9.1 refuses (the upgrade note). Cases: tests/verl_releases.py."""

from __future__ import annotations

import json

import pytest

import rlbatch_solver as rb
import verl_releases as vr
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.verl import versions as VV

AR = "actor_rollout_ref"
CASES = vr.cases()


def test_the_cases_are_real_configs_with_their_source_and_release():
    assert len(CASES) >= 40 and len({c.name for c in CASES}) == len(CASES)
    assert sum(c.origin == "examples" for c in CASES) >= 20
    for c in CASES:
        assert c.source.startswith("https://") and c.release and c.family in ("verl", "verl-megatron"), c.name
        assert get_framework(c.framework).version in VV.VERSIONS, c.name
    assert set(vr.UNDATED) <= {c.name for c in CASES}
    for name, undated in vr.UNDATED.items():  # a release verl has, other than the case's own
        case = next(c for c in CASES if c.name == name)
        assert undated.why and undated.judged_by in VV.VERSIONS and undated.judged_by != case.release, name


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_with_no_release_named_a_config_is_judged_as_on_its_release(case):
    result = next(r for r in vr.results() if r[0] == case)
    _, named, unnamed, detected = result
    if case.name in vr.UNDATED:
        # judged by the newest release, or by the one its keys date it to: the case says which
        undated = vr.UNDATED[case.name]
        assert named != unnamed, undated.why
        assert detected == undated.judged_by, (detected, undated)
    else:
        assert named == unnamed, (detected, named, unnamed)


def test_the_agreement_in_the_docs_is_todays():
    doc = vr.DOC.read_text()
    assert vr.agreement_line() in doc, "run: python tests/verl_releases.py"
    res = vr.results()
    assert sum(n == u for _, n, u, _ in res) == len(res) - len(vr.UNDATED)


# ----------------------------------------------------------------------------- what dates a config
FAQ = ["data.train_batch_size=64", f"{AR}.actor.ppo_mini_batch_size=16", "trainer.n_gpus_per_node=4",
       f"{AR}.actor.ppo_micro_batch_size_per_gpu=4", f"{AR}.rollout.log_prob_micro_batch_size_per_gpu=4",
       "algorithm.adv_estimator=grpo", f"{AR}.rollout.n=4"]
GLOBAL = [x for x in FAQ if "micro" not in x] + [f"{AR}.actor.ppo_micro_batch_size=16",
                                                 f"{AR}.rollout.log_prob_micro_batch_size=16"]


@pytest.mark.parametrize("keys,version", [
    (GLOBAL, "0.7.1"),  # the newest whose (legacy) workers convert the global micro batches
    (FAQ + [f"{AR}.ref.log_prob_micro_batch_size=8"], "0.7.1"),
    (FAQ + [f"{AR}.actor.ppo_micro_batch_size=null"], None),  # unset: dates nothing
    (FAQ + [f"{AR}.actor.fsdp_config.grad_offload=False"], "0.2.0"),  # gone from 0.3.0.post1's yaml
    (FAQ + ["ray_init.num_cpus=8"], "0.5.0"),  # 0.4.1 and 0.5.0 (0.6: ray_kwargs)
    (FAQ + [f"{AR}.rollout.engine_kwargs.vllm.swap_space=32"], "0.5.0"),  # 0.6.1's engine_kwargs.vllm is {}
    (FAQ + [f"+{AR}.rollout.engine_kwargs.vllm.swap_space=32"], None),  # added: any release from 0.6.1 takes it
    (FAQ + [f"{AR}.ref.param_offload=True"], "0.3.0"),  # 0.2.0.post2 and 0.3.0.post1 (0.4: ref.fsdp_config)
    (FAQ + [f"{AR}.actor.checkpoint.contents=[model]"], "0.3.0"),  # 0.3.0.post1 only (0.4: save_contents)
    (FAQ + [f"{AR}.rollout.use_fire_sampling=False", "critic.kl_ctrl.kl_coef=0.001"], "0.5.0"),  # 0.3 and 0.4
    (GLOBAL + ["ray_init.num_cpus=8"], "0.5.0"),  # 0.4-0.5's workers convert the global micro batches too
    (FAQ + ["ray_init.num_cpus=8", f"{AR}.rollout.mode=sync", "trainer.use_legacy_worker_impl=auto"], "0.5.0"),
    (FAQ + ["ray_init.num_cpus=8", f"{AR}.rollout.name=sglang_async"], "0.5.0"),
    (FAQ + [f"{AR}.ref.param_offload=True", "ray_init.num_cpus=8"], None),  # 0.3's and 0.4-0.5's: none
    (FAQ + [f"{AR}.actor.megatron.grad_offload=True"], "0.9.0"),  # 0.9.0 has it too (0.9.1 dropped it)
    (FAQ + [f"{AR}.actor.megatron.grad_offload=True", "critic.load_weight=True"], "0.8.0"),  # gone in 0.9.0
    (FAQ + [f"{AR}.rollout.name=hf"], "0.7.1"),
    (FAQ + [f"{AR}.rollout.name=trtllm"], "0.9.1"),  # new in 0.7: the newest
    (FAQ + [f"{AR}.rollout.name=trtllm", "trainer.use_legacy_worker_impl=auto"], "0.7.1"),
    (GLOBAL + ["critic.fsdp.param_offload=True"], None),  # 0.6-0.7 and 0.8-0.9 at once: none
])
def test_keys_and_values_that_date_a_config(keys, version):
    found, why = VV.detect(dict(k.split("=", 1) for k in keys))
    assert found == version, why


def test_the_global_micro_batches_are_refused_by_the_engine_workers_of_0_8_and_0_9():
    """verl 0.8.0 has no legacy workers (its engine_workers.py asserts the _per_gpu keys): a config with only the
    global micro batches runs on 0.7.1 at the newest, and fails on both newer packs."""
    assert rb.check(GLOBAL, framework="verl==0.7.1").valid
    for newer in ("0.8.0", "0.9.1"):
        ids = {v.rule for v in rb.check(GLOBAL, framework=f"verl=={newer}").errors}
        assert {"verl.worker.actor_micro_per_gpu_required", "verl.worker.logprob_micro_per_gpu_required"} <= ids


# ----------------------------------------------------------------------------- the upgrade note
def test_a_dated_config_valid_on_its_release_says_what_fails_on_0_9_1():
    rep = rb.check(GLOBAL)
    assert rep.version == "0.7.1" and rep.valid
    assert any("checked with the verl 0.7.1 rules" in n and "global micro batches" in n for n in rep.notes)
    assert [r for r, _ in rep.upgrade.fails] == ["verl.worker.actor_micro_per_gpu_required",
                                                 "verl.worker.logprob_micro_per_gpu_required"]
    line = rep.upgrade.text()
    assert line.startswith("on verl 0.9.1 this config fails: verl.worker.actor_micro_per_gpu_required, ")
    assert "\n" not in line
    one = rb.check(FAQ + [f"{AR}.ref.log_prob_micro_batch_size=8", f"{AR}.actor.use_kl_loss=True"])
    assert one.upgrade.text() == ("on verl 0.9.1 this config fails: verl.step.ref_micro_per_gpu_required: "
                                  + one.upgrade.fails[0][1])


def test_an_undated_config_is_checked_with_0_9_1_and_says_no_upgrade():
    rep = rb.check(FAQ)
    assert rep.version == VV.NEWEST and rep.upgrade is None and rep.to_dict()["upgrade"] is None
    # named: the user's release, no upgrade note
    assert rb.check(GLOBAL, framework="verl==0.7.1").upgrade is None


@pytest.mark.parametrize("framework", ["verl", "verl-megatron"])
def test_an_undated_config_with_a_key_only_some_releases_have_is_not_said_to_have_none(framework):
    """A config holding a key only some releases' trainer config lists have (0.9.1's
    fsdp_config.use_no_sync_for_gradient_accumulation, 0.6.1-0.9.1's rollout.over_sample_rate) was checked with
    0.9.1 "(no key of the config is specific to a verl version)": the tables that date a release (versions.py) do
    not hold it. The note names it and its releases; the release it is checked with stays the one the tables give."""
    for key, releases in ((f"{AR}.actor.fsdp_config.use_no_sync_for_gradient_accumulation=True", "0.9.1"),
                          (f"{AR}.rollout.over_sample_rate=0.1", "0.6.1, 0.7.0, 0.7.1, 0.8.0, 0.9.0, 0.9.1")):
        rep = rb.check(FAQ + [key], framework=framework)
        assert rep.version == VV.NEWEST, rep.version
        note = next(n for n in rep.notes if "checked with the verl" in n)
        assert "no key of the config is specific" not in note, note
        assert (f"its {key.split('=')[0]} is a key of the trainer config of verl {releases} only, of the releases "
                "whose keys we hold (0.5.0 to 0.9.1)") in note, note
    # keys every list holds, a key a "+" adds and a key verl's DAPO recipe adds before 0.9: none of them is named
    for extra in ([], [f"+{AR}.actor.fsdp_config.use_no_sync_for_gradient_accumulation=True"],
                  ["data.gen_batch_size=128"]):
        rep = rb.check(FAQ + extra, framework=framework)
        assert any("(no key of the config is specific to a verl version)" in n for n in rep.notes), rep.notes


def test_a_dated_config_that_0_9_1_also_passes_has_no_upgrade_line():
    dynamic = [f"{AR}.actor.use_dynamic_bsz=True", f"{AR}.rollout.log_prob_use_dynamic_bsz=True"]
    rep = rb.check(GLOBAL + dynamic)  # token budgets: 0.9.1 does not read the global micro batches either
    assert rep.version == "0.7.1" and rep.upgrade is not None and rep.upgrade.fails == []
    assert rep.upgrade.text() is None
    assert rep.to_dict()["upgrade"] == {"version": "0.9.1", "fails": [], "unknown_keys": []}


def test_keys_the_0_9_1_config_lacks_are_named_in_the_upgrade_line():
    """verl 0.9.1's trainer config has no trainer.use_legacy_worker_impl, nor Megatron's grad_offload: Hydra
    refuses an override of a key its struct config lacks."""
    rep = rb.check(FAQ + ["trainer.use_legacy_worker_impl=auto"])
    assert rep.upgrade.fails == [] and rep.upgrade.unknown_keys == ["trainer.use_legacy_worker_impl"]
    assert rep.upgrade.text() == ("on verl 0.9.1 this config fails: its config has no trainer.use_legacy_worker_impl "
                                  "(refused as an unknown key)")
    mega = rb.check(GLOBAL + [f"{AR}.actor.megatron.grad_offload=True"], framework="verl-megatron")
    assert mega.version == "0.7.1" and mega.upgrade.unknown_keys == [f"{AR}.actor.megatron.grad_offload"]
    assert "verl.worker.actor_micro_per_gpu_required" in {r for r, _ in mega.upgrade.fails}
    old = rb.check(FAQ + [f"{AR}.actor.fsdp_config.grad_offload=False"])  # verl 0.2's: gone from 0.3 on
    assert old.version == "0.2.0" and old.upgrade.unknown_keys == [f"{AR}.actor.fsdp_config.grad_offload"]


def test_the_upgrade_note_in_check_fix_and_explain_text_and_json():
    from typer.testing import CliRunner

    from rlbatch_solver.cli import app

    runner = CliRunner()
    out = runner.invoke(app, ["check", "--", *GLOBAL])
    assert out.exit_code == 0 and "upgrade: on verl 0.9.1 this config fails: verl.worker.actor_micro" in out.output
    data = json.loads(runner.invoke(app, ["check", "--json", "--", *GLOBAL]).stdout)
    assert data["rules_version"] == "0.7.1" and data["upgrade"]["version"] == "0.9.1"
    assert data["upgrade"]["fails"][0]["rule"] == "verl.worker.actor_micro_per_gpu_required"
    fixed = runner.invoke(app, ["fix", "--", *GLOBAL])
    assert "upgrade: on verl 0.9.1 this config fails:" in fixed.output
    fix_json = json.loads(runner.invoke(app, ["fix", "--json", "--", *GLOBAL]).stdout)
    assert [f["rule"] for f in fix_json["upgrade"]["fails"]][:1] == ["verl.worker.actor_micro_per_gpu_required"]
    # explain: the legacy workers' message picks 0.7.1 from the message; the note says what 0.9.1 refuses
    bad = [x for x in GLOBAL if "ppo_micro" not in x] + [f"{AR}.actor.ppo_micro_batch_size=12"]
    msg = "AssertionError: normalized ppo_mini_batch_size should be divisible by ppo_micro_batch_size_per_gpu"
    exp = rb.explain(msg, config=bad, time_limit_s=10)
    assert exp.check.version == "0.7.1" and "verl.worker.actor_micro_per_gpu_required" in {
        r for r, _ in exp.check.upgrade.fails}
    assert exp.to_dict()["upgrade"]["version"] == "0.9.1"
    text = runner.invoke(app, ["explain", msg, "--", *bad]).output
    assert "upgrade: on verl 0.9.1 this config fails:" in text


def test_a_config_with_keys_of_verl_0_4_is_judged_by_the_0_5_pack_and_told_what_0_9_1_refuses():
    """ray_init.* and rollout.engine_kwargs.vllm.swap_space are in the 0.4.1 and 0.5.0 wheels' trainer yaml and in no
    later one: such a config runs 0.5.0's defaults (rollout.enforce_eager True) and says so in its note; the upgrade
    line names the keys 0.9.1's struct config refuses."""
    keys = FAQ + ["ray_init.num_cpus=8", f"{AR}.rollout.engine_kwargs.vllm.swap_space=32"]
    rep = rb.check(keys)
    assert rep.version == "0.5.0" and rep.valid
    assert any("checked with the verl 0.5.0 rules" in n and "(verl 0.4-0.5 only)" in n for n in rep.notes)
    assert rep.upgrade.fails == []
    assert rep.upgrade.unknown_keys == ["ray_init.num_cpus", f"{AR}.rollout.engine_kwargs.vllm.swap_space"]
    assert "\n" not in rep.upgrade.text()
    assert VV.missing_keys(dict(k.split("=", 1) for k in keys), "0.5.0") == []
    assert VV.missing_keys({f"{AR}.ref.param_offload": True}, "0.5.0") == [f"{AR}.ref.param_offload"]
    assert VV.missing_keys({f"{AR}.ref.param_offload": True}, "0.3.0") == []


def test_a_key_of_later_releases_beside_a_key_of_verl_0_2_is_said_whichever_release_judges_it():
    """verl's run_qwen2-7b.sh (fsdp_config.grad_offload: verl 0.1-0.2 only) with actor_rollout_ref.model.lora_rank=32
    was judged as verl 0.2.0 and priced as LoRA without a word that 0.2.0's trainer config has no lora_rank (new in 0.4:
    the 0.4.1 wheel's ppo_trainer.yaml; Hydra refuses the override without +). lora_rank now dates a config to 0.4 on, so
    the keys belong to no single release: judged by the newest, whose struct config refuses grad_offload (an error),
    and the note names both keys' releases; under verl==0.2.0 named, lora_rank is the error."""
    script = "tests/data/scripts/verl/run_qwen2-7b.sh"
    report = rb.check([script, "actor_rollout_ref.model.lora_rank=32"], model="qwen2.5-7b", gpu="h100")
    refused = [v.message for v in report.violations if v.rule == "verl.launch.unknown_key"]
    assert report.version != "0.2.0"
    assert any(m.startswith("actor_rollout_ref.actor.fsdp_config.grad_offload is not an option of verl") for m in
               refused), refused
    assert any("actor_rollout_ref.model.lora_rank (0.4" in n and "grad_offload (verl 0.1-0.2 only)" in n
               for n in report.notes), report.notes
    pinned = rb.check([script, "actor_rollout_ref.model.lora_rank=32"], framework="verl==0.2.0")
    assert any(v.message.startswith("actor_rollout_ref.model.lora_rank is not an option of verl 0.2.0")
               for v in pinned.violations if v.rule == "verl.launch.unknown_key"), pinned.violations
    assert VV.detect({"actor_rollout_ref.model.lora_rank": 8})[0] == "0.9.1"
    assert "0.2.0" not in {v for _, _, vs in VV.dating({"actor_rollout_ref.model.lora_rank": 8}) for v in vs}


# ----------------------------------------------------------------------------- verl 0.9.0: 0.9.1's pack, its own keys
def test_0_9_0_keys_are_its_wheels_and_the_list_says_so_for_each_key():
    """verl 0.9.0 is judged by 0.9.1's pack with its own trainer config keys (config_keys/0.9.0_*.txt, from the 0.9.0
    wheel's _generated_ppo_trainer.yaml and _generated_ppo_megatron_trainer.yaml): each version-specific key is
    listed for 0.9.0 exactly where that release's key list has it, and for 0.9.1 where 0.9.1's has it."""
    from rlbatch_solver.frameworks.verl import struct_keys

    for release in ("0.9.0", "0.9.1"):
        keys = struct_keys.release_keys(release)
        for prefix, releases in VV.VERSION_KEYS:
            bare = prefix.rstrip(".")
            there = bare in keys or any(k.startswith(bare + ".") for k in keys)
            if "engine_kwargs." in prefix:  # 0.6.1 on: an empty mapping whose keys are added with a +
                continue
            assert there == (release in releases), (release, prefix)


def test_a_0_9_0_megatron_example_is_judged_as_0_9_0():
    """verl v0.9.0's examples/grpo_trainer/run_qwen3_235b_a22b_megatron.sh sets actor.megatron.grad_offload, which
    0.9.0's engine/megatron.yaml has and 0.9.1's dropped: it was dated 0.8.0 (the newest release then listed with the
    key) and judged by 0.8.0's rules. It is 0.9.0's, judged by 0.9.1's pack (the same rules) against 0.9.0's keys:
    grad_offload is no unknown key there, and the upgrade line says 0.9.1's Hydra refuses it."""
    from pathlib import Path

    from rlbatch_solver.launch_script import read_launch_script

    script = read_launch_script(Path(__file__).parent / "data/scripts/verl-megatron/run_qwen3_235b_a22b_megatron.sh")
    assert any(a.startswith(f"{AR}.actor.megatron.grad_offload=") for a in script.args)
    rep = rb.check(script.args, framework=script.framework)
    assert rep.version == "0.9.1" and rep.valid, [v.rule for v in rep.errors]
    assert any("checked with the verl 0.9.1 rules (verl 0.9.0 checks as 0.9.1 does)" in n for n in rep.notes)
    assert rep.upgrade is not None and rep.upgrade.unknown_keys == [f"{AR}.actor.megatron.grad_offload"]
    assert rep.upgrade.text().startswith("on verl-megatron 0.9.1 this config fails: its config has no "
                                         f"{AR}.actor.megatron.grad_offload")
    # named: 0.9.0 reads its own keys, 0.9.1 refuses the one it lacks
    named = rb.check(script.args, framework="verl-megatron==0.9.0").to_dict()
    assert named["valid"] and named["unknown_keys"] == [], named["unknown_keys"]
    newer = rb.check(script.args, framework="verl-megatron==0.9.1").to_dict()
    assert [v["rule"] for v in newer["violations"]] == ["verl-megatron.launch.unknown_key"]
    assert newer["unknown_keys"] == [{"key": f"{AR}.actor.megatron.grad_offload", "did_you_mean": None,
                                      "refused": True}]
