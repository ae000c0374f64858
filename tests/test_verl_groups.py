"""Config group overrides (``group@package=option``, ``group/sub=option``): verl composes its trainer config from a
defaults list and Hydra applies such an override only to an entry of that list, and only an option the release's
config folder (or the run's hydra.searchpath) holds; EasyR1 and SkyRL take no group override."""
from __future__ import annotations

import pytest

from clirun import run

GRPO = ("data.train_batch_size=64", "actor_rollout_ref.actor.ppo_mini_batch_size=32", "actor_rollout_ref.rollout.n=4",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4", "trainer.n_gpus_per_node=8",
        "algorithm.adv_estimator=grpo")


def _check(framework, *extra):
    res = run("check", "--framework", framework, "--", *GRPO, *extra)
    return res.returncode, " ".join((res.stdout + res.stderr).split())


@pytest.mark.parametrize("framework, args", [
    ("easyr1", ("data.rollout_batch_size=128", "worker.actor.global_batch_size=64", "worker.rollout.n=5",
                "actor@worker.actor=foo")),
    ("skyrl", ("trainer.train_batch_size=64", "trainer.policy_mini_batch_size=32", "generator.n_samples_per_prompt=4",
               "trainer/x=foo")),
])
def test_easyr1_and_skyrl_take_no_config_group_override(framework, args):
    """EasyR1 merges OmegaConf.from_cli into its dataclasses (a key they lack fails the merge) and SkyRL's configs
    have no such defaults entry: the override is malformed for them, exit 2, as before verl's parser took groups."""
    res = run("check", "--framework", framework, "--", *args)
    assert res.returncode == 2 and "is not a Hydra override of the form key=value" in res.stdout + res.stderr


def test_a_verl_group_key_no_defaults_entry_matches_is_refused_naming_the_groups():
    """Hydra: "Could not override 'actrr@actor_rollout_ref.actor'. No match in the defaults list." (a typo stops the
    launch); the message names the key and the entries verl 0.9.1's ppo_trainer.yaml lets an override pick. Written
    with + it appends an entry, which Hydra takes."""
    rc, said = _check("verl==0.9.1", "actrr@actor_rollout_ref.actor=dp_actor")
    assert rc == 2 and "'actrr@actor_rollout_ref.actor'" in said and "No match in the defaults list" in said
    assert "actor@actor_rollout_ref.actor" in said and "rollout@actor_rollout_ref.rollout" in said
    rc, said = _check("verl==0.9.1", "actor@actor_rollout_ref.actor=dp_actor")
    assert rc == 0 and "VALID" in said


def test_verl_0_3_has_no_defaults_list_to_override():
    """verl 0.3.0.post1's ppo_trainer.yaml has no defaults list: the actor's group override stops its launch, where
    0.5.0's (actor@actor_rollout_ref.actor: dp_actor) takes it."""
    rc, said = _check("verl==0.3.0", "actor@actor_rollout_ref.actor=megatron_actor")
    assert rc == 2 and "verl 0.3.0" in said and "No match in the defaults list" in said
    rc, said = _check("verl==0.5.0", "actor@actor_rollout_ref.actor=dp_actor")
    assert rc == 0, said


@pytest.mark.parametrize("release, engine, ships", [
    ("0.9.1", "mindspeed", False), ("0.9.1", "veomni", True), ("0.9.0", "mindspeed", True),
    ("0.8.0", "mindspeed", True), ("0.7.1", "veomni", True), ("0.7.1", "mindspeed", False),
    ("0.6.1", "dp", False), ("0.5.0", "veomni", False),
])
def test_a_model_engine_option_is_taken_only_where_the_release_ships_it(release, engine, ships):
    """verl/trainer/config/model_engine/ of each wheel: 0.7.1 dp/torchtitan/veomni; 0.8.0 and 0.9.0 add megatron and
    mindspeed; 0.9.1 drops mindspeed; up to 0.6.1 there is no model_engine group ("Key 'model_engine' is not in
    struct"). An option the release lacks is refused, naming the release."""
    rc, said = _check(f"verl=={release}", f"model_engine={engine}")
    if ships:
        assert rc == 0, said
    else:
        assert rc == 2 and f"verl {release}" in said, said


@pytest.mark.parametrize("release, option, ships", [
    ("0.9.1", "mindspeed_actor", False), ("0.9.0", "mindspeed_actor", True), ("0.7.1", "torchtitan_actor", True),
    ("0.6.1", "torchtitan_actor", False), ("0.9.1", "mlite_actor", False),
])
def test_an_actor_group_option_is_taken_only_where_the_release_ships_it_or_a_searchpath_may(release, option, ships):
    """verl/trainer/config/actor/ of each wheel; an option none ships (Megatron Lite's mlite_actor) is taken where the
    run names a hydra.searchpath (its package adds it there)."""
    rc, said = _check(f"verl=={release}", f"actor@actor_rollout_ref.actor={option}")
    if ships:
        assert rc == 0, said
    else:
        assert rc == 2 and f"verl {release}'s actor config group" in said, said
        rc, said = _check(f"verl=={release}", f"actor@actor_rollout_ref.actor={option}",
                          "hydra.searchpath=[pkg://verl_mlite.config]")
        assert rc == 0 and f"{option} is not modelled" in said, said


@pytest.mark.parametrize("picked", ["actor@actor_rollout_ref.actor=mlite_actor", "model_engine=torchtitan"])
def test_an_engine_we_do_not_model_gets_no_memory_verdict_but_its_rules_are_checked(picked):
    """Megatron Lite's mlite_actor (verl v0.9.0 examples/grpo_trainer/run_qwen3_5_35b_megatron_lite.sh: Megatron-LM
    with EP/TP from the verl_mlite package) and verl's torchtitan engine are not FSDP: no out-of-memory verdict
    priced as FSDP; memory is said not evaluated, as for a model not in the catalog, and the batch rules still
    apply. dp_actor, the same config otherwise, is priced."""
    model = ("actor_rollout_ref.model.path=Qwen/Qwen3-30B-A3B", "hydra.searchpath=[pkg://verl_mlite.config]")
    res = run("check", "--gpu", "h100", "--framework", "verl==0.9.1", "--", *GRPO, *model, picked)
    said = " ".join((res.stdout + res.stderr).split())
    assert res.returncode == 0, said
    assert "will it OOM" not in said and "memory was not evaluated" in said and "we do not model" in said
    broken = run("check", "--gpu", "h100", "--framework", "verl==0.9.1", "--",
                 *[a.replace("ppo_mini_batch_size=32", "ppo_mini_batch_size=128") for a in GRPO], *model, picked)
    assert broken.returncode == 1 and "INVALID" in broken.stdout
    priced = run("check", "--gpu", "h100", "--framework", "verl==0.9.1", "--", *GRPO, *model,
                 "actor@actor_rollout_ref.actor=dp_actor")
    assert "will it OOM" in priced.stdout and "memory was not evaluated" not in priced.stdout


@pytest.mark.parametrize("framework, args", [
    ("verl", GRPO),
    ("easyr1", ("data.rollout_batch_size=128", "worker.actor.global_batch_size=64", "worker.rollout.n=5")),
])
def test_a_vl_card_on_a_framework_that_reads_no_image_says_its_images_are_not_priced(framework, args):
    """Only ms-swift's HF path reads an image budget (MAX_PIXELS): verl and EasyR1 on a Qwen2.5-VL card price the
    ViT's states (their default trains it: the ViT's weights make the VL card's peak the larger) but no image, and
    say so, with the step time counting the language model only; the text card says nothing of images."""
    def said(model):
        res = run("check", "--framework", framework, "--gpu", "h100", "--gpus", "8", "--model", model, "--", *args)
        return " ".join((res.stdout + res.stderr).split())

    vl, text = said("qwen2.5-vl-7b"), said("qwen2.5-7b")
    assert f"vision-language model (qwen2.5-vl-7b): {framework} is priced without its images" in vl
    assert "Not priced: the image tokens" in vl and "step time counts the language model only" in vl
    assert "vision-language model" not in text


@pytest.mark.parametrize("picks, ref_reads", [
    (("model_engine=dp", "actor@actor_rollout_ref.actor=megatron_actor"), "megatron"),
    (("--config-name=ppo_megatron_trainer", "actor@actor_rollout_ref.actor=dp_actor"), "fsdp_config"),
])
def test_verl_0_7_1_legacy_workers_build_the_ref_in_the_actors_worker_not_on_model_engines_backend(picks, ref_reads):
    """0.7.1's main_ppo.py runs its legacy workers by default (trainer.use_legacy_worker_impl: auto): the critic
    follows critic.strategy, but the reference model is a worker of the actor's class (add_ref_policy_worker's
    ref_policy_cls), which reads the ref config's section of the actor's backend (megatron_workers.py
    config.ref.megatron, fsdp_workers.py config.ref.fsdp_config) that model_engine's ref config lacks: the note must
    not say the ref runs on the other backend there. With use_legacy_worker_impl=disable (and on 0.8.0) it does."""
    other = "FSDP" if ref_reads == "megatron" else "Megatron"
    rc, said = _check("verl==0.7.1", *picks)
    assert rc == 0, said
    assert ("verl 0.7.1's legacy workers (trainer.use_legacy_worker_impl=auto, the default) build the reference model "
            "(where KL is used) in the actor's") in said, said
    assert f"which reads actor_rollout_ref.ref.{ref_reads}: " in said and "the launch most likely stops there" in said
    assert "the reference model (where KL is used) and the critic" not in said
    if ref_reads == "megatron":  # dp_critic: the critic's own FSDP worker
        assert "so the critic (where the algorithm trains one) runs FSDP beside it; and verl 0.7.1's" in said
    for framework, extra in (("verl==0.7.1", ("trainer.use_legacy_worker_impl=disable",)), ("verl==0.8.0", ())):
        rc, said = _check(framework, *picks, *extra)
        assert "legacy workers" not in said and "the reference model (where KL is used) " in said, said
        assert f"{other} beside it" in said


def test_verl_0_9_0_named_is_the_release_the_verdict_and_refusals_name():
    """--framework verl==0.9.0 is judged by 0.9.1's rules against 0.9.0's own trainer keys: the verdict line and a
    key refusal name 0.9.0, the release asked (0.9.1 named as whose rules), never 0.9.1 as the release run. The refusal
    of an older release's key says which releases have it and that 0.9.0 has no successor (fix drops it, and its note
    names 0.9.0 too)."""
    key = "actor_rollout_ref.actor.load_weight"
    rc, said = _check("verl==0.9.0", f"{key}=True")
    assert rc == 1 and f"{key} is not an option of verl 0.9.0 (a key of verl 0.1-0.2, " in said, said
    assert "0.8.0; 0.9.0 has no key of the same meaning we know: drop it): the launch stops with" in said
    assert "verl 0.9.0 rules (0.9.1's)" in said and "option of verl 0.9.1" not in said
    fixed = " ".join(run("fix", "--framework", "verl==0.9.0", "--", *GRPO, f"{key}=True").stdout.split())
    assert f"+ (drop {key})" in fixed and f"{key}: verl 0.9.0 refuses it" in fixed and "verl 0.9.1 refuses" not in fixed
    rc, said = _check("verl==0.9.0")
    assert rc == 0 and "passes every one of the verl 0.9.0 rules (0.9.1's)" in said
    fixed = run("fix", "--framework", "verl==0.9.0", "--", *GRPO)
    assert "verl 0.9.0 (0.9.1's)" in fixed.stdout
    rc, said = _check("verl==0.9.1")
    assert "passes every one of the verl 0.9.1 rules." in said


def test_recommend_from_a_config_on_an_engine_we_do_not_model_is_refused(tmp_path):
    """recommend ranks configs by predicted memory and time: for Megatron Lite's mlite_actor it would rank FSDP
    prices, so it refuses (exit 2) and points to check; the same script on dp_actor is answered."""
    from test_launch_script import MEGATRON_LITE_EXCERPT

    script = tmp_path / "lite.sh"
    script.write_text(MEGATRON_LITE_EXCERPT.replace("critic.enable=False",
                                                    "critic.enable=False actor_rollout_ref.model.path=Qwen/Qwen3-8B"))
    res = run("recommend", "--from", str(script), "--gpu", "h100")
    said = " ".join((res.stdout + res.stderr).split())
    assert res.returncode == 2 and "mlite_actor is a training engine we do not model" in said, said
    script.write_text(script.read_text().replace("=mlite_actor", "=dp_actor"))
    assert run("recommend", "--from", str(script), "--gpu", "h100").returncode == 0


@pytest.mark.parametrize("engine", [None, "torchtitan"])
def test_a_group_note_says_memory_is_not_evaluated_exactly_for_the_engine_pick_not_priced(engine):
    """The picks ``check`` says it prices no memory for are the one ``unmodelled_engine`` finds (the same predicate):
    a role's option of no engine we model (mlite_ref), or a model_engine we do not model; a modelled option at odds
    with the actor's backend (megatron_critic beside dp_actor) and another group (model@...) are read as the
    actor's backend and priced."""
    from rlbatch_solver.frameworks.verl import fsdp

    flat = {"actor@actor_rollout_ref.actor": "dp_actor", "ref@actor_rollout_ref.ref": "mlite_ref",
            "critic": "megatron_critic", "model@actor_rollout_ref.model": "foo"}
    if engine:
        flat["model_engine"] = engine
    notes = fsdp.group_notes(flat, priced=True)
    unpriced = [n.partition(": ")[0] for n in notes if "not evaluated for an engine we do not model" in n]
    picks = ([f"model_engine={engine}"] if engine else []) + ["ref@actor_rollout_ref.ref=mlite_ref"]
    assert unpriced == picks and fsdp.unmodelled_engine(flat) == picks[0]
    assert len(notes) == len(picks) + 2 and all("memory and time are priced as FSDP" in n
                                                for n in notes if n.partition(": ")[0] not in picks), notes


@pytest.mark.parametrize("picks, roles", [
    (("model_engine=megatron", "actor@actor_rollout_ref.actor=dp_actor"), "ref: megatron_ref, critic: megatron_critic"),
    (("model_engine=megatron", "actor@actor_rollout_ref.actor=dp_actor", "critic=dp_critic"), "ref: megatron_ref"),
    (("model_engine=dp", "actor@actor_rollout_ref.actor=megatron_actor"), "ref: dp_ref, critic: dp_critic"),
    (("model_engine=megatron", "actor@actor_rollout_ref.actor=dp_actor", "ref@actor_rollout_ref.ref=dp_ref",
      "critic=dp_critic"), None),
    (("model_engine=megatron", "actor@actor_rollout_ref.actor=megatron_actor"), None),
    (("actor@actor_rollout_ref.actor=dp_actor",), None),
])
def test_a_model_engine_at_odds_with_the_actors_option_says_the_roles_it_still_picks(picks, roles):
    """verl's ppo_trainer.yaml (0.7.1-0.9.1) picks ref and critic as ``${model_engine}_ref`` / ``_critic``: an actor
    option of the other backend (model_engine=megatron with dp_actor) leaves the reference model and the critic on
    model_engine's backend (megatron_ref.yaml: strategy megatron; 0.8-0.9's engine workers build each role on its own
    strategy). Checked and priced as the actor's backend, so a note says so; none where the roles agree."""
    rc, said = _check("verl==0.9.1", *picks)
    assert rc == 0, said
    if roles is None:
        assert "verl picks the roles" not in said, said
    else:
        actor = picks[1].partition("=")[2]
        backend, other = ("Megatron", "FSDP") if actor.startswith("megatron") else ("FSDP", "Megatron")
        who = {"ref": "the reference model (where KL is used) runs",
               "critic": "the critic (where the algorithm trains one) runs"}.get(roles.partition(":")[0], "")
        if "critic" in roles and "ref" in roles:
            who = "the reference model (where KL is used) and the critic (where the algorithm trains one) run"
        assert (f"{picks[0]} with actor@actor_rollout_ref.actor={actor}: the actor trains with {backend}, but verl picks "
                f"the roles the config does not override from model_engine ({roles}), so {who} {other} beside it; the "
                f"batch sizes are "
                f"checked with verl's {backend} rules, and memory and time would be priced as {backend} training") in said
