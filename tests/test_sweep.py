"""Sweeps: grid expansion, results written as they finish, resume after a kill, summaries."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

from clirun import run
from rlbatch_solver.errors import InputError
from rlbatch_solver.sweep.grid import grid_from_dict, point_id
from rlbatch_solver.sweep.runner import read_results, run_sweep
from rlbatch_solver.sweep.summary import summary_rows

GRID = {
    "framework": "verl", "gpu": ["rtx4090", "a100-80gb"], "gpus": [2, 4], "model": "qwen2.5-0.5b",
    "algorithm": "grpo", "n": 4, "prompt_length": 256, "response_length": 512, "time_limit_s": 10,
    "price_per_gpu_hour": {"a100-80gb": 1.6},
}


def fake_eval(point):
    """A stand-in for the recommender (module level so it pickles)."""
    return {"id": point.id, "point": point.scenario, "status": "ok", "tokens_per_s": float(point.scenario["gpus"]),
            "step_time_s": 1.0, "memory_gib": {"rollout": 1.0}, "cost_per_step": None}


def test_grid_crosses_lists_and_ids_are_stable():
    g = grid_from_dict(GRID)
    assert len(g.points) == 4
    assert len({p.id for p in g.points}) == 4
    again = grid_from_dict(dict(reversed(list(GRID.items()))))
    assert {p.id for p in again.points} == {p.id for p in g.points}
    a100 = [p for p in g.points if p.scenario["gpu"] == "a100-80gb"]
    assert all(p.scenario["price_per_gpu_hour"] == 1.6 for p in a100)
    assert point_id(g.points[0].scenario) == g.points[0].id


def test_grid_nodes_from_gpus_per_node():
    g = grid_from_dict({**GRID, "gpus": [8, 16], "gpus_per_node": 8})
    assert sorted(p.scenario.get("nnodes", 1) for p in g.points) == [1, 1, 2, 2]


@pytest.mark.parametrize("bad,field", [
    ({"gpus": []}, "grid.gpus"),
    ({"gpuz": [1]}, "grid.gpuz"),
    ({"gpus": [-1]}, "gpus"),
    ({"time_limit_s": 0}, "grid.time_limit_s"),
    ({"gpu": ["h100", "hx"]}, "gpu"),  # the catalog's names: found before the sweep runs, not as each point fails
    ({"model": ["qwen2.5-7b", "qwen9-7b"]}, "model"),
])
def test_grid_errors_name_the_field(bad, field):
    with pytest.raises(InputError) as e:
        grid_from_dict({**GRID, **bad})
    assert e.value.field == field


def test_the_datas_mean_and_longest_lengths_are_axes():
    g = grid_from_dict({**GRID, "gpu": "h100", "gpus": 4, "mean_response_length": [600, 1200],
                        "longest_response_length": [3000, 4096]})
    assert sorted((p.scenario["mean_response_length"], p.scenario["longest_response_length"]) for p in g.points) == \
        [(600, 3000), (600, 4096), (1200, 3000), (1200, 4096)]
    assert g.axes["longest_response_length"] == [3000, 4096] and len({p.id for p in g.points}) == 4
    with pytest.raises(InputError) as e:  # a crossed point whose longest is under its mean names the field
        grid_from_dict({**GRID, "mean_response_length": [600, 1200], "longest_response_length": [900]})
    assert e.value.field == "longest_response_length"
    # and the point: the crossed lists' values that make it (sweep/grid.py's docstring)
    with pytest.raises(InputError) as e:
        grid_from_dict({**GRID, "mean_response_length": [600, 1200], "longest_response_length": [900, 1000]})
    assert e.value.field == "longest_response_length"
    assert "'mean_response_length': 1200, 'longest_response_length': 900}" in e.value.problem, e.value.problem
    for bad in ([0], ["long"], [True], []):
        with pytest.raises(InputError):
            grid_from_dict({**GRID, "longest_response_length": bad})


def test_resume_skips_done_points_and_drops_a_torn_line(tmp_path):
    g = grid_from_dict(GRID)
    out = tmp_path / "r.jsonl"
    first = fake_eval(g.points[0])
    out.write_text(json.dumps(first) + "\n" + '{"id": "torn", "po')  # killed mid-write
    with pytest.raises(InputError):
        run_sweep(g, out, progress=False, fn=fake_eval)  # exists, no --resume
    s = run_sweep(g, out, resume=True, progress=False, fn=fake_eval)
    assert (s.skipped, s.ran) == (1, 3)
    rows = read_results(out)
    assert sorted(r["id"] for r in rows) == sorted(p.id for p in g.points)
    s2 = run_sweep(g, out, resume=True, progress=False, fn=fake_eval)
    assert s2.ran == 0 and len(read_results(out)) == 4


def test_summary_marks_best_per_model():
    g = grid_from_dict(GRID)
    rows = [fake_eval(p) for p in g.points]
    lines = summary_rows(rows)
    best = [x for x in lines if x["best"]]
    assert len(best) == 1 and best[0]["gpus"] == 4


def test_summary_of_a_grid_without_an_algorithm_names_its_framework_not_none(tmp_path):
    """The table of a grid that names no algorithm was titled "qwen2.5-0.5b · None"; a --summary of a file with no
    result line (a grid YAML given by mistake) printed "0 points" and exited 0."""
    grid = {k: v for k, v in GRID.items() if k != "algorithm"}
    out = tmp_path / "r.jsonl"
    out.write_text("".join(json.dumps(fake_eval(p)) + "\n" for p in grid_from_dict(grid).points))
    res = run("sweep", "--summary", str(out))
    assert res.returncode == 0 and "qwen2.5-0.5b · verl\n" in res.stdout and "None" not in res.stdout, res.stdout
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text(yaml.safe_dump(grid))
    res = run("sweep", "--summary", str(grid_file))
    assert res.returncode == 2 and "holds no sweep result" in res.stderr, res.stdout + res.stderr


def test_summary_names_the_grids_other_axes():
    """A grid over frameworks (or lengths) printed one table per model whose lines showed only the GPU type and count:
    three "h100 4" lines, no word on which framework each was. Now a table per framework, named in its title; a
    price per GPU type and nodes per count split nothing."""
    import io

    from rich.console import Console

    from rlbatch_solver.sweep.summary import print_summary

    grid = {**GRID, "framework": ["verl", "openrlhf"], "gpus": [8, 16], "gpus_per_node": 8,
            "price_per_gpu_hour": {"a100-80gb": 1.6, "rtx4090": 0.4}}
    rows = [fake_eval(p) for p in grid_from_dict(grid).points]
    console = Console(file=io.StringIO(), width=80)
    print_summary(console, rows)
    text = console.file.getvalue()
    titles = [line.strip() for line in text.splitlines() if line.startswith("qwen2.5-0.5b")]
    assert titles == ["qwen2.5-0.5b · grpo · framework openrlhf", "qwen2.5-0.5b · grpo · framework verl"], text


def run_cli(*args):
    return run(*args)


def _sweep_with_rows(tmp_path, rows: int):
    """A real 9-point sweep started in its own process group, returned once it has written ``rows`` results."""
    grid = {**GRID, "gpus": [1, 2, 4], "gpu": ["rtx4090", "a100-80gb", "h100"]}
    gfile = tmp_path / "grid.yaml"
    gfile.write_text(yaml.safe_dump(grid))
    out = tmp_path / "res.jsonl"
    cmd = [sys.executable, "-m", "rlbatch_solver.cli", "sweep", str(gfile), "--out", str(out), "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.time() + 120
    while time.time() < deadline and len(read_results(out)) < rows:
        time.sleep(0.05)
    return gfile, out, proc


def test_real_sweep_killed_midway_then_resumed(tmp_path):
    gfile, out, proc = _sweep_with_rows(tmp_path, 2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    before = read_results(out)
    assert 2 <= len(before) < 9, "the sweep should have been killed midway"
    done = run_cli("sweep", str(gfile), "--out", str(out), "--resume", "--no-progress")
    assert done.returncode == 0, done.stderr
    rows = read_results(out)
    ids = [r["id"] for r in rows]
    assert len(ids) == len(set(ids)) == 9  # nothing lost, nothing twice
    assert {r["id"] for r in before} <= set(ids)
    ok = [r for r in rows if r["status"] == "ok"]
    assert ok and all(r["tokens_per_s"] > 0 and r["native"] for r in ok)
    priced = [r for r in ok if r["point"]["gpu"] == "a100-80gb"]
    assert all(r["cost_per_step"] > 0 for r in priced)
    summ = run_cli("sweep", "--summary", str(out))
    assert summ.returncode == 0 and "best per model" in summ.stdout


def test_ctrl_c_stops_a_sweep_with_a_word_on_resuming(tmp_path):
    # after its first solve CP-SAT had reset SIGINT to the default action: Ctrl-C killed the sweep with no word
    # (exit -2), and one caught mid-solve stopped that point's search early, recorded as if it had finished
    _, _, proc = _sweep_with_rows(tmp_path, 1)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (proc.returncode, err)
    assert "interrupted" in err and "--resume" in err and "Traceback" not in err, err


def test_sweep_bad_input_exit_2(tmp_path):
    bad = tmp_path / "g.yaml"
    bad.write_text("gpu: [rtx4090\n")
    p = run_cli("sweep", str(bad), "--out", str(tmp_path / "o.jsonl"))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    p2 = run_cli("sweep", "--summary", str(tmp_path / "missing.jsonl"))
    assert p2.returncode == 2 and "summary" in p2.stderr
    unknown = tmp_path / "u.yaml"  # an unknown GPU stops the sweep before any point runs, naming the point
    unknown.write_text("framework: verl\ngpu: [h100, hx]\ngpus: 8\nmodel: qwen2.5-1.5b\nn: 4\n")
    p3 = run_cli("sweep", str(unknown), "--out", str(tmp_path / "u.jsonl"))
    assert p3.returncode == 2 and "Traceback" not in p3.stderr, p3.stderr
    assert "unknown GPU 'hx'" in p3.stderr and "'gpu': 'hx'" in p3.stderr, p3.stderr
    assert not (tmp_path / "u.jsonl").exists()


def test_two_local_processes_give_the_same_results(tmp_path):
    g = grid_from_dict(GRID)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    run_sweep(g, a, progress=False, fn=fake_eval, workers=1)
    run_sweep(g, b, progress=False, fn=fake_eval, workers=2)
    key = lambda rows: sorted((r["id"], r["tokens_per_s"]) for r in rows)  # noqa: E731
    assert key(read_results(a)) == key(read_results(b))


def test_ray_backend_on_a_local_instance(tmp_path):
    """The same points through a local Ray instance give the same rows as local processes."""
    pytest.importorskip("ray")
    from rlbatch_solver.sweep.runner import evaluate_point

    g = grid_from_dict({**GRID, "gpu": "a100-80gb", "time_limit_s": 60})  # Ray shares the cores
    a, b = tmp_path / "ray.jsonl", tmp_path / "local.jsonl"
    s = run_sweep(g, a, backend="ray", workers=2, progress=False, fn=evaluate_point)
    assert s.ran == 2 and s.ok == 2
    run_sweep(g, b, workers=1, progress=False, fn=evaluate_point)
    # equal-time configs may differ between runs (a tie the solver breaks either way): compare the numbers
    key = lambda rows: sorted((r["id"], r["status"], r["tokens_per_s"]) for r in rows)  # noqa: E731
    assert key(read_results(a)) == key(read_results(b))


@pytest.mark.parametrize("status,floor,expected", [
    ("unknown", {}, "timed_out"),  # the time limit ran out before a config was found: no verdict
    ("infeasible", {}, "infeasible"),  # the solver proved none exists
    ("unknown", {"rollout": (30_000, 20_000)}, "infeasible"),  # a phase's least memory over the space is too big
])
def test_a_point_without_a_config_says_whether_that_is_proven(monkeypatch, status, floor, expected):
    from types import SimpleNamespace

    from rlbatch_solver import api
    from rlbatch_solver.sweep.runner import evaluate_point

    report = SimpleNamespace(status=status, proven=False, best=None, conflict=None, memory_floor=floor,
                             capacity_mib=20_000)
    monkeypatch.setattr(api, "recommend", lambda *a, **k: report)
    row = evaluate_point(grid_from_dict(GRID).points[0])
    assert row["status"] == expected and row["proven"] is (expected == "infeasible")
    if expected == "timed_out":
        assert "not proven infeasible" in row["reason"] and "time_limit_s" in row["reason"]


def test_the_peak_column_holds_each_phase_against_its_own_line():
    """A vLLM rollout's line is the GPU less its fixed margin, not the training phases' usable memory: a 76.6 GiB
    rollout on an 80 GB A100 (78.6 line) beside a 60 GiB update (75.0 line) is the tightest at 76.6/78.6, not over."""
    from rlbatch_solver.sweep.summary import summary_rows

    row = {"id": 0, "point": {"model": "qwen2.5-14b", "algorithm": "grpo", "gpu": "a100-80gb", "gpus": 8},
           "status": "ok", "tokens_per_s": 1.0, "capacity_gib": 75.0,
           "memory_gib": {"rollout": 76.6, "actor_update": 60.0},
           "capacity_gib_by_phase": {"rollout": 78.6, "actor_update": 75.0}}
    line = summary_rows([row])[0]
    assert (line["peak_gib"], line["capacity_gib"]) == (76.6, 78.6)
    old = {k: v for k, v in row.items() if k != "capacity_gib_by_phase"}  # a results file of an older release
    assert summary_rows([old])[0]["capacity_gib"] == 75.0


def test_a_point_whose_peak_is_within_the_memory_models_error_is_said_tight():
    """recommend says "memory: tight" for 2x A100 80GB at 73.3 of 75.0 GiB (within the memory model's observed error),
    but the sweep's summary of the same point said a plain "ok" beside the points with room to spare. Now "tight",
    with a note that says why; a point with room stays "ok", and a tight point can still be the best."""
    from rlbatch_solver.commands.check import memory_error_log
    from rlbatch_solver.sweep.summary import summary_rows

    def row(peak):
        return {"id": peak, "point": {"model": "qwen2.5-7b", "algorithm": "grpo", "framework": "verl",
                                      "gpu": "a100-80gb", "gpus": 2}, "status": "ok", "tokens_per_s": 1.0,
                "capacity_gib": 75.0, "memory_gib": {"actor_update": peak}, "capacity_gib_by_phase": {"actor_update": 75.0}}
    assert memory_error_log("verl") > 0
    tight, roomy = summary_rows([row(73.3)])[0], summary_rows([row(50.0)])[0]
    assert tight["status"] == "tight" and "observed error" in tight["reason"] and "73.3 of 75.0" in tight["reason"]
    assert tight["best"] and roomy["status"] == "ok"


def test_a_grid_without_data_is_priced_at_its_own_response_length_not_the_example_datas():
    """A sweep prints no command: a grid naming no dataset takes the default share of its response_length (or its
    response_profile, or the model's), never the GSM8K lengths of the example data recommend's command prints."""
    from rlbatch_solver.sweep.grid import grid_from_dict
    from rlbatch_solver.sweep.runner import evaluate_point

    base = {"framework": "verl", "gpu": "h100", "gpus": 8, "model": "qwen2.5-7b", "algorithm": "grpo", "n": 8,
            "prompt_length": 1024, "response_length": 4096, "fixed": {"data.train_batch_size": 128}}
    rows = {name: evaluate_point(grid_from_dict({**base, **extra}).points[0])
            for name, extra in (("none", {}), ("gsm8k", {"dataset": "openai/gsm8k"}))}
    none, gsm8k = rows["none"]["mean_lengths"], rows["gsm8k"]["mean_lengths"]
    assert (none["profile"], none["profile_chosen"], none["dataset"]) == ("default", "no source", None)
    assert none["response"] == pytest.approx(0.35 * 4096, rel=0.01)
    assert (gsm8k["profile"], gsm8k["response"]) == ("gsm8k", 232.0)
    assert rows["none"]["step_time_s"] > 2 * rows["gsm8k"]["step_time_s"]


def test_summary_shows_a_cost_column_only_for_a_priced_grid():
    """A grid without price_per_gpu_hour printed an empty $/step column on every line."""
    import io

    from rich.console import Console

    from rlbatch_solver.sweep.summary import print_summary

    def header(rows) -> str:
        console = Console(file=io.StringIO(), width=120)
        print_summary(console, rows)
        return next(line for line in console.file.getvalue().splitlines() if "GPU" in line and "step s" in line)

    rows = [fake_eval(p) for p in grid_from_dict(GRID).points]
    assert "$/step" not in header(rows)
    priced = [{**r, "cost_per_step": 0.5} for r in rows]
    assert "$/step" in header(priced)


def test_a_priced_summary_marks_the_cheapest_per_token_not_per_step():
    """A swept TRL grid (per_device_train_batch_size fixed: the step's batch grows with the GPU count) and two
    frameworks' defaults train different batches per step: the star went to the cheapest step, here a point that
    trains 10x fewer tokens per step at 5x less per step (twice the cost per token)."""
    g = grid_from_dict(GRID)
    rows = [fake_eval(p) for p in g.points]
    small, big = rows[0], rows[1]
    small.update(step_time_s=10.0, tokens_per_s=100.0, cost_per_step=0.1)   # 1,000 tokens a step: $1e-4 per token
    big.update(step_time_s=20.0, tokens_per_s=500.0, cost_per_step=0.5)     # 10,000 tokens a step: $5e-5 per token
    for r in rows[2:]:
        r.update(status="infeasible")
    best = [x for x in summary_rows(rows) if x["best"]]
    assert [x["id"] for x in best] == [big["id"]]
    # alike per step where the steps train alike: the cheaper step is the cheaper token
    big.update(step_time_s=10.0, tokens_per_s=100.0)
    assert [x["id"] for x in summary_rows(rows) if x["best"]] == [small["id"]]
