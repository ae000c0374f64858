"""recommend's alternatives list slower configs with more memory margin (commands/roomier.py): since alternatives that
tie the best or need no less memory in any phase fold away (alike.fold_alike), the table was often empty; now, where
fewer than roomier.WANTED are listed, each further one is the fastest config whose peak in the last one's tightest
phase is at most roomier.STEP of it."""

from __future__ import annotations

from types import SimpleNamespace

from rlbatch_solver.commands import roomier
from rlbatch_solver.commands.alike import dominates
from rlbatch_solver.commands.recommend import recommend
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.render import why_lost
from rlbatch_solver.scenario import Scenario

# 7B GRPO on 8 H100 with 4K responses: its runners-up tie the best or need more memory (one alternative was listed).
# (2K responses were the case until verl FSDP's root-unit gradients were priced at the backward's end: the roomier
# search then finds one config past the best there, where it wants two.)
SEVEN_B = Scenario(framework="verl", gpu="h100", gpus=8, model="qwen2.5-7b", prompt_length=1024, response_length=4096)


def test_slower_configs_with_more_room_fill_the_alternatives(monkeypatch):
    report = recommend(SEVEN_B, top=5, time_limit_s=60)
    best, rest = report.choices[0], report.choices[1:]
    assert len(rest) >= roomier.WANTED
    tightest = max(best.peak_mib(), key=best.peak_mib().get)
    roomy = [c for c in rest if c.peak_mib()[tightest] <= roomier.STEP * best.peak_mib()[tightest]]
    assert roomy and all(c.step_time_s >= best.step_time_s for c in roomy)
    assert not any(dominates(best, c) for c in rest)  # each offers something the best does not
    fw = get_framework("verl")
    for c in roomy:
        assert fw.ruleset.check(c.values).valid
        assert "peak" in why_lost(best, c)  # the table says what the slower config buys
    monkeypatch.setattr(roomier, "WANTED", 0)
    assert len(recommend(SEVEN_B, top=5, time_limit_s=60).choices) < len(report.choices)


def _choice(peaks):
    return SimpleNamespace(peak_mib=lambda: dict(peaks), values={})


def test_each_roomier_solve_caps_the_last_ones_tightest_phase_and_stops_when_none_is_found():
    capacity = {"rollout": 70_000, "actor_update": 60_000}
    caps = []
    answers = iter([{"rollout": 40_000, "actor_update": 50_000}])

    def solve(rule):
        caps.append(rule.id)
        found = next(answers, None)
        return SimpleNamespace(ranked=[found] if found else [])

    out = roomier.roomier_choices([_choice({"rollout": 50_000, "actor_update": 59_000})],
                                  lambda phase, values: capacity[phase], solve,
                                  _choice, lambda: 10.0)
    assert caps == ["search.roomier.actor_update", "search.roomier.actor_update"] and len(out) == 1
    assert str(roomier.cap_rule("actor_update", 53_100).expr).count("53100") == 1


def test_no_capped_solve_where_a_known_config_under_the_cap_is_faster_than_the_best():
    calls = []
    out = roomier.roomier_choices([_choice({"rollout": 50_000})], lambda phase, values: 70_000,
                                  lambda rule: calls.append(rule) or SimpleNamespace(ranked=[]), _choice,
                                  lambda: 10.0, passed_over=lambda rule: True)
    assert out == [] and calls == []


def test_a_witness_faster_than_the_best_is_found_one_value_away_with_the_search_ties_followed():
    from rlbatch_solver.rules.base import Derived, RuleSet, VarSpec
    from rlbatch_solver.rules.expr import IntVar
    from rlbatch_solver.rules.ids import tie_rule

    specs = {n: VarSpec(n, n) for n in ("micro", "ref", "layout")}
    tie = tie_rule("ref", IntVar("ref").eq(IntVar("micro")), "ref follows micro", "test")
    rs = RuleSet("toy", "0", specs, [Derived("mem_old_log_prob", IntVar("micro") * 10 + IntVar("ref") * 10)], [tie])
    domains = {"micro": [1, 2, 4], "ref": [1, 2, 4], "layout": [1, 2]}
    time = 40 // IntVar("micro") + IntVar("layout") * 10  # the larger micro batch is faster
    fastest = {"micro": 4, "ref": 4, "layout": 1}  # 20 us, 80 MiB
    cap = roomier.cap_rule("old_log_prob", 50)
    # micro 2 alone breaks the tie (60 MiB over the cap): micro and ref 2 together, 40 MiB, 30 us
    assert roomier.faster_under_cap(cap, [fastest], rs, domains, time, best=45)
    assert not roomier.faster_under_cap(cap, [fastest], rs, domains, time, best=30)
    assert not roomier.faster_under_cap(roomier.cap_rule("old_log_prob", 19), [fastest], rs, domains, time, best=45)
