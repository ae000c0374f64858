"""``rlbatch calibrate``: the frameworks' log formats, the fit (round trips from the model's own numbers with
perturbed efficiencies, fitted back within 2%), the profile file, and ``--calibration`` in the other commands."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import rlbatch_solver as rb
from clirun import run
from rlbatch_solver.calibration import Observation, fit, load_profile, make_run
from rlbatch_solver.commands.calibrate import calibrate
from rlbatch_solver.costmodel.efficiency import DEFAULT_EFFICIENCY, GIB, Efficiency
from rlbatch_solver.errors import InputError
from rlbatch_solver.runlog import parse_log, read_log

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "data" / "logs"
VERL = ["algorithm.adv_estimator=grpo", "data.train_batch_size=1024", "data.max_prompt_length=512",
        "data.max_response_length=1024", "actor_rollout_ref.actor.ppo_mini_batch_size=256",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=64", "actor_rollout_ref.actor.use_kl_loss=True",
        "actor_rollout_ref.rollout.n=5", "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=64",
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=64",
        "actor_rollout_ref.rollout.tensor_model_parallel_size=2", "trainer.n_gpus_per_node=8"]
TRUTH = Efficiency(mfu_train=0.22, mfu_forward=0.31, hbm_decode=0.45)


# ----------------------------------------------------------------------------- formats
def test_verl_console_line_as_posted():
    log = read_log(LOGS / "verl_1208_console.txt")
    assert log.format == "verl" and log.used_steps() == [2]
    assert dict(log.phase_groups()) == {("rollout",): 74.020, ("old_log_prob",): 3.566, ("ref",): 3.420,
                                        ("actor_update",): 14.302}
    assert log.peak_memory_gib() == (25.921, "allocated")
    assert log.mean_lengths() == (102.534, 324.958) and log.max_lengths() == (256.0, 1024.0)
    assert log.step_seconds() == 96.551


def test_verl_agent_loop_keys_do_not_shadow_the_phases():
    log = read_log(LOGS / "verl_7412_console.txt")
    groups = dict(log.phase_groups())
    assert groups[("rollout",)] == pytest.approx(541.188, abs=1e-3)
    assert groups[("weight_sync",)] == pytest.approx(5.827, abs=1e-3)
    assert groups[("actor_update",)] == pytest.approx(472.108, abs=1e-3)


def test_first_step_is_left_out_and_the_median_taken():
    text = "\n".join(f"step:{i} - timing_s/gen:{g} - timing_s/update_actor:5" for i, g in ((1, 90), (2, 10), (3, 12),
                                                                                          (4, 11)))
    log = parse_log(text)
    assert log.used_steps() == [2, 3, 4] and dict(log.phase_groups())[("rollout",)] == 11


def test_verl_file_logger_jsonl():
    # verl/utils/tracking.py FileLogger.log: {"step": step, "data": data}
    lines = [json.dumps({"step": s, "data": {"timing_s/gen": 10.0 + s, "timing_s/update_actor": 4.0,
                                             "response_length/mean": 300.0}}) for s in (1, 2, 3)]
    log = parse_log("\n".join(lines))
    assert log.format == "verl-jsonl" and dict(log.phase_groups())[("rollout",)] == 12.5


def test_openrlhf_global_step_line():
    # openrlhf 0.11.2 trainer/ppo_trainer.py fit(): logger.info(f"✨ Global step {global_step}: {log_status}")
    status = {"policy_loss": 0.01, "response_length": 812.5, "total_length": 1012.5, "timing/make_experience": 20.0,
              "timing/ppo_train": 40.0, "timing/broadcast": 3.0, "timing/generation": 100.0,
              "timing/step_total": 163.0}
    text = f"[2025-10-01 10:00:00] INFO ✨ Global step 1: {status}\n" \
           f"[2025-10-01 10:03:00] INFO ✨ Global step 2: {status}\n"
    log = parse_log(text)
    assert log.format == "openrlhf"
    assert dict(log.phase_groups()) == {("rollout",): 100.0, ("old_log_prob", "ref", "critic_values"): 20.0,
                                        ("actor_update", "critic_update"): 40.0, ("weight_sync",): 3.0}
    assert log.mean_lengths() == (200.0, 812.5) and log.step_seconds() == 163.0


def test_swift_logging_jsonl():
    # ms-swift 4.6.0 swift/trainers/patcher.py add_train_message: these keys on every logged step
    rows = [{"loss": 0.1, "completions/mean_length": 640.0, "global_step/max_steps": f"{s}/100",
             "elapsed_time": "1m", "remaining_time": "9m", "memory(GiB)": 41.2 + s, "train_speed(s/it)": 30.0 + s}
            for s in (1, 2)]
    log = parse_log("\n".join(json.dumps(r) for r in rows))
    assert log.format == "swift" and log.phase_groups() == []
    assert log.step_seconds(4) == 4 * 32.0 and log.peak_memory_gib() == (43.2, "reserved")
    assert log.mean_lengths() == (None, 640.0)


@pytest.mark.parametrize("text", ["", "hello\nworld", "step:x - a:b", "{\"a\": 1}", "✨ Global step 3: not a dict"])
def test_no_metrics_is_an_input_error(text):
    with pytest.raises(InputError):
        parse_log(text)


# ----------------------------------------------------------------------------- the fit
def _run(**kw):
    return make_run("verl", VERL, gpu="h100", model="qwen2.5-1.5b", gpus=None, prompt_mean=100, response_mean=300,
                    **kw)


def test_round_trip_recovers_perturbed_efficiencies_within_2_percent():
    run_ = _run()
    truth = TRUTH.replace(train_memory_offset_bytes=3 * GIB)
    pred = run_.predict(truth)
    groups = [((p,), t) for p, t in pred.seconds.items() if p in ("rollout", "old_log_prob", "ref", "actor_update")]
    result = fit([Observation(run_, groups, pred.train_peak_bytes)])
    for name in ("mfu_train", "mfu_forward", "hbm_decode"):
        assert getattr(result.efficiency, name) == pytest.approx(getattr(truth, name), rel=0.02), name
    assert result.efficiency.train_memory_offset_bytes == pytest.approx(3 * GIB, rel=0.02)
    assert result.error("after_s") < 0.02 < result.error("before_s")


def _model_log(path: Path) -> Path:
    """A verl console log of the VERL run as the model predicts it with the efficiencies TRUTH."""
    pred = _run().predict(TRUTH)
    keys = {"rollout": "timing_s/gen", "old_log_prob": "timing_s/old_log_prob", "ref": "timing_s/ref",
            "actor_update": "timing_s/update_actor"}
    line = " - ".join([f"{keys[p]}:{pred.seconds[p]}" for p in keys] + ["prompt_length/mean:100",
                                                                        "response_length/mean:300"])
    path.write_text(f"step:1 - {line}\nstep:2 - {line}\n")
    return path


def test_round_trip_through_a_verl_log_file(tmp_path):
    log = _model_log(tmp_path / "run.log")
    rep = calibrate(log, VERL, framework="verl", gpu="h100", model="qwen2.5-1.5b", out=tmp_path / "p.yaml")
    assert rep.fit.efficiency.mfu_train == pytest.approx(0.22, rel=0.02)
    prof = load_profile(tmp_path / "p.yaml")
    assert prof.gpu == "h100" and prof.efficiency.hbm_decode == pytest.approx(0.45, rel=0.02)


def test_openrlhf_groups_fit_our_phases_as_the_step_combines_them():
    run_ = make_run("openrlhf", ["--pretrain", "Qwen/Qwen2.5-1.5B", "--colocate_all_models",
                                 "--vllm_num_engines", "4", "--vllm_tensor_parallel_size", "2",
                                 "--actor_num_gpus_per_node", "8", "--ref_num_gpus_per_node", "8",
                                 "--micro_train_batch_size", "4", "--train_batch_size", "128",
                                 "--micro_rollout_batch_size", "8", "--rollout_batch_size", "128",
                                 "--n_samples_per_prompt", "4", "--init_kl_coef", "0.01",
                                 "--advantage_estimator", "group_norm", "--max_len", "2048"],
                    gpu="h100", model="qwen2.5-1.5b", gpus=None, response_mean=600)
    pred = run_.predict(TRUTH)
    groups = [(g, pred.group(g)) for g in (("rollout",), ("old_log_prob", "ref"), ("actor_update", "critic_update"))
              if pred.group(g)]
    result = fit([Observation(run_, groups)])
    assert result.efficiency.mfu_train == pytest.approx(0.22, rel=0.02)
    assert result.efficiency.mfu_forward == pytest.approx(0.31, rel=0.02)


def test_step_only_logs_fit_one_common_factor():
    run_ = _run()
    slow = run_.predict(DEFAULT_EFFICIENCY).step * 1.5
    result = fit([Observation(run_, [], None, slow)])
    assert result.fitted == ["common factor"]
    assert run_.predict(result.efficiency).step == pytest.approx(slow, rel=0.02)


def test_memory_is_fitted_only_at_the_lengths_the_run_reached(tmp_path):
    log = tmp_path / "run.log"
    log.write_text("step:1 - timing_s/gen:10 - perf/max_memory_allocated_gb:20\n")
    rep = calibrate(log, VERL, framework="verl", gpu="h100", model="qwen2.5-1.5b", out=tmp_path / "p.yaml")
    assert rep.fit.efficiency.train_memory_offset_bytes == 0
    assert any("longest prompt/response" in n for n in rep.notes)


# ----------------------------------------------------------------------------- the other commands
def test_check_with_a_profile_predicts_the_calibrated_time(tmp_path):
    prof = tmp_path / "p.yaml"
    log = tmp_path / "run.log"
    log.write_text("step:1 - timing_s/update_actor:100\nstep:2 - timing_s/update_actor:100\n")
    calibrate(log, VERL, framework="verl", gpu="h100", model="qwen2.5-1.5b", out=prof)
    eff = load_profile(prof).efficiency
    plain = rb.check(VERL, framework="verl", model="qwen2.5-1.5b", gpu="h100")
    calibrated = rb.check(VERL, framework="verl", model="qwen2.5-1.5b", gpu="h100", calibration=eff)
    assert calibrated.memory.seconds["actor_update"] > 2 * plain.memory.seconds["actor_update"]
    assert calibrated.memory.seconds["rollout"] == pytest.approx(plain.memory.seconds["rollout"])


def test_a_fit_that_ends_at_a_bound_writes_no_profile(tmp_path):
    """A generation slower than any decode efficiency explains (here 1,000 s, 30x verl #1208's on the same config;
    verl #1208's own 74 s is now explained at hbm_decode 0.064, the fitted rollout scale covering part of its
    tail): the fit says so and exits 1 rather than saving a profile that would mislead every later answer."""
    prof = tmp_path / "profile.yaml"
    log = tmp_path / "slow.log"
    log.write_text("step:1 - timing_s/gen:1000\nstep:2 - timing_s/gen:1000\n")
    proc = run("calibrate", str(log), "--gpu", "h100", "--model", "qwen2.5-1.5b", "--out", str(prof), "--", *VERL)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "ended at a bound: hbm_decode" in " ".join(proc.stdout.split()) and not prof.exists()
    rep = calibrate(log, VERL, framework="verl", gpu="h100", model="qwen2.5-1.5b", out=prof)
    assert rep.fit.at_bound == ["hbm_decode"] and rep.to_dict()["profile"] is None


def test_cli_calibrate_then_every_command_takes_the_profile(tmp_path):
    log = _model_log(tmp_path / "run.log")
    prof = tmp_path / "profile.yaml"
    proc = run("calibrate", str(log), "--gpu", "h100", "--model", "qwen2.5-1.5b", "--out", str(prof), "--", *VERL)
    assert proc.returncode == 0, proc.stderr
    assert "measured against predicted" in proc.stdout and prof.exists()
    proc = run("check", "--gpu", "h100", "--model", "qwen2.5-1.5b", "--calibration", str(prof), "--", *VERL)
    assert "calibrated efficiencies" in proc.stderr and "predicted step time" in proc.stdout
    proc = run("check", "--gpu", "a100", "--model", "qwen2.5-1.5b", "--calibration", str(prof), "--", *VERL)
    assert "not applied" in proc.stderr
    proc = run("recommend", "--gpu", "h100", "--gpus", "8", "--model", "qwen2.5-1.5b", "--calibration", str(prof),
               "--json", "--time-limit", "5")
    assert proc.returncode == 0 and "calibrated efficiencies" in proc.stderr
    proc = run("fix", "--gpu", "h100", "--model", "qwen2.5-1.5b", "--calibration", str(prof), "--",
               *VERL[:-1], "trainer.n_gpus_per_node=7")
    assert proc.returncode in (0, 1) and "calibrated efficiencies" in proc.stderr


def test_the_per_user_profile_is_picked_up(tmp_path, monkeypatch):
    monkeypatch.setenv("RLBATCH_CONFIG_DIR", str(tmp_path))
    log = _model_log(tmp_path / "run.log")
    proc = run("calibrate", str(log), "--gpu", "h100", "--model", "qwen2.5-1.5b", "--", *VERL)
    assert proc.returncode == 0 and (tmp_path / "calibration.yaml").exists()
    proc = run("check", "--gpu", "h100", "--model", "qwen2.5-1.5b", "--", *VERL)
    assert str(tmp_path / "calibration.yaml") in proc.stderr


def test_sweep_points_of_the_profiles_gpu_carry_it(tmp_path):
    from rlbatch_solver.commands.inputs import calibrate_grid
    from rlbatch_solver.sweep.grid import Grid, Point

    prof = tmp_path / "p.yaml"
    prof.write_text("rlbatch_calibration: 1\ngpu: h100\nefficiency: {mfu_train: 0.2}\n")
    grid = Grid([Point("a", {"gpu": "h100"}, 5.0), Point("b", {"gpu": "a100-80gb"}, 5.0)])
    calibrate_grid(grid, str(prof))
    assert grid.points[0].scenario["calibration"]["mfu_train"] == 0.2 and "calibration" not in grid.points[1].scenario
    sc = rb.default_scenario()
    sc.calibration = {"mfu_train": 0.2}
    assert rb.recommend(sc, top=1, time_limit_s=5).best is not None


@pytest.mark.parametrize("args, field", [
    (["calibrate", "LOG", "--model", "qwen2.5-1.5b", "--", *VERL], "gpu"),
    (["calibrate", "LOG", "--gpu", "h100", "--", *VERL], "model"),
    (["calibrate", "/nonexistent.log", "--gpu", "h100", "--model", "qwen2.5-1.5b", "--", *VERL], "log"),
    (["check", "--gpu", "h100", "--model", "qwen2.5-1.5b", "--calibration", "BAD", "--", *VERL], "calibration"),
    (["check", "--gpu", "h100", "--model", "qwen2.5-1.5b", "--calibration", "RANGE", "--", *VERL], "calibration"),
])
def test_bad_input_exits_2_naming_the_field(tmp_path, args, field):
    log = tmp_path / "run.log"
    log.write_text((LOGS / "verl_1208_console.txt").read_text())
    bad = tmp_path / "bad.yaml"
    bad.write_text("gpu: h100\n")
    rng = tmp_path / "range.yaml"
    rng.write_text("rlbatch_calibration: 1\ngpu: h100\nefficiency: {mfu_train: 7}\n")
    args = [str(log) if a == "LOG" else str(bad) if a == "BAD" else str(rng) if a == "RANGE" else a for a in args]
    proc = run(*args)
    assert proc.returncode == 2 and field in proc.stderr.lower(), proc.stderr


def test_fit_errors_are_ratios():
    run_ = _run()
    pred = run_.predict(DEFAULT_EFFICIENCY)
    result = fit([Observation(run_, [(("actor_update",), pred.seconds["actor_update"] * 2)])])
    assert result.error("before_s") == pytest.approx(1.0, rel=1e-6)
    assert math.isclose(result.error("after_s"), 0.0, abs_tol=0.02)


def test_mean_lengths_are_one_input_shown_with_every_step_time(tmp_path):
    """--mean-prompt-len / --mean-response-len time the step at the data's lengths and say so; without them the
    output names the assumption; a calibration profile's lengths (the log's means) are used when none are given."""
    base = ["--gpu", "h100", "--model", "qwen2.5-1.5b", "--json", "--", *VERL]
    assumed = json.loads(run("check", *base).stdout)["memory"]
    given = json.loads(run("check", "--mean-prompt-len", "100", "--mean-response-len", "300", *base).stdout)["memory"]
    assert assumed["mean_lengths"]["response_from"] == "assumed"
    assert given["mean_lengths"]["response"] == 300 and given["mean_lengths"]["prompt_from"] == "given"
    assert given["step_seconds"] < assumed["step_seconds"]
    text = run("check", "--gpu", "h100", "--model", "qwen2.5-1.5b", "--", *VERL).stdout
    assert "assumed: profile default, 0.35 of the limit" in " ".join(text.split())
    # the calibrated profile carries the log's mean lengths (100 and 300) and later commands use them
    log = _model_log(tmp_path / "run.log")
    prof = tmp_path / "p.yaml"
    assert run("calibrate", str(log), "--gpu", "h100", "--model", "qwen2.5-1.5b", "--out", str(prof), "--",
               *VERL).returncode == 0
    assert load_profile(prof).response_mean == 300
    calibrated = run("check", "--calibration", str(prof), *base)
    lengths = json.loads(calibrated.stdout)["memory"]["mean_lengths"]
    assert lengths["response"] == 300 and lengths["response_from"] == "calibration"
    assert "mean lengths from" in calibrated.stderr
    bad = run("check", "--mean-response-len", "-4", *base)
    assert bad.returncode == 2 and "mean_response_length" in bad.stderr + bad.stdout


def test_recommend_times_its_answer_at_the_given_mean_lengths():
    args = ["recommend", "--gpu", "rtx4090", "--gpus", "4", "--model", "qwen2.5-1.5b", "--n", "8", "--prompt-len",
            "512", "--response-len", "1024", "--top", "1", "--json"]
    short = json.loads(run(*args, "--mean-response-len", "200").stdout)
    assert short["mean_lengths"]["response"] == 200 and short["mean_lengths"]["response_from"] == "given"
    default = json.loads(run(*args).stdout)
    assert default["mean_lengths"]["response_from"] == "assumed"
    assert short["choices"][0]["step_time_s"] < default["choices"][0]["step_time_s"]


def test_a_log_that_is_missing_or_has_no_step_is_said_before_the_config(tmp_path):
    """`rlbatch calibrate run.log --gpu h100 --model qwen2.5-7b` with a mistyped log path (and the config still to
    paste) said "config: nothing to calibrate"; the log named on the command line is the first thing wrong."""
    res = run("calibrate", str(tmp_path / "run.log"), "--gpu", "h100", "--model", "qwen2.5-7b")
    assert res.returncode == 2 and res.stderr.startswith("error: log: file") and "does not exist" in res.stderr
    junk = tmp_path / "junk.log"
    junk.write_text("hello\n")
    res = run("calibrate", str(junk), "--gpu", "h100", "--model", "qwen2.5-7b")
    assert res.returncode == 2 and res.stderr.startswith("error: log: no step metrics"), res.stderr


def test_the_logs_longest_response_caps_the_straggler_it_is_fitted_at(tmp_path):
    """verl #1208's step (max_response_length 1,024) ended at 1,024 tokens: the limit, nothing changes. The same
    step whose longest response ended at 600 is timed to 600 (lengths.response_cap) and says so."""
    from rlbatch_solver.commands.calibrate import observation_from_log

    text = (LOGS / "verl_1208_console.txt").read_text()
    at_limit, notes = observation_from_log(read_log(LOGS / "verl_1208_console.txt"), "verl", VERL, gpu="h100",
                                           model="qwen2.5-1.5b", gpus=8)
    assert at_limit.run.response_longest == 1024 and not any("longest response" in n for n in notes)
    short = tmp_path / "short.log"
    short.write_text(text.replace("response_length/max:1024.000", "response_length/max:600.000"))
    capped, notes = observation_from_log(read_log(short), "verl", VERL, gpu="h100", model="qwen2.5-1.5b", gpus=8)
    assert capped.run.response_longest == 600 and any("longest response is 600 tokens" in n for n in notes)
    before, after = at_limit.run.predict().seconds["rollout"], capped.run.predict().seconds["rollout"]
    assert after < before


def test_a_log_figure_over_concurrent_phases_reads_as_the_step_counts_them():
    """OpenRLHF's timing/make_experience times the actor's log-prob, the critic's value and the reference's
    forwards, which run side by side on separate GPUs: calibrate predicts that figure as the step counts those
    phases (their slowest), the same figure the cross-validation compares the benchmark's "Generation" with, not
    their sum (which pulled mfu_forward low). On the OpenRLHF benchmark's Ray row (1:1:4:2, separate GPUs)."""
    import yaml

    import crossval
    from rlbatch_solver.costmodel.efficiency import DERIVED_EFFICIENCY
    from rlbatch_solver.costmodel.phase import Phase as P
    from rlbatch_solver.costmodel.tables import step_seconds
    from rlbatch_solver.runlog import OPENRLHF_PHASES

    points = yaml.safe_load((Path(__file__).parent / "data" / "measured" / "points.yaml").read_text())
    point = next(p for p in points if p["name"] == "openrlhf_bench_llama2_7b_ray_nonvllm_8xa800")
    run_ = crossval.derived_run(point)
    pred = run_.predict(DERIVED_EFFICIENCY)
    experience = OPENRLHF_PHASES["timing/make_experience"]
    got = pred.group(experience)
    s = pred.seconds
    # the step's share of these forwards: the step without them taken from the step with them
    rest = {p: v for p, v in s.items() if p not in experience}
    assert got == pytest.approx(pred.step - step_seconds(run_.spec, run_.values, rest), rel=1e-9)
    # the cross-validation's composite over the same phases (rollout dropped: the log times it apart)
    c = crossval.cache(point, {}, {})
    assert got == pytest.approx(c.combine(s, experience), rel=1e-9)
    assert got == pytest.approx(c.combine(s, crossval.COMPOSITE["generation_experience"]) - s[P.ROLLOUT], rel=1e-9)
    # three forwards on separate GPUs overlap: less than their sum, at least the slowest
    parts = [s[p] for p in experience]
    assert max(parts) == pytest.approx(got, rel=1e-9) and got < 0.75 * sum(parts)
