"""The enumerate table in a pipe or a narrow terminal: short column titles with a legend instead of titles rich cuts
to "tra…" / "mic…"; a wide terminal keeps the full titles."""

from __future__ import annotations

from clirun import run
from rlbatch_solver.render import short_titles

ARGS = ("enumerate", "--framework", "verl", "--gpu", "rtx4090", "--gpus", "4", "--model", "qwen2.5-1.5b", "--show", "3")


def _table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line[:1] in "┏┃┡│└"]


def test_at_80_columns_every_title_is_whole_and_the_legend_spells_it_out(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    res = run(*ARGS)
    assert res.returncode == 0
    table = _table_lines(res.stdout)
    assert table and "…" not in res.stdout
    assert all(len(line) <= 80 for line in table)
    header = table[1].replace("┃", " ").split()
    assert header == ["train", "mini", "mg", "ga", "lm", "rm", "us", "rTP", "rr", "peak", "spare"]
    lines = res.stdout.splitlines()
    legend = lines[lines.index("columns:") + 1:]
    assert "  mg     micro/gpu: actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu" in legend
    assert "  rTP    rollout TP: actor_rollout_ref.rollout.tensor_model_parallel_size" in legend
    assert "  ga     grad acc" in legend  # a derived value: no key of its own


def test_a_wide_terminal_keeps_the_full_titles(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    res = run(*ARGS)
    assert "logprob micro" in _table_lines(res.stdout)[1] and "columns:" not in res.stdout


def test_the_rollout_replicas_are_not_called_the_rollout_dp(monkeypatch):
    """The column counts inference engines (rollout GPUs / engine size): titled "rollout DP", it read 4 beside the
    first config's actor_rollout_ref.rollout.data_parallel_size=1, verl's own rollout DP key."""
    monkeypatch.setenv("COLUMNS", "200")
    res = run(*ARGS)
    header = _table_lines(res.stdout)[1]
    assert "rollout replicas" in header and "rollout DP" not in header, header
    monkeypatch.setenv("COLUMNS", "80")
    res = run(*ARGS)
    lines = res.stdout.splitlines()
    legend = [line for line in lines[lines.index("columns:") + 1:] if line.startswith("  rr ")]
    assert legend and "inference engines" in legend[0]
    assert "not actor_rollout_ref.rollout.data_parallel_size" in legend[0], legend


def test_short_titles_are_unique_and_keep_capitals():
    assert short_titles(["rollout TP", "ref micro", "rollout micro", "train"]) == ["rTP", "rm", "rm2", "train"]


def test_the_header_names_the_release_whose_rules_listed_the_configs():
    """`enumerate --framework verl==0.7.1` listed 0.7.1's configs under the title 'for verl 0.9.1' (the header read
    the framework by its name alone)."""
    for pinned, words in (("verl==0.7.1", "for verl 0.7.1 on"), ("trl==0.19.1", "for trl 0.19.1 on")):
        res = run("enumerate", "--framework", pinned, "--gpus", "8", "--model", "qwen2.5-7b", "--show", "0")
        assert words in res.stdout.splitlines()[0], res.stdout
