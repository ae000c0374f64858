"""Rule verdicts on held-out real configs with a known outcome (tests/rule_verdicts.py): every record names its source,
release and outcome, none repeats a config of the other test data, the agreement with no release named and with the
source's release may not drop below its floors, and docs/accuracy.md's table is today's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

import rule_verdicts as rv
from doc_sections import marked

TESTS = Path(__file__).resolve().parent
CASES = rv.cases()


def _packs(framework: str) -> tuple[str, ...]:
    if framework.startswith("verl"):
        from rlbatch_solver.frameworks.verl.versions import VERSIONS
    elif framework == "trl":
        from rlbatch_solver.frameworks.trl.versions import VERSIONS
    elif framework == "openrlhf":
        from rlbatch_solver.frameworks.openrlhf.versions import VERSIONS
    else:
        return ()
    return VERSIONS


def test_every_record_names_its_source_release_and_outcome():
    from rlbatch_solver.frameworks import get_framework

    for path in sorted(rv.DATA.glob("*.yaml")):
        for rec in yaml.safe_load(path.read_text()):
            assert not [k for k in rv.REQUIRED if k not in rec], rec["name"]
    assert len(CASES) >= 40 and len({c.name for c in CASES}) == len(CASES)
    for c in CASES:
        assert c.source.startswith("https://") and c.release and c.where and c.args, c.name
        assert c.outcome in ("ran", "died"), c.name
        assert (c.outcome == "died") == bool(c.error) == bool(c.rules), c.name
        assert c.pack is None and not _packs(c.framework) or get_framework(f"{c.framework}=={c.pack}").pinned, c.name
    assert {c.family for c in CASES} >= {"verl", "trl", "openrlhf", "swift"}
    assert sum(c.outcome == "died" for c in CASES) >= 8


def test_the_cases_are_held_out_from_the_other_test_data():
    """No source of this corpus is a source of the release-detection cases or the memory corpus."""
    seen = set()
    for path in [TESTS / "data" / "verl_releases.yaml", TESTS / "data" / "trl_releases.yaml",
                 *sorted((TESTS / "data" / "memory_corpus").glob("*.yaml"))]:
        seen |= set(re.findall(r"https://\S+", path.read_text()))
    assert not [c.name for c in CASES if c.source in seen]


def test_a_died_rule_is_one_the_framework_has():
    from rlbatch_solver.frameworks import get_framework
    from rlbatch_solver.frameworks.key_names import unknown_key_rule

    for c in CASES:
        if c.outcome == "died":
            fw = get_framework(f"{c.framework}=={c.pack}" if c.pack else c.framework)
            # the rule set's rules, and the launch's refusal of a key the release lacks (frameworks/key_names.py)
            known = {r.id for r in fw.ruleset.rules} | {unknown_key_rule(c.framework)}
            assert set(c.rules) & known, (c.name, c.rules)


def test_the_agreement_does_not_drop_below_its_floors():
    floors = yaml.safe_load(rv.FLOORS.read_text())
    now = rv.scores()
    for fam, floor in floors.items():
        for key, value in floor.items():
            if key in ("cases", "died"):
                assert now[fam][key] == value, (fam, key, "run: python tests/rule_verdicts.py --floors")
            else:
                assert now[fam][key] >= value, (fam, key, now[fam][key], value)


def test_the_table_in_the_docs_is_todays():
    doc = rv.DOC.read_text()
    assert marked(doc, rv.TABLE_BEGIN, rv.TABLE_END) == rv.table(), "run: python tests/rule_verdicts.py"


@pytest.mark.parametrize("name", [
    "verl_v0_1_ppo_run_deepseek_full_hh_rlhf",  # Megatron, global micro batches: no minimal-batch check before 0.4
    "openrlhf_v0_10_4_train_ppo_ray_hybrid_engine",  # --actor.adam.lr: a flag 0.10.4 adds in a loop
    "verl_v0_3_grpo_run_qwen2_5_vl_7b",  # rollout.name=${1:-vllm}: a positional parameter's default
])
def test_a_class_the_corpus_showed_stays_fixed(name):
    res = next(r for r in rv.results() if r.case.name == name)
    assert res.unnamed.names_rule(res.case) and res.named.names_rule(res.case), (res.unnamed, res.named)
