"""With no release named, a real OpenRLHF config is judged by the release its train_ppo_ray flags date it to
(versions.detect, the one dating policy of frameworks/dating.py), and the report says which release and why. Cases:
tests/openrlhf_releases.py."""

from __future__ import annotations

import pytest

import openrlhf_releases as orr
import rlbatch_solver as rb
from rlbatch_solver.frameworks.openrlhf import versions as OV

CASES = orr.cases()


def test_the_cases_are_real_configs_with_their_source_and_release():
    assert len(CASES) >= 20 and len({c.name for c in CASES}) == len(CASES)
    for c in CASES:
        assert c.source.startswith("https://") and c.release and c.pack in OV.VERSIONS, c.name
    assert set(orr.DISAGREE) <= {c.name for c in CASES}
    assert len({c.pack for c in CASES}) >= 5  # 0.4 to 0.10


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_with_no_release_named_a_config_is_judged_as_on_its_release(case):
    _, named, unnamed, detected = next(r for r in orr.results() if r[0] == case)
    if case.name in orr.DISAGREE:
        assert named != unnamed, orr.DISAGREE[case.name]
    else:
        assert named == unnamed, (detected, named, unnamed)


def test_the_agreement_in_the_docs_is_todays():
    assert orr.agreement_line() in orr.DOC.read_text(), "run: python tests/openrlhf_releases.py"
    res = orr.results()
    assert sum(n == u for _, n, u, _ in res) == len(res) - len(orr.DISAGREE)
    assert sum(d == c.pack for c, _, _, d in res) >= 14  # 2 when the newest release with the flags dated them


def test_the_report_names_the_release_it_judged_by_and_the_flags_that_date_it():
    """OpenRLHF's v0.5.9 hybrid-engine example: its flags are those of 0.5.9 to 0.8.11 (--colocate_all_models on,
    --generate_max_len until 0.8), so the oldest, 0.5.9, checks it, and the note says so with the flags."""
    case = next(c for c in CASES if c.name == "openrlhf_v0_5_9_train_ppo_llama_ray_hybrid_engine")
    rep = rb.check(list(case.args), framework="openrlhf", gpus=case.gpus, model=case.model)
    assert rep.version == "0.5.9"
    note = next(n for n in rep.notes if n.startswith("checked with the OpenRLHF 0.5.9 rules"))
    assert "its flags (" in note and "are those of OpenRLHF 0.5.9 to " in note and "the oldest of them 0.5.9" in note


def test_an_estimator_narrows_the_releases_and_is_named_with_its_value():
    assert OV.detect({"--flash_attn": True})[0] == "0.4.0"  # 0.4.0 to 0.7.5
    found, why = OV.detect({"--flash_attn": True, "--advantage_estimator": "group_norm"})  # group_norm: 0.6 on
    assert found == "0.6.2" and "advantage_estimator=group_norm" in why and "0.6.2 to 0.7.5" in why
    found, why = OV.detect({"--use_kl_estimator_k3": True, "--advantage_estimator": "group_norm"})  # 0.5.x only
    assert found is None and "none of which has the advantage estimator group_norm" in why


def test_the_dating_note_names_first_the_flags_that_rule_the_other_releases_out():
    """OpenRLHF's train_gspo_ray_hybrid_engine.sh (underscore flags, --policy_loss_type gspo) is dated 0.8.11; the note
    said "its flags (actor_learning_rate, actor_num_gpus_per_node, actor_num_nodes, ...) are those of OpenRLHF 0.8.11
    only": the alphabetically first, which every release before 0.10.2 has. The flags shown first now rule each other
    release out (each lacks one of them)."""
    flags = {"--actor_learning_rate": 5e-7, "--actor_num_gpus_per_node": 8, "--actor_num_nodes": 1,
             "--advantage_estimator": "group_norm", "--apply_chat_template": True, "--policy_loss_type": "gspo",
             "--prompt_max_len": 1024, "--generate_max_len": 1024, "--vllm_enable_sleep": True,
             "--train_batch_size": 128, "--rollout_batch_size": 128, "--n_samples_per_prompt": 8}
    release, why = OV.detect(flags)
    assert release == "0.8.11", why
    shown = why.split("(", 1)[1].split(")", 1)[0].replace(" ...", "").split(", ")
    deciding = shown[:2]
    for other in OV.RELEASE_FLAGS:
        if other != release:
            assert any(k not in OV.RELEASE_FLAGS[other] for k in deciding), (other, deciding)
