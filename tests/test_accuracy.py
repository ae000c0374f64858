"""The measured set (tests/accuracy.py): docs/accuracy.md and the packaged error summary are today's
predictions, every point is sourced and predictable, and the errors stay under their recorded ceilings."""

from __future__ import annotations

import json
import math
import statistics

import pytest
import yaml
from typer.testing import CliRunner

import accuracy as acc
import crossval as cv
from rlbatch_solver.costmodel.efficiency import DEFAULT_EFFICIENCY
from rlbatch_solver.cli import app
from rlbatch_solver.costmodel import accuracy as bars
from doc_sections import marked

POINTS = acc.load_points()


@pytest.fixture(scope="module")
def study():
    return acc.study()


@pytest.fixture(scope="module")
def rows(study):
    return study.rows


def test_measured_set_spans_frameworks_gpus_and_sizes():
    """Issue 28's floor: at least 60 published runs on four GPU types or more; every framework family we print an
    error bar for (verl, OpenRLHF, ms-swift, TRL) has a run of its own."""
    assert len(POINTS) >= 60
    assert len({p["gpu"] for p in POINTS}) >= 4
    assert {bars.FAMILY[p["framework"].split("==")[0]] for p in POINTS} >= {"verl", "openrlhf", "swift", "trl"}
    names = [p["name"] for p in POINTS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("point", POINTS, ids=[p["name"] for p in POINTS])
def test_every_point_is_sourced_and_predictable(point):
    assert point["source"].startswith("http") or point["source"].startswith("github.com/")
    assert point.get("measured") and set(point["measured"]) <= set(acc.QUANTITY), point["measured"]
    rows = acc.predict(point)
    assert rows, "no measured quantity could be predicted"
    assert all(r.predicted > 0 and r.measured > 0 for r in rows)


def test_doc_summary_and_fitted_constants_are_in_sync(study):
    """docs/accuracy.md, the error bars and the fitted constants the model ships are today's fit of today's
    measured set: a new point, a changed formula or a hand-edited constant fails here until regenerated."""
    assert marked(acc.DOC.read_text(), acc.BEGIN, acc.END) == acc.doc_section(study), "run `python tests/accuracy.py`"
    packaged = yaml.safe_load(bars.PATH.read_text())
    assert packaged["families"] == acc.summary(study.rows), "run `python tests/accuracy.py`"
    fitted = yaml.safe_load(acc.FITTED_PATH.read_text())
    assert fitted == {"fitted": study.fitted, "folds": study.folds}, "run `python tests/accuracy.py`"
    shipped = {n: getattr(DEFAULT_EFFICIENCY, n) for n in cv.FITTED_NAMES}
    assert shipped == study.fitted


def test_printed_error_is_out_of_sample(study):
    """Every time row's ratio is against the constants fitted without its source, never the shipped fit (which
    saw it): a source whose fold equals the shipped fit has no time row (it informs no constant)."""
    cache = acc.cached()
    refit = {src: cv.rounded(cv.fit([c for c in cache if c.source != src])) for src in study.folds}
    assert refit == study.folds
    for r in study.rows:
        if r.quantity in (bars.MEMORY, bars.PEAK):
            continue
        c = next(c for c in cache if c.name == r.point)
        assert r.predicted == pytest.approx(cv.predicted(c, refit[c.source])[r.quantity])


def test_leaving_a_source_out_changes_its_fit():
    """The fold of a source with timed phases is a different fit than the one over every source (the fit reads
    the points it is given: a test of the cross-validation itself)."""
    cache = acc.cached()
    full = cv.rounded(cv.fit(cache))
    src = cv.source_key(next(p for p in POINTS if "fully_async" in p["source"]))
    assert cv.rounded(cv.fit([c for c in cache if c.source != src])) != full


def test_rank_correlation_and_growth_are_reported(study):
    ranks = acc.rank_correlations(study)
    assert ranks, "no source has three step points"
    assert acc.growth(study), "no series varies the model or the response limit"
    for src, rc in ranks.items():
        assert rc["spearman"] <= rc["attainable"] <= 1.0, (src, rc)


def test_attainable_rank_keeps_the_ties_no_prediction_can_break():
    """One config run twice (its predictions tie) or one measured figure for two configs (a prediction that tells
    them apart orders them) caps three runs at sqrt(3)/2; runs without such ties can reach 1 whatever was
    predicted."""
    assert cv.attainable_spearman([1.0, 2.0, 2.0], [1.0, 3.0, 2.0]) == pytest.approx(math.sqrt(3) / 2)
    assert cv.attainable_spearman([1.0, 3.0, 2.0], [1.0, 1.0, 3.0]) == pytest.approx(math.sqrt(3) / 2)
    assert cv.attainable_spearman([5.0, 1.0, 3.0], [3.0, 1.0, 2.0]) == pytest.approx(1.0)
    assert cv.spearman([5.0, 1.0, 3.0], [3.0, 1.0, 2.0]) == pytest.approx(1.0)
    assert cv.spearman([1.0, 3.0, 2.0], [1.0, 1.0, 3.0]) == pytest.approx(0.0)


def test_runs_predicted_alike_are_one_config(study):
    """Ties in the prediction cap a source's rank correlation (``cv.attainable_spearman`` keeps them), so they must
    be ties of the config itself: two step points of one source predicted exactly alike by the derived model must
    resolve to the same values (every key the framework reads, defaults filled), GPU, model, GPU count and stated
    lengths. A pair that differs in an input and still ties is a key the source varied that the time model does not
    read. Today's ties: dapo7b.csv rows 5/7 and 6/8 and dapo_moe30b.csv rows 3/6 repeat one config; the cookbook's
    two 512-token runs differ in the TRL release (0.23.0 -> 0.23.1) and in `--bf16 true` against unset, which
    GRPOConfig.__post_init__ sets when fp16 is off in both releases (docs/accuracy.md item 35b)."""
    steps = [r for r in study.rows if r.quantity == bars.STEP]
    by_name = {p["name"]: p for p in POINTS}
    tied = 0
    for i, a in enumerate(steps):
        for b in steps[i + 1:]:
            pa, pb = by_name[a.point], by_name[b.point]
            if cv.source_key(pa) != cv.source_key(pb) or not math.isclose(a.derived, b.derived, rel_tol=1e-9):
                continue
            ra, rb = cv.derived_run(pa), cv.derived_run(pb)
            keys = ("gpu", "model", "prompt_mean", "response_mean", "response_longest", "dataset", "response_profile")
            assert ra.values == rb.values, (a.point, b.point, {k: (ra.values.get(k), rb.values.get(k))
                                                               for k in set(ra.values) | set(rb.values)
                                                               if ra.values.get(k) != rb.values.get(k)})
            assert [getattr(ra, k) for k in keys] == [getattr(rb, k) for k in keys], (a.point, b.point)
            assert (pa.get("gpus"), ra.spec.framework) == (pb.get("gpus"), rb.spec.framework), (a.point, b.point)
            tied += 1
    assert tied >= 1  # the scan ran over real ties (dapo7b.csv repeats configs)


def test_the_step_grows_with_the_response_limit_at_least_as_recorded():
    """Growth of the step from a 1K to an 8K limit where no data is named (docs/accuracy.md): measured 7.6-17.9x on
    the issue's held-out table. It was 3.2-4.8x; prompts at their share and the sourced step costs made it 4.7-7.7x:
    it may not fall back, and no model may pass the measured top by more than 1.5x. Since the fixed seconds are
    bounded by what the sources measure outside their phases (item 12), every model is within 1.5x of the lowest
    measured growth: the issue's bar."""
    lo, hi = acc.LIMIT_GROWTH_MEASURED
    for g in acc.limit_growth():
        assert lo / 1.5 <= g["growth"] <= hi * 1.5, g


def test_the_fixed_seconds_stay_within_what_the_sources_measure_outside_their_phases():
    """The fitted step_fixed_s (in every fold too) may not exceed the median of step minus the phases' sum over the
    rows that time every phase, less what the model prices outside those phases for the row (its weight sync, offload
    moves and host seconds: tests/crossval.py fixed_ceiling): unbounded, it absorbed the phases' misses; bounded by
    the whole time outside the phases, it paid the priced part of that time twice."""
    from rlbatch_solver.costmodel.phase import Phase

    cache = acc.cached()
    ceiling = cv.fixed_ceiling(cache)
    assert 0 < ceiling < 60
    assert cv.fit(cache)["step_fixed_s"] <= ceiling + 1e-9
    # computed independently: the median over the rows timing every phase they run; none such -> the plain bound
    timed = [(c, ph) for c in cache for ph in [[p for p in c.seconds if p in cv.SCALE_OF and c.seconds[p] > 0]]
             if "step" in c.measured and ph and all(str(p) in c.measured for p in ph)]
    outside = [c.measured["step"] - sum(c.measured[str(p)] for p in ph) for c, ph in timed]
    priced = [c.host_s + c.seconds.get(Phase.WEIGHT_SYNC, 0.0) + c.seconds.get(Phase.OFFLOAD, 0.0) for c, _ in timed]
    assert all(x > 0 for x in priced)
    rest = sorted(o - x for o, x in zip(outside, priced))
    assert len(rest) >= 10 and ceiling == pytest.approx((rest[(len(rest) - 1) // 2] + rest[len(rest) // 2]) / 2)
    assert ceiling < statistics.median(outside)
    assert cv.fixed_ceiling([c for c in cache if "step" not in c.measured]) == cv.BOUNDS["step_fixed_s"][1]


def test_errors_stay_under_their_ceilings(rows):
    """A change of the cost model may not make the pooled median error of any quantity worse than recorded."""
    ceilings = yaml.safe_load(bars.PATH.read_text())["ceilings"]
    pooled = acc.summary(rows)[bars.POOLED]
    assert set(ceilings) == set(pooled)
    for q, s in pooled.items():
        assert s["median_abs_log_error"] <= ceilings[q], (q, s)


def test_check_and_recommend_print_the_observed_error():
    args = ["--gpu", "h100", "--model", "qwen2.5-7b", "--gpus", "8", "--", "data.train_batch_size=64",
            "actor_rollout_ref.rollout.n=8", "actor_rollout_ref.actor.ppo_mini_batch_size=32",
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4", "data.max_prompt_length=1024",
            "data.max_response_length=2048"]
    res = CliRunner().invoke(app, ["check", *args])
    assert "observed error: step measured/predicted" in res.output, res.output
    res = CliRunner().invoke(app, ["check", "--json", *args])
    out = json.loads(res.output[res.output.index("{"):])
    step = out["memory"]["error_bars"]["step"]
    assert step["points"] >= bars.MIN_POINTS and step["low"] <= step["median"] <= step["high"]


def test_error_bar_pools_when_a_family_has_too_few_points():
    table = bars._table()["families"]
    for fw in ("verl", "openrlhf", "swift", "trl"):
        bar = bars.error_bar(fw, bars.STEP)
        fam = bars.FAMILY[fw]
        own = table.get(fam, {}).get(bars.STEP, {}).get("points", 0)
        assert bar is not None and bar.family == (fam if own >= bars.MIN_POINTS else bars.POOLED)
