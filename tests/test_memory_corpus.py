"""Will it OOM? The memory corpus (tests/memory_corpus.py): real out-of-memory reports and runs that ran, each with its
source, release, GPU and config. OOM recall and the fit rate per framework may not drop below their recorded floors,
docs/accuracy.md's table is today's, and each class of miss the corpus showed is pinned on the case that showed it."""

from __future__ import annotations

import functools
import math
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

import memory_corpus as mc
from doc_sections import marked

FLOORS = Path(__file__).resolve().parent / "data" / "memory_corpus_floors.yaml"
REQUIRED = ("name", "framework", "release", "outcome", "memory", "phase", "source", "where", "gpus", "model", "args")


@functools.lru_cache(maxsize=1)
def _results() -> tuple:
    return tuple(mc.results())


def _case(name: str) -> mc.Case:
    return next(c for c in mc.cases() if c.name == name)


def _check(name: str, **kw):
    import rlbatch_solver as rb

    c = _case(name)
    return rb.check(c.args, framework=c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu or mc.HOST_ONLY_GPU,
                    length_fraction=c.length_fraction, host_mem_gib=c.host_mem_gib, **kw)


# ----------------------------------------------------------------------------- the records
def test_every_record_names_its_source_release_hardware_and_config():
    from rlbatch_solver.catalog.gpus import load_gpu
    from rlbatch_solver.catalog.models import load_model

    names = []
    for path in sorted(mc.CORPUS.glob("*.yaml")):
        for rec in yaml.safe_load(path.read_text()):
            names.append(rec["name"])
            missing = [k for k in REQUIRED if k not in rec]
            assert not missing, (rec["name"], missing)
            assert rec["outcome"] in ("oom", "ran") and rec["memory"] in ("gpu", "host"), rec["name"]
            assert rec["source"].startswith("https://"), rec["name"]
            assert rec["framework"].split("==")[0] in mc.FRAMEWORKS, rec["name"]
            load_model(rec["model"])
            if rec["memory"] == "gpu" or rec.get("gpu"):
                load_gpu(rec["gpu"])
            if rec["memory"] == "host" and rec["outcome"] == "oom":
                assert rec.get("host_mem_gib") or "host_mem_gib" not in rec, rec["name"]
    assert len(names) == len(set(names))


def test_a_run_the_published_scripts_hold_is_not_recorded_again():
    # a run counts once: a verl record whose source is a launch script tests/data/scripts already holds, on the same
    # node count, is that script's run (run_qwen3moe-30b_megatron_96gb.sh and run_qwen3-235b_megatron_96gb.sh were
    # recorded twice). ms-swift's example records pin other releases of their scripts, with other flags: not checked.
    def nodes(c: mc.Case) -> str:
        return next((a.split("=", 1)[1] for a in c.args if a.startswith("trainer.nnodes=")), "")

    scripts = {(c.family, Path(c.name).name, nodes(c)) for c in mc._published_runs() if c.origin == "scripts"}
    again = [c.name for c in mc._collected() if c.outcome == "ran" and c.family in ("verl", "verl-megatron")
             and (c.family, c.source.rstrip("/").rsplit("/", 1)[-1], nodes(c)) in scripts]
    assert not again


def test_a_measured_run_is_not_recorded_again():
    # a run counts once: an OpenRLHF or ms-swift record on the hardware and model of a measured point
    # (tests/data/measured/points.yaml), whose flags agree with the point's wherever both set them, is that point's
    # report (OpenRLHF's README performance runs of 7B, 13B and 34B on 8 A100, ms-swift's Qwen3-8B best-practice GRPO
    # and its Qwen3-30B-A3B server-mode example were each counted twice)
    from published import measured_points

    def flags(args) -> dict:
        out, key = {}, None
        for a in map(str, args):
            if a.startswith("--"):
                key = a[2:].replace("-", "_")
                out[key] = True
            elif key is not None:
                out[key], key = a, None
        return out

    points = [(p["framework"].split("==")[0], p["model"], p["gpu"], p.get("gpus"), flags(p["args"]))
              for p in measured_points()]
    again = []
    for c in mc._collected():
        if c.outcome != "ran" or c.family not in ("openrlhf", "swift"):
            continue
        mine = flags(c.args)
        for fam, model, gpu, gpus, theirs in points:
            shared = set(mine) & set(theirs)
            if ((fam, model, gpu, gpus) == (c.family, c.model, c.gpu, c.gpus) and len(shared) >= 8
                    and all(mine[k] == theirs[k] for k in shared)):
                again.append(c.name)
    assert not again


def _table_row(source: str, where: str = "") -> tuple[str, str, int] | None:
    """(repository, table file, row number) of a record citing one row of a published results table: a measured point
    writes "<table url> (row number N ...)", a collected record the table URL in ``source`` and "row N" or
    "<file> row 'N,..." in ``where``. The commit in the URL is dropped: the same row read at two commits is one run."""
    import re

    m = re.search(r"github\.com/([^/\s]+/[^/\s]+)/blob/[^/\s]+/(\S+\.(?:csv|md))", source)
    row = re.search(r"\(row number (\d+)", source) or re.search(r"\brow '*(\d+)", where)
    return (m.group(1), m.group(2), int(row.group(1))) if m and row else None


def test_a_row_of_a_results_table_is_recorded_once():
    # a run counts once: a collected record citing the same row of the same published table as a measured point
    # (tests/data/measured/points.yaml) is that point's report, whatever flags either assumed for what the table leaves
    # out (verl_megatron_practice's grpo_qwen2.5_7b.csv rows 2-14 and dapo7b.csv rows 9-22 were each counted twice:
    # grpo row 9 as a miss twice)
    from published import measured_points

    rows = {k: p["name"] for p in measured_points() if (k := _table_row(p["source"]))}
    again = []
    for path in sorted(mc.CORPUS.glob("*.yaml")):
        for rec in yaml.safe_load(path.read_text()) or []:
            key = _table_row(str(rec["source"]), str(rec.get("where", "")))
            if key in rows:
                again.append((rec["name"], rows[key]))
    assert not again


def test_the_table_row_of_a_point_and_of_a_record_agree():
    point = ("https://github.com/ISEEKYAN/verl_megatron_practice/blob/dfd811a/grpo_qwen2.5_7b.csv "
             "(row number 9; contributor NV)")
    record = "https://github.com/ISEEKYAN/verl_megatron_practice/blob/9976592/grpo_qwen2.5_7b.csv"
    key = ("ISEEKYAN/verl_megatron_practice", "grpo_qwen2.5_7b.csv", 9)
    assert _table_row(point) == key
    assert _table_row(record, "row 9: 'megatron+vllm,H100,8,tp2pp1cp1'") == key
    assert _table_row(record.replace("grpo_qwen2.5_7b", "dapo7b"), "dapo7b.csv row '9,megatron+vllm'")[2] == 9
    assert _table_row(record, "the table's first row") is None


def test_the_corpus_is_sixty_reports_each_way_from_every_framework_with_reports():
    cases = mc.cases()
    oom = [c for c in cases if c.outcome == "oom"]
    ran = [c for c in cases if c.outcome == "ran"]
    assert len(oom) >= 60 and len(ran) >= 60, (len(oom), len(ran))
    for fw in ("verl", "verl-megatron", "swift", "openrlhf", "trl"):
        assert any(c.family == fw for c in oom) and any(c.family == fw for c in ran), fw


def test_every_case_is_judged():
    errors = [(r.case.name, r.error) for r in _results() if r.error]
    assert not errors


def test_a_host_case_is_unjudged_only_when_its_node_ram_is_unknown():
    """A host report whose source gives no node RAM and names no GPU type with a standard node (PRIME #59 on A800s,
    OpenRLHF #198 on unnamed GPUs) is no evidence either way: it is left out of the scores, not counted as caught
    (it was, while a missing RAM read as "does not fit")."""
    from rlbatch_solver.costmodel.host import DEFAULT_HOST_GIB_PER_GPU

    unjudged = {r.case.name for r in _results() if r.unjudged and r.case.memory == "host"}
    # besides: the host records whose source shows no config to price say so in ``unjudged`` (verl #529: no training
    # args; verl #3453: only the maintainer's summary, model and batch sizes unknown)
    marked = {r.case.name for r in _results() if r.case.memory == "host" and r.case.unjudged}
    assert marked == {"verl_529_qwen_1_5b_grpo_4xa6000_504g", "verl_3453_sglang_grpo_252g_taskrunner"}
    assert unjudged == marked | {r.case.name for r in _results() if r.case.memory == "host" and r.case.host_mem_gib is None
                                 and r.case.gpu not in DEFAULT_HOST_GIB_PER_GPU}
    assert {"verl_prime_59_qwen2_5_7b_rloo_8xa800_host", "openrlhf_198_llama2_70b_ppo_adam_offload"} <= unjudged
    assert all(r.case.memory == "host" or r.case.unjudged for r in _results() if r.unjudged)


def test_a_gpu_record_is_unjudged_only_when_it_says_why_and_then_counts_neither_way():
    """ms-swift #7999: one script, OOM on 3.12.4 and ran on 3.10.3 (8 H800), but the post is cut at '--per_dev...', so
    the flags that decide a 32B full fine-tune's memory are not visible. What is visible trains with plain DDP
    (3.10.3 swift/llm/argument/train_args.py TrainArguments._init_deepspeed acts only when --deepspeed is set): every
    rank would hold the whole 32B model, its gradients and AdamW states (424 GiB at the update), which cannot have run
    on 80 GB. Both records carry ``unjudged``: still checked and listed, counted neither as caught nor as missed."""

    marked = {r.case.name: r for r in _results() if r.unjudged and r.case.memory == "gpu"}
    swift = {"swift_7999_qwen3_32b_grpo_full_colocate_tp8_8xh800_v3_10_3",
             "swift_7999_qwen3_32b_grpo_full_colocate_tp8_8xh800_v3_12_4"}
    # OpenRLHF's 2024 measured rows that their release cannot run as written (test_openrlhf_versions.py)
    openrlhf = {"openrlhf_bench_llama2_7b_deepspeed_8xa800", "openrlhf_bench_codellama_34b_ray_vllm_8xa800",
                *(f"openrlhf_readme_{m}_ppo_{g}xa800" for m, g in (("llama2_7b", 16), ("llama2_13b", 32),
                                                                    ("codellama_34b", 32), ("llama2_70b", 32)))}
    # verl Megatron reports whose settings are not in their text: #1649's comment (a dense "Qwen-14B" run of the MoE
    # example, what it changed not said), #388 (cut before any Megatron parallel size), #3620 (config as a screenshot),
    # #3364's first post (every parallel size a shell variable whose value is not shown), and v0.4.1's geo3k multi-turn
    # script (a verification script, no record it ran as written: a text model on an image dataset)
    megatron = {"verl-megatron_1649_comment_qwen_14b_2x8xa800_40gb", "verl-megatron_388_qwen2_5_32b_ppo_4x8xh800",
                "verl-megatron_3620_qwen2_5_7b_dapo_8xa800", "verl-megatron_3364_qwen3moe_30b_grpo_4x8xh200",
                "verl-megatron_example_sglang_multiturn_geo3k_qwen2_5_3b_grpo_tp2pp2vpp2cp2_len2k2k_8xh100"}
    # verl: Logic-RL's README line "4×A100 80G", written for the script of its date, not for the later one (882de6a)
    verl = {"verl_logicrl_readme_qwen2_5_7b_grpo_4xa100_80gb"}
    assert set(marked) == swift | openrlhf | megatron | verl
    assert all(r.case.unjudged and r.predicted_oom and r.peak_gib > 5 * r.limit_gib for n, r in marked.items()
               if n in swift)
    counted = mc.scores([r for r in _results() if r.case.name not in marked])
    assert mc.scores(_results())["swift"] == counted["swift"]
    assert mc.scores(_results())["openrlhf"] == counted["openrlhf"]
    assert mc.scores(_results())["verl-megatron"] == counted["verl-megatron"]


# ----------------------------------------------------------------------------- the scores
def test_recall_and_fit_rate_stay_above_their_floors():
    """The floors (tests/data/memory_corpus_floors.yaml) are today's scores: a change that loses a caught OOM or
    calls a run that ran out of memory lowers one and fails here; one that improves a score raises its floor."""
    floors = yaml.safe_load(FLOORS.read_text())
    scores = mc.scores(list(_results()))
    for fam, want in floors.items():
        got = scores[fam]
        assert got["oom"] == want["oom"] and got["ran"] == want["ran"], (fam, got, want)
        assert got["caught"] >= want["caught"], (fam, "OOM recall fell", got, want)
        assert got["fit"] >= want["fit"], (fam, "fit rate fell", got, want)


def test_accuracy_page_shows_todays_corpus_table():
    doc = (mc.HERE.parent / "docs" / "accuracy.md").read_text()
    assert marked(doc, mc.TABLE_BEGIN, mc.TABLE_END) == mc.table(list(_results()))


# ----------------------------------------------------------------------------- the classes of miss, pinned
def test_verl_megatron_context_parallel_keeps_the_per_gpu_token_budget():
    """verl_megatron_practice's Qwen3-30B-A3B ep8 rows 12, 15 and 16 (CP 1, 2, 4; mini batch 64, 30k-token budget, all
    ran on 32 H100): verl's Megatron actor multiplies ppo_max_token_len_per_gpu by context_parallel_size before it packs
    micro batches (verl 0.5.0 workers/actor/megatron_actor.py update_policy, compute_log_prob), so each GPU holds the
    budget's tokens at any CP: one per-GPU price, and it fits once the scripts' fused kernels are read (no full logits).
    What does grow with CP is the rank's whole batch that 0.5.0's update keeps on the GPU (memory.batch_on_gpu_bytes):
    the context-parallel ranks of a data-parallel group each receive the group's share, so CP 2 holds twice CP 1's."""
    from rlbatch_solver.costmodel.memory import T_BATCH

    names = ("verlmp_dapo_moe30b_row12_megatron_ep8_gen_tp4_32xh100",
             "verlmp_dapo_moe30b_row15_megatron_ep8cp2_gen_tp4_32xh100",
             "verlmp_dapo_moe30b_row16_megatron_ep8cp4_gen_tp4_32xh100")
    mems = [_check(n).memory for n in names]
    batch = [m.phases["actor_update"][T_BATCH] for m in mems]
    assert len({m.peaks["actor_update"] - b for m, b in zip(mems, batch)}) == 1
    assert batch[1] == pytest.approx(2 * batch[0], abs=1) and batch[2] == pytest.approx(4 * batch[0], abs=1)
    assert all(m.fits for m in mems)


def test_verl_megatron_selective_recompute_modules_drop_what_megatron_core_recomputes():
    """verl_megatron_practice's Qwen3-30B-A3B row 17 (32 H20, ran): script 17 sets recompute_granularity=selective with
    recompute_modules [core_attn, moe_act, layernorm, mlp, moe]. megatron-core 0.13.0 checkpoints each MoE layer whole
    ("moe", moe_layer.py MoELayer.forward) and frees the pre-MLP norm's output ("layernorm"), so a layer keeps its
    attention and norm inputs only; priced as core_attn alone it was 93.7 GiB against 89.8 (tight)."""
    name = "verlmp_dapo_moe30b_row17_megatron_ep8_gen_tp4_32xh20"
    key = "actor_rollout_ref.actor.megatron.override_transformer_config.recompute_modules"
    modules = _check(name).memory
    attention_only = _check_args(name, [a for a in _case(name).args if not a.startswith(key)]).memory
    assert modules.fits and modules.outlook() != "OOM"
    assert attention_only.phases["actor_update"]["activations"] > 2.5 * modules.phases["actor_update"]["activations"]
    assert attention_only.outlook() in ("tight", "OOM")  # the known miss it was


def _check_args(name: str, args: list):
    import rlbatch_solver as rb

    c = _case(name)
    return rb.check(args, framework=c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu, length_fraction=c.length_fraction)


def test_verl_legacy_global_micro_batches_reach_the_memory_model():
    """verl's tuning sweep (PR #1985: 58 prompts per GPU ran, 59 ran out of memory): the legacy workers convert the
    global ppo_micro_batch_size / log_prob_micro_batch_size per GPU, so the peak grows with them (it was flat: every
    size was priced at a default micro batch of 1)."""
    ran, oom = _check("verl_tuning_lora_14b_bs58_2xh100"), _check("verl_tuning_lora_14b_bs59_2xh100")
    for phase in ("old_log_prob", "actor_update"):
        assert oom.memory.peaks[phase] > ran.memory.peaks[phase], phase


def test_trl_loads_fp32_and_plain_ddp_keeps_fp32_states_and_gradient_buckets():
    """trl PR #2776: a 7B full fine-tune on 3 H20 without DeepSpeed ran out of memory in optimizer.step. TRL loads the
    model in fp32 unless told (ModelConfig dtype 'float32'), so plain DDP keeps fp32 weights, gradients and Adam
    moments (16 B per parameter) plus DDP's bucket copy of the gradients: over the GPU in the update."""
    r = _check("trl_pr2776_qwen2_5_7b_grpo_3xh20_ddp")
    terms = r.memory.phases["actor_update"]
    params = 7.62e9
    assert terms["optimizer states (sharded)"] == pytest.approx(8 * params / 2**20, rel=0.02)
    assert terms["DDP gradient buckets (a copy of the gradients)"] == pytest.approx(4 * params / 2**20, rel=0.02)
    assert not r.memory.fits and r.memory.outlook() == "OOM"


def test_verl_prices_the_other_models_and_the_sleeping_engine_beside_each_phase():
    """verl FSDP: during the reference pass the actor's states stay on the GPU unless offloaded, and so do the
    sleeping engine's CUDA graphs (they were left out of every verl FSDP phase but the rollout)."""
    import rlbatch_solver as rb

    args = ["data.train_batch_size=64", "actor_rollout_ref.rollout.n=8", "actor_rollout_ref.actor.ppo_mini_batch_size=16",
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4",
            "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4", "actor_rollout_ref.actor.use_kl_loss=True",
            "algorithm.adv_estimator=grpo"]
    on = rb.check(args, gpus=8, model="qwen2.5-7b", gpu="h100").memory.phases["ref"]
    off = rb.check(args + ["actor_rollout_ref.actor.fsdp_config.param_offload=True",
                           "actor_rollout_ref.actor.fsdp_config.optimizer_offload=True"],
                   gpus=8, model="qwen2.5-7b", gpu="h100").memory.phases["ref"]
    assert on["actor params+optimizer (resident)"] == pytest.approx(12 * 7.62e9 / 8 / 2**20, rel=0.03)
    assert off["actor params+optimizer (resident)"] == 0
    assert on["rollout engine (kept between rollouts)"] > 0


def test_verl_0_2_keeps_the_entropy_in_every_update_and_always_runs_a_reference():
    """verl 0.2 (and the forks of its time) computes the entropy with its gradient in every actor update, whatever
    entropy_coeff, and builds a reference policy whatever the KL settings (dp_actor.py update_policy, main_ppo.py).
    Logic-RL's 7B GRPO on 4x A800 and Search-R1's 0.5B on 2x A100-40GB ran out of memory: caught in the update (their
    configs set gradient checkpointing, so 0.1's defaults do not change them); the
    same configs under 0.6.1, where the update computes entropy only with entropy_coeff != 0, are priced without it."""
    for name in ("verl_logicrl_75_qwen2_5_7b_grpo_4xa800", "verl_searchr1_62_qwen2_5_0_5b_grpo_2xa100_40gb"):
        c = _case(name)
        assert c.framework == "verl==0.1.0"  # the forks' verl; 0.2's update, as here, is theirs
        mem = rb_check(c, "verl==0.2.0").memory
        assert not mem.fits and mem.peaks["actor_update"] > mem.capacity_of("actor_update"), name
        assert "logits+entropy" in mem.phases["actor_update"], name
        newer = rb_check(c, "verl==0.6.1").memory.phases["actor_update"]
        assert "logits+entropy" not in newer and "logits" in newer, name
    ppo = _case("verl_searchr1_111_qwen2_5_7b_ppo_8xh100")  # no KL loss, no KL in the reward
    assert "ref" in rb_check(ppo, "verl==0.2.0").memory.peaks and "ref" not in rb_check(ppo, "verl==0.6.1").memory.peaks


def test_verl_0_3_to_0_5_price_their_own_defaults_eager_rollout_and_0_3s_entropy():
    """verl up to 0.5.0 defaulted rollout.enforce_eager to True (0.3.0.post1/0.4.1 trainer/config/ppo_trainer.yaml,
    0.5.0 trainer/config/rollout/rollout.yaml; False from verl PR #2956 of 2025-08-08, in 0.6.0), so vLLM captured no
    CUDA graphs; verl 0.3 computes the entropy in every actor update whatever actor.entropy_coeff (0.3.0.post1
    dp_actor.py DataParallelPPOActor.update_policy). A record dated to such a release is checked with its defaults:
    issue 855's 14B GRPO (0.3.0.rc0, entropy_coeff=0) keeps the entropy in its update and no graphs; the Megatron PPO
    example run on 8 x H20 at 0.4.1 holds no graphs either. Priced with 0.6.1's defaults both held ~0.6-0.8 GiB of
    graphs. Records labelled 0.5.0 that ran main after 2025-08-08 (issue 3124 at 9f4161e, ...) keep 0.6.1's default."""
    import rlbatch_solver as rb
    from rlbatch_solver.frameworks import get_framework

    graphs = "CUDA graphs (outside budget)"
    c = _case("verl_855_r1_distill_qwen_14b_grpo_8xh100")
    assert c.framework == "verl==0.3.0" and c.release == "0.3.0.rc0"
    assert "actor_rollout_ref.actor.entropy_coeff=0" in c.args
    own, later = _check(c.name).memory, rb_check(c, "verl==0.6.1").memory
    assert own.phases["rollout"].get(graphs, 0) == 0 < later.phases["rollout"][graphs]
    assert "logits+entropy" in own.phases["actor_update"] and "logits+entropy" not in later.phases["actor_update"]
    assert own.peaks["actor_update"] > later.peaks["actor_update"]
    mg = _case("verl-megatron_example_deepseek_llm_7b_ppo_gsm8k_8xh20")
    assert mg.framework == "verl-megatron==0.4.1" and not any("enforce_eager" in a for a in mg.args)
    own, later = _check(mg.name).memory, rb_check(mg, "verl-megatron==0.6.1").memory
    assert own.phases["rollout"].get(graphs, 0) == 0 < later.phases["rollout"][graphs]
    assert later.peaks["rollout"] - own.peaks["rollout"] == pytest.approx(later.phases["rollout"][graphs])
    assert "logits+entropy" not in own.phases["actor_update"]  # 0.4: entropy only with a coefficient
    # 0.4.x reads 0.5.0's pack; a setting still wins over the default
    fw = get_framework("verl==0.4.1")
    assert fw.version == "0.5.0" and fw.ruleset.variables["enforce_eager"].default is True
    on = rb.check(mg.args + ["actor_rollout_ref.rollout.enforce_eager=False"], framework=mg.framework, gpus=mg.gpus,
                  model=mg.model, gpu=mg.gpu).memory
    assert on.phases["rollout"][graphs] == later.phases["rollout"][graphs]
    assert _case("verl-megatron_3124_qwen2_5_32b_grpo_8xh20").framework == "verl-megatron==0.6.1"


def test_verl_megatron_reports_of_the_0_5_0_code_keep_its_eager_rollout():
    """Issue 3104's traceback is verl 0.5.0's pip release line for line (site-packages verl/trainer/main_ppo.py lines
    40, 74, 239; ppo/ray_trainer.py line 917 ``self.actor_rollout_wg.init_model()``) and issue 2865 ran the Qwen3-30B-A3B
    example of 2025-07-22 on 2025-08-01, before verl PR #2956 (2025-08-08) turned rollout.enforce_eager off: both run
    0.5.0's default, no CUDA graphs, which 0.6.1's pack priced (0.8-0.9 GiB in every phase). 3104 (died at start-up
    while vLLM built its weights) stays predicted OOM without them."""
    graphs = "CUDA graphs (outside budget)"
    for name in ("verl-megatron_3104_qwen3_30b_a3b_grpo_2x8xh20", "verl-megatron_2865_qwen3_30b_a3b_grpo_4x8xh100"):
        c = _case(name)
        assert c.framework == "verl-megatron==0.5.0" and c.release == "0.5.0", name
        assert not any("enforce_eager" in a for a in c.args), name
        own, later = _check(name).memory, rb_check(c, "verl-megatron==0.6.1").memory
        assert own.phases["rollout"].get(graphs, 0) == 0 < later.phases["rollout"][graphs], name
        assert later.peaks["rollout"] - own.peaks["rollout"] == pytest.approx(later.phases["rollout"][graphs]), name
    c = _case("verl-megatron_3104_qwen3_30b_a3b_grpo_2x8xh20")
    assert c.phase == "engine_init" and not _check(c.name).memory.fits


def test_verl_megatron_up_to_0_5_keeps_the_ranks_whole_batch_on_the_gpu_through_the_update():
    """verl 0.5.0's Megatron update_actor moves the rank's whole share of the step's batch to the GPU before
    update_policy (megatron_workers.py ``data.batch = data.batch.to(device)``; 0.3.0.post1 ``.cuda()``), every key
    padded to the maximum lengths, and so do its log-prob passes (``data = data.to(device)``); verl PRs #3011 and
    #3106 (first in 0.6.0) move a mini or micro batch at a time.
    ISEEKYAN's DAPO 7B row 3 (TP 4 PP 2 on 8 H100: data-parallel size 1, all 512 x 16 sequences of 2,048 + 8,192
    tokens, no reference) holds int64 ids, mask and positions (3 x 10,240), prompts (2,048), responses and the
    response mask (2 x 8,192) and fp32 old log-probs, scores, advantages and returns (4 x 8,192): 0.5 MiB a sequence,
    4 GiB; it ran, and still fits."""
    from rlbatch_solver.costmodel.memory import T_BATCH

    name = "verlmp_dapo7b_row3_megatron_tp4pp2_gen_tp4_8xh100"
    c = _case(name)
    assert c.framework == "verl-megatron==0.5.0" and c.outcome == "ran"
    own, later = _check(name).memory, rb_check(c, "verl-megatron==0.6.1").memory
    per_seq = 8 * (3 * (2048 + 8192) + 2048 + 2 * 8192) + 4 * 4 * 8192
    assert own.phases["actor_update"][T_BATCH] == pytest.approx(512 * 16 * per_seq / 2**20, abs=1)
    # the old log-prob pass moves the batch as the rollout left it (compute_log_prob ``data = data.to(device)``):
    # the int64 rows alone
    assert own.phases["old_log_prob"][T_BATCH] == pytest.approx(512 * 16 * 8 * (3 * 10240 + 2048 + 2 * 8192) / 2**20,
                                                                abs=1)
    assert all(T_BATCH not in later.phases[p] for p in later.phases)
    assert T_BATCH not in own.phases["rollout"]
    assert own.fits
    # the critic's update_critic moves its whole batch in every release with the legacy workers (0.7.1
    # workers/megatron_workers.py CriticWorker.update_critic ``data = data.to(device)``): the PPO example of 0.4.1
    ppo = _case("verl-megatron_example_deepseek_llm_7b_ppo_gsm8k_8xh20")
    for fw in (ppo.framework, "verl-megatron==0.6.1", "verl-megatron==0.7.1"):
        phases = rb_check(ppo, fw).memory.phases
        assert phases["critic_update"][T_BATCH] > 0, fw
        assert (T_BATCH in phases["actor_update"]) == (fw == ppo.framework), fw


def test_verl_0_2_keeps_only_the_kv_cache_of_an_engine_that_does_not_free_it():
    """verl 0.2's sharding manager drops the vLLM weights and empties torch's cache after each rollout
    (fsdp_vllm.py __exit__): with free_cache_engine=False the training phases hold the KV cache only. reft-exp's
    author ran its 7B GRPO that way on 4x A100-80GB: it fits."""
    mem = _check("verl_reftexp_7_qwen2_5_7b_grpo_4xa100_80gb_author").memory
    assert mem.fits
    kept = mem.phases["actor_update"]["rollout engine (kept between rollouts)"]
    assert kept == pytest.approx(mem.phases["rollout"]["vLLM KV cache"], abs=1)


def test_verl_0_1_and_0_2_keep_an_offloaded_actors_params_on_the_gpu_through_the_rollout():
    """verl 0.1-0.2's FSDP workers offload only an offloaded actor's gradients and optimizer before building the rollout
    and load its params for every generate_sequences, offloading them at its end (0.2.0.post2 after the generation,
    fsdp_workers.py init_model, generate_sequences; Search-R1's fork after the old log-probs it computes there too): the
    fp32 param shards sit beside the KV
    cache, which vLLM sized from the memory left with them in. Search-R1's 7B PPO script (#111, param_offload=true) shows
    it; 0.3 offloads them in the sharding manager once synced, so under 0.3.0 they are not there."""
    c = _case("verl_searchr1_111_qwen2_5_7b_ppo_8xh100")
    assert c.framework == "verl==0.1.0" and "actor_rollout_ref.actor.fsdp_config.param_offload=true" in c.args
    mem = _check(c.name).memory
    rollout, update = mem.phases["rollout"], mem.phases["actor_update"]
    assert rollout["actor params+optimizer (resident)"] == pytest.approx(update["params (sharded)"])
    # vLLM sized its KV cache with the params in, as it does for an actor that is not offloaded (whose Adam moments,
    # allocated at the first step, come on top of a KV cache sized without them)
    kept = [a.replace("param_offload=true", "param_offload=false") if "actor.fsdp_config.param_offload" in a
            or "actor.fsdp_config.optimizer_offload" in a else a for a in c.args]
    kept = [a.replace("optimizer_offload=true", "optimizer_offload=false") for a in kept]
    on = rb_check(replace(c, args=kept), c.framework).memory.phases["rollout"]
    assert rollout["vLLM KV cache"] == pytest.approx(on["vLLM KV cache"])
    assert on["actor params+optimizer (resident)"] == pytest.approx(
        rollout["actor params+optimizer (resident)"] + update["optimizer states (sharded)"])
    later = rb_check(c, "verl==0.3.0").memory.phases["rollout"]
    assert later.get("actor params+optimizer (resident)", 0) == 0


def test_verl_fsdp_holds_the_head_gradient_to_the_end_and_reduces_the_embedding_there():
    """Under verl's wrap policies the root unit (FSDP1: the embedding and the untied lm_head; FSDP2: the lm_head, the
    embedding a unit reduced in the same final callback) is reduce-scattered only when its whole gradient is there,
    after the embedding's backward, the last: beside the logits only the lm_head's bf16 gradient exists (made by the
    lm_head's backward, held to the end), never the embedding-sized gradient with its fp32 cast, which comes at the end
    beside the states alone; a decoder layer's gradient and cast come once the logits are freed. reft-exp #7's author
    run (7B on 4x A100-80GB, the KV cache kept, 7,680 tokens per micro batch at its limits) ran: it fits (73.6 of
    75.0; 75.7 with 6 x the embedding beside the logits)."""
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.costmodel.memory import T_ROOT_REDUCE

    c = _case("verl_reftexp_7_qwen2_5_7b_grpo_4xa100_80gb_author")
    m = load_model(c.model)
    embed, head, layer = m.embedding_params(), m.lm_head_params(), max(
        m.layer_params(i) for i in range(m.num_hidden_layers))
    mem = _check(c.name).memory
    upd = mem.phases["actor_update"]
    fwd = mem.phases["old_log_prob"]["FSDP all-gathered layers"]
    assert upd["FSDP all-gathered layers"] == pytest.approx(fwd + 2 * head / 2**20, abs=1)  # unsharded, bf16
    assert 6 * layer < 2**20 * upd["logits+entropy"] and T_ROOT_REDUCE not in upd
    assert mem.fits and round(mem.peaks["actor_update"] / 1024, 1) == pytest.approx(73.6, abs=0.05)
    # the end of the backward: the embedding's and lm_head's gradients (6 B each with the cast) beside the states,
    # the gathered units and the kept KV cache only: under the peak here
    end = sum(v for t, v in upd.items() if t not in ("activations (grad ckpt)", "logits+entropy"))
    end += 6 * (embed + head) / 2**20 - 2 * head / 2**20
    assert end < mem.peaks["actor_update"]


def test_verl_dynamic_batching_balances_its_micro_batches_past_the_budget():
    """verl's dynamic batching (utils/seqlen_balancing.py rearrange_micro_batches, the 0.1 forks to 0.9.0) makes
    ceil(tokens / max_token_len) micro batches and spreads the sequences over them by Karmarkar-Karp: it does not fill
    them up to the budget, and at one length the largest holds ceil(n / k) sequences. rLLM #30 (DeepScaleR's 1.5B,
    8k responses, 8x A100-40GB) ran out of memory in update_policy: each GPU's 64 sequences of 1,024 + 8,192 tokens
    per mini batch make 18 micro batches under the 32,768-token budget, the largest of 4 (36,864 tokens). The same
    script ran on 8x A100-80GB (rLLM #29)."""
    from rlbatch_solver.costmodel.memory import balanced_split_tokens, micro_tokens
    from rlbatch_solver.costmodel.plan import Plan

    oom = _check("verl_rllm30_deepscaler_r1distill1p5b_grpo8k_8xa100_40gb").memory
    assert not oom.fits and oom.verdict("actor_update") == "no"  # 36.4 GiB of 37.0 with the budget as the batch
    assert max(oom.peaks, key=lambda p: oom.peaks[p] - oom.capacity_of(p)) == "actor_update"
    assert round(oom.peaks["actor_update"] / 1024, 1) == pytest.approx(39.4, abs=0.05)
    ran = _check("verl_rllm29_deepscaler_r1distill1p5b_grpo8k_8xa100").memory
    assert ran.fits and ran.peaks["actor_update"] == oom.peaks["actor_update"]
    # the split itself: 64 x 9,216 at 32,768 -> 18 micro batches, 4 sequences in the largest
    plan = Plan.of(model=_plan_model("deepseek-r1-distill-qwen-1.5b"), gpu=_plan_gpu("a100-40gb"), n_gpus=8,
                   gpus_per_node=8, prompt_len=1024, response_len=8192, samples_per_step=1024, mini_batches=2,
                   train_micro=1, train_token_budget=32768, logprob_micro=1, logprob_token_budget=None, sp=1,
                   shard_degree=8, zero_stage=3, budget_capped_by_batch=True, remove_padding=True, grad_ckpt=True,
                   param_offload=False, optimizer_offload=False, need_ref=False, need_critic=False, critic_micro=1,
                   entropy_chunking=False, entropy_checkpointing=False, engine="vllm", rollout_tp=1,
                   gpu_memory_utilization=0.85, enforce_eager=True, free_cache_engine=True, max_num_seqs=1024,
                   max_num_batched_tokens=8192)
    assert balanced_split_tokens(plan, 32768, 64) == 4 * 9216
    assert micro_tokens(plan, 1, 32768, 64) == 4 * 9216
    assert micro_tokens(plan, 1, 32768 * 8, 64) == 22 * 9216  # 3 micro batches of 22, 21 and 21
    assert micro_tokens(plan, 1, 32768, 3) == 3 * 9216  # a share under the budget is one micro batch
    assert micro_tokens(plan.replace(packed_sum_z=1.0), 1, 32768, 64) <= 32768  # typical lengths: the cap


def _plan_model(name: str):
    from rlbatch_solver.catalog.models import load_model

    return load_model(name)


def _plan_gpu(name: str):
    from rlbatch_solver.catalog.gpus import load_gpu

    return load_gpu(name)


def rb_check(c: mc.Case, framework: str):
    """``check`` of a corpus case under another release."""
    import rlbatch_solver as rb

    return rb.check(c.args, framework=framework, gpus=c.gpus, model=c.model, gpu=c.gpu, length_fraction=c.length_fraction)


def test_verl_0_6_1_starts_its_engine_for_prompt_plus_response_not_the_model_context():
    """verl 0.6.1 (0.5.0, which the DeepSeek-V3 256 x H100 script ran, alike) builds its in-process vLLM with
    max_model_len = rollout.max_model_len or prompt + response (workers/rollout/vllm_rollout/vllm_rollout_spmd.py
    vLLMRollout.__init__), and its rollout servers with prompt + response whatever it says (vllm_async_server.py
    vLLMHttpServerBase.__init__); 0.7.1 on take the model's max_position_embeddings. DeepSeek-V3's 163,840 tokens of
    MLA latent (10.7 GiB) do not fit the 6.4 GiB of KV that 0.6 of an H100 leaves beside the TP-32 weights; the
    script's 6,144 do."""
    c = _case("verl-megatron_example_deepseek_v3_grpo_256xh100")
    assert c.framework == "verl-megatron==0.6.1" and c.outcome == "ran"
    r = _check(c.name)
    assert r.memory.verdict("rollout") == "yes" and r.memory.fits
    assert rb_check(c, "verl-megatron").memory.verdict("rollout") == "no"  # 0.9.1: the model's context
    import rlbatch_solver as rb

    told = c.args + ["actor_rollout_ref.rollout.max_model_len=163840"]
    sync = rb.check(told, framework=c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu)
    server = rb.check(told + ["actor_rollout_ref.rollout.mode=async"], framework=c.framework, gpus=c.gpus,
                      model=c.model, gpu=c.gpu)
    assert sync.memory.verdict("rollout") == "no" and server.memory.verdict("rollout") == "yes"


def test_verl_0_1_forks_run_without_gradient_checkpointing_and_keep_the_reference_on_the_gpu():
    """verl 0.1's yaml (and the forks of January 2025: TinyZero, Search-R1, Logic-RL, PRIME) has gradient checkpointing
    off for the actor and the critic, and builds the reference without CPU offload. TinyZero's default 3B PPO recipe ran
    out of memory on 2x H100 and a fork that halves its micro batches ran on 2x A100-80GB: both as the corpus says
    under 0.1.0; under 0.2.0's defaults (checkpointing on) the default recipe would fit."""
    default, halved = _case("verl_tinyzero30_qwen2_5_3b_ppo_2xh100"), _case("verl_tinyzero_jerrywu_fork_qwen2_5_3b_ppo_2xa100_80gb")
    assert default.framework == halved.framework == "verl==0.1.0"
    mem = _check(default.name).memory
    assert not mem.fits and mem.peaks["actor_update"] > mem.capacity_of("actor_update")
    assert "activations" in mem.phases["actor_update"] and "ref params (resident)" in mem.phases["rollout"]
    assert _check(halved.name).memory.fits
    assert rb_check(default, "verl==0.2.0").memory.fits
    assert not _check("verl_prime_59_qwen2_5_7b_rloo_4xa800_bs64").memory.fits


def test_a_small_vllm_budget_starts_where_verls_tuning_table_ran_it():
    """verl's LoRA tuning table runs a 7B at gpu_memory_utilization 0.2 on one 80 GB GPU: vLLM before 0.21 captures its
    CUDA graphs after sizing the KV cache, outside the budget, so the engine starts (we said it could not). At the
    table's release (0.4.0, rollout.enforce_eager True by default) it captures none; with 0.6.1's default it does."""
    c = _case("verl_tuning_lora_7b_bs16_1xh100")
    assert c.framework == "verl==0.4.0"
    own, later = _check(c.name).memory.phases["rollout"], rb_check(c, "verl==0.6.1").memory.phases["rollout"]
    for terms in (own, later):
        assert not any("cannot start" in t for t, b in terms.items() if b > 0), terms
    assert own.get("CUDA graphs (outside budget)", 0) == 0 < later["CUDA graphs (outside budget)"]


def test_verl_from_0_4_computes_the_entropy_in_the_update_when_its_coefficient_is_set():
    """From 0.4 the actor's update computes the entropy (with its gradient, and the cross-entropy then keeps the
    logits) only when actor.entropy_coeff != 0 (0.4.1/0.6.1 dp_actor.py update_policy) or actor.calculate_entropy
    (0.9.1 ray_trainer.py _update_actor). verl's LoRA tuning scripts set 0.001: their update holds 6 bytes per logit,
    not the 2 of the default."""
    import rlbatch_solver as rb
    from rlbatch_solver.errors import InputError

    c = _case("verl_tuning_lora_14b_bs58_2xh100")
    assert "actor_rollout_ref.actor.entropy_coeff=0.001" in c.args
    told = _check(c.name).memory.phases["actor_update"]
    off = [a for a in c.args if "entropy_coeff" not in a] + ["actor_rollout_ref.actor.entropy_coeff=0"]
    plain = rb.check(off, framework=c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu).memory.phases["actor_update"]
    assert "logits+entropy" in told and "logits" in plain and "logits+entropy" not in plain
    assert told["logits+entropy"] == pytest.approx(3 * plain["logits"], rel=0.01)
    asked = rb.check(off + ["actor_rollout_ref.actor.calculate_entropy=true"], framework="verl", gpus=c.gpus,
                     model=c.model, gpu=c.gpu).memory.phases["actor_update"]
    assert "logits+entropy" in asked
    with pytest.raises(InputError):
        rb.check(off[:-1] + ["actor_rollout_ref.actor.entropy_coeff=abc"], framework=c.framework, gpus=c.gpus,
                 model=c.model, gpu=c.gpu)
    # the Megatron actor reads it the same way (0.6.1 megatron_actor.py update_policy); its unfused logits go from
    # 6 to 10 bytes per logit (constants.LOGIT_BYTES["megatron"])
    mg = ["actor_rollout_ref.actor.strategy=megatron", "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2",
          "actor_rollout_ref.rollout.tensor_model_parallel_size=2", "algorithm.adv_estimator=grpo",
          "data.train_batch_size=64", "actor_rollout_ref.actor.ppo_mini_batch_size=32",
          "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4", "trainer.n_gpus_per_node=8"]
    terms = [rb.check(mg + [f"actor_rollout_ref.actor.entropy_coeff={e}"], framework="verl-megatron==0.6.1", gpus=8,
                      model="qwen2.5-7b", gpu="h100").memory.phases["actor_update"] for e in ("0", "0.001")]
    assert terms[1]["logits+entropy"] == pytest.approx(terms[0]["logits"] * 10 / 6, rel=0.01)


def test_verl_padded_path_slices_its_logits_and_never_compiles_the_entropy():
    """TinyZero #62 (verl 0.1 fork, Qwen2.5-1.5B PPO on one A100, micro batch 8 of 256 + 1,024 padded tokens): without
    use_remove_padding verl's actor slices the logits to the response rows before its log-probs and entropy
    (dp_actor.py _forward_micro_batch), flash-attn's cross-entropy copies that non-contiguous slice, and the entropy
    is eager (verl_F.entropy_from_logits, never the compiled one, in 0.1 to 0.9.1). The update held 28 B per logit on
    all 1,280 rows; it holds the bf16 logits on every row and the copy, its gradient (0.1: beside it) and the eager
    entropy's 24 B on the 1,024 response rows. verl 0.6.1 writes the cross-entropy's gradient into its copy, and
    stays eager with use_torch_compile at its default. verl 0.1-0.3's reference pass computes the entropy as well."""
    c = _case("verl_tinyzero62_qwen2_5_1_5b_ppo_1xa100_80gb")
    vocab, micro, rows, resp = 151_936, 8, 256 + 1024, 1024
    logits_mib = lambda per_row, per_resp: micro * vocab * (per_row * rows + per_resp * resp) / 2**20  # noqa: E731
    mem = _check(c.name).memory
    assert mem.phases["actor_update"]["logits+entropy"] == pytest.approx(logits_mib(2, 2 + 2 + 24), abs=1)
    # the no-grad old log-prob: the copy is freed before the eager entropy's 12 B temporaries; verl 0.1-0.3 compute the
    # entropy in the reference pass too (_forward_micro_batch returns it on every call), here 4 sequences a micro batch
    assert mem.phases["old_log_prob"]["logits+entropy"] == pytest.approx(logits_mib(2, 12), abs=1)
    assert mem.phases["ref"]["logits+entropy"] == pytest.approx(logits_mib(2, 12) / 2, abs=1)
    packed = _check_args(c.name, c.args + ["actor_rollout_ref.model.use_remove_padding=True"]).memory
    assert packed.phases["actor_update"]["logits+entropy"] == pytest.approx(logits_mib(6, 0), abs=1)  # compiled
    later = rb_check(replace(c, args=c.args + ["actor_rollout_ref.actor.entropy_coeff=0.001"]), "verl==0.6.1").memory
    assert later.phases["actor_update"]["logits+entropy"] == pytest.approx(logits_mib(2, 2 + 24), abs=1)
    # the 40 GB card of the same report stays out of memory
    assert not _check("verl_tinyzero62_qwen2_5_1_5b_ppo_1xa100_40gb").memory.fits


def test_verl_of_january_2025_scales_its_global_micro_batches_by_n():
    """Logic-RL #8 (verl 0.1 fork, Qwen2.5-7B GRPO on 4 A800, global ppo_micro_batch_size 64, log_prob 160): 4 prompts x
    32 responses ran, 8 x 32 and 4 x 64 ran out of memory. The fork's workers divide the global micro keys by the GPUs
    and multiply them by rollout.n (verl PR #80 to #136, verl/workers/fsdp_workers.py ActorRolloutRefWorker.__init__),
    so every GPU runs its whole share as one micro batch: 32 sequences in the run that ran, 64 in the two that did not
    (all three were priced at 16). At the typical lengths check tells them apart; a 0.1 config naming a per-GPU key is
    dated after #136 and not scaled."""
    vocab, seq = 152_064, 400 + 2048
    per_logit = 2 + 2 + 2  # the bf16 logits, flash-attn's cross-entropy gradient beside them (0.1), the compiled entropy's
    logits_mib = lambda seqs: seqs * seq * vocab * per_logit / 2**20  # noqa: E731
    ran = _check("verl_logicrl8_qwen2_5_7b_grpo_bs4_n32_4xa800").memory
    assert ran.phases["actor_update"]["logits+entropy"] == pytest.approx(logits_mib(32), rel=0.01)
    assert ran.outlook() == "tight" and ran.typical_peaks["actor_update"] < ran.capacity_of("actor_update")
    for name in ("verl_logicrl8_qwen2_5_7b_grpo_bs8_n32_4xa800", "verl_logicrl8_qwen2_5_7b_grpo_bs4_n64_stage2_4xa800"):
        oom = _check(name).memory
        assert oom.phases["actor_update"]["logits+entropy"] == pytest.approx(logits_mib(64), rel=0.01), name
        assert oom.outlook() == "OOM", name
    c = _case("verl_logicrl8_qwen2_5_7b_grpo_bs4_n32_4xa800")
    per_gpu = [a.replace("ppo_micro_batch_size=64", "ppo_micro_batch_size_per_gpu=16") for a in c.args]
    later = _check_args(c.name, per_gpu).memory
    assert later.phases["actor_update"]["logits+entropy"] == pytest.approx(logits_mib(16), rel=0.01)


def test_check_says_what_rollout_n_makes_of_verl_0_1s_global_micro_keys():
    """Logic-RL #8's reporter found that a smaller ppo_micro_batch_size "did not help": check says why, with the
    numbers (64 // 4 GPUs x rollout.n 32 = 512, the GPU's whole mini batch of 64 in one micro batch) and the smallest
    micro batch the fork can run (rollout.n sequences, a global value from 4 to 7). A per-GPU key (after verl PR #136)
    or the dynamic batch leaves nothing to say for that pass, and verl 0.2 does not scale."""
    import rlbatch_solver as rb

    c = _case("verl_logicrl8_qwen2_5_7b_grpo_bs8_n32_4xa800")

    def notes(args, framework="verl==0.1.0"):
        report = rb.check(args, framework=framework, gpus=c.gpus, model=c.model, gpu=c.gpu)
        return [n for n in report.notes if "rollout.n" in n]

    (note,) = notes(c.args)
    assert "actor_rollout_ref.actor.ppo_micro_batch_size 64 -> 512, the GPU's whole mini batch of 64 sequences" in note
    # 8 prompts a step, mini batches of 256: one short update a step, no others to be shorter than
    short = next(w for w in rb.check(c.args, framework=c.framework).warnings if w.rule == "verl.advice.short_mini_batch")
    assert "the last one (the only one, for fewer prompts than a mini batch) is short" in short.message
    assert "actor_rollout_ref.rollout.log_prob_micro_batch_size 160 -> 1,280, the GPU's whole batch of 64" in note
    assert "// 4 data-parallel GPUs x rollout.n 32" in note
    assert "smallest micro batch is rollout.n = 32 sequences (a global value from 4 to 7)" in note
    small = [a.replace("ppo_micro_batch_size=64", "ppo_micro_batch_size=4") for a in c.args]
    (note,) = notes(small)
    assert "ppo_micro_batch_size 4 -> 32 sequences;" in note
    dynamic = [*c.args, "actor_rollout_ref.actor.use_dynamic_bsz=True"]  # the log-prob passes follow it
    assert notes(dynamic) == []
    (note,) = notes([*dynamic, "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=False"])
    assert "ppo_micro_batch_size" not in note and "rollout.log_prob_micro_batch_size 160 -> 1,280" in note
    assert "ref.log_prob_micro_batch_size" not in note
    per_gpu = [a.replace("ppo_micro_batch_size=64", "ppo_micro_batch_size_per_gpu=16") for a in c.args]
    assert notes(per_gpu) == []
    assert notes(c.args, framework="verl==0.2.0") == []


def test_verl_0_1_reads_the_n_scaling_inputs_only_where_a_global_micro_key_can_scale():
    """The n-scaled micro batch (verl 0.1) is capped by the GPU's share of the batch and dated by every per-GPU key, so a
    phase whose global key is given, with n above 1, reads them; a search that sets the per-GPU keys itself does not
    (``recommend -f verl==0.1.0`` from scratch weighed 225,792 combinations in one rule and was refused)."""
    from rlbatch_solver.frameworks.verl import cost

    search = {"n": [8], "train_batch_size": [1024], "logprob_micro_per_gpu": [1, 2, 4], "actor_micro_per_gpu": [1, 2]}
    unread = cost.unread_n_scaled("old_log_prob", "mem", search)
    assert {"actor_micro_per_gpu", "critic_micro_per_gpu", "train_batch_size", "n"} <= unread
    assert "logprob_micro_per_gpu" not in unread
    given = {**search, "logprob_micro": [160]}
    assert not {"actor_micro_per_gpu", "train_batch_size", "n"} & cost.unread_n_scaled("old_log_prob", "mem", given)
    assert {"train_batch_size", "n"} <= cost.unread_n_scaled("old_log_prob", "mem", {**given, "n": [1]})


def test_lora_under_fsdp_gathers_its_frozen_units_without_their_gradient():
    """Under LoRA the base is frozen: FSDP gathers a unit for the input gradient in backward but reduce-scatters no
    gradient of it (torch fsdp _post_backward_hook runs for parameters that received one). The 14B LoRA run of verl's
    tuning table holds two gathered units in its update, the same as in its no-grad passes; full fine-tuning adds the
    unit's bf16 gradient and its fp32 copy."""
    import rlbatch_solver as rb

    c = _case("verl_tuning_lora_14b_bs58_2xh100")
    mem = _check(c.name).memory
    gather = "FSDP all-gathered layers"
    assert mem.phases["actor_update"][gather] == mem.phases["old_log_prob"][gather]
    full = [a for a in c.args if "lora_" not in a and "target_modules" not in a]
    upd = rb.check(full, framework=c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu).memory.phases["actor_update"]
    # beside the logits, the lm_head's bf16 gradient (the root unit is reduced at the backward's end:
    # test_verl_fsdp_holds_the_head_gradient_to_the_end_and_reduces_the_embedding_there)
    from rlbatch_solver.catalog.models import load_model

    head = load_model(c.model).lm_head_params()
    assert upd[gather] == pytest.approx(mem.phases["old_log_prob"][gather] + 2 * head / 2**20, abs=1)


def test_two_runs_priced_over_at_their_limits_fit_at_shorter_lengths_no_source_states():
    """OpenRLHF #756's Llama-3-8B (0.5.9.post1, packed micro batches of 16) and TRL #4660's naive fp16 Qwen2-7B (TRL
    0.26, no prompt limit: the 512-token scenario prompt) ran, and both are over at the lengths we price them at. Each
    fits at shorter lengths (docs/accuracy.md, "Maximum against actual lengths"): #756 at a fifth of its limits, the
    notebook with a prompt of 300 tokens; the notebook's 40 GB twin stays out of memory at any prompt (its fp16
    weights and Adam moments alone exceed the card), so neither miss is a term that the other side would lose."""
    import rlbatch_solver as rb

    c = _case("openrlhf_756_llama3_8b_ppo_8xa100_40g")
    verdicts = {f: rb.check(c.args, framework=c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu,
                            length_fraction=f).memory.verdict() for f in (0.2, 0.25, 0.3)}
    assert verdicts == {0.2: "yes", 0.25: "tight", 0.3: "no"}
    for name, fits in (("trl_nb4660_qwen2_7b_grpo_naive_1xa100_80gb", True),
                       ("trl_nb4660_qwen2_7b_grpo_naive_1xa100_40gb", False)):
        c = _case(name)
        assert not _check(name).memory.fits, name
        short = rb.check(c.args + ["--max_prompt_length", "300"], framework=c.framework, gpus=c.gpus, model=c.model,
                         gpu=c.gpu).memory
        assert short.fits is fits, name
        if fits:
            assert short.peaks["actor_update"] / 1024 == pytest.approx(73.4, abs=0.3)


def test_a_lora_bisection_at_gsm8k_lengths_is_tight_not_fits():
    """verl's LoRA tuning table bisected its batch on GSM8K (512 + 1,024 tokens; 14B on 2x H100: 58 per GPU ran, 59
    did not). The config allows 1,024-token answers, at which neither fits; at the GSM8K profile's lengths both fit:
    check says "tight" for both sides of the edge, never a plain "fits" (the source states no lengths, so the corpus
    prices them at the maximum)."""
    for name in ("verl_tuning_lora_14b_bs58_2xh100", "verl_tuning_lora_14b_bs59_2xh100"):
        mem = _check(name).memory
        assert not mem.fits and mem.outlook() == "tight", name
        assert mem.lengths["profile"] == "gsm8k", name
        assert mem.typical_peaks["actor_update"] < mem.capacity_of("actor_update") < mem.peaks["actor_update"], name


def test_a_lora_reference_pass_loads_the_offloaded_actor_it_runs_on():
    """A LoRA actor is its own reference (adapter disabled). verl 0.4.0 fsdp_workers.py compute_ref_log_prob calls
    compute_log_prob, which loads the offloaded FSDP actor back to the GPU (load_fsdp_model_to_gpu) for the pass:
    the 14B LoRA tuning run (param_offload=True) holds its fp32 shard in the reference pass as in the old log-prob
    pass; it was priced without any weights."""
    mem = _check("verl_tuning_lora_14b_bs58_2xh100").memory
    ref, old = mem.phases["ref"], mem.phases["old_log_prob"]
    assert ref["params (sharded)"] == old["params (sharded)"] > 27 * 1024  # 14.8e9 x 4 B / 2 GPUs
    # the same micro batch and no entropy in the no-grad pass (compiled: fused): the two passes peak alike
    assert mem.peaks["ref"] == pytest.approx(mem.peaks["old_log_prob"], rel=0.02)


def test_the_megatron_critic_packs_no_more_than_its_share_of_the_batch():
    """verl's Megatron PPO example "runnable on H20 * 8" (deepseek-llm-7b): at the release it was published for (0.4.1,
    the legacy critic splits 4 samples per micro batch) it fits. verl 0.9.1's critic packs by a 32,768-token budget, but
    a micro batch never holds more than a rank's share of the critic's mini batch: the later version of the script (256
    prompts, mini batch 64, two nodes) packs 4 samples of 1,536 tokens, not the whole budget (priced at the budget, the
    critic update came to 215 GiB)."""
    import rlbatch_solver as rb

    c = _case("verl-megatron_example_deepseek_llm_7b_ppo_gsm8k_8xh20")
    assert c.framework == "verl-megatron==0.4.1" and _check(c.name).memory.fits
    later = {"data.train_batch_size": "256", "actor_rollout_ref.actor.ppo_mini_batch_size": "64", "trainer.nnodes": "2",
             "actor_rollout_ref.rollout.gpu_memory_utilization": "0.8", "actor_rollout_ref.rollout.tensor_model_parallel_size": "2"}
    args = [a for a in c.args if a.split("=")[0] not in later] + [f"{k}={v}" for k, v in later.items()]
    terms = rb.check(args, framework="verl-megatron", model=c.model, gpu=c.gpu).memory.phases["critic_update"]
    acts = sum(b for t, b in terms.items() if t.startswith("activations"))
    budget = rb.check(args + ["data.train_batch_size=1024", "actor_rollout_ref.actor.ppo_mini_batch_size=1024"],
                      framework="verl-megatron", model=c.model, gpu=c.gpu).memory.phases["critic_update"]
    assert acts * 4 < sum(b for t, b in budget.items() if t.startswith("activations")), (terms, budget)
    assert acts < 30 * 1024, terms


def test_a_trl_config_of_an_older_release_runs_vllm_as_that_release_did():
    """X-R1 (TRL 0.14, its record pinned trl==0.14.0): --use_vllm with vllm_device auto put vLLM on a GPU of its own;
    read with 1.16's colocate default, the engine's budget sat on the training GPUs and the run that ran was called out
    of memory."""
    r = _check("trl_xr1_qwen2_5_1_5b_grpo_4xrtx3090")
    assert r.values["vllm_server"] is True
    assert any("vLLM in the main process on a GPU of its own" in n for n in r.notes)
    assert "rollout engine (kept between rollouts)" not in r.memory.phases["actor_update"]


def test_trl_0_14s_vllm_device_engine_sizes_its_kv_cache_from_total_memory_with_its_weights_on_top():
    """TRL 0.14 and 0.15 start ``LLM(device=vllm_device)`` in training rank 0's process (current GPU cuda:0); vLLM
    0.7.0-0.7.2 (X-R1 pins 0.7.1, TRL 0.15.2's extra 0.7.2) profile the current GPU, so the engine sees none of its own weights (TRL #2788: "the model size
    would always be 0") and its KV cache is util x total, weights, activations and CUDA graphs on top. TRL #2688
    (4 x L4, Llama-3.2-1B at the default share 0.9): out of memory in ``LLM(...)``; the fix given there, 0.7, starts.
    We had the weights inside the share: 0.9 fitted."""
    import rlbatch_solver as rb

    r = _check("trl_xr1_qwen2_5_3b_grpo_4xrtx3090")  # ran at 0.5 of a 24 GiB RTX 3090
    rollout = r.memory.phases["rollout"]
    total = r.memory.total_mib
    assert rollout["vLLM KV cache"] == pytest.approx(0.5 * total, rel=0.01)
    assert rollout["vLLM weights (bf16, /TP)"] > 5 * 1024 and rollout["CUDA graphs (outside budget)"] > 0
    assert r.memory.peaks["rollout"] > 0.5 * total + 5 * 1024 and r.memory.fits
    args = ["--num_processes", "3", "--use_vllm", "true", "--bf16", "true", "--vllm_gpu_memory_utilization"]
    peak = {}
    for gmu in ("0.9", "0.7"):
        m = rb.check(args + [gmu], framework="trl==0.14.0", gpus=4, gpu="l4", model="llama3.2-1b").memory
        peak[gmu] = (m.peaks["rollout"], m.capacity_of("rollout"))
    assert peak["0.9"][0] > peak["0.9"][1] and peak["0.7"][0] < peak["0.7"][1], peak
    # and fix answers what TRL's maintainer did: a smaller share (the checkpointed bf16 update fits as it is)
    small = ["--per_device_train_batch_size", "1", "--num_generations", "4", "--gradient_checkpointing", "true",
             "--torch_dtype", "bfloat16"]
    fixed = rb.fix(args + ["0.9"] + small, framework="trl==0.14.0", gpus=4, gpu="l4", model="llama3.2-1b",
                   time_limit_s=20)
    assert [d[0] for d in fixed.diff] == ["vllm_gpu_memory_utilization"], fixed.diff
    # 0.15.2 pins vLLM 0.7.2 (its `vllm` extra): the same engine; 0.17.0 serves with `trl vllm-serve` (vLLM >= 0.8.3,
    # its own process on its own GPU), whose budget holds the weights (its CUDA graphs outside it)
    from rlbatch_solver.frameworks.trl.versions import RELEASES

    assert [v for v, r in RELEASES.items() if r.engine_kv_of_total] == ["0.15.2", "0.14.0"]
    m = rb.check(args + ["0.9"], framework="trl==0.15.2", gpus=4, gpu="l4", model="llama3.2-1b").memory
    assert m.peaks["rollout"] > m.capacity_of("rollout")
    m = rb.check(args + ["0.9"], framework="trl==0.17.0", gpus=4, gpu="l4", model="llama3.2-1b").memory
    rollout = m.phases["rollout"]
    assert m.peaks["rollout"] - rollout["CUDA graphs (outside budget)"] <= 0.9 * m.total_mib + 1, rollout


def test_trl_before_1_0_runs_a_vllm_that_captures_its_cuda_graphs_outside_its_share():
    """The `vllm` extra of every TRL release before 1.0 allows only vLLM before 0.21 (0.29.1: <0.13; 0.18.2: >=0.8.3),
    which captures its CUDA graphs after sizing the KV cache, outside gpu_memory_utilization; 1.16.0's (0.22-0.31)
    counts them inside. open-r1's codeforces recipe (TRL 0.18, `trl vllm-serve` at 0.9 of an H100) ran."""
    from rlbatch_solver.frameworks.trl.versions import RELEASES

    assert [v for v, r in RELEASES.items() if r.vllm_graphs_in_budget] == ["1.16.0"]
    r = _check("trl_open_r1_qwen2_5_coder_7b_codeforces_2x8xh100")
    rollout = r.memory.phases["rollout"]
    assert rollout["CUDA graphs (outside budget)"] > 0 and "vLLM CUDA graphs (in budget)" not in rollout
    assert r.memory.peaks["rollout"] > 0.9 * r.memory.total_mib and r.memory.fits


def test_trl_0_14_runs_the_reference_beside_the_policys_graph_and_the_gathered_model():
    """TRL 0.14.0's compute_loss runs the reference forward after the policy's, whose graph waits for the backward, and
    under ZeRO-3 with vLLM keeps the state_dict it gathered for the weight load (every parameter, 16 bits) until it
    returns. X-R1 #14 (Qwen2.5-3B, ZeRO-3 offload, 4 x A10): out of memory with a DeepSpeed fetch in the traceback;
    the two terms add 7.7 GiB to its reference pass, still 10 of 20.4 GiB: the record stays a miss (its RTX 3090 twin,
    the same recipe with 1.4 GiB more per GPU, ran)."""
    r = _check("trl_xr1_14_qwen2_5_3b_grpo_4xa10")
    ref = r.memory.phases["ref"]
    held = next(v for t, v in ref.items() if t.startswith("whole model gathered"))
    graph = next(v for t, v in ref.items() if t.startswith("policy forward's graph"))
    assert held == pytest.approx(2 * 3.09e9 / 2**20, rel=0.02)
    # 4 completions x 1024 response rows x 151,936 logits of 2 bytes, and the 36 layers' checkpoints
    assert graph > 4 * 1024 * 151936 * 2 / 2**20
    assert r.memory.peaks["ref"] < r.memory.capacity_of("ref")
    # without vLLM nothing is gathered for a weight load (open-r1 #100, ZeRO-3, transformers' generate)
    plain = _check("trl_openr1_100_distill_qwen_7b_grpo_zero3_8xh100").memory.phases["ref"]
    assert not any(t.startswith("whole model gathered") for t in plain)
    assert any(t.startswith("policy forward's graph") for t in plain)
    # 0.15 computes the reference log-probs before the loss (_prepare_inputs), the weight load's state_dict freed
    c = _case("trl_xr1_14_qwen2_5_3b_grpo_4xa10")
    import rlbatch_solver as rb

    later = rb.check(c.args, framework="trl==0.15.2", gpus=c.gpus, model=c.model, gpu=c.gpu).memory.phases["ref"]
    assert not any(t.startswith(("whole model gathered", "policy forward's graph")) for t in later)


def test_host_ram_is_checked_against_the_node():
    """OpenRLHF #332: a 70B PPO with CPU Adam on 2 nodes of 8 A800 with 1,600 GB each ran out of host memory at the
    first optimizer step: the offloaded fp32 master weights, moments and gradients (DeepSpeed's 16 B per parameter,
    times its estimators' 1.5) exceed the node."""
    r = _check("openrlhf_332_llama2_70b_ppo_2x8xa800")
    assert r.host is not None and r.host.fits is False
    assert any(v.rule == "openrlhf.memory.host" and v.severity.value == "error" for v in r.violations)


def test_check_json_carries_the_verdict_margins_and_typical_peaks():
    r = _check("verl_tuning_lora_14b_bs58_2xh100")
    d = r.to_dict()["memory"]
    assert isinstance(d["fits"], bool) and d["outlook"] in ("fits", "tight", "OOM")
    for phase, p in d["phases"].items():
        assert p["margin_gib"] == pytest.approx((p["capacity_mib"] - p["peak_mib"]) / 1024, abs=0.01)
        assert p["typical_peak_mib"] <= p["peak_mib"]
        assert p["outlook"] in ("fits", "tight", "OOM")
    # the JSON's verdict fields against the numbers it carries, not against the methods that wrote them: a phase fits
    # at the data's lengths where it is over the line at the maximum ones and its typical peak is under the line by
    # more than the model's observed error (e^-error_log of the usable memory), typical peaks judged by
    margin = math.exp(-d["error_log"])
    for phase, p in d["phases"].items():
        over = p["peak_mib"] > p["capacity_mib"]
        assert p["fits"] is (not over)
        assert p["fits_at_data"] is (d["typical_judged"] and over and p["typical_peak_mib"] <= p["capacity_mib"] * margin)
    assert d["fits"] is all(p["fits"] for p in d["phases"].values())
    assert d["fits_judged"] is all(p["fits"] or p["fits_at_data"] for p in d["phases"].values())
    # the 14B edge at 58 sequences: over at the maximum lengths, within the error at GSM8K's (73.8 of 74.7 GiB)
    a = d["phases"]["actor_update"]
    assert d["typical_judged"] and a["peak_mib"] > a["capacity_mib"] and not a["fits_at_data"]
    assert d["fits"] is False and d["fits_judged"] is False and a["outlook"] == "tight"


def test_fix_keeps_one_observed_error_of_headroom_when_as_few_keys_buy_it():
    """fix's nearest repair left the log-prob pass within 18% of the usable memory (tight): a repair of as many keys
    keeps the headroom, and fix takes it and says so."""
    import math

    from rlbatch_solver.commands.check import memory_error_log

    args = ["data.train_batch_size=64", "data.max_prompt_length=880", "data.max_response_length=1280",
            "actor_rollout_ref.rollout.n=8", "actor_rollout_ref.actor.ppo_mini_batch_size=32",
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=32",
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=64",
            "actor_rollout_ref.actor.fsdp_config.use_torch_compile=False", "algorithm.adv_estimator=grpo"]
    import rlbatch_solver as rb

    r = rb.fix(args, framework="verl", gpus=4, model="qwen2.5-1.5b", gpu="rtx4090")
    assert r.after is not None and any("keeps that headroom" in n for n in r.notes)
    changed = {a.split("=")[0]: a for a in r.native_after}
    fixed = [changed.pop(a.split("=")[0], a) for a in args] + list(changed.values())
    after = rb.check(fixed, framework="verl", gpus=4, model="qwen2.5-1.5b", gpu="rtx4090").memory
    limit = math.exp(-memory_error_log("verl"))
    assert all(after.peaks[p] <= after.capacity_of(p) * limit for p in after.peaks if p != "rollout")
    assert after.outlook() == "fits"


def test_recommend_fix_and_sweep_rows_report_the_nodes_ram():
    import rlbatch_solver as rb
    from rlbatch_solver.scenario import Scenario
    from rlbatch_solver.sweep.summary import summary_rows

    sc = Scenario(framework="verl", gpu="h100", gpus_per_node=8, model="qwen2.5-7b", algorithm="grpo", n=8,
                  host_mem_gib=128)
    rep = rb.recommend(sc, top=1, time_limit_s=20)
    assert rep.host is not None and rep.host.ram_gib == 128 and rep.host.ram_from == "given" and rep.host.fits
    # 64 GiB: every config needs at least 64.4 (8 worker processes, rank 0's fp32 copy, the Ray driver): none is
    # answered, the least estimate says why (commands/host_fit.py)
    rep = rb.recommend(replace(sc, host_mem_gib=64), top=1, time_limit_s=20)
    assert not rep.choices and rep.host_unfit is not None and rep.host_unfit.ram_gib == 64
    assert rep.host_unfit.peak_gib > rep.host_unfit.limit_gib
    offloaded = ["data.train_batch_size=256", "actor_rollout_ref.rollout.n=8",
                 "actor_rollout_ref.actor.ppo_mini_batch_size=64", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
                 "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8",
                 "actor_rollout_ref.actor.fsdp_config.param_offload=True",
                 "actor_rollout_ref.actor.fsdp_config.optimizer_offload=True", "algorithm.adv_estimator=grpo"]
    fixed = rb.fix(offloaded, framework="verl", gpus=8, model="qwen2.5-7b", gpu="h100", host_mem_gib=64)
    assert fixed.host.fits is False and fixed.to_dict()["host_memory"]["fits"] is False
    row = {"id": 0, "point": {"model": "m", "algorithm": "grpo", "gpu": "h100", "gpus": 8}, "status": "ok",
           "tokens_per_s": 1.0, "host_memory": {**fixed.host.to_dict()}}
    assert summary_rows([row])[0]["status"] == "host RAM"


def test_openrlhf_update_holds_the_fp32_logits_beside_flash_attns_gradient():
    """OpenRLHF #908: a 7B GRPO on 16 H20 at 26k-token sequences ran at micro_train_batch_size 1 and ran out of memory
    at 2. The update keeps the fp32 logits (training_step holds the forward's output until backward) while
    flash-attn's cross-entropy backward writes a new fp32 gradient and the fp32 cast hands a bf16 one to the lm_head:
    10 B per logit (we priced 8, and called micro 2 a fit)."""
    from rlbatch_solver.costmodel import constants as C

    assert C.LOGIT_BYTES["openrlhf"][2] == 4 + 4 + 2
    ran, oom = _check("openrlhf_908_qwen2_5_7b_grpo_16xh20_micro1"), _check("openrlhf_908_qwen2_5_7b_grpo_16xh20_micro2")
    assert ran.memory.fits and not oom.memory.fits
    assert oom.memory.peaks["actor_update"] > oom.memory.capacity_of("actor_update")


def test_openrlhf_engines_hold_their_cuda_graphs_and_a_whole_weight_beside_their_budget():
    """OpenRLHF #406 (0.4.0, Llama-3-8B PPO on 8 RTX 4090, two vLLM engines at TP 2): out of memory. Its vLLM 0.4.2
    uses the default share 0.9 of 24 GiB, captures its CUDA graphs after sizing the KV cache (outside the share,
    before vLLM 0.21), and at each weight sync every engine rank receives each weight whole into a new tensor
    (vllm_worker_wrap.py WorkerWrap.update_weight) with its KV cache allocated: the 1 GiB embedding on top. We had
    the graphs inside the share and no sync buffer, 0.6 GiB under the line."""
    from rlbatch_solver.frameworks.openrlhf.versions import RELEASES

    assert [RELEASES[v].vllm_graphs_in_budget for v in ("0.11.2", "0.6.2", "0.5.9", "0.4.0")] == [True, False, False,
                                                                                                  False]
    r = _check("openrlhf_406_llama3_8b_ppo_8xrtx4090")
    rollout = r.memory.phases["rollout"]
    assert rollout["CUDA graphs (outside budget)"] > 0
    assert rollout["weight-sync receive buffer (outside budget)"] == pytest.approx(
        2 * 128256 * 4096 / 2**20, rel=0.01)
    assert not r.memory.fits and r.memory.peaks["rollout"] > r.memory.capacity_of("rollout")
    # 0.11.2 with sleep wakes only the weights for the sync (ppo_trainer.py broadcast_to_vllm): no buffer on the KV;
    # the releases lmm-r1's flags date it to (--flash_attn, --vllm_enable_sleep: 0.5.9 to 0.7.5, the oldest 0.5.9)
    # wake the engines fully (trainer/ppo_trainer.py: wake_up())
    c = _case("openrlhf_lmmr1_27_72b_rloo_4x8xa800")
    assert "--vllm_enable_sleep" in c.args and c.framework == "openrlhf"
    dated = _check(c.name)
    assert dated.version == "0.5.9" and any("weight-sync" in t for t in dated.memory.phases["rollout"])
    import rlbatch_solver as rb

    r = rb.check(c.args, framework="openrlhf==0.11.2", gpus=c.gpus, model=c.model, gpu=c.gpu)
    assert not any("weight-sync" in t for t in r.memory.phases["rollout"])


def test_an_ms_swift_rollout_server_receives_a_whole_weight_bucket_beside_its_kv_cache():
    """ms-swift #4486 (server mode, Qwen2.5-3B, `swift rollout` on 2 of 8 H20): the trainer sends the weights in
    flat buckets of 512 MiB (SWIFT_UPDATE_WEIGHTS_BUCKET_SIZE) and every server worker receives one whole into a new
    tensor (rollout.py update_flattened_params) while its KV cache is allocated: on top of the server's share. TRL's
    server (priced with the same terms) is left out. Read at 3.7.2, the first release whose trainer takes the server
    from --vllm_server_base_url alone (the report's own 3.5.0 runs colocated: the test above)."""
    import rlbatch_solver as rb
    from rlbatch_solver.frameworks.swift.cost import SYNC_BUCKET_BYTES

    c = _case("swift_4486_qwen2_5_3b_grpo_full_server_8xh20")
    r = rb.check(c.args, framework="swift==3.7.2", gpus=c.gpus, model=c.model, gpu=c.gpu)
    # a weight larger than a bucket goes alone: Qwen2.5-3B's 594 MiB embedding
    buffer = r.memory.phases["rollout"]["weight-sync receive buffer (outside budget)"]
    assert buffer == pytest.approx(max(SYNC_BUCKET_BYTES / 2**20, 2 * 151936 * 2048 / 2**20), abs=1)
    colocated = _check("swift_example_v3.10.0_moe_full_qwen3_30b_a3b_full_colocate_8x80g")
    assert "weight-sync receive buffer (outside budget)" not in colocated.memory.phases["rollout"]


def test_openrlhf_0_5_packed_log_probs_take_the_whole_micro_batch_as_one_row():
    """OpenRLHF #756 (0.5.9, Qwen2.5-7B PPO on 8 A100 40GB, --packing_samples, 32-sample micro rollout batches): out
    of memory "when calculating reference logits". 0.5.9's log_probs_from_logits loops over rows "to reduce peak mem
    consumption", but a packed micro batch is one row, so torch's logsumexp holds its difference at full size beside
    the fp32 logits (its exp works in place): 8 B per logit in the reference and old log-prob forwards, as measured
    on one H200 (benchmarks/results/h200-2026-11-26 "forward: fp32 logsumexp": 8.0 at 2K-16K tokens), not the 12 a
    reading of torch <= 1.6's logsumexp gave. The Llama-3-8B run of the same thread ran: its old log-prob forward of 32
    packed samples at their 2,048-token limits is now 62.6 GiB of logits (was 93.9), 80.5 GiB in all (was 111.9) of
    37: still over at max lengths (it ran on the data's shorter samples)."""
    import rlbatch_solver as rb
    from rlbatch_solver.costmodel import constants as C

    assert C.LOGIT_BYTES["openrlhf-0.5-packed"][:2] == (8, 8) and C.LOGIT_BYTES["openrlhf-0.5"][:2] == (6, 6)
    c = _case("openrlhf_756_qwen2_5_7b_ppo_8xa100_40g")
    packed = _check(c.name)
    unpacked = rb.check([a for a in c.args if a != "--packing_samples"], framework=c.framework, gpus=c.gpus,
                        model=c.model, gpu=c.gpu)
    assert packed.memory.phases["ref"]["logits"] == pytest.approx(8 / 6 * unpacked.memory.phases["ref"]["logits"])
    assert packed.memory.verdict("ref") == "no"
    ran = _check("openrlhf_756_llama3_8b_ppo_8xa100_40g").memory
    logits = ran.phases["old_log_prob"]["logits+entropy"] / 1024
    assert logits == pytest.approx(32 * 2048 * 128256 * 8 / 2**30, rel=0.01)
    assert ran.peaks["old_log_prob"] / 1024 == pytest.approx(80.5, abs=0.5)


def test_openrlhf_non_ray_launcher_holds_every_model_on_every_gpu():
    """OpenRLHF #858 (4 A40 48GB, `deepspeed --module openrlhf.cli.train_ppo`, Llama-3-8B PPO with its reward model)
    and #277 (4 A800, `torchrun --nproc_per_node=4 train_ppo.py`, CodeLlama-13B) ran out of memory; read as
    train_ppo_ray's groups of their own, they fit (19.4 of 44.6 and 51.5 of 75 GiB). train_ppo.py (0.4.0.post2 and
    0.5.9 ``train``) builds the actor, the critic, the reward model and the reference model in every rank of one
    DeepSpeed world and ``strategy.prepare``s them all: each GPU holds the four, beside the phase's own work. Every
    wheel before 0.6.2 has train_ppo.py (0.6.1 too, judged by 0.6.2's pack); 0.6.2's has none: a command naming it is
    refused there, by the release the user named."""
    import rlbatch_solver as rb
    from rlbatch_solver.errors import InputError

    for name in ("openrlhf_858_llama3_8b_ppo_deepspeed_4xa40", "openrlhf_277_codellama_13b_ppo_deepspeed_4xa800"):
        mem = _check(name).memory
        assert not mem.fits and mem.verdict() == "no", name
        update = mem.phases["actor_update"]
        assert {"critic params+optimizer (resident)", "ref params (resident)",
                "reward model params (resident)"} <= set(update), name
    c = _case("openrlhf_858_llama3_8b_ppo_deepspeed_4xa40")
    # four Llama-3-8B bf16 copies (the reward model and the critic without the lm_head): 58 GiB before any work
    update = _check(c.name).memory.phases["actor_update"]
    resident = (update["params (sharded)"] + update["critic params+optimizer (resident)"] + update["ref params (resident)"]
                + update["reward model params (resident)"]) / 1024
    assert resident == pytest.approx(58.0, abs=0.5)
    ray = rb.check([a for a in c.args if a not in ("deepspeed", "--module", "openrlhf.cli.train_ppo")],
                   framework=c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu).memory
    assert ray.fits
    with pytest.raises(InputError, match="OpenRLHF 0.6.2 has no"):
        rb.check(c.args, framework="openrlhf==0.6.2", gpus=c.gpus, model=c.model, gpu=c.gpu)
    for named in ("0.6.1", "0.6.1.post1", "0.6.0"):
        six = rb.check(c.args, framework=f"openrlhf=={named}", gpus=c.gpus, model=c.model, gpu=c.gpu).memory
        assert not six.fits and "reward model params (resident)" in six.phases["actor_update"], named


def test_openrlhf_non_ray_launcher_is_not_judged_by_train_ppo_rays_own_checks():
    """train_ppo.py (0.5.9 ``__main__``: parse_args, then only rloo's n > 1 assert) makes none of train_ppo_ray's
    placement-group, colocation or driver checks, and builds every model's DeepSpeed config over its one world: #858's
    command breaks only memory rules, where train_ppo_ray's defaults (groups of 8, --vllm_num_engines unset) would
    break six others. DeepSpeed's own batch check stays: train.batch_size 4 over a world of 6 ranks breaks it."""
    import rlbatch_solver as rb

    c = _case("openrlhf_858_llama3_8b_ppo_deepspeed_4xa40")
    for framework, gpus in ((c.framework, c.gpus), ("openrlhf==0.4.0", 2)):
        rules = {v.rule for v in rb.check(c.args, framework=framework, gpus=gpus, model=c.model, gpu=c.gpu).violations
                 if v.severity.value == "error"}
        assert rules and all(r.startswith("openrlhf.memory.") for r in rules), (framework, rules)
    ray = rb.check([a for a in c.args if a not in ("deepspeed", "--module", "openrlhf.cli.train_ppo")],
                   framework=c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu).violations
    assert {"openrlhf.ray.gpu_budget", "openrlhf.driver.vllm_num_engines_required"} <= {v.rule for v in ray}
    small = rb.check(c.args, framework=c.framework, gpus=c.gpus, model="qwen2.5-0.5b", gpu="a100-80g")
    assert small.valid, [v.rule for v in small.violations]
    six = rb.check(c.args, framework=c.framework, gpus=6, model="qwen2.5-0.5b", gpu="a100-80g").violations
    assert "openrlhf.deepspeed.actor_batch" in {v.rule for v in six}


def test_openrlhf_non_ray_launcher_is_one_reading_for_rules_and_cost_model():
    """The rules (framework.py to_values) and the cost model (cost.py one_world, make_plan) read train_ppo.py's one
    world the same way; they differed on --colocate_critic_reward (False vs True). train_ppo_ray.py (0.6.1 main) gives
    the critic and reward model a placement group of GPUs of their own under --colocate_critic_reward even with
    --colocate_all_models, which one world is not: with it the rules' GPU count would add the critic's world. #858's
    4 GPUs: every group is the actor's world of 4, the GPUs the rules' placement asks for are the GPUs every phase's
    plan prices (and its node split), the note says the world, and a launcher whose --num_gpus is not --gpus is
    flagged. A launcher's node split (torchrun --nnodes 2 --nproc_per_node 4) is kept, by the rules and the plans."""
    import rlbatch_solver as rb
    from rlbatch_solver.catalog.gpus import load_gpu
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.commands.script_args import read_script_args
    from rlbatch_solver.costmodel.phase import Phase
    from rlbatch_solver.frameworks.openrlhf.cost import make_plan
    from rlbatch_solver.frameworks.openrlhf.rules import RULESET

    c = _case("openrlhf_858_llama3_8b_ppo_deepspeed_4xa40")
    card, gpu = load_model(c.model), load_gpu(c.gpu)

    def worlds(values):
        """(the GPUs the rules' placement asks for, per node), and each phase's plan's."""
        rules = (RULESET.full_env(values)["gpus_needed"], values["actor_gpus_per_node"])
        plans = {(p.n_gpus, p.gpus_per_node) for p in (make_plan(values, phase, card, gpu) for phase in
                 (Phase.ROLLOUT, Phase.REF, Phase.ACTOR_UPDATE, Phase.CRITIC_UPDATE))}
        return rules, plans

    report = rb.check(c.args, framework=c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu)
    values = report.values
    assert values["colocate_all"] and not values["colocate_critic_reward"] and not values["vllm_num_engines"]
    assert {values[f"{g}_nnodes"] * values[f"{g}_gpus_per_node"] for g in ("actor", "ref", "critic", "reward")} == {4}
    assert worlds(values) == ((4, 4), {(4, 4)})
    assert "openrlhf.cli.train_ppo: checked, and memory and time are priced, as one DeepSpeed world of 4 GPU(s) " \
           "(1 node(s) x 4), every model on each of them" in report.notes
    entry = c.args.index("--module")
    two = [*c.args[:entry], "--num_gpus", "2", *c.args[entry:]]
    # the arguments as given (the framework's parse reads the launcher's words) and as a pasted command line: one note
    flagged = [n for n in rb.check(two, framework=c.framework, gpus=4, model=c.model, gpu=c.gpu).notes
               if n.startswith("--gpus ")]
    assert flagged == ["--gpus 4 is not the 2 GPU(s) the command starts (the launcher (2 per node x 1 node(s))): "
                       "checked with --gpus 4; pass --gpus 2, or change the command, if that is what runs"], flagged
    assert "openrlhf.cli.train_ppo: checked, and memory and time are priced, as one DeepSpeed world of 2 GPU(s) " \
           "(1 node(s) x 2), every model on each of them" in rb.check(two, framework=c.framework, model=c.model,
                                                                      gpu=c.gpu).notes
    assert not any(n.startswith("--gpus ") for n in rb.check(two, framework=c.framework, gpus=2, model=c.model,
                                                               gpu=c.gpu).notes)
    pasted = read_script_args(c.framework, two, 4, c.model).notes
    assert any(n.startswith("--gpus 4 is not the 2 GPU(s) the pasted command starts") and "change the command" in n
               for n in pasted), pasted
    # torchrun's two nodes of 4: the rules and every plan price 2 x 4, given as a list, pasted, or with --gpus 8
    split = ["torchrun", "--nnodes", "2", "--nproc_per_node", "4", "openrlhf/cli/train_ppo.py", *c.args[entry + 2:]]
    read = read_script_args(c.framework, split, None, c.model)
    for args, gpus in ((split, None), (split, 8), (read.args, read.gpus)):
        values = rb.check(args, framework=c.framework, gpus=gpus, model=c.model, gpu=c.gpu).values
        assert worlds(values) == ((8, 4), {(8, 4)}), (args[:6], gpus)
    # a CUDA_VISIBLE_DEVICES word before the launcher is its world, as a script's is
    devices = rb.check(["CUDA_VISIBLE_DEVICES=0,1", *c.args], framework=c.framework, model=c.model, gpu=c.gpu)
    assert worlds(devices.values) == ((2, 2), {(2, 2)})
    # nothing priced: the note says the world the rules check and memory would be priced on, and that it is assumed
    bare = rb.check(c.args, framework=c.framework).notes
    assert "openrlhf.cli.train_ppo: checked, and memory and time would be priced, as one DeepSpeed world of 8 GPU(s) " \
           "(1 node(s) x 8), every model on each of them (no GPU count given: 8 assumed, pass --gpus)" in bare, bare


def test_openrlhf_non_ray_launcher_fix_offers_only_train_ppos_flags():
    """train_ppo.py's parser (0.5.9: parse_args) has none of train_ppo_ray's group, colocation or vLLM flags: fix on
    #858's command moves only flags it takes, with its world fixed by the launcher, and check refuses a Ray-only flag
    given to it, as its argparse does."""
    import rlbatch_solver as rb
    from rlbatch_solver.frameworks.openrlhf import versions
    from rlbatch_solver.frameworks.openrlhf.framework import release_key
    from rlbatch_solver.frameworks.openrlhf.rules import VARIABLES

    c = _case("openrlhf_858_llama3_8b_ppo_deepspeed_4xa40")
    takes = versions.non_ray_flags("0.5.9")
    assert not {"vllm_num_engines", "colocate_all_models", "ref_num_gpus_per_node"} & takes
    for gpu in (c.gpu, "a100-80g"):
        report = rb.fix(c.args, framework=c.framework, gpus=c.gpus, model=c.model, gpu=gpu)
        moved = {release_key(VARIABLES[ch.name].key, "0.5.9") for ch in report.changes if ch.name in VARIABLES}
        assert moved <= takes, (gpu, moved - takes)
    policy = rb.frameworks.get_framework(c.framework).repair_policy({"one_world": True})
    assert not {"vllm_num_engines", "colocate_all", "ref_gpus_per_node", "ref_offload"} & {*policy.rules, *policy.memory}
    refused = rb.check([*c.args, "--vllm_num_engines", "2"], framework=c.framework, gpus=c.gpus, model=c.model,
                       gpu=c.gpu)
    assert [u.key for u in refused.unknown_keys if u.refused] == ["vllm_num_engines"]
    assert "openrlhf.launch.unknown_key" in {v.rule for v in refused.violations}


def test_openrlhf_zero2_update_holds_deepspeeds_reduce_bucket_and_offload_gradient_buffer():
    """OpenRLHF #519 (8 H100, `python -m openrlhf.cli.train_ppo`, Llama-3-8B PPO, ZeRO-2 with --adam_offload): out of
    memory, priced under the line. DeepSpeed 0.16.3's ZeRO-2 (stage_1_and_2.py) allocates a reduce bucket of 5e8
    bf16 elements for each backward (contiguous_gradients, DeepSpeed's default; OpenRLHF leaves reduce_bucket_size
    "auto", which DeepSpeed drops) and, with the optimizer offloaded, keeps a GPU gradient buffer of the largest
    parameter (the 128,256 x 4,096 embedding): 0.93 + 0.98 GiB in each trained model's update; two buckets with
    --overlap_comm. Still 68.7 of 74.7 GiB: a miss, tight."""
    import rlbatch_solver as rb
    from rlbatch_solver.costmodel.memory import T_DS_BUCKETS

    c = _case("openrlhf_519_llama3_8b_ppo_deepspeed_8xh100")
    mem = _check(c.name).memory
    embed = 128256 * 4096
    for phase in ("actor_update", "critic_update"):
        assert mem.phases[phase][T_DS_BUCKETS] * 2**20 == pytest.approx(2 * (5e8 + embed), rel=0.01)
    assert mem.peaks["actor_update"] / 1024 == pytest.approx(68.7, abs=0.3) and mem.fits and mem.outlook() == "tight"
    overlap = rb.check(c.args + ["--overlap_comm"], framework=c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu).memory
    assert overlap.phases["actor_update"][T_DS_BUCKETS] * 2**20 == pytest.approx(2 * (2 * 5e8 + embed), rel=0.01)
    no_offload = rb.check([a for a in c.args if a != "--adam_offload"], framework=c.framework, gpus=c.gpus,
                          model=c.model, gpu=c.gpu).memory
    assert no_offload.phases["actor_update"][T_DS_BUCKETS] * 2**20 == pytest.approx(2 * 5e8, rel=0.01)
    zero3 = rb.check([a if a != "2" or c.args[i - 1] != "--zero_stage" else "3" for i, a in enumerate(c.args)],
                     framework=c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu).memory
    assert T_DS_BUCKETS not in zero3.phases["actor_update"]
    # under LoRA the optimizer's groups hold the adapters only: the offload buffer is one adapter matrix, not the
    # frozen embedding; the critic (its LoRA priced as full training) keeps its embedding's
    lora = rb.check(c.args + ["--lora_rank", "16"], framework=c.framework, gpus=c.gpus, model=c.model,
                    gpu=c.gpu).memory
    assert lora.phases["actor_update"][T_DS_BUCKETS] * 2**20 == pytest.approx(2 * 5e8, rel=0.01)
    assert lora.phases["critic_update"][T_DS_BUCKETS] * 2**20 == pytest.approx(2 * (5e8 + embed), rel=0.01)


def test_a_trl_release_before_0_22_trains_without_gradient_checkpointing_unless_told():
    """trl #3456 (TRL 0.17, one A100 80GB, no vLLM, batch 4 x 3,072 tokens): Qwen3-0.6B and 1.7B ran (49 and 78 GB
    by nvidia-smi), 4B ran out of memory. GRPOConfig defaults gradient_checkpointing to True only from 0.22.0; before, it
    inherits transformers' False. The record is pinned to 0.17.0, so it is priced without checkpointing (and with 0.17's
    reference model, beta 0.04): the 4B is over the GPU, the 0.6B and the 1.7B fit, the 1.7B 7% under its reading;
    checkpointing lowers the 4B's update peak."""
    from rlbatch_solver.frameworks.trl.versions import RELEASES

    assert [RELEASES[v].grad_ckpt for v in ("1.16.0", "0.29.1", "0.19.1", "0.18.2", "0.17.0", "0.16.1", "0.15.2",
                                            "0.14.0")] == [True, True, False, False, False, False, False, False]
    oom = _check("trl_3456_qwen3_4b_grpo_1xa100_80gb")
    assert "activations" in oom.memory.phases["actor_update"] and not oom.memory.fits
    assert _check("trl_3456_qwen3_0_6b_grpo_1xa100_80gb").memory.fits
    # the 1.7B's update, priced with its trained norms' bf16 inputs and the 16 B per logit of the fp32 log-prob
    # backward (both measured, docs/cost-model.md sections 2 and 9.4a) and with no gradient at the backward's start
    # (transformers' Trainer frees them after each step; one micro batch per step here), is 7% under the 78,147 MiB
    # nvidia-smi read during the run: a reading (torch's reserved cache and the CUDA context) bounds the allocated
    # peak from above. Summed with the gradients it was 1.7% over the reading: more than the GPU ever held
    fits = _check("trl_3456_qwen3_1_7b_grpo_1xa100_80gb").memory
    # (TRL pads: the peak at the maximum lengths is the one priced, no phase is re-priced at the data's lengths)
    assert 0.9 * 78_147 < fits.peaks["actor_update"] < 78_147 and fits.fits and fits.typical_peaks == {}
    assert "gradients (sharded)" not in fits.phases["actor_update"]
    told = _case("trl_3456_qwen3_4b_grpo_1xa100_80gb")
    import rlbatch_solver as rb

    on = rb.check(told.args + ["--gradient_checkpointing", "true"], framework=told.framework, gpus=told.gpus,
                  model=told.model, gpu=told.gpu)
    assert on.memory.peaks["actor_update"] < oom.memory.peaks["actor_update"]


def test_transformers_trainer_builds_the_gradients_while_the_backward_frees_the_activations():
    """transformers' Trainer calls model.zero_grad() after every optimizer step (trainer.py
    Trainer._inner_training_loop; torch's set_to_none=True): with one micro batch per step, a plain data-parallel
    trainer (TRL, ms-swift without DeepSpeed) starts each backward with no gradient and makes each as the backward
    frees the activations before it. trl #3456's Qwen3-1.7B (ran on one A100 80GB) was priced with its 6.4 GiB of
    fp32 gradients on top of 45 GiB of activations and logits: over the line. Accumulating over two micro batches keeps
    them (the second backward adds into the first's); DeepSpeed keeps its own gradient buffers."""
    import rlbatch_solver as rb

    c = _case("trl_3456_qwen3_1_7b_grpo_1xa100_80gb")
    one = _check(c.name).memory.phases["actor_update"]
    freed = "gradients (beyond the activations the backward frees; zeroed after each step)"
    assert one[freed] == 0 and "gradients (sharded)" not in one

    def update(extra):
        return rb.check(c.args + extra, framework=c.framework, gpus=c.gpus, model=c.model,
                        gpu=c.gpu).memory.phases["actor_update"]

    two = update(["--gradient_accumulation_steps", "2"])
    assert two["gradients (sharded)"] == two["params (sharded)"] and freed not in two  # fp32, as the weights
    assert "gradients (sharded)" in update(["--zero_stage", "2"])


def test_verl_fsdp_frees_its_sharded_gradients_before_each_mini_batch():
    """verl zeroes the gradients before each mini batch's micro batches (0.3.0.post1 dp_actor.py
    DataParallelPPOActor.update_policy and dp_critic.py update_critic: ``zero_grad()`` before the micro loop; torch's
    set_to_none=True frees FSDP's sharded gradients). verl #1141 (Llama-3.2-3B PPO on 4x A10, mini batch 4 = one
    sample per GPU, micro batch 1) runs one micro batch per mini batch: each backward starts with no gradient and
    makes each unit's fp32 shard as it frees activations, so the 3 GiB of sharded gradients add only their excess over
    the activations and logits, in the actor and the critic. Two samples per GPU (two micro batches, or a token
    budget holding one sequence) keep the first micro batch's gradients through the second backward; TinyZero #62's
    1.5B on one A100 80GB (16 micro batches per mini batch) keeps them too."""
    c = _case("verl_1141_llama3_2_3b_ppo_4xa10")
    assert c.framework == "verl==0.3.0.post1"
    freed, kept = "gradients (beyond the activations the backward frees; zeroed after each step)", "gradients (sharded)"
    mem = _check(c.name).memory
    for phase in ("actor_update", "critic_update"):
        terms = mem.phases[phase]
        assert kept not in terms, phase
        working = sum(v for k, v in terms.items() if k.startswith(("activations", "logits")))
        assert terms[freed] == pytest.approx(terms["params (sharded)"] - working, abs=2), phase  # fp32 as the weights
        assert 0 < terms[freed] < terms["params (sharded)"], phase

    two = ["actor_rollout_ref.actor.ppo_mini_batch_size=8", "critic.ppo_mini_batch_size=8"]
    for extra in (two, two + ["actor_rollout_ref.actor.use_dynamic_bsz=True",
                              "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=768"]):
        terms = _check_args(c.name, c.args + extra).memory.phases["actor_update"]
        assert terms[kept] == terms["params (sharded)"] and freed not in terms, extra
    packed = _check_args(c.name, c.args + two + ["actor_rollout_ref.actor.use_dynamic_bsz=True",
                                                 "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=1536"])
    assert freed in packed.memory.phases["actor_update"]  # both 768-token sequences in one micro batch
    assert kept in _check("verl_tinyzero62_qwen2_5_1_5b_ppo_1xa100_80gb").memory.phases["actor_update"]


def test_a_trl_0_2x_run_materializes_its_logits():
    """trl #4585 (TRL 0.25, Qwen3-0.6B, 20,480-token completions, ZeRO-3 on 8 A10): out of memory in the backward. TRL
    before 1.0 computes log-probs from the whole [tokens, vocab] logits (selective_log_softmax); its record names
    trl==0.29.1, the release we follow with 0.22-0.29's memory defaults. Priced with 1.16.0's fused lm head (never a
    logits tensor), the update came to 6 of 20 GiB."""
    r = _check("trl_4585_qwen3_0_6b_grpo_colocate_zero3_8xa10")
    assert _case("trl_4585_qwen3_0_6b_grpo_colocate_zero3_8xa10").framework == "trl==0.29.1"
    upd = r.memory.phases["actor_update"]
    assert upd["logits"] > 0.5 * r.memory.capacity_of("actor_update")
    assert not r.memory.fits


def test_an_ms_swift_config_before_3_5_places_vllm_as_that_release_did():
    """ms-swift's v3.4.0 examples: full_vllm.sh trains on 7 of 8 GPUs and lora_vllm.sh on 1 of 2, '--vllm_device auto'
    putting vLLM on the GPU left over ("async mode": visible GPUs = training ranks + num_infer_workers);
    train_72b_4gpu.sh colocates 4 engine workers at --tensor_parallel_size 4. Read as 4.6.0 reads them (no
    --vllm_mode: colocated at TP 1) all three were out of memory; they ran as published."""
    for name in ("swift_example_v3.4.0_full_vllm_qwen2_5_7b_full_8x80g",
                 "swift_example_v3.4.0_lora_vllm_qwen2_5_7b_lora_2x80g"):
        r = _check(name)
        assert r.values["vllm_server"] is True and r.memory.fits, name
        assert "rollout engine (kept between rollouts)" not in r.memory.phases["actor_update"]
        assert any("ms-swift < 3.5" in n for n in r.notes)
    r = _check("swift_example_v3.4.0_train_72b_4gpu_qwen2_5_72b_lora_4x80g")
    assert r.values["vllm_server"] is False and r.values["vllm_tp"] == 4 and r.memory.fits


def test_ms_swift_3_5_to_3_7_1_runs_colocated_without_a_server_host():
    """ms-swift #4486: Qwen2.5-3B full GRPO, `swift rollout --data_parallel_size 2` on GPUs 6-7 and the trainer on
    0-5 with --vllm_mode server and --vllm_server_base_url only, out of memory on the training GPUs right at start.
    Its post (2025-06-05) predates every release with --vllm_server_base_url (3.5.0, 2025-06-08): it ran the 3.5.0
    development tree (the record pins swift==3.5.0), whose RLHFArguments._init_grpo sets vllm_mode to colocate when --vllm_server_host is
    not given, whatever --vllm_mode says: each training rank starts its own engine at the default
    --vllm_gpu_memory_utilization 0.9 beside its ZeRO-3 states (we priced a server: 86.6 of 94.6 GiB on its GPU).
    From 3.7.2 (ms-swift #5483) the base URL names the server too."""
    r = _check("swift_4486_qwen2_5_3b_grpo_full_server_8xh20")
    assert r.values["vllm_server"] is False and not r.memory.fits
    assert "actor params+optimizer (resident)" in r.memory.phases["rollout"]
    assert any("vllm_server_host is not provided" in n for n in r.notes)
    import rlbatch_solver as rb

    c = _case("swift_4486_qwen2_5_3b_grpo_full_server_8xh20")
    later = rb.check(c.args, framework="swift==3.7.2", gpus=c.gpus, model=c.model, gpu=c.gpu)
    assert later.values["vllm_server"] is True and later.memory.fits
    assert not any("vllm_server_host is not provided" in n for n in later.notes)
    # unpinned, its flags (--train_type, last in 4.0.4) allow 3.7.2 on: read as the server, with a note on 3.5.0-3.7.1
    unpinned = rb.check(c.args, framework="swift", gpus=c.gpus, model=c.model, gpu=c.gpu)
    assert unpinned.values["vllm_server"] is True and unpinned.memory.fits
    assert any("these flags also fit ms-swift 3.5.0 to 3.7.1" in n for n in unpinned.notes)


def test_ms_swift_offloads_only_around_a_colocated_engine():
    """ms-swift #3871: QwQ-32B full GRPO on 8 H20 with --use_vllm false and --offload_model/--offload_optimizer true ran
    out of memory. The offload runs only around the colocated vLLM engine's generation (4.6.0 rollout_mixin
    _prepare_vllm, colocate branch; 3.3.0 _fast_infer): with transformers' generate the ZeRO-3 optimizer states stay
    on the GPU beside the gathered weights (we had moved them to the CPU and called it a fit)."""
    r = _check("swift_3871_qwq_32b_grpo_full_novllm_8xh20")
    rollout = r.memory.phases["rollout"]
    assert rollout["actor params+optimizer (resident)"] > 40 * 1024
    assert not r.memory.fits


def test_the_head_node_holds_the_ray_driver_beside_the_workers():
    """verl #224: 8 rollout ranks of a 7B at ~11 GB each filled 89 of a node's 96 GB and the node ran out of memory (at
    1 TB it ran). The ranks alone came to 89 GiB, under Ray's 0.95 line; the head node also runs the trainer loop's
    process (verl's TaskRunner, which #3453's memory list names). The torchrun stacks have none."""
    oom, ran = _check("verl_224_qwen_7b_8xa800_96g_ram"), _check("verl_224_qwen_7b_8xa800_1tb_ram")
    from rlbatch_solver.costmodel.host import T_DRIVER

    assert oom.host.steady[T_DRIVER] > 0 and oom.host.label(T_DRIVER) == "Ray driver process (verl's TaskRunner)"
    assert oom.host.fits is False and ran.host.fits is True
    trl = _check("trl_3456_qwen3_4b_grpo_1xa100_80gb")
    assert not any("Ray driver" in t for t in trl.host.steady)


def test_verl_0_2_keeps_the_engines_weights_and_swap_space_in_host_ram_whatever_free_cache_engine_says():
    """reft-exp #7 (verl 0.2, free_cache_engine=False, 4 x L40, 125 GB node): verl 0.1-0.2's sharding manager ends
    every rollout in offload_model_weights, which keeps a CPU tensor per engine weight that the next sync fills
    (third_party/vllm/vllm_v_0_6_3/worker.py Worker.offload_model_weights): one TP shard per rank, 4 ranks x TP 1 x
    a 7.6B model in bf16. We priced none with free_cache_engine off; 0.6.1 (vLLM's sleep) still prices none. The
    bundled vLLM is V0, built with its default swap space: 4 GiB of pinned CPU KV blocks per rank
    (vllm/worker/cache_engine.py, v0.6.3), one block per layer, each rounded up to a power of two by torch's pinned
    allocator: 28 x 256 MiB = 7 GiB per rank. The engine's own weights here are pageable (torch.empty_like on the
    CPU): no rounding."""
    from rlbatch_solver.costmodel.host import GIB, T_ENGINE, T_SWAP

    name = "verl_reftexp_7_qwen2_5_7b_grpo_4xl40_125g_host"
    assert _case(name).framework == "verl==0.2.0"
    r = _check(name)
    assert 55 < r.host.steady[T_ENGINE] / GIB < 58
    assert r.host.steady[T_SWAP] == 4 * 28 * 256 * 2**20
    assert r.host.label(T_ENGINE).endswith("(verl 0.1-0.2's CPU copy)")  # not vLLM's sleep: the bundled vLLM's own
    c = _case(name)
    import rlbatch_solver as rb

    later = rb.check(c.args, framework="verl==0.6.1", gpus=c.gpus, model=c.model, gpu=c.gpu, host_mem_gib=125)
    assert T_ENGINE not in later.host.steady and T_SWAP not in later.host.steady


def test_pinned_host_copies_are_rounded_up_to_a_power_of_two_block_by_block():
    """torch's CachingHostAllocator rounds each pinned block up to a power of two (pytorch #95823; vllm #53042 and PR
    50094 measured 2.08 GiB -> 4, 6 -> 8, 10 -> 16 GiB). vLLM's sleep level 1 backs each weight allocation up in a
    pinned tensor of its own (vllm/device_allocator/cumem.py CuMemAllocator.sleep, 0.8.3): Qwen2.5-7B's 259 MiB
    gate_up_proj takes 512 MiB, its 1.02 GiB embedding 2 GiB: 1.89x its weights at TP 1. reft-exp #7 (verl 0.2, 4 x
    L40, 125 GB node, host OOM during rollout) was priced at 107 of 119 GiB; its V0 swap space (28 layers x 146 MiB ->
    256 MiB per rank) brings it to 118.9 GiB: caught (by 0.2 GiB: the 4 GiB per process is an assumption). verl
    0.1-0.2's own CPU copy of the engine's weights is pageable: not rounded."""
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.costmodel.host import GIB, pinned_bytes, pinned_swap_bytes, pinned_weight_ratio

    assert pinned_bytes(6 * GIB) == 8 * GIB and pinned_bytes(2.0832 * GIB) == 4 * GIB and pinned_bytes(4 * GIB) == 4 * GIB
    assert pinned_bytes(1000) == 1000  # under 1 MiB: the CUDA allocator's shared 2 MiB segments
    q7 = load_model("qwen2.5-7b")
    assert 1.85 < pinned_weight_ratio(q7, 1) < 1.92
    assert pinned_swap_bytes(4 * GIB, q7) == 7 * GIB
    r = _check("verl_reftexp_7_qwen2_5_7b_grpo_4xl40_125g_host")
    assert r.host.fits is False and 118.75 < r.host.peak_gib < 119.5
    # the host runs still fit: verl #224 at 1 TB, OpenRLHF #1013 without --vllm_enable_sleep
    assert _check("verl_224_qwen_7b_8xa800_1tb_ram").host.fits and _check("openrlhf_1013_7b_grpo_nosleep_2x8gpu_512g").host.fits


def test_zero_1_2_builds_its_flat_parameter_buffer_on_the_cpu_of_every_rank_at_start_up():
    """DeepSpeed's ZeRO-1/2 optimizer copies every trained parameter to the CPU and flattens them there before the
    flat buffer moves to the GPU (runtime/zero/stage_1_and_2.py DeepSpeedZeroOptimizer.__init__, 0.16.4): two
    16-bit copies per rank at once, DeepSpeed's own estimator's 4 B x P per GPU. OpenRLHF #1013 (ZeRO-1, 8 actor
    ranks per node of a 7B) holds 8 x 4 B x 7.6B = 227 GiB of them at start-up. ZeRO-3 loads a shard; a LoRA's
    optimizer holds the adapter only."""
    from rlbatch_solver.costmodel.host import GIB, T_LOAD

    awake = _check("openrlhf_1013_7b_grpo_nosleep_2x8gpu_512g")
    assert 225 < awake.host.startup[T_LOAD] / GIB < 229
    c = _case("openrlhf_1013_7b_grpo_nosleep_2x8gpu_512g")
    import rlbatch_solver as rb

    i = c.args.index("--zero_stage")
    z3 = c.args[:i + 1] + ["3"] + c.args[i + 2:]
    r = rb.check(z3, framework=c.framework, gpus=c.gpus, model=c.model, gpu="h100", host_mem_gib=512)
    assert r.host.startup[T_LOAD] == 0


def test_openrlhf_prices_a_process_per_model_and_gpu_and_engines_asleep_while_models_load():
    """OpenRLHF #1013 (2 x 8 GPUs, 512 GB per node, --colocate_all_models): each model group is a Ray actor per GPU,
    and create_vllm_engines puts the engines to sleep (weights to host RAM) before train_ppo_ray.py loads the
    models. With --vllm_enable_sleep the start-up holds the engines' weights beside the actor's loads (the run
    without it ran); a local reward model and a reference on the same GPUs are two more processes and two more bf16
    copies per GPU, none under ZeRO-3."""
    from rlbatch_solver.costmodel.host import GIB, T_ENGINE, T_LOAD_OTHERS, T_PROC

    sleep, awake = _check("openrlhf_1013_7b_grpo_sleep_2x8gpu_512g"), _check("openrlhf_1013_7b_grpo_nosleep_2x8gpu_512g")
    assert sleep.host.startup[T_PROC] == awake.host.startup[T_PROC] == 8 * 2 * 4 * GIB  # actor + engine per GPU
    # 8 engines' bf16 weights (113.5 GiB) backed up in pinned blocks rounded up to powers of two (x1.89)
    assert 210 < sleep.host.startup[T_ENGINE] / GIB < 218 and T_ENGINE not in awake.host.startup
    assert sleep.host.peak_gib - awake.host.peak_gib > 210
    # the record's outcome: with sleep the start-up is over the node (ZeRO-1's flat buffers on the CPU beside the
    # engines' pinned backups), without it the same start-up fits
    assert sleep.host.fits is False and sleep.host.when == "start-up" and awake.host.fits is True
    c = _case("openrlhf_1013_7b_grpo_sleep_2x8gpu_512g")
    import rlbatch_solver as rb

    local = [a for a in c.args if not a.startswith(("--remote_rm_url", "http", "--init_kl_coef", "0.0"))]
    full = rb.check(local + ["--init_kl_coef", "0.01", "--reward_pretrain", "m"], framework=c.framework, gpus=c.gpus,
                    model=c.model, gpu="h100", host_mem_gib=512)
    assert full.values["need_ref"] and full.values["need_reward_model"]
    assert full.host.startup[T_PROC] == 8 * 4 * 4 * GIB
    assert 220 < full.host.startup[T_LOAD_OTHERS] / GIB < 235  # ref + reward, 8 GPUs x 2 x 14.2 GiB
    stage = local.index("--zero_stage") + 1
    z3 = rb.check(local[:stage] + ["3"] + local[stage + 1:] + ["--init_kl_coef", "0.01", "--reward_pretrain", "m"],
                  framework=c.framework, gpus=c.gpus, model=c.model, gpu="h100", host_mem_gib=512)
    assert z3.values["zero_stage"] == 3 and T_LOAD_OTHERS not in z3.host.startup


def test_a_verl_lora_actor_holds_the_whole_fp32_model_on_every_rank_at_its_first_weight_sync():
    """verl #2950 (LoRA rank 8 on a 7B, 4 GPUs, 252 GB node; rollout ranks at ~56 GB RSS each): verl's legacy workers
    send a dummy-loaded vLLM engine its base weights by moving the whole unsharded model to the CPU on every rank
    (utils/fsdp_utils.py collect_lora_params, ``model.to("cpu")`` inside summon_full_params): 4 ranks x 4 B x 7.6B.
    rollout.load_format=safetensors (base already loaded) or rollout.layered_summon=True avoid it; 0.9.1's engine
    workers send the weights tensor by tensor."""
    from rlbatch_solver.costmodel.host import GIB, T_LORA_SYNC

    r = _check("verl_2950_qwen2_5_math_7b_dapo_lora_4gpu_252g")
    assert r.host.when == "first LoRA weight sync"
    assert 110 < r.host.first_sync[T_LORA_SYNC] / GIB < 116
    c = _case("verl_2950_qwen2_5_math_7b_dapo_lora_4gpu_252g")
    import rlbatch_solver as rb

    for extra, fw in ((["actor_rollout_ref.rollout.load_format=safetensors"], c.framework),
                      (["actor_rollout_ref.rollout.layered_summon=True"], c.framework), ([], "verl==0.9.1")):
        other = rb.check(c.args + extra, framework=fw, gpus=c.gpus, model=c.model, gpu="h100", host_mem_gib=252)
        assert not other.host.first_sync, (extra, fw)


def test_vllm_use_v1_0_in_a_verl_script_prices_the_v0_engines_cpu_swap_space():
    """verl #2950's script exports VLLM_USE_V1=0 (verl 0.4.1 on an installed vLLM <= 0.8.5, whose default engine is
    V1): vLLM's V0 workers then allocate EngineArgs' default 4 GiB swap space each as one pinned CPU tensor per layer
    (vllm/worker/cache_engine.py CacheEngine._allocate_kv_cache; verl's vllm_rollout_spmd.py passes no swap_space),
    28 layers x 256 MiB after the pinned allocator's rounding = 7 GiB per rollout rank. The script's own line (an
    ``export``, or a prefix of the command) reaches the estimate; without it (V1) there is none. 2950's workers: 46
    GiB each priced (first sync, weights' pinned backup, swap, process) against ~52 GiB (55.7-56.6 GB) observed."""
    import rlbatch_solver as rb
    from rlbatch_solver.costmodel.host import GIB, T_SWAP
    from rlbatch_solver.launch_script import parse_launch_script

    name = "verl_2950_qwen2_5_math_7b_dapo_lora_4gpu_252g"
    r = _check(name)
    assert r.values["vllm_v0"] and r.host.first_sync[T_SWAP] / GIB == 28.0
    c = _case(name)
    args = [a for a in c.args if not a.startswith("VLLM_USE_V1=")]
    v1 = rb.check(args, framework=c.framework, gpus=c.gpus, model=c.model, gpu=mc.HOST_ONLY_GPU,
                  host_mem_gib=c.host_mem_gib)
    assert T_SWAP not in v1.host.steady and r.host.peak_gib - v1.host.peak_gib == 28.0
    per_worker = (r.host.peak_gib - 4) / c.gpus  # less the Ray driver
    assert 45 < per_worker < 52  # observed ~52 GiB each
    cmd = "python3 -m verl.trainer.main_ppo " + " ".join(args)
    for text in (f"export VLLM_USE_V1=0\n{cmd}\n", f"VLLM_USE_V1=0 {cmd}\n"):
        script = parse_launch_script(text)
        assert script.args[0] == "VLLM_USE_V1=0"
        got = rb.check(script.args, framework=c.framework, gpus=c.gpus, model=c.model, gpu=mc.HOST_ONLY_GPU,
                       host_mem_gib=c.host_mem_gib)
        assert got.host.first_sync[T_SWAP] / GIB == 28.0
    assert parse_launch_script(cmd).args == args
    # verl 0.9.1 runs vLLM 0.11+, which has no V0 engine: the variable changes nothing there
    new = rb.check(c.args, framework="verl==0.9.1", gpus=c.gpus, model=c.model, gpu=mc.HOST_ONLY_GPU,
                   host_mem_gib=c.host_mem_gib)
    assert T_SWAP not in new.host.steady


def test_openrlhf_engines_on_vllm_v0_hold_their_cpu_swap_space_from_start_up():
    """OpenRLHF #911 (7B, 2 engines x TP 2 beside 4 actor GPUs, 250 GB node), checked as 0.6.2, whose wheel pins vLLM
    0.7.2: V0 is that vLLM's default engine (V1 by default from vLLM 0.8), and create_vllm_engines passes no
    swap_space, so each of the 4 engine workers allocates the default 4 GiB as one pinned tensor per layer (vLLM
    cache_engine.py _allocate_kv_cache): 28 layers x 256 MiB = 7 GiB each. train_ppo_ray.py creates the engines
    before it loads the models: the swap space is held at start-up. The launch script's VLLM_USE_V1 (an export line)
    decides where it is given: 1 -> V1, no swap; 0 on 0.7.5 (vLLM 0.8.5) -> V0; the newest (vLLM 0.29) has no V0."""
    import rlbatch_solver as rb
    from rlbatch_solver.costmodel.host import GIB, T_SWAP
    from rlbatch_solver.launch_script import parse_launch_script

    name = "openrlhf_911_7b_reinforce_8xa800_host250g"
    r = _check(name)
    assert r.values["vllm_v0"] and r.host.startup[T_SWAP] / GIB == 28.0 and r.host.when == "start-up"
    assert 177 < r.host.peak_gib < 178  # still under the 237.5 GiB usable: a miss
    c = _case(name)
    cmd = "python3 -m openrlhf.cli.train_ppo_ray " + " ".join(c.args)

    def swap(env: str, framework: str) -> float:
        script = parse_launch_script(f"export VLLM_USE_V1={env}\n{cmd}\n")
        got = rb.check(script.args, framework=framework, gpus=c.gpus, model=c.model, gpu=c.gpu,
                       host_mem_gib=c.host_mem_gib)
        # the export line is the environment, not a flag (0.11.2 refuses the script's pre-dotted flags by name)
        assert not any(v.rule == "openrlhf.launch.unknown_key" and "VLLM_USE_V1" in v.message
                       for v in got.violations)
        return got.host.startup.get(T_SWAP, 0.0) / GIB

    assert swap("1", c.framework) == 0.0
    assert swap("0", c.framework) == 28.0
    assert swap("0", "openrlhf==0.7.5") == 28.0
    assert swap("0", "openrlhf==0.11.2") == 0.0
    assert rb.check(c.args, framework="openrlhf==0.7.5", gpus=c.gpus, model=c.model, gpu=c.gpu,
                    host_mem_gib=c.host_mem_gib).host.startup.get(T_SWAP) is None


def test_openrlhf_counts_every_model_groups_processes_on_the_node_and_assumes_the_nodes_ram_for_all_its_gpus():
    """OpenRLHF places each model group (and all vLLM engines) in a Ray placement group of its own, packed onto as few
    nodes as Ray can (launcher.py PPORayActorGroup._initiate_actors, vllm_engine.py create_vllm_engines, PACK): a job
    of one node's GPUs shares one node. #911 (250 GB, 8 A800: the actor on 4 GPUs, 2 engines x TP 2 on the other 4):
    the engines' 4 GPU workers are on the node too. #756's Llama-3-8B (ran; 8 A100 40GB: actor + reference,
    critic + reward model, engines, 2 GPUs each) and the OpenRLHF README's 13B (ran; 8 A100: actor 4, critic 2,
    reference 1, reward 1) were judged against a node of the actor's GPUs only (2 or 4 x 144 GiB); their node is the
    standard 8-GPU one, where they fit. A group with GPUs of its own loads its bf16 copy at start-up with the actor
    (reference and reward model below ZeRO-3). A job larger than a node fills the actor's node first: #908 (actor 8
    per node) has no other group's process on it."""
    from rlbatch_solver.costmodel.host import GIB, T_LOAD_OTHERS, T_PROC

    r = _check("openrlhf_911_7b_reinforce_8xa800_host250g")
    assert r.host.startup[T_PROC] == (4 + 4) * 4 * GIB  # the actor's 4 GPUs (no reference at KL 0), 4 engine GPUs
    ran = _check("openrlhf_756_llama3_8b_ppo_8xa100_40g")
    assert ran.host.ram_gib == 8 * 144 and ran.host.fits is True
    assert ran.host.startup[T_PROC] == (2 * 2 + 2 * 2 + 4) * 4 * GIB  # actor+ref, critic+reward, 4 engine GPUs
    import rlbatch_solver as rb

    pts = {p["name"]: p for p in yaml.safe_load((Path(__file__).parent / "data/measured/points.yaml").read_text())}
    p = pts["openrlhf_readme2024_llama2_13b_ray_ppo_8xa100"]
    readme = rb.check(p["args"], framework=p["framework"], gpus=p["gpus"], model=p["model"], gpu=p["gpu"])
    assert readme.host.ram_gib == 8 * 144 and readme.host.fits is True
    assert 48 < readme.host.startup[T_LOAD_OTHERS] / GIB < 49  # reference + reward model, 2 x 24.2 GiB of bf16
    assert readme.host.startup[T_PROC] == 8 * 4 * GIB
    big = _check("openrlhf_908_qwen2_5_7b_grpo_16xh20_micro1")
    assert big.host.startup[T_PROC] == 8 * 4 * GIB and big.host.ram_gib is None  # H20: no standard node


def test_a_scripts_ray_memory_usage_threshold_moves_the_host_line():
    """Ray kills a worker above memory_usage_threshold of the node's RAM (src/ray/common/ray_config_def.h, default
    0.95; verl #2950's message: "246.41GB / 251.54GB (0.979583), which exceeds the memory usage threshold of 0.95"),
    which RAY_memory_usage_threshold in the environment sets when Ray starts (verl's main_ppo ray.init, a script's
    ``ray start``): read from the launch script for verl and OpenRLHF, the line moves with it; a value that is not a
    share of the RAM is refused."""
    import pytest

    import rlbatch_solver as rb
    from rlbatch_solver.errors import InputError
    from rlbatch_solver.launch_script import parse_launch_script

    for name, entry in (("verl_2950_qwen2_5_math_7b_dapo_lora_4gpu_252g", "verl.trainer.main_ppo"),
                        ("openrlhf_911_7b_reinforce_8xa800_host250g", "openrlhf.cli.train_ppo_ray")):
        c = _case(name)
        base = _check(name).host
        assert base.limit_gib == pytest.approx(0.95 * c.host_mem_gib) and base.fits  # both misses at 0.95
        cmd = f"python3 -m {entry} " + " ".join(a for a in c.args if not a.startswith("VLLM_USE_V1="))
        env = "export VLLM_USE_V1=0\n" if name.startswith("verl") else ""

        def host(share: str):
            script = parse_launch_script(f"{env}export RAY_memory_usage_threshold={share}\n{cmd}\n")
            return rb.check(script.args, framework=c.framework, gpus=c.gpus, model=c.model,
                            gpu=c.gpu or mc.HOST_ONLY_GPU, host_mem_gib=c.host_mem_gib)

        low = host("0.6")
        assert low.host.limit_gib == pytest.approx(0.6 * c.host_mem_gib) and not low.host.fits
        assert low.host.peak_gib == pytest.approx(base.peak_gib)
        assert any("RAY_memory_usage_threshold=0.6" in v.message for v in low.violations)
        with pytest.raises(InputError):
            host("95")


def test_a_verl_checkpoint_save_holds_each_ranks_weight_and_adam_shards_on_the_cpu():
    """verl 0.2.0 to 0.9.1 save a checkpoint (trainer.save_freq > 0) with every rank building its sharded model and
    optimizer state dicts on the CPU (utils/checkpoint/fsdp_checkpoint_manager.py save_checkpoint,
    ShardedStateDictConfig/ShardedOptimStateDictConfig offload_to_cpu=True): per node, the fp32 weights' and Adam's
    two fp32 moments' shards of its ranks, on top of the steady state. reft-exp #7 (verl 0.2, 4 x L40, 7B, 125 GB
    node) died in the rollout and its script saves none: priced without a save state (the verdict is not this
    term's); with trainer.save_freq=10 its 4 ranks hold 12 B x 7.6B = 85 GiB more at the save. A LoRA actor (verl
    #2950) saves its fp32 weights' shards only (the adapter's optimizer is tiny); verl 0.1.0 saves otherwise, and FSDP2
    keeps its state dicts on the GPU (utils/fsdp_utils.py get_fsdp_state_ctx: a null context)."""
    from rlbatch_solver.costmodel.host import GIB, T_SAVE

    import rlbatch_solver as rb

    name = "verl_reftexp_7_qwen2_5_7b_grpo_4xl40_125g_host"
    assert not _check(name).host.save
    c = _case(name)
    saves = rb.check(c.args + ["trainer.save_freq=10"], framework=c.framework, gpus=c.gpus, model=c.model,
                     gpu=c.gpu, host_mem_gib=c.host_mem_gib)
    assert saves.host.when == "checkpoint save"
    assert 84 < saves.host.save[T_SAVE] / GIB < 86
    assert saves.host.peak_gib > _check(name).host.peak_gib + 80
    lora = _case("verl_2950_qwen2_5_math_7b_dapo_lora_4gpu_252g")
    lsave = rb.check(lora.args + ["trainer.save_freq=10"], framework=lora.framework, gpus=lora.gpus,
                     model=lora.model, gpu="h100", host_mem_gib=252)
    assert 28 < lsave.host.save[T_SAVE] / GIB < 29.5  # 4 ranks x 4 B x 7.6B / 4
    old = rb.check(c.args + ["trainer.save_freq=10"], framework="verl==0.1.0", gpus=c.gpus, model=c.model,
                   gpu=c.gpu, host_mem_gib=c.host_mem_gib)
    assert not old.host.save
    fsdp2 = rb.check(c.args + ["trainer.save_freq=10", "actor_rollout_ref.actor.strategy=fsdp2",
                               "actor_rollout_ref.ref.strategy=fsdp2"], framework=c.framework, gpus=c.gpus,
                     model=c.model, gpu=c.gpu, host_mem_gib=c.host_mem_gib)
    assert fsdp2.values["fsdp2"] and not fsdp2.host.save  # DTensors on the GPU, torch.save copies one at a time


def test_an_openrlhf_save_holds_the_zero_partition_or_the_whole_bf16_model_on_the_cpu():
    """OpenRLHF #911 (7B, ZeRO-2, 4 actor GPUs, --save_steps 20, 250 GB node; OpenRLHF 0.6.3): every save_steps each
    rank torch.saves its ZeRO partition, copying its GPU storages to the CPU one at a time, the largest the fp32
    master partition (4 B x 7.6B / 4 = 7.1 GiB per rank, 28 GiB on the node); the end of training's save_model
    gathers the bf16 model onto rank 0 (0.4.0-0.6.2: 14 GiB) or, from 0.7.5 below ZeRO-3, clones it on every rank
    (57 GiB). The kill's step is not shown, and neither state is the node's peak: the verdict does not move. With
    --adam_offload the partition is on the CPU already: only the rank-0 model is new."""
    from rlbatch_solver.costmodel.host import GIB, T_SAVE

    import rlbatch_solver as rb

    name = "openrlhf_911_7b_reinforce_8xa800_host250g"
    c = _case(name)

    def save_gib(framework: str, extra: list[str]) -> float:
        r = rb.check(c.args + extra, framework=framework, gpus=c.gpus, model=c.model, gpu=c.gpu,
                     host_mem_gib=c.host_mem_gib)
        return r.host.save[T_SAVE] / GIB

    assert 28 < save_gib("openrlhf==0.6.2", []) < 29
    assert 14 < save_gib("openrlhf==0.6.2", ["--adam_offload"]) < 14.5
    assert 14 < save_gib("openrlhf==0.6.2", ["--save_steps", "-1"]) < 14.5  # the final save_model only
    assert 56 < save_gib("openrlhf==0.7.5", []) < 57.5
    # its flags date it 0.6.2 (the oldest release that has them all), the pack of the 0.6.3 it ran
    assert 28 < save_gib("openrlhf", []) < 29
    assert _check(name).host.when == "start-up"


def test_a_trainer_save_on_deepspeed_clones_the_model_on_every_rank_below_zero3():
    """transformers' Trainer saves every save_steps and at the end (save_strategy "steps") through accelerate's
    get_state_dict on every rank: below ZeRO-3 each rank clones the whole model's state dict to the CPU
    (clone_tensors_for_torch_save), at ZeRO-3 rank 0 gathers the 16-bit model (ms-swift: only an adapter's trained
    parameters), then DeepSpeed's checkpoint copies each rank's fp32 partition storage by storage. ms-swift #8193 (a
    32B on 4 GPUs with zero2) saw its save spike past 250 GB: 4 ranks x 2 B x 32.8B is 244 GiB. Pinned on ms-swift's
    external_grpo_7b.sh (7B full, zero2, 6 training ranks: 6 x 14.2 GiB) and open-r1 #100 (TRL 0.14, 7B in fp32,
    ZeRO-3, 8 GPUs: the gathered fp32 model, 28 GiB, as large as the 8 ranks' fp32 partitions)."""
    from rlbatch_solver.costmodel.host import GIB, T_SAVE

    import rlbatch_solver as rb

    def save(c: mc.Case, extra: list[str]) -> dict:
        r = rb.check(c.args + extra, framework=c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu,
                     length_fraction=c.length_fraction, host_mem_gib=2048)
        return r.host.save

    swift = _case("swift/external_grpo_7b.sh")
    assert 84 < save(swift, [])[T_SAVE] / GIB < 86
    assert not save(swift, ["--save_strategy", "no"])
    assert 84 < save(swift, ["--save_only_model", "true"])[T_SAVE] / GIB < 86  # the clone, not the partition
    lora = save(swift, ["--tuner_type", "lora", "--deepspeed", "zero3"])  # the adapter only: its tiny partition
    assert lora[T_SAVE] / GIB < 1
    trl = _case("trl_openr1_100_distill_qwen_7b_grpo_zero3_8xh100")
    assert 28 < save(trl, [])[T_SAVE] / GIB < 29


def test_the_typical_peak_of_a_packed_micro_batch_is_its_high_quantile_not_its_median():
    """check's typical peak prices a packed micro batch of n sequences at the 99.9th percentile of their summed
    lengths (constants.PACKED_SUM_Z; lengths.packed_sum_tokens), not n x the mean (the median micro batch, which half
    of a run's micro batches exceed). verl's LoRA tuning 14B row (116 sequences per micro batch, Ulysses SP 2, GSM8K):
    the update sits between the two, 73.8 of 74.7 GiB with GSM8K's prompts and responses at the longest of the profile's published runs
    (lengths.judged_prompt_fraction, judged_response_fraction), within the model's error of the line on both sides of the bisection edge. PRIME #59's
    OOM report (two sequences per GPU per micro batch, 1,024 + 3,072 tokens allowed) was under the line at n x the
    mean; at the quantile two responses are at the cap and it is over, as the run found."""
    import rlbatch_solver as rb
    from rlbatch_solver.costmodel.lengths import packed_sum_tokens

    c = _case("verl_tuning_lora_14b_bs58_2xh100")
    mem = _check(c.name).memory
    ml = mem.lengths
    mean_fraction = (ml["prompt"] + ml["response"]) / (ml["max_prompt"] + ml["max_response"])
    median = rb.check(c.args, framework=c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu,
                      length_fraction=mean_fraction).memory.peaks["actor_update"]
    typical = mem.typical_peaks["actor_update"]
    assert median < typical < mem.capacity_of("actor_update") < mem.peaks["actor_update"]
    # the excess over the median is the logits' and checkpoints' share of the quantile's extra tokens
    extra = (packed_sum_tokens(116, ml["judged_prompt"], ml["judged_response"], 512, 1024, 3.09)
             / (116 * (ml["judged_prompt"] + ml["judged_response"])))
    assert 1.15 < extra < 1.25 and typical / 1024 == pytest.approx(73.8, abs=0.2)
    assert mem.outlook() == "tight"
    prime = _check("verl_prime_59_qwen2_5_7b_rloo_4xa800_bs64").memory
    upd = "actor_update"
    assert prime.typical_peaks[upd] > prime.capacity_of(upd) and not prime.fits


def test_swift_multi_turn_trains_the_whole_conversation_up_to_the_engines_context():
    """ms-swift #4961 (3.6.1, Qwen3-8B LoRA multi-turn GRPO, 7 A100 80GB, per_device_train_batch_size 2,
    max_completion_length 8192, max_length 16384, no vllm_max_model_len): memory rose suddenly mid-training, OOM.
    With a multi-turn scheduler and the default completion_length_limit_scope 'per_round', max_completion_length
    bounds one round; the conversation grows to the engine's context (Qwen3-8B's 40,960) and the trainer encodes and
    scores all of it after the first prompt. Scope 'total' (colocate) caps the rounds together: single-turn pricing;
    --vllm_max_model_len bounds the context."""
    c = _case("swift_4961_qwen3_8b_grpo_lora_colocate_multiturn_7xa100_80g")
    checked = _check(c.name)
    assert any("multi-turn rollout" in n for n in checked.notes)
    multi = checked.memory
    assert multi.lengths["max_response"] == 40960 - 16384
    assert multi.verdict("actor_update") == "no"
    single = _check_args(c.name, c.args[:-2]).memory
    assert single.lengths["max_response"] == 8192 and single.verdict("actor_update") != "no"
    total = _check_args(c.name, c.args + ["--completion_length_limit_scope", "total"]).memory
    assert total.peaks == single.peaks
    capped = _check_args(c.name, c.args + ["--vllm_max_model_len", "32768"]).memory
    assert capped.lengths["max_response"] == 32768 - 16384
    assert single.peaks["actor_update"] < capped.peaks["actor_update"] < multi.peaks["actor_update"]
    # a rollout server's limit is not in the trainer's command: the model's context, whatever scope
    server = _check_args(c.name, c.args + ["--completion_length_limit_scope", "total", "--vllm_mode", "server"]).memory
    assert server.lengths["max_response"] == 40960 - 16384


def test_verl_fsdp_root_unit_stays_gathered_beside_the_layers_in_flight():
    """verl's FSDP1 wrap policy (utils/fsdp_utils.py get_fsdp_wrap_policy) wraps decoder layers only, so the
    embedding and the untied lm_head sit in the root unit, which FSDP never reshards in forward or backward; FSDP2
    (apply_fsdp2) shards an untied embedding on its own and keeps only the lm_head in the root; a tied embedding is
    the root either way. Pinned on three real records' per-phase gathered bytes (MiB)."""
    from rlbatch_solver.catalog.models import load_model

    def units(name):
        m = load_model(_case(name).model)
        return m.embedding_params(), m.lm_head_params(), max(m.layer_params(i) for i in range(m.num_hidden_layers))

    gathered = "FSDP all-gathered layers"
    # #855, 14B on verl 0.3 (FSDP1, untied): root 2 x 778.6M + two 275.3M layers in bf16; the update adds the
    # lm_head's bf16 gradient, held to the backward's end (test_verl_fsdp_holds_the_head_gradient_...); a layer's
    # gradient with its fp32 cast (6 x 275.3M) comes after the logits are freed and fits under them
    name = "verl_855_r1_distill_qwen_14b_grpo_8xh100"
    embed, head, layer = units(name)
    r = _check(name).memory
    assert r.phases["old_log_prob"][gathered] == pytest.approx(2 * (embed + head + 2 * layer) / 2**20, abs=1)
    assert r.phases["old_log_prob"][gathered] == pytest.approx(4021, abs=1)
    assert r.phases["actor_update"][gathered] == pytest.approx(4021 + 2 * head / 2**20, abs=1)
    # was 2 x max(layer, embed): 7425; then 6 x the embedding beside the logits: 8476
    assert r.phases["actor_update"][gathered] == pytest.approx(5506, abs=1)
    # its 64 sequences per GPU and mini batch split into 3 micro batches under the 24,000-token budget: 22 x 1,024
    # tokens (67.85 GiB when the budget was taken as the micro batch and the embedding's gradient beside the logits)
    assert round(r.peaks["actor_update"] / 1024, 2) == pytest.approx(62.99, abs=0.02)
    # the one_step_off doc's colocated 7B on 16 H20, actor.strategy=fsdp2: lm_head root + embedding + first layer
    name = "verl_onestepoff_doc_colocate_qwen25math7b_dapo_fsdp2_16xh20"
    embed, head, layer = units(name)
    r = _check(name).memory
    assert r.phases["old_log_prob"][gathered] == pytest.approx(2 * (head + embed + layer) / 2**20, abs=1)
    assert r.phases["old_log_prob"][gathered] == pytest.approx(2524, abs=1)
    # TinyZero's 3B (tied): the shared embedding is the root, beside two layers (was two embedding-sized units)
    name = "verl_tinyzero_30_qwen2_5_3b_ppo_2xh200_default"
    embed, head, layer = units(name)
    assert head == 0
    r = _check(name).memory
    assert r.phases["old_log_prob"][gathered] == pytest.approx(2 * (embed + 2 * layer) / 2**20, abs=1)
    assert r.phases["old_log_prob"][gathered] == pytest.approx(888, abs=1)


def test_verl_megatron_weight_sync_loads_the_offloaded_actor_beside_the_engine_weights():
    """verl's Megatron sharding manager (megatron_vllm.py __enter__) loads an offloaded actor back beside vLLM's woken
    weights, before the KV cache wakes: 0.5.0 the params and the fp32 grad buffer (load_grad default True), 0.6.1
    the params only (verl PR #2678). verl #3360 (235B on 32 H100, 0.6.1, param offload): the params exceed the
    generation's KV cache + activations by 0.9 GiB; the same run on 0.5.0 loads 27.8 GiB of grads too; 0.7.1 (not
    read) prices no sync term."""
    import rlbatch_solver as rb

    c = _case("verl-megatron_3360_qwen3_235b_a22b_grpo_4x8xh100")
    sync = "actor loaded for the weight sync (its excess over KV cache + activations)"

    def report(fw):
        return rb.check(c.args, framework=fw, gpus=c.gpus, model=c.model, gpu=c.gpu,
                        length_fraction=c.length_fraction).memory

    mem = report(c.framework)
    roll, upd = mem.phases["rollout"], mem.phases["actor_update"]
    generation = roll["vLLM KV cache"] + roll["vLLM activations+workspaces (in budget)"]
    assert roll[sync] == pytest.approx(upd["params (sharded)"] - generation, abs=1)
    assert roll[sync] / 1024 == pytest.approx(0.94, abs=0.02)
    assert mem.peaks["rollout"] / 1024 == pytest.approx(68.6, abs=0.1) and mem.fits  # the run's OOM stays missed
    old = report("verl-megatron==0.5.0").phases["rollout"]
    assert old[sync] == pytest.approx(upd["params (sharded)"] + upd["gradients (sharded)"] - generation, abs=1)
    assert sync not in report("verl-megatron==0.7.1").phases["rollout"]


def test_verl_before_0_6_ignores_the_cpu_optimizer_override():
    """megatron-core's CPU optimizer is set through actor.optim.override_optimizer_config, which verl reads from 0.6.0
    on (verl/utils/megatron/optimizer.py init_megatron_optim_config); 0.5.0, 0.4.1 and 0.3.0.post1 build the optimizer
    config from optimizer, lr, min_lr, clip_grad and weight_decay alone (verl/utils/megatron_utils.py
    init_megatron_optim_config) and a `+` override of the key is accepted and never read. verl #3360's command (the
    Qwen3-235B 96 GB script on 32 H100, optimizer_cpu_offload with fraction 1, verl optimizer_offload on): read by
    0.6.1 the update holds no optimizer states; by 0.5.0 it loads the whole distributed optimizer (12 B per local
    parameter at data-parallel size 1, three times the fp32 grads), check says why, and fix offers no CPU optimizer."""
    import rlbatch_solver as rb
    from rlbatch_solver.frameworks import get_framework

    c = _case("verl-megatron_3360_qwen3_235b_a22b_grpo_4x8xh100")

    def report(fw):
        return rb.check(c.args, framework=fw, gpus=c.gpus, model=c.model, gpu=c.gpu, length_fraction=c.length_fraction)

    new, old = report("verl-megatron==0.6.1"), report("verl-megatron==0.5.0")
    upd_new, upd_old = new.memory.phases["actor_update"], old.memory.phases["actor_update"]
    assert upd_new["optimizer states (sharded)"] == 0
    assert upd_old["optimizer states (sharded)"] == pytest.approx(3 * upd_old["gradients (sharded)"], rel=0.01)
    assert upd_old["gradients (sharded)"] == upd_new["gradients (sharded)"]
    assert new.memory.peaks["actor_update"] / 1024 == pytest.approx(71.9, abs=0.1)
    assert old.memory.peaks["actor_update"] / 1024 == pytest.approx(155.4, abs=0.1) and not old.memory.fits
    (note,) = [n for n in old.notes if "does not read actor.optim.override_optimizer_config" in n]
    assert "actor_rollout_ref.actor.megatron.optimizer_offload moves them to the CPU between phases only" in note
    assert not any("override_optimizer_config" in n for n in new.notes)
    knobs = "megatron_cpu_optimizer_permille"
    assert knobs in get_framework("verl-megatron==0.6.1").repair_policy().cost_knobs
    assert knobs not in get_framework("verl-megatron==0.4.1").repair_policy().cost_knobs


def test_swift_generate_without_vllm_prices_the_local_generation_batch_at_once():
    """ms-swift #4311 (3.5, no --use_vllm, ZeRO-3, 4 GPUs, per_device_train_batch_size 8, gradient_accumulation_steps
    4): GRPOTrainer builds PtEngine.from_model_template(..., max_batch_size=0) (no limit) and _generate_completions
    runs it inside unwrap_model_for_generation (ds3_gather_for_generation default True: every parameter gathered) on
    the local generation batch, per_device_train_batch_size x steps_per_generation completions (steps_per_generation
    defaults to gradient_accumulation_steps, trainers/rlhf_arguments.py; the flag counts completions: TRL's
    RepeatSampler repeats each prompt num_generations times): 8 x 4 = 32 sequences at once, each KV cache at the
    prompt limit plus the completion limit (2048 + 1024); twice the accumulation, twice the batch."""
    name = "swift_4311_qwen2_5_vl_3b_grpo_full_nogen_vllm_zero3_4xh20"
    rollout = _check(name).memory.phases["rollout"]
    kv_per_token = 2 * 36 * 2 * 128 * 2  # K and V, 36 layers, 2 KV heads of 128, bf16 (Qwen2.5-3B's card)
    kv = next(v for k, v in rollout.items() if k.startswith("generate KV cache"))
    assert abs(kv - 32 * (2048 + 1024) * kv_per_token / 2**20) <= 1
    gathered = next(v for k, v in rollout.items() if k.startswith("params gathered for generate"))
    assert gathered > 0  # ZeRO-3: the other three quarters of the bf16 weights
    args = list(_case(name).args)
    args[args.index("--gradient_accumulation_steps") + 1] = "8"
    doubled = _check_args(name, args).memory.phases["rollout"]
    assert abs(next(v for k, v in doubled.items() if k.startswith("generate KV cache")) - 2 * kv) <= 1


def test_a_vision_language_model_prices_its_vit_states_and_activations_when_it_trains_it():
    """ms-swift #4311: Qwen2.5-VL-3B full GRPO with --freeze_vit false (ZeRO-3 on 4 x 90G, MAX_PIXELS 602112) ran out
    of memory; the model was priced as its language model. The ViT (0.63B in the tower, 37M in the merger) trains
    here: its bf16 weights, gradients and fp32 Adam states are sharded as the LM's (16 B a parameter over 4 GPUs), and
    it keeps, under gradient checkpointing, every block's input over the micro batch's patches: 8 sequences x 3072
    patches (602112 / 14^2, one image a sample) x 32 blocks x 2 B x 1280, plus the merger's inputs. With ms-swift's
    default --freeze_vit / --freeze_aligner true the ViT keeps its weights and nothing else. A text model is priced as
    before (qwen2.5-3b, the same language model)."""
    from rlbatch_solver.catalog.models import load_model

    name = "swift_4311_qwen2_5_vl_3b_grpo_full_nogen_vllm_zero3_4xh20"
    card = load_model("qwen2.5-vl-3b")
    vit = card.vision_params()
    assert card.vision_tower_params() == 631_975_680 and card.vision_merger_params() == 36_708_608
    trained = _check(name)
    import rlbatch_solver as rb

    c = _case(name)
    lm_only = rb.check(c.args, framework=c.framework, gpus=c.gpus, model="qwen2.5-3b", gpu=c.gpu).memory
    frozen_args = [a for a in c.args]
    frozen_args[frozen_args.index("--freeze_vit") + 1] = "true"
    frozen_args[frozen_args.index("--freeze_aligner") + 1] = "true"
    frozen = rb.check(frozen_args, framework=c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu).memory

    up, lm, fr = (m.phases["actor_update"] for m in (trained.memory, lm_only, frozen))
    mib = 2**20  # the report's terms are whole MiB
    assert up["params (sharded)"] - lm["params (sharded)"] == pytest.approx(2 * vit / 4 / mib, abs=1.5)
    assert up["gradients (sharded)"] - lm["gradients (sharded)"] == pytest.approx(2 * vit / 4 / mib, abs=1.5)
    assert up["optimizer states (sharded)"] - lm["optimizer states (sharded)"] == pytest.approx(12 * vit / 4 / mib,
                                                                                                 abs=1.5)
    ckpts = 8 * 3072 * 32 * 2 * 1280
    merger = 8 * 3072 * (4 + 3 * 2) * 1280
    assert up["vision tower activations (image patches of the micro batch)"] == pytest.approx(
        (ckpts + merger) / mib, abs=1.5)
    # frozen (ms-swift's default): the weights stay, no gradient, optimizer state or activation
    assert fr["params (sharded)"] == pytest.approx(up["params (sharded)"], abs=1)
    assert fr["gradients (sharded)"] == pytest.approx(lm["gradients (sharded)"], abs=1)
    assert fr["optimizer states (sharded)"] == pytest.approx(lm["optimizer states (sharded)"], abs=1)
    assert "vision tower activations (image patches of the micro batch)" not in fr
    assert "vision tower activations (image patches of the micro batch)" not in lm
    assert any("3072 ViT patches (768 image tokens" in n for n in trained.notes)
    assert trained.memory.peaks["actor_update"] > lm_only.peaks["actor_update"] + 4 * 1024


def test_the_vit_keeps_every_block_without_checkpointing_and_runs_before_the_lm_in_a_forward():
    """Without gradient checkpointing a trained ViT keeps every block's tensors over its patches (and the merger's);
    a frozen tower, a LoRA run or a text model keeps none. A forward-only pass runs the ViT before the language model:
    only its excess over the LM forward adds."""
    from types import SimpleNamespace

    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.costmodel import memory as M

    vl, text = M.model_consts(load_model("qwen2.5-vl-7b")), M.model_consts(load_model("qwen2.5-7b"))
    plan = SimpleNamespace(vision_patches=3072, vision_tower_frozen=False, lora_params=0, grad_ckpt=False,
                           vision_sdpa_mask=False)
    block = vl.vision_block_act + vl.vision_block_trained_norms
    assert block > 32 * 1280  # the MLP's four 3420-wide tensors alone are 27,360 B a patch
    full = M.vision_activation_bytes(plan, vl, 2, 0.0)
    assert full == pytest.approx(2 * 3072 * (32 * block + vl.vision_merger_act))
    ckpt = M.vision_activation_bytes(SimpleNamespace(**{**vars(plan), "grad_ckpt": True}), vl, 2, 1e12)
    assert ckpt == pytest.approx(2 * 3072 * (32 * 2 * 1280 + vl.vision_merger_act))
    assert M.vision_activation_bytes(SimpleNamespace(**{**vars(plan), "vision_tower_frozen": True}), vl, 2, 0.0) == 0
    assert M.vision_activation_bytes(SimpleNamespace(**{**vars(plan), "lora_params": 10}), vl, 2, 0.0) == 0
    assert M.vision_activation_bytes(plan, text, 2, 0.0) == 0
    fwd = 4 * 3072 * (2 * 2 * 1280 + vl.vision_block_act)
    assert M.vision_forward_bytes(plan, vl, 4, 0.0) == pytest.approx(fwd)
    assert M.vision_forward_bytes(plan, vl, 4, fwd - 1000) == pytest.approx(1000)
    assert M.vision_forward_bytes(plan, vl, 4, fwd + 1) == 0


def test_a_lora_adapter_is_priced_in_the_dtype_the_framework_leaves_it():
    """peft >= 0.12's get_peft_model upcasts a bf16/fp16 adapter to fp32 (``autocast_adapter_dtype=True``,
    tuners/tuners_utils.py BaseTuner._cast_adapter_dtype), so without DeepSpeed its gradients and AdamW moments are
    fp32 too: 16 B a trainable parameter, not a bf16 model's 8. Unsloth keeps it fp32 on purpose (unsloth_zoo
    prepare_model_for_training, float32_mixed_precision True for LoRA) and so does ms-swift (Swift.prepare_model ->
    peft's get_peft_model); TRL >= 0.26 casts a quantized base's adapter back to bf16 (GRPOTrainer.__init__), 0.14-0.25
    leave peft's fp32. bitsandbytes' 8-bit AdamW (``--optim adamw_8bit`` / ``paged_adamw_8bit``, as Unsloth's
    notebooks and TRL's QLoRA notebook run) keeps two uint8 moments with an fp32 absmax a 256-element block, whatever
    the adapter's dtype."""
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.costmodel import constants as C
    import rlbatch_solver as rb

    def per_param(name, term, framework=None, drop_optim=False):  # one update term over the adapter's parameters
        c = _case(name)
        args = list(c.args)
        if drop_optim:
            i = args.index("--optim")
            del args[i:i + 2]
        mem = rb.check(args, framework=framework or c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu).memory
        rank = int(next(args[i + 1] for i, a in enumerate(args) if a in ("--r", "--lora_rank", "--lora_r")))
        lora = load_model(c.model).lora_params(rank, "all-linear")
        return mem.phases["actor_update"][term] * 2**20 / lora

    grads, optim = "gradients (sharded)", "optimizer states (sharded)"
    # Unsloth's T4 docs table (Qwen3-4B, r 32, adamw_8bit): fp32 gradients, 8-bit moments
    unsloth = "unsloth_docs_standby_qwen3_4b_grpo_nostandby_gmu08_1xt4"
    assert per_param(unsloth, grads) == pytest.approx(C.FP32, rel=0.01)
    assert per_param(unsloth, optim) == pytest.approx(2 * (1 + 4 / 256), rel=0.01)
    assert per_param(unsloth, optim, drop_optim=True) == pytest.approx(2 * C.FP32, rel=0.01)
    # ms-swift's v3.4.0 single-GPU LoRA example (no --deepspeed, torch AdamW): two fp32 moments
    assert per_param("swift_example_v3.4.0_internal_grpo_qwen2_5_7b_lora_1x80g", optim) == pytest.approx(8, rel=0.01)
    # TRL's QLoRA notebook (paged_adamw_8bit, run on 0.26): bf16 adapter; with torch AdamW bf16 moments, and fp32
    # ones on a release before 0.26
    qlora = "trl_nb4660_qwen2_7b_grpo_qlora_1xa100_40gb"
    assert per_param(qlora, optim) == pytest.approx(2 * (1 + 4 / 256), rel=0.01)
    assert per_param(qlora, optim, drop_optim=True) == pytest.approx(2 * C.BF16, rel=0.01)
    assert per_param(qlora, optim, "trl==0.24.0", drop_optim=True) == pytest.approx(2 * C.FP32, rel=0.01)


def test_an_rllm_report_cut_after_its_kl_key_runs_the_deepcoder_script_it_copies_and_its_rollout_overflows():
    """rLLM #182 (Qwen3-14B, 8 x A100-80GB): the post is cut after use_kl_loss; its visible lines are rLLM's
    examples/deepcoder/train_deepcoder_16k.sh of the post's date with the sizes changed, and the reporter says the
    config is that script's. rLLM's entry points read rLLM's own Hydra config, not verl's defaults, so the record takes
    the script's remaining keys (gpu_memory_utilization 0.8, no actor offload). The rollout then holds the actor's fp32
    params and Adam moments (not offloaded: 12 B x 14.8B over 8 GPUs) beside 0.8 of the card, on every release pack; the
    same script on the 32 GPUs the DeepCoder record names holds a quarter of those states and fits (it ran). The
    reporter's 'even with small micro and mini-batch sizes' agrees: those sizes do not set the rollout's peak."""
    c = _case("verl_rllm182_qwen3_14b_grpo_multiturn_8xa100")
    assert c.outcome == "oom" and "actor_rollout_ref.rollout.gpu_memory_utilization=0.8" in c.args
    assert "actor_rollout_ref.actor.fsdp_config.param_offload=False" in c.args
    for release in ("verl==0.4.1", "verl==0.5.0", c.framework):
        mem = rb_check(c, release).memory
        rollout = mem.phases["rollout"]
        resident = rollout["actor params+optimizer (resident)"]
        update = mem.phases["actor_update"]
        assert resident == pytest.approx(update["params (sharded)"] + update["optimizer states (sharded)"], abs=2)  # MiB
        assert resident / 1024 > 20  # GiB: fp32 params + Adam of 14.8B over 8 GPUs (terms in MiB)
        assert mem.verdict("rollout") != "yes" and not mem.fits
    # the same resident states over 32 GPUs: the DeepCoder script's own run (gpu_memory_utilization 0.8 too) fits
    ran = _check("verl_deepcoder_script_r1distill14b_grpo16k_4x8xa100").memory
    assert "actor_rollout_ref.rollout.gpu_memory_utilization=0.8" in _case(
        "verl_deepcoder_script_r1distill14b_grpo16k_4x8xa100").args
    assert ran.fits
    assert ran.phases["rollout"]["actor params+optimizer (resident)"] == pytest.approx(resident / 4, rel=0.02)


def test_a_packed_micro_batch_far_under_the_line_at_the_datas_lengths_is_judged_to_fit_with_the_worst_case_beside():
    """verl's LoRA tuning rows pack their micro batches (use_remove_padding: dp_actor._forward_micro_batch unpads the
    left-padded prompts and the right-padded responses), so the update holds the tokens the GSM8K samples have. The
    0.5B row (116 sequences per micro batch on one H100) and the 14B row at 32 a GPU ran; at the maximum lengths they
    need 161 and 98 GiB, at GSM8K's lengths (the profile's longest published run, Qwen2.5-0.5B-Instruct's 368-token
    natural length, at the sum's 99.9th percentile) 56 and 56 GiB of 74.7: more than the observed error under the
    line, so they are judged to fit. The memory rule broken at the maximum lengths stays, as a tolerated warning, and
    the verdict line says what it assumed and prints the worst case beside it."""
    from rlbatch_solver.render import outlook_text
    from rlbatch_solver.rules.base import Severity

    for name in ("verl_tuning_lora_0.5b_bs116_1xh100", "verl_tuning_lora_14b_bs32_2xh100"):
        report = _check(name)
        mem = report.memory
        phase = "actor_update"
        assert mem.peaks[phase] > mem.capacity_of(phase) and mem.typical_judged, name
        assert mem.fits_at_data(phase) and mem.fits_judged and mem.outlook() == "fits", name
        # issue 25's contract: JSON's memory.fits stays the boolean peak <= usable at the maximum lengths; the
        # verdict that reads the data's lengths is its own field, beside the phase's own ``fits`` (False here)
        d = mem.to_dict()
        assert d["fits"] is False and mem.fits is False and d["fits_judged"] is True, name
        assert d["phases"][phase]["fits"] is False and d["phases"][phase]["fits_at_data"] is True, name
        assert d["verdict"] == "no" and d["outlook"] == "fits", name
        rule = next(v for v in report.violations if v.rule == "verl.memory.actor_update")
        assert rule.severity == Severity.WARNING and rule.tolerated, name
        text = outlook_text(mem)
        assert "fits at the data's lengths" in text and "ASSUMED" in text and "gsm8k" in text, name
        assert f"{mem.peaks[phase] / 1024:.1f} GiB" in text, name  # the worst case, beside the verdict


def test_reading_the_datas_lengths_keeps_the_runs_within_the_error_of_the_line_and_unsourced_lengths_on_the_oom_side():
    """What reading the data's lengths must not turn into a fit: the LoRA 14B bisection edge (58 ran, 59 and 64 ran
    out of memory; at GSM8K's longest published lengths 73.0, 73.7 and 76.9 of 74.7 GiB, within the model's error of
    the line or over it: all three predicted OOM, the edge on its OOM side); DeepScaleR's 8K run on 8 x A100-40GB
    (rLLM #30: a reasoning model, token-budgeted micro batches, 35.5 of 37.0 GiB at its lengths); Search-R1 #62
    (eight sequences per micro batch, 17.7 of 37.0 GiB at the default shares of the limits, but no source for its
    data's lengths: the default profile is not judged by, and it ran out of memory after ~40 steps)."""
    from rlbatch_solver.costmodel.lengths import PROFILES

    for name in ("verl_tuning_lora_14b_bs58_2xh100", "verl_tuning_lora_14b_bs59_2xh100",
                 "verl_tuning_lora_14b_bs64_2xh100", "verl_rllm30_deepscaler_r1distill1p5b_grpo8k_8xa100_40gb"):
        mem = _check(name).memory
        assert not mem.fits_judged and not mem.fits_at_data("actor_update"), name
    search = _check("verl_searchr1_62_qwen2_5_0_5b_grpo_2xa100_40gb").memory
    assert search.lengths["profile"] == "default" and not search.typical_judged
    assert search.typical_peaks["actor_update"] < search.capacity_of("actor_update") * 0.6 and not search.fits
    # the profiles that bound the judged lengths, and the two that do not
    assert PROFILES["gsm8k"].upper().natural_tokens == 368.0 and PROFILES["math"].upper().natural_tokens == 1975.0
    assert PROFILES["default"].upper() is None and PROFILES["limit"].upper() is None


def test_the_judged_lengths_are_the_given_means_else_the_profiles_longest_run():
    """lengths.judged_response_fraction: a mean the user gives is judged at as given; else the profile's law at its
    longest published run (gsm8k at a 1,024 limit: 368 x (1 - e^(-1024/368)) = 345 tokens, against the median
    run's 229); the default profile has none."""
    import math

    from rlbatch_solver.costmodel.lengths import judged_response_fraction

    mem = _check("verl_tuning_lora_0.5b_bs116_1xh100").memory
    assert mem.lengths["judged_response"] == pytest.approx(368 * (1 - math.exp(-1024 / 368)), abs=0.1)
    assert mem.lengths["response"] == pytest.approx(229.2, abs=0.1)
    # the prompts at that run's own mean prompt (the verl-data log's 103.6), not the seven runs' median 93
    assert mem.lengths["judged_prompt"] == pytest.approx(103.6, abs=0.05) and mem.lengths["prompt"] == 93.0
    given = _check("verl_tuning_lora_0.5b_bs116_1xh100", mean_response_len=300).memory
    assert given.lengths["judged_response"] == pytest.approx(300, abs=0.1)

    class _Plan:
        avg_response_fraction = None
        response_len = 1024
        longest_response = None
        response_profile = "default"
        dataset = ""

        class model:
            name = "x"

    assert judged_response_fraction(_Plan) is None


def _lora_05b_with(**overrides):
    """The LoRA 0.5B tuning row (GSM8K, packed, one H100) with some of its keys set otherwise."""
    import rlbatch_solver as rb

    c = _case("verl_tuning_lora_0.5b_bs116_1xh100")
    keys = {a.split("=", 1)[0]: a for a in c.args}
    for key, value in overrides.items():
        keys[key] = f"{key}={value}"
    return rb.check(list(keys.values()), framework=c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu,
                    length_fraction=c.length_fraction)


def test_the_outlook_never_improves_as_the_micro_batch_grows():
    """One test at the data's lengths on both sides of the line (MemoryCheck.clears_at_data): the LoRA 0.5B row's
    update micro batch swept from 8 to 128 sequences. At the maximum lengths its peak crosses the line between 52 and
    56; a micro batch under the line but within the model's error of it (tight at the maximum lengths) whose typical
    peak clears the error is judged as one over the line is, so the outlook, the judged verdict and the boolean at
    the maximum lengths only ever worsen as it grows."""
    order = {"fits": 0, "tight": 1, "OOM": 2}
    seen, crossed = [], False
    for micro in range(8, 129, 4):
        mem = _lora_05b_with(**{"actor_rollout_ref.actor.ppo_micro_batch_size": micro}).memory
        crossed = crossed or mem.peaks["actor_update"] > mem.capacity_of("actor_update")
        seen.append((micro, order[mem.outlook("actor_update")], not mem.fits_judged, not mem.fits,
                     mem.peaks["actor_update"], mem.typical_peaks["actor_update"]))
    assert crossed and seen[0][1:4] == (0, False, False)
    for before, after in zip(seen, seen[1:]):
        assert after[4] >= before[4] and after[5] >= before[5], (before, after)  # both peaks grow with it
        assert all(a >= b for a, b in zip(after[1:4], before[1:4])), (before, after)
    # the micro batches under the line but within the error at the maximum lengths fit at the data's (the review's
    # 48 and 52: "tight" before, beside 56 and 116 over the line and "fits")
    assert [o for m, o, *_ in seen if m in (48, 52, 56, 116)] == [0, 0, 0, 0]


def test_the_data_lengths_are_judged_by_only_where_both_have_a_source_and_said_as_they_came():
    """A mean the user gives is said as given, never as a profile's source; a prompt at the default share of its
    limit (no data and no profile to give its mean) is no source, so the verdict keeps the maximum lengths."""
    import rlbatch_solver as rb
    from rlbatch_solver.render import outlook_text

    c = _case("verl_tuning_lora_0.5b_bs116_1xh100")
    kw = dict(framework=c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu)
    gsm8k = rb.check(c.args, mean_response_len=300, **kw).memory
    assert gsm8k.typical_judged and gsm8k.lengths["judged_prompt_from"] == "profile:gsm8k"
    assert gsm8k.lengths["judged_response_from"] == "given"
    text = outlook_text(gsm8k)
    assert "300 (given by you)" in text and "longest of its published runs" not in text
    other = [a if not a.startswith("data.train_files=") else "data.train_files=data/foo/train.parquet" for a in c.args]
    unsourced = rb.check(other, mean_response_len=300, **kw).memory
    assert unsourced.lengths["profile"] == "default" and unsourced.lengths["prompt_from"] == "assumed"
    assert not unsourced.typical_judged and unsourced.lengths["judged_prompt_from"] is None
    assert not unsourced.fits_judged and unsourced.outlook() != "fits"
    assert "given by you" not in outlook_text(unsourced) and "profile's" not in outlook_text(unsourced)
    both = rb.check(other, mean_response_len=300, mean_prompt_len=120, **kw).memory
    assert both.typical_judged and both.fits_judged and both.lengths["judged_prompt_from"] == "given"


def test_a_padded_phase_is_not_judged_at_the_datas_lengths_even_with_a_token_budget():
    """Without use_remove_padding verl's actor forwards the padded rows (dp_actor._forward_micro_batch); with
    use_dynamic_bsz, rearrange_micro_batches (utils/seqlen_balancing.py) counts the attention mask's tokens against the
    budget, so shorter data puts more padded rows in a micro batch: the data's lengths never lower a padded phase's
    peak. Nothing is re-priced there and the verdict says it is not judged by."""
    mem = _lora_05b_with(**{"actor_rollout_ref.model.use_remove_padding": False,
                            "actor_rollout_ref.actor.use_dynamic_bsz": True}).memory
    assert not mem.typical_judged and mem.typical_peaks == {}
    assert all(p["typical_peak_mib"] == p["peak_mib"] for p in mem.to_dict()["phases"].values())


def test_ms_swift_is_not_judged_at_the_datas_lengths():
    """ms-swift's GRPO padding_free packs the decoder's tokens but re-pads the last hidden states to the micro batch's
    longest before the LM head (3.7.2 GRPOTrainer.padding_free_context): the logits are not the packed sum the typical
    peaks price, so the verdict keeps the maximum lengths (Plan.data_lengths_judged)."""
    import rlbatch_solver as rb
    from rlbatch_solver.costmodel.tables import Phase
    from rlbatch_solver.frameworks import get_framework

    c = _case("swift_4594_qwen3_1_7b_grpo_lora_novllm_8xa100")
    r = rb.check(c.args + ["--padding_free", "true"], framework=c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu)
    assert r.memory is not None and not r.memory.typical_judged and r.memory.typical_peaks == {}
    fw = get_framework(c.framework)
    from rlbatch_solver.catalog.gpus import load_gpu
    from rlbatch_solver.catalog.models import load_model

    plan = fw.cost_spec(load_model(c.model), load_gpu(c.gpu)).plan(r.values, Phase.ACTOR_UPDATE)
    assert plan.remove_padding and not plan.data_lengths_judged


def test_check_fix_and_explain_say_the_same_of_a_config_over_the_line_only_at_the_maximum_lengths():
    """check: VALID (exit 0), the memory rule a tolerated warning "at the maximum lengths; it fits at the data's
    lengths"; fix: the same words in its header (VALID at the data's lengths, the worst case repaired); explain on a
    pasted out-of-memory in that phase: not "we predicted this out-of-memory" but a miss of the verdict, with the
    lengths it assumed."""
    import io

    import rlbatch_solver as rb
    from rich.console import Console

    from rlbatch_solver.commands.check import AT_DATA_LENGTHS
    from rlbatch_solver.render import print_fix

    c = _case("verl_tuning_lora_0.5b_bs116_1xh100")
    kw = dict(framework=c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu)
    checked = rb.check(c.args, **kw)
    assert checked.valid
    rule = next(v for v in checked.violations if v.rule == "verl.memory.actor_update")
    assert rule.message.endswith(AT_DATA_LENGTHS)
    fixed = rb.fix(c.args, time_limit_s=20, **kw)
    before = next(v for v in fixed.before_violations if v.rule == "verl.memory.actor_update")
    assert before.message == rule.message and before.tolerated
    out = io.StringIO()
    print_fix(Console(file=out, width=400), fixed)
    head = out.getvalue().splitlines()[0]
    assert head.startswith("VALID") and "at the data's lengths" in head and "INVALID" not in out.getvalue()
    message = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity "
               "of 79.19 GiB of which 1.20 GiB is free. in update_policy")
    from rlbatch_solver.commands.explain_oom import explain_oom

    exp = explain_oom(message, framework=c.framework, config=c.args, gpus=c.gpus, model=c.model, gpu=c.gpu,
                      time_limit_s=20)
    assert exp.predicted_oom is False
    assert "we predicted this out-of-memory" not in exp.lines
    assert any("fit at the data's lengths" in line and "ASSUMED" in line for line in exp.lines)


def _gmu_099_case():
    """The LoRA 0.5B case (actor update over the line only at the maximum lengths, judged to fit at the data's) with
    the rollout given 99% of the GPU: the rollout breaks its line, the actor update stays a tolerated warning."""
    c = _case("verl_tuning_lora_0.5b_bs116_1xh100")
    key = "actor_rollout_ref.rollout.gpu_memory_utilization="
    args = [a for a in c.args if not a.startswith(key)] + [key + "0.99"]
    return c, args, dict(framework=c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu)


def test_will_it_oom_names_the_phase_that_breaks_not_one_judged_to_fit_at_the_datas_lengths():
    """The line took the phase furthest over at the maximum lengths (the actor update, 5x the model's error over
    there but judged to fit at the data's) under the head of the worst judged phase (the rollout's TIGHT): it called a
    phase 5x over "within the model's error" and never named the rollout. The phase is chosen by the judged outlook
    first, then the margin; the phase judged at the data's lengths is named after it."""
    import rlbatch_solver as rb
    from rlbatch_solver.render import outlook_text

    c, args, kw = _gmu_099_case()
    mem = rb.check(args, **kw).memory
    assert mem.outlook("rollout") == "tight" and mem.outlook("actor_update") == "fits"
    assert mem.fits_at_data("actor_update") and (mem.margin_errors("actor_update") or 0) < -1
    line = outlook_text(mem)
    head, _, rest = line.partition("; over the line only at the config's maximum lengths")
    assert "the rollout peaks" in head and "actor update" not in head, line
    assert "within the model's error" in head  # the rollout: 0.2 GiB over, inside one error
    assert "the actor update" in rest and "judged to fit at the data's" in rest, line


def test_fix_counts_the_broken_rules_and_valid_before_as_check_does():
    """fix's JSON valid_before was False and its text "breaks 2 rules" where check said valid (a tolerated warning
    only) or "breaks 1 (and warns of 1 more)": the warning the verdict tolerates counted as a break. Both count by
    check's one definition (check.breaks)."""
    import io

    import rlbatch_solver as rb
    from rich.console import Console

    from rlbatch_solver.render import print_check, print_fix

    def first_line(printer, report):
        out = io.StringIO()
        printer(Console(file=out, width=400), report)
        return out.getvalue().splitlines()[0]

    c = _case("verl_tuning_lora_0.5b_bs116_1xh100")
    kw = dict(framework=c.framework, gpus=c.gpus, model=c.model, gpu=c.gpu)
    _, args, _ = _gmu_099_case()
    for config in (c.args, args):  # a tolerated warning only; a broken rule beside it
        checked, fixed = rb.check(config, **kw), rb.fix(config, time_limit_s=10, **kw)
        assert fixed.to_dict()["valid_before"] == checked.to_dict()["valid"]
        assert any(v.tolerated for v in fixed.before_violations)
    assert checked.errors and not checked.valid
    said = first_line(print_check, checked)
    assert "breaks 1 of the" in said and "(and warns of 1 more)" in said, said
    head = first_line(print_fix, fixed)
    assert head.startswith("INVALID") and "breaks 1 of the" in head and "(and warns of 1 more)" in head, head
