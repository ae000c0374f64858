"""verl's struct trainer config (frameworks/verl/struct_keys.py): a key one typing slip from a key of the release,
under a section the release's own composed config holds completely, or a key outside every section, is refused at
launch (verl.launch.unknown_key), and so is any new key under an empty mapping, null or other value of the release's
config or under a mapping of the user's own keys (engine_kwargs, override_*) unless written with +; + keys, other
releases' keys and keys under a section far from every known one are never flagged."""

from __future__ import annotations

import json

import pytest

from clirun import run
from memory_corpus import cases
from rlbatch_solver.commands.common import framework_for, read_config
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.key_names import findings
from rlbatch_solver.frameworks.verl import struct_keys

BATCH = ["data.train_batch_size=16", "actor_rollout_ref.actor.ppo_mini_batch_size=8"]


def _check(*args):
    res = run("check", "--framework", "verl", "--json", *BATCH, *args)
    return res.returncode, json.loads(res.stdout)


def test_a_typo_under_a_struct_section_is_refused_with_the_key_it_misspells():
    rc, data = _check("trainer.totl_epochs=3")
    assert rc == 1
    broken = [v for v in data["violations"] if v["rule"] == "verl.launch.unknown_key"]
    assert len(broken) == 1
    assert "trainer.totl_epochs is not an option of verl 0.9.1 (did you mean trainer.total_epochs?)" in \
        broken[0]["message"]
    assert "Could not override 'trainer.totl_epochs'. ... Key 'totl_epochs' is not in struct" in broken[0]["message"]
    assert broken[0]["source"].startswith("verl/trainer/main_ppo.py: hydra.main")
    assert data["unknown_keys"] == [{"key": "trainer.totl_epochs", "did_you_mean": "trainer.total_epochs",
                                     "refused": True}]


def test_the_same_config_without_the_typo_has_no_key_error():
    _, data = _check("trainer.total_epochs=3")
    assert data["unknown_keys"] == [] and not any(v["rule"].endswith("unknown_key") for v in data["violations"])


def test_a_new_key_under_an_empty_mapping_without_a_plus_is_refused_saying_to_write_the_plus():
    """0.9.1's composed config has engine_kwargs.vllm: {} and model.override_config: {}: Hydra's struct config refuses
    a key under them written without + ("Could not override 'actor_rollout_ref.rollout.engine_kwargs.vllm.
    enable_expert_parallel'. To append to your config use +...", OmegaConf 2.3's "Key 'enable_expert_parallel' is not
    in struct"); they passed as valid. With the + each is added, and passes."""
    keys = ["actor_rollout_ref.rollout.engine_kwargs.vllm.enable_expert_parallel",
            "actor_rollout_ref.model.override_config.attn_implementation"]
    rc, data = _check(*(f"{k}=True" for k in keys))
    assert rc == 1
    assert data["unknown_keys"] == [{"key": k, "did_you_mean": None, "refused": True} for k in keys]
    messages = [v["message"] for v in data["violations"] if v["rule"] == "verl.launch.unknown_key"]
    assert len(messages) == 2
    for key, message in zip(keys, messages):
        leaf = key.rsplit(".", 1)[1]
        assert f"{key} is not an option of verl 0.9.1" in message and f"write +{key}=..." in message, message
        assert f"Could not override '{key}'. ... Key '{leaf}' is not in struct" in message
    _, data = _check(*(f"+{k}=True" for k in keys))
    assert data["unknown_keys"] == [] and not any(v["rule"].endswith("unknown_key") for v in data["violations"])
    # every release with a list: under an empty mapping, null, a value, or a mapping of the user's own keys (0.5.0's
    # engine_kwargs.vllm holds swap_space; Megatron's override_transformer_config its recompute keys)
    for version in ("0.5.0", "0.6.1", "0.7.1", "0.8.0", "0.9.1"):
        assert struct_keys.refused({}, ["actor_rollout_ref.rollout.engine_kwargs.vllm.enable_expert_parallel",
                                        "actor_rollout_ref.actor.megatron.override_transformer_config.moe_router_dtype",
                                        "trainer.total_epochs.extra"], version) == [
            "actor_rollout_ref.rollout.engine_kwargs.vllm.enable_expert_parallel",
            "actor_rollout_ref.actor.megatron.override_transformer_config.moe_router_dtype",
            "trainer.total_epochs.extra"], version
        assert struct_keys.adds_with_plus("actor_rollout_ref.rollout.engine_kwargs.vllm.enable_expert_parallel",
                                          version)


def test_plus_keys_and_keys_under_a_part_the_release_lacks_are_not_flagged():
    for key in ("reward.reward_kwargs.max_resp_len=512",  # 0.9.1's reward lacks reward_kwargs: a recipe's (dapo)
                "+trainer.totl_epochs=3",  # + adds a key Hydra's struct config lacks
                "+actor_rollout_ref.rollout.engine_kwargs.sglang.attention_backend=fa3",
                "actor_rollout_ref.rollout.val_kwargs.top_p=0.9",  # a key val_kwargs has
                "trainer.logger.0=console",  # an item of a list value: Hydra sets it
                "custom_reward_function.pth=x.py"):  # far from path and name
        _, data = _check(key)
        assert data["unknown_keys"] == [], key


def test_a_key_of_another_release_or_far_from_every_key_is_not_refused():
    assert struct_keys.refused({}, ["actor_rollout_ref.actor.fsdp_config.model_dtype"], "0.5.0") == []  # 0.6.1+
    # a recipe's own key (recipe/dapo's dapo_trainer.yaml) and a pull request's: no misspelling of a 0.9.1 key
    assert struct_keys.refused({}, ["algorithm.filter_groups.enable",
                                    "actor_rollout_ref.actor.fsdp_config.optimizer_offload_step"], "0.9.1") == []
    assert struct_keys.refused({}, ["trainer.totl_epochs"], "0.9.1") == ["trainer.totl_epochs"]
    assert struct_keys.refused({"model_engine": "torchtitan"}, ["trainer.totl_epochs"], "0.9.1") == []  # not held
    assert struct_keys.refused({}, ["trainer.totl_epochs"], "0.3.0") == []  # no list of 0.3.0's keys


def test_a_key_the_named_release_lacks_is_refused_though_a_later_release_has_it():
    """--framework verl==0.5.0 with trainer.use_v1 (0.9.1's only): Hydra's struct config of 0.5.0 refuses it at
    launch; it was VALID with no word. Unnamed, the config is dated 0.9.1 by that key and passes."""
    res = run("check", "--framework", "verl==0.5.0", "--json", *BATCH, "trainer.use_v1=True")
    data = json.loads(res.stdout)
    broken = [v for v in data["violations"] if v["rule"] == "verl.launch.unknown_key"]
    assert res.returncode == 1 and len(broken) == 1, data["violations"]
    assert "trainer.use_v1 is not an option of verl 0.5.0" in broken[0]["message"]
    assert "Key 'use_v1' is not in struct" in broken[0]["message"]
    rc, data = _check("trainer.use_v1=True")
    assert data["unknown_keys"] == [] and data["rules_version"] == "0.9.1"
    assert not any(v["rule"] == "verl.launch.unknown_key" for v in data["violations"])


@pytest.mark.parametrize("release", ["0.9.0", "0.8.0"])
def test_a_key_only_a_later_releases_trainer_config_has_is_refused_under_a_named_release(release):
    """fsdp_config.use_no_sync_for_gradient_accumulation is in 0.9.1's composed trainer config only (config_keys/):
    --framework verl==0.9.0 (judged by 0.9.1's rules, read with 0.9.0's keys) or 0.8.0 stops at launch with Hydra's
    "Key ... is not in struct" as for any key the release lacks; it was VALID with no word. With a + Hydra adds it;
    unnamed, or named 0.9.1, it passes. A key a recipe's trainer config adds (recipe/dapo: algorithm.filter_groups.*,
    in the trainer config from 0.9.0) is not refused under an older release: the recipe's run sets it."""
    key = "actor_rollout_ref.actor.fsdp_config.use_no_sync_for_gradient_accumulation"
    res = run("check", "--framework", f"verl=={release}", "--json", *BATCH, f"{key}=True")
    data = json.loads(res.stdout)
    broken = [v for v in data["violations"] if v["rule"] == "verl.launch.unknown_key"]
    assert res.returncode == 1 and len(broken) == 1, data["violations"]
    assert f"{key} is not an option of verl {release}" in broken[0]["message"]
    assert "Key 'use_no_sync_for_gradient_accumulation' is not in struct" in broken[0]["message"]
    assert (f"(a key of verl 0.9.1's trainer config; {release} has no key of the same meaning we know: drop it)"
            in broken[0]["message"])
    fixed = run("fix", "--framework", f"verl=={release}", *BATCH, f"{key}=True")  # drops it, as a Hydra key
    assert f"+ (drop {key})" in fixed.stdout and f"drop --{key}" not in fixed.stdout, fixed.stdout
    for framework, arg in ((f"verl=={release}", f"+{key}=True"), ("verl", f"{key}=True"),
                           ("verl==0.9.1", f"{key}=True"), (f"verl=={release}", "algorithm.filter_groups.enable=True")):
        res = run("check", "--framework", framework, "--json", *BATCH, arg)
        data = json.loads(res.stdout)
        assert not any(v["rule"] == "verl.launch.unknown_key" for v in data["violations"]), (framework, arg)
    assert struct_keys.refused({}, [key], release) == []  # the release dated from the config: not judged
    assert struct_keys.refused({}, [key], release, named=True) == [key]
    assert struct_keys.refused({"model_engine": "torchtitan"}, [key], release, named=True) == []  # another config


@pytest.mark.parametrize("named, key", [
    ("0.7.0", "reward_model.micro_batch_size_per_gpu"),  # 0.7.0's _generated_ppo_trainer.yaml reward_model section
    ("0.7.0", "actor_rollout_ref.actor.profiler.tool_config.torch.step_start"),
    ("0.7.0", "actor_rollout_ref.rollout.update_weights_bucket_megabytes"),  # versions.py: a 0.4-0.5, 0.6.1 key
    ("0.4.1", "actor_rollout_ref.actor.profiler.all_ranks"),  # 0.4.1's ppo_trainer.yaml; 0.5.0's list lacks it
])
def test_a_named_release_without_a_key_list_of_its_own_refuses_no_key_its_packs_list_lacks(named, key):
    """verl 0.7.0 is checked with 0.7.1's pack (0.4.1 with 0.5.0's; 0.7.0 now with a key list of its own, 0.4.1 with
    none): a key its own trainer
    config has and the pack's release lacks is no key its Hydra refuses, so the pack's list must not refuse it as a
    named release's (it did: "INVALID ... is not an option of verl 0.7.1 ... drop it"). Named 0.7.1 (0.5.0), whose
    list it is, the same key is still refused, and fix still drops it there. A key neither listed release around
    0.7.0 has (0.6.1, 0.7.1: fsdp_config.use_no_sync_for_gradient_accumulation, 0.9.1's) is still refused under it;
    0.4.1 has no listed release before it, so no such key is. Of versions.py's version-specific keys, one the pack
    on either side has (0.6.1's rollout.update_weights_bucket_megabytes, in 0.7.0's config too) is not refused; one
    neither has (trainer.use_v1, 0.9.0 on) is."""
    pack = get_framework(f"verl=={named}").version
    res = run("check", "--framework", f"verl=={named}", "--json", *BATCH, f"{key}=4")
    data = json.loads(res.stdout)
    assert not any(v["rule"] == "verl.launch.unknown_key" for v in data["violations"]), data["violations"]
    assert f"(drop {key})" not in run("fix", "--framework", f"verl=={named}", *BATCH, f"{key}=4").stdout
    assert key not in struct_keys.release_keys(pack)
    res = run("check", "--framework", f"verl=={pack}", "--json", *BATCH, f"{key}=4")
    broken = [v for v in json.loads(res.stdout)["violations"] if v["rule"] == "verl.launch.unknown_key"]
    assert res.returncode == 1 and len(broken) == 1 and f"{key} is not an option of verl {pack}" in broken[0]["message"]
    assert f"(drop {key})" in run("fix", "--framework", f"verl=={pack}", *BATCH, f"{key}=4").stdout
    later = "actor_rollout_ref.actor.fsdp_config.use_no_sync_for_gradient_accumulation"
    res = run("check", "--framework", f"verl=={named}", "--json", *BATCH, f"{later}=True")
    broken = [v for v in json.loads(res.stdout)["violations"] if v["rule"] == "verl.launch.unknown_key"]
    assert len(broken) == (named == "0.7.0"), broken
    res = run("check", "--framework", f"verl=={named}", "--json", *BATCH, "trainer.use_v1=True")  # 0.9.0 on only
    broken = [v for v in json.loads(res.stdout)["violations"] if v["rule"] == "verl.launch.unknown_key"]
    # said of the release the user named, not of the pack that judges it
    assert len(broken) == 1 and f"trainer.use_v1 is not an option of verl {named}" in broken[0]["message"], broken


def test_verl_0_7_0_reads_its_own_trainer_config_keys():
    """verl 0.7.0 (0.7.1's pack) has a key list of its own (config_keys/0.7.0_*.txt, its wheel's
    _generated_ppo_trainer.yaml): its top-level reward_manager.* (verl/trainer/config/reward_manager.yaml, in 0.7.0's
    ppo_trainer.yaml defaults) is no key its Hydra refuses (it was refused as a key neither 0.6.1 nor 0.7.1 has), and
    0.7.1's reward.reward_manager.* is one it refuses; each refusal names 0.7.0, the release named, not 0.7.1."""
    assert "reward_manager.name" in struct_keys.release_keys("0.7.0")
    res = run("check", "--framework", "verl==0.7.0", "--json", *BATCH, "reward_manager.name=dapo",
              "reward_manager.source=register")
    data = json.loads(res.stdout)
    assert not any(v["rule"] == "verl.launch.unknown_key" for v in data["violations"]), data["violations"]
    res = run("check", "--framework", "verl==0.7.0", "--json", *BATCH, "reward.reward_manager.name=dapo",
              "trainer.totl_epochs=3")
    broken = [v["message"] for v in json.loads(res.stdout)["violations"] if v["rule"] == "verl.launch.unknown_key"]
    assert len(broken) == 2 and all(" is not an option of verl 0.7.0 " in m for m in broken), broken
    assert "Key 'reward' is not in struct" in broken[0] and "did you mean trainer.total_epochs?" in broken[1], broken
    # 0.7.1, whose list has reward.* and not reward_manager.*, the other way round
    res = run("check", "--framework", "verl==0.7.1", "--json", *BATCH, "reward_manager.name=dapo")
    broken = [v["message"] for v in json.loads(res.stdout)["violations"] if v["rule"] == "verl.launch.unknown_key"]
    assert len(broken) == 1 and "reward_manager.name is not an option of verl 0.7.1" in broken[0], broken
    # the same setting one section up or down (0.7.1 composes reward_manager.yaml under reward): renamed, not dropped
    assert "0.7.1 names it reward.reward_manager.name: rename it" in broken[0], broken
    assert struct_keys.moved_to("reward.reward_manager.name", "0.7.0") == "reward_manager.name"
    assert struct_keys.moved_to("ray_init.num_cpus", "0.9.1") == "ray_kwargs.ray_init.num_cpus"
    assert struct_keys.moved_to("trainer.total_epochs", "0.9.1") is None  # 0.9.1 has it: nothing moved
    out = run("fix", "--framework", "verl==0.7.0", *BATCH, "reward.reward_manager.name=dapo").stdout
    assert "+ reward_manager.name=dapo" in out, out


def test_a_key_outside_every_section_is_refused_naming_the_part_hydra_names():
    """`foo.bar=1` and `trainr.total_epochs=2` set a top-level key the trainer config lacks: Hydra stops with
    "Could not override 'foo.bar'. ... Key 'foo' is not in struct" (the first part it lacks, not the leaf); they
    passed as valid. +foo.bar adds it; a recipe's own sections, a config group and a script's environment words are
    no such keys."""
    rc, data = _check("foo.bar=1", "trainr.total_epochs=2", "+extra.seed=1")
    assert rc == 1
    assert data["unknown_keys"] == [{"key": "foo.bar", "did_you_mean": None, "refused": True},
                                    {"key": "trainr.total_epochs", "did_you_mean": "trainer.total_epochs",
                                     "refused": True}]
    messages = [v["message"] for v in data["violations"] if v["rule"] == "verl.launch.unknown_key"]
    assert any("Could not override 'foo.bar'. ... Key 'foo' is not in struct" in m for m in messages), messages
    assert any("(did you mean trainer.total_epochs?)" in m and "Key 'trainr' is not in struct" in m for m in messages)
    # a part missing under a known section is the one named, not the leaf below it
    _, data = _check("actor_rollout_ref.actor.fsdp_confg.param_offload=True")
    assert "Key 'fsdp_confg' is not in struct" in json.dumps(data["violations"])
    # judged at the release the config is checked with
    for version in ("0.5.0", "0.9.1"):
        assert struct_keys.refused({}, ["foo.bar", "foo"], version) == ["foo.bar", "foo"]
        assert struct_keys.refused({}, ["async_training.staleness_threshold", "rollout.nnodes", "model_engine",
                                        "VLLM_USE_V1", "+foo.bar", "hydra.run.dir"], version) == []
    assert struct_keys.refused({}, ["foo.bar"], "0.3.0") == []  # no list of 0.3.0's keys


def test_each_verl_pack_since_050_has_its_key_list():
    for version in ("0.9.1", "0.8.0", "0.7.1", "0.6.1", "0.5.0"):
        sections, values = struct_keys.release_paths(version)
        assert {"trainer", "data", "actor_rollout_ref.actor"} <= sections
        assert "trainer.total_epochs" in values and "actor_rollout_ref.rollout.engine_kwargs" in sections | values
        assert "actor_rollout_ref.actor.megatron.tensor_model_parallel_size" in values  # the Megatron config's
    assert "actor_rollout_ref.actor.fsdp_config.model_dtype" not in struct_keys.release_keys("0.5.0")


def test_no_verl_config_of_the_corpus_is_refused_a_key_and_every_absent_key_is_explained():
    """Every verl/verl-megatron script, published config, measured point and memory-corpus record, at the release it
    is checked with: no key refused or suspected; each key its release's list lacks is a free-form one, outside
    every section of the trainer config (a recipe's: async_training.*, top-level rollout.*; model_engine from
    --config-name), another release's, or far from every key (a recipe's or a pull request's own)."""
    judged, flagged, far = 0, [], set()
    for case in cases():
        if not case.framework.startswith("verl"):
            continue
        fw = get_framework(case.framework)
        flat = read_config(fw, case.args)[0]
        chosen, _ = framework_for(fw, flat)
        key_list = chosen.key_list(flat)
        flagged += [(case.name, u.key) for u in findings(key_list, chosen.name, chosen.version)[0]]
        paths = struct_keys.release_paths(chosen.version)
        if paths is None or struct_keys.picks_group(flat):
            continue
        judged += 1
        sections, values = paths
        for key in key_list.given:
            parts = key.split(".")
            if key in sections | values or any(struct_keys._free_form(p) for p in parts):
                continue
            if parts[0] not in sections or key in struct_keys._all_keys():
                continue
            far.add(key)
    assert judged > 100  # 120 on writing (of 150; the rest 0.1.0-0.3.0 packs, no list)
    assert flagged == []
    # algorithm.filter_groups.* (recipe/dapo's dapo_megatron_trainer at 0.5.0) are later releases' keys
    assert far == {"actor_rollout_ref.actor.fsdp_config.optimizer_offload_step",  # verl PR #7804's branch
                   # v0.6.0 examples/sglang_multiturn/config/gsm8k_multiturn_grpo_server.yaml adds it to the rollout
                   "actor_rollout_ref.rollout.sglang_rollout_mode",
                   # dingxianzhong/play-verl's tuning scripts append it (+actor_rollout_ref.model.dtype=bfloat16): a key
                   # no release reads (the actor's dtype is fsdp_config.model_dtype)
                   "actor_rollout_ref.model.dtype",
                   # v0.4.1 examples/sglang_multiturn/config/geo3k_multiturn_megatron_grpo.yaml sets it in the script's own
                   # config (0.4.x's multi_turn; no key list we hold has it: later releases name max_assistant_turns)
                   "actor_rollout_ref.rollout.multi_turn.max_turns"}


def test_the_key_list_is_the_generators_reading_of_the_composed_config():
    from importlib import util
    from pathlib import Path

    spec = util.spec_from_file_location("gen", Path(__file__).parent.parent / "benchmarks" / "verl_config_keys.py")
    gen = util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert gen.paths({"a": {"b": 1, "c": {}, "d": {"e": None}}}) == ["a.", "a.b", "a.c", "a.d.", "a.d.e"]
    head = (struct_keys.HERE / "0.9.1_fsdp.txt").read_text().splitlines()[0]
    assert head == "# verl==0.9.1 verl/trainer/config/_generated_ppo_trainer.yaml, written by benchmarks/verl_config_keys.py"


def test_a_version_specific_key_the_named_release_lacks_is_said_as_its_releases_and_dropped_by_fix():
    """trainer.use_v1 (0.9.0-0.9.1) under --framework verl==0.5.0: the refusal names the releases that have it and fix
    drops it ("+ (drop trainer.use_v1)"), where it said "rename or remove it by hand"."""
    res = run("check", "--framework", "verl==0.5.0", "--json", *BATCH, "trainer.use_v1=True")
    broken = [v for v in json.loads(res.stdout)["violations"] if v["rule"] == "verl.launch.unknown_key"]
    assert "(a key of verl 0.9.0, 0.9.1; 0.5.0 has no key of the same meaning we know: drop it)" in broken[0]["message"]
    fixed = run("fix", "--framework", "verl==0.5.0", *BATCH, "trainer.use_v1=True")
    assert "+ (drop trainer.use_v1)" in fixed.stdout and "remove it by hand" not in fixed.stdout, fixed.stdout
