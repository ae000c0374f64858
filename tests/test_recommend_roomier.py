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

# 7B GRPO on 8 H100 with 2K responses: its runners-up tie the best or need more memory (one alternative was listed)
SEVEN_B = Scenario(framework="verl", gpu="h100", gpus=8, model="qwen2.5-7b", prompt_length=1024, response_length=2048)


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
    return SimpleNamespace(peak_mib=lambda: dict(peaks))


def test_each_roomier_solve_caps_the_last_ones_tightest_phase_and_stops_when_none_is_found():
    capacity = {"rollout": 70_000, "actor_update": 60_000}
    caps = []
    answers = iter([{"rollout": 40_000, "actor_update": 50_000}])

    def solve(rule):
        caps.append(rule.id)
        found = next(answers, None)
        return SimpleNamespace(ranked=[found] if found else [])

    out = roomier.roomier_choices([_choice({"rollout": 50_000, "actor_update": 59_000})], capacity.get, solve,
                                  _choice, lambda: 10.0)
    assert caps == ["search.roomier.actor_update", "search.roomier.actor_update"] and len(out) == 1
    assert str(roomier.cap_rule("actor_update", 53_100).expr).count("53100") == 1
