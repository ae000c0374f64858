"""With no release named, a real TRL config is judged by the release its GRPOConfig fields show (versions.detect_release,
versions.RULES_OF), and one judged by an older release says in one line what TRL 1.16.0 refuses. Cases:
tests/trl_releases.py."""

from __future__ import annotations

import pytest

import rlbatch_solver as rb
import trl_releases as tr
from rlbatch_solver.frameworks.trl import versions as TV

CASES = tr.cases()


def test_the_cases_are_real_configs_with_their_source_and_release():
    assert len(CASES) >= 40 and len({c.name for c in CASES}) == len(CASES)
    assert sum(c.origin == "recipes" for c in CASES) >= 10
    for c in CASES:
        assert c.source.startswith("https://") and c.release and c.pack in TV.VERSIONS, c.name
    assert set(tr.UNDATED) <= {c.name for c in CASES}
    assert len({c.pack for c in CASES}) >= 6  # 0.14 to 1.x


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_with_no_release_named_a_config_is_judged_as_on_its_release(case):
    _, named, unnamed, detected = next(r for r in tr.results() if r[0] == case)
    if case.expect is not None:
        assert named == case.expect, "the release's own verdict"
    if case.name in tr.UNDATED:
        assert named != unnamed, tr.UNDATED[case.name]
    else:
        assert named == unnamed, (detected, named, unnamed)


def test_the_agreement_in_the_docs_is_todays():
    assert tr.agreement_line() in tr.DOC.read_text(), "run: python tests/trl_releases.py"
    res = tr.results()
    assert sum(n == u for _, n, u, _ in res) == len(res) - len(tr.UNDATED)


def test_an_open_r1_recipe_of_0_18_says_what_fails_on_1_16():
    """open-r1's config_demo (max_prompt_length, vllm_mode): 0.18.2 checks it, valid; 1.16.0 refuses max_prompt_length."""
    flags = ["--num_processes", "7", "--use_vllm", "true", "--vllm_mode", "server", "--max_prompt_length", "512",
             "--per_device_train_batch_size", "16", "--num_generations", "16", "--gradient_accumulation_steps", "4"]
    rep = rb.check(flags, framework="trl", gpus=8)
    assert rep.version == "0.18.2" and rep.valid
    assert rep.upgrade.text().startswith("on trl 1.16.0 this config fails: trl.config.removed_fields")


def test_a_0_2x_config_is_judged_by_the_0_29_1_pack_with_its_own_fields():
    """max_prompt_length with vllm_importance_sampling_correction: TRL 0.23-0.27, judged by 0.29.1's pack, its fields
    0.23.1's (max_prompt_length is not refused, as 0.29.1 alone would)."""
    flags = ["--num_processes", "4", "--max_prompt_length", "512", "--vllm_importance_sampling_correction", "true",
             "--use_vllm", "true",
             "--per_device_train_batch_size", "8", "--num_generations", "8", "--max_completion_length", "2048"]
    old = rb.check(flags, framework="trl", model="Qwen/Qwen2.5-1.5B-Instruct", gpu="a100-80gb")
    assert old.version == "0.29.1" and "trl.config.removed_fields" not in {v.rule for v in old.errors}
    assert any("TRL 0.23.1 checks as 0.29.1 does" in n for n in old.notes), old.notes
    pinned = rb.check(flags, framework="trl==0.29.1", model="Qwen/Qwen2.5-1.5B-Instruct", gpu="a100-80gb")
    assert "trl.config.removed_fields" in {v.rule for v in pinned.errors}


def test_a_named_release_a_neighbours_pack_judges_reads_its_own_fields():
    """TRL's own examples/scripts/grpo_vlm.py at v0.23.1 (max_prompt_length, vllm_mode): --framework trl==0.23.1 is
    checked with 0.29.1's pack (versions.RULES_OF) and 0.23.1's GRPOConfig fields, as when its fields date it; naming
    0.29.1 itself refuses max_prompt_length (gone from its GRPOConfig)."""
    flags = ["--num_processes", "8", "--max_prompt_length", "2048", "--max_completion_length", "1024", "--use_vllm",
             "true", "--vllm_mode", "colocate", "--use_peft", "true"]
    for named in ("0.23.1", "0.23.0", "0.23"):
        rep = rb.check(flags, framework=f"trl=={named}", gpus=8)
        assert rep.version == "0.29.1" and rep.valid, (named, [v.rule for v in rep.errors])
        assert any(f"TRL {named} is checked with the rules of 0.29.1" in n for n in rep.notes), rep.notes
    assert "trl.config.removed_fields" in {v.rule for v in rb.check(flags, framework="trl==0.29.1", gpus=8).errors}
