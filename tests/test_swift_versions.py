"""Older ms-swift release packs (frameworks/swift/versions.py: 4.3.2 and 3.x): each pack's rules as read from that
release's wheel,
the dating of a pasted config by its flags, and --framework swift==VERSION."""

from __future__ import annotations

import pytest

from rlbatch_solver import api
from rlbatch_solver.frameworks import get_framework
from rlbatch_solver.frameworks.dating import pick
from rlbatch_solver.frameworks.swift import versions as V


def errors(report) -> set[str]:
    return {v.rule for v in report.errors if ".memory." not in v.rule}


BASE = ["--rlhf_type", "grpo", "--num_generations", "8"]


def test_every_pack_assembles_and_names_its_release():
    for version in V.VERSIONS:
        rs = V.ruleset_for(version)
        assert rs.version == version
        for rule in rs.rules:
            assert rule.source and rule.message
            assert "4.6.0" not in rule.message or version == V.NEWEST, (version, rule.id, rule.message)


@pytest.mark.parametrize("version,ok", [("3.3.1", False), ("3.4.0", True), ("3.10.3", True), ("4.6.0", True)])
def test_the_batch_check_of_each_release(version, ok):
    """W=4, B=1, GA=8, G=8: the per-step batch 4 is not whole groups of 8 (3.1-3.3's check: 'The global train batch
    size (4 x 1) must be evenly divisible'), the optimizer step's 32 is (3.4), and so is the rollout of 3.5 on."""
    args = ["NPROC_PER_NODE=4", *BASE, "--per_device_train_batch_size", "1", "--gradient_accumulation_steps", "8"]
    r = api.check(args, framework=f"swift=={version}")
    assert r.version == version
    assert (errors(r) == set()) == ok, errors(r)
    if not ok:
        v = next(v for v in r.errors if v.rule == "swift.trainer.batch_divisible_by_num_generations")
        assert "(4 x 1 = 4)" in v.message and "grpo_trainer.py:GRPOTrainer.__init__" in v.source


def test_3_4_optimizer_batch_and_sequence_parallel():
    args = ["NPROC_PER_NODE=3", *BASE, "--per_device_train_batch_size", "1", "--gradient_accumulation_steps", "2",
            "--sequence_parallel_size", "2"]
    r = api.check(args, framework="swift==3.4.0")
    assert errors(r) >= {"swift.trainer.batch_divisible_by_num_generations", "swift.args.rlhf_no_sequence_parallel"}
    assert any("3 x 1 x 2 = 6" in v.message for v in r.errors)


def test_3_4_1_takes_sequence_parallelism_3_4_0_refuses():
    """3.4.1 dropped RLHFArguments._check_rlhf (3.4.0: 'RLHF do not support sequence parallel'); its Ulysses splits
    the world into sequence ranks and the KV heads over them, with no ring attention (qwen2.5-7b: 4 KV heads)."""
    base = [*BASE, "--per_device_train_batch_size", "1", "--gradient_accumulation_steps", "1"]
    ok = ["NPROC_PER_NODE=8", *base, "--sequence_parallel_size", "2"]
    check = dict(model="qwen2.5-7b", gpu="a100-80gb")
    assert errors(api.check(ok, framework="swift==3.4.0", **check)) == {"swift.args.rlhf_no_sequence_parallel"}
    assert errors(api.check(ok, framework="swift==3.4.1", **check)) == set()
    mesh = ["NPROC_PER_NODE=6", *base[:-2], "--gradient_accumulation_steps", "4", "--sequence_parallel_size", "4"]
    assert errors(api.check(mesh, framework="swift==3.4.1", **check)) == {"swift.sp.world_divisible_by_sp"}
    heads = ["NPROC_PER_NODE=8", *base, "--sequence_parallel_size", "8"]
    r = api.check(heads, framework="swift==3.4.1", **check)
    assert errors(r) == {"swift.sp.heads_divisible_by_sp"}
    assert "num_key_value_heads = 4" in r.errors[0].message
    # 4.6.0 runs the heads that do not split as ring attention (with --padding_free, a flag 3.4.1 lacks)
    assert errors(api.check([*heads, "--padding_free", "true"], framework="swift==4.6.0", **check)) == set()


@pytest.mark.parametrize("named,pack", [("3.4.0", "3.4.0"), ("3.4.1", "3.4.1"), ("3.4.1.post1", "3.4.1"),
                                        ("3.4.2", "3.4.1"), ("3.4", "3.4.1"), ("3.3.0", "3.3.1")])
def test_3_4_patches_read_their_own_pack(named, pack):
    """3.4.0 and 3.4.1 differ by one check: a patch resolves to the release it is, else the series' newest pack."""
    assert get_framework(f"swift=={named}").version == pack


def test_3_0_and_3_1_are_not_followed():
    """3.0 has no GRPO; 3.1 places vLLM by --vllm_device with no _check_grpo (not 3.3.1's layouts)."""
    for named in ("3.0.3", "3.1.1"):
        with pytest.raises(ValueError):
            get_framework(f"swift=={named}")


def test_3_x_takes_no_generation_batch_and_spg_together():
    args = ["NPROC_PER_NODE=8", *BASE, "--per_device_train_batch_size", "2", "--generation_batch_size", "32",
            "--steps_per_generation", "2"]
    assert errors(api.check(args, framework="swift==4.6.0")) == set()  # 32 = 2*8*2: they agree
    assert errors(api.check(args, framework="swift==3.12.6")) == {"swift.args.gen_equals_base_times_spg"}


@pytest.mark.parametrize("named,pack", [("4.0.4", "4.3.2"), ("4.1.0", "4.3.2"), ("4.2.3", "4.3.2"),
                                        ("4.3.2", "4.3.2"), ("4.4.2", "4.6.0"), ("4.5.3", "4.6.0")])
def test_4_0_to_4_3_refuse_generation_batch_and_spg_together(named, pack):
    """4.0-4.3's GRPOConfig.__post_init__ runs TRL 0.29.1's first, which refuses the pair even when it agrees; 4.4
    skips it (swift/rlhf_trainers/arguments.py) and checks generation_batch_size = base x steps_per_generation."""
    args = ["NPROC_PER_NODE=8", *BASE, "--per_device_train_batch_size", "2", "--generation_batch_size", "32",
            "--steps_per_generation", "2"]
    r = api.check(args, framework=f"swift=={named}")
    assert r.version == pack
    assert errors(r) == ({"swift.args.gen_equals_base_times_spg"} if pack == "4.3.2" else set()), errors(r)
    if named != pack:
        assert any(f"ms-swift {named} is checked with the rules of {pack}" in n for n in r.notes), r.notes


def test_before_4_4_a_teacher_does_not_exempt_one_generation():
    """4.4 moved the num_generations check to RLHFArguments._check_teacher, which lets a teacher (on-policy
    distillation) run with one completion per prompt; 4.0-4.3's GRPOConfig.__post_init__ refuses it whatever the
    teacher (GRPO takes none before 4.4)."""
    args = ["NPROC_PER_NODE=8", "--rlhf_type", "grpo", "--num_generations", "1", "--teacher_model", "Qwen/Qwen3-8B"]
    assert errors(api.check(args, framework="swift==4.5.3")) == set()
    r = api.check(args, framework="swift==4.3.2")
    assert errors(r) == {"swift.args.num_generations_at_least_two"}
    assert next(v for v in r.errors).source == "swift/rlhf_trainers/arguments.py:GRPOConfig.__post_init__"


def test_the_pair_is_allowed_since_the_release_that_allows_it_on_each_path():
    """HF: 4.4.0 (4.2-4.3 run TRL's refusal first); Megatron: 4.2.0 (4.0-4.1's resolve_generation_batch_size:
    'cannot be both configured')."""
    for framework, since in (("swift", "4.4.0"), ("swift-megatron", "4.2.0")):
        rule = next(r for r in get_framework(framework).ruleset.rules if r.id == "swift.args.gen_equals_base_times_spg")
        assert f"allowed since ms-swift {since}" in rule.explanation, (framework, rule.explanation)


def test_before_3_11_the_host_decides_the_vllm_mode():
    plain = ["NPROC_PER_NODE=8", *BASE, "--use_vllm", "true"]
    assert "swift.args.vllm_mode_required" in errors(api.check(plain, framework="swift==3.12.6"))
    assert errors(api.check(plain, framework="swift==3.10.3")) == set()
    # async_generate without a host: 3.5-3.10 set colocate and refuse it
    r = api.check(plain + ["--async_generate", "true"], framework="swift==3.10.3")
    assert errors(r) == {"swift.args.async_generate_needs_server"}
    host = plain + ["--async_generate", "true", "--vllm_server_host", "10.0.0.1"]
    assert errors(api.check(host, framework="swift==3.10.3")) == set()


def test_3_4_vllm_device_counts():
    """3.4.0 _check_grpo: async mode needs visible GPUs = NPROC_PER_NODE + num_infer_workers and TP 1."""
    args = ["NPROC_PER_NODE=6", *BASE, "--per_device_train_batch_size", "4", "--use_vllm", "true",
            "--num_infer_workers", "2"]
    assert errors(api.check(args, framework="swift==3.4.0", gpus=8)) == set()
    # said once, in 3.4.0's words: 4.6.0's job budget (a `swift rollout` server's, cited to a method 3.4.0 lacks)
    # is implied by it
    assert errors(api.check(args, framework="swift==3.4.0", gpus=7)) == {"swift.legacy.async_device_count"}
    server = [a for a in args if "infer_workers" not in a and a != "2"] + ["--vllm_server_host", "10.0.0.1"]
    for version in ("3.4.0", "3.3.1"):  # an external server's: the job's budget, with no 4.6.0 method cited
        r = api.check(server, framework=f"swift=={version}", gpus=5)
        assert errors(r) == {"swift.gpus.budget"}, errors(r)
        assert "_check_device_count" not in next(v for v in r.errors if v.rule == "swift.gpus.budget").source
    tp = args + ["--tensor_parallel_size", "2"]
    assert "swift.legacy.async_no_tensor_parallel" in errors(api.check(tp, framework="swift==3.4.0", gpus=8))


@pytest.mark.parametrize("flags,pack", [
    ({"num_infer_workers": 2}, "3.3.1"),  # 3.2-3.5: the oldest, 3.2, is 3.3.1's to judge
    ({"num_infer_workers": 2, "vllm_mode": "colocate"}, "3.10.3"),  # 3.5 only
    ({"train_type": "lora", "generation_batch_size": 16}, "3.10.3"),  # 3.5 to 4.0
    ({"num_generations_eval": 4}, "4.6.0"),  # the newest has it: nothing dates it older
    ({"tuner_type": "lora"}, "4.6.0"),
    ({"train_type": "lora", "tuner_type": "lora"}, "4.3.2"),  # 4.0.x only (4.0.4 still takes --train_type)
])
def test_dating(flags, pack):
    assert V.detect(flags)[0] == pack


def test_a_config_with_no_dating_flag_is_not_dated():
    assert V.detect({"per_device_train_batch_size": 2})[0] is None


def test_the_report_names_the_release_whose_rules_judged_a_dated_config():
    """--num_infer_workers dates the config to 3.1-3.4 (3.3.1's pack); the notes name that pack."""
    r = api.check(["NPROC_PER_NODE=8", *BASE, "--num_infer_workers", "8", "--use_vllm", "true"], framework="swift")
    assert r.version == "3.3.1"
    assert any("ms-swift 3.3.1 rules" in n for n in r.notes), r.notes


def test_a_named_patch_reads_its_series_pack():
    fw = get_framework("swift==3.7.0")
    assert fw.version == "3.10.3"
    assert get_framework("swift==3.11.2").version == "3.12.6"


def test_one_dating_policy():
    assert pick(["0.18.2", "0.19.1"], "1.16.0") == "0.18.2"
    assert pick(["0.19.1", "1.16.0"], "1.16.0") == "1.16.0"
    assert pick([], "1.16.0") is None


def test_3_5_to_3_10_read_the_host_as_server_mode_for_the_memory_model():
    """3.5-3.10 overwrite --vllm_mode from the host: --vllm_mode colocate with --vllm_server_host runs on the server
    (RLHFArguments._init_grpo: 'set vllm_mode to `server` since vllm_server_host is provided'), so the trainer's GPUs
    hold no engine."""
    flat = {"NPROC_PER_NODE": 8, "use_vllm": True, "vllm_mode": "colocate", "vllm_server_host": "10.0.0.1"}
    values = get_framework("swift==3.10.3").to_values(flat, gpus=None, model=None)
    assert values["vllm_server"] and values["vllm_mode_given"]
    assert not get_framework("swift==4.6.0").to_values(flat, gpus=None, model=None)["vllm_server"]


# --vllm_mode server --vllm_server_base_url, the server form of 3.7.2-4.0.4; --train_type (gone in 4.6.0) dates it to
# 3.5.0, the oldest release its flags allow
BASE_URL_7B = ["NPROC_PER_NODE=6", "swift", "rlhf", "--rlhf_type", "grpo", "--model", "Qwen/Qwen2.5-7B-Instruct",
               "--use_vllm", "true", "--vllm_mode", "server", "--vllm_server_base_url", "http://10.0.0.2:8000",
               "--train_type", "full", "--torch_dtype", "bfloat16", "--max_length", "2048",
               "--max_completion_length", "1024", "--per_device_train_batch_size", "2",
               "--gradient_accumulation_steps", "8", "--num_generations", "4", "--deepspeed", "zero3"]


def test_a_base_url_config_dated_by_its_oldest_release_is_read_as_the_server_releases_since_3_7_2_run_it():
    """Dating by the oldest release (dating.pick) says when a config was written, not that it ran before 3.7.2:
    with no release named, --vllm_server_base_url alone is the server as 3.7.2 and later read it (RLHFArguments
    _init_grpo, #5483), a note says what 3.5.0-3.7.1 do and how to name one; named 3.6.0 it runs colocated engines on
    every training rank ('vllm_server_host is not provided')."""
    r = api.check(BASE_URL_7B, gpu="h100", model="qwen2.5-7b", framework="swift")
    assert r.version == "3.10.3" and r.valid and r.values["vllm_server"] is True
    assert "rollout engine (kept between rollouts)" not in r.memory.phases["actor_update"]
    note = next(n for n in r.notes if "--vllm_server_base_url without --vllm_server_host" in n)
    assert "read as ms-swift 3.7.2 and later" in note and "3.5.0 to 3.7.1" in note
    assert "--vllm_gpu_memory_utilization 0.9 (the default)" in note and "--framework swift==" in note
    assert any("`swift rollout` server's GPU" in n for n in r.notes)
    pinned = api.check(BASE_URL_7B, gpu="h100", model="qwen2.5-7b", framework="swift==3.6.0")
    assert pinned.values["vllm_server"] is False and not pinned.memory.fits and not pinned.valid
    assert "rollout engine (kept between rollouts)" in pinned.memory.phases["actor_update"]
    note = next(n for n in pinned.notes if "--vllm_server_base_url without --vllm_server_host" in n)
    assert "ms-swift 3.6.0 sets vllm_mode to colocate" in note
    assert not any("`swift rollout` server's GPU" in n for n in pinned.notes)
    # the user's share is the one said
    share = api.check(BASE_URL_7B + ["--vllm_gpu_memory_utilization", "0.5"], gpu="h100", model="qwen2.5-7b", framework="swift==3.6.0")
    assert any("--vllm_gpu_memory_utilization 0.5;" in n for n in share.notes)
    assert api.check(BASE_URL_7B, gpu="h100", model="qwen2.5-7b", framework="swift==3.7.2").values["vllm_server"] is True


def test_a_base_url_config_whose_flags_allow_only_3_5_0_to_3_7_1_is_read_colocated():
    """--vllm_device (last in 3.5.3) with --vllm_mode and the base URL: every release the flags allow is before 3.7.2,
    so they settle the colocated reading without a named release."""
    flat = {"NPROC_PER_NODE": 8, "use_vllm": True, "vllm_mode": "server", "vllm_server_base_url": "http://h:8000",
            "vllm_device": "auto"}
    assert V.dated_span(flat) == ("3.5.0", "3.5.3")
    fw, _ = get_framework("swift").for_config(flat)
    assert fw.dated and fw.to_values(flat, gpus=None, model=None)["vllm_server"] is False
    assert V.dated_span({"vllm_mode": "server", "vllm_server_base_url": "u", "train_type": "full"}) == ("3.5.0", "4.0.4")
    assert V.dated_span({"use_vllm": True}) is None
    # no flag dates it before the newest: read as the server, the older releases' reading said all the same
    newest = {"NPROC_PER_NODE": 8, "use_vllm": True, "vllm_mode": "server", "vllm_server_base_url": "http://h:8000"}
    fw, _ = get_framework("swift").for_config(newest)
    assert not fw.dated and fw.to_values(newest, gpus=None, model=None)["vllm_server"] is True
    assert any("these flags also fit ms-swift 3.5.0 to 3.7.1" in n for n in fw.config_notes(newest))
    assert not any("--vllm_server_base_url without" in n for n in get_framework("swift==4.6.0").config_notes(newest))


def test_the_base_url_note_is_not_said_for_releases_without_the_flag():
    """3.2-3.4 have no --vllm_server_base_url (added in 3.5.0): a release named there refuses it, and says nothing
    about 3.5.0-3.7.1's reading of it."""
    flat = {"NPROC_PER_NODE": 8, "use_vllm": True, "vllm_server_base_url": "http://h:8000"}
    for named in ("swift==3.4.1", "swift==3.3.1"):
        notes = get_framework(named).config_notes(flat)
        assert not any("--vllm_server_base_url without" in n for n in notes), (named, notes)


def test_the_upgrade_line_names_the_flags_4_6_refuses():
    r = api.check(["NPROC_PER_NODE=8", *BASE, "--train_type", "lora", "--vllm_mode", "colocate", "--use_vllm", "true"],
                  framework="swift")
    assert r.version == "3.10.3"
    assert r.upgrade is not None and "--train_type" in r.upgrade.unknown_keys


def test_fix_offers_no_flag_the_release_lacks():
    """fix took its repair policy by the framework's name, so a config dated to 3.3.1 was offered 4.6.0's flags:
    '--vllm_mode colocate -> --vllm_mode server' (3.3.1's arguments have no --vllm_mode; the 3.x series places vLLM
    by num_infer_workers). Each 3.x pack's policy leaves out the flags its release lacks (versions.KEY_RELEASES)."""
    from rlbatch_solver.commands.fix import fix
    from rlbatch_solver.frameworks.repair_policies import policy_for

    for version in ("3.3.1", "3.4.0", "3.10.3"):
        fw = get_framework(f"swift=={version}")
        policy = policy_for("swift", fw.ruleset)
        keys = {fw.ruleset.variables[n].key.strip("()").split(" ")[0].removeprefix("rollout.")
                for n in (*policy.rules, *policy.memory) if n in fw.ruleset.variables}
        assert all(V.has_key(version, k) for k in keys if k in V.KEY_RELEASES), (version, keys)
    assert "vllm_server" in policy_for("swift", get_framework("swift").ruleset).rules  # 4.6.0 keeps its own
    args = ["NPROC_PER_NODE=8", *BASE, "--per_device_train_batch_size", "16", "--use_vllm", "true",
            "--num_infer_workers", "8", "--train_type", "full", "--max_completion_length", "4096"]
    r = fix(args, framework="swift", gpu="a100-80gb", model="qwen2.5-7b", time_limit_s=20)
    assert r.version == "3.3.1"
    offered = [str(k) for k, _, _ in r.native_changes] + list(r.relaxations) + [
        " ".join(x.get("changes", [])) for x in r.relaxations_tried]
    assert not any("vllm_mode" in w for w in offered), offered


def test_recommend_for_a_release_without_vllm_mode_prints_its_own_flags():
    """recommend --framework swift==3.4.0 said 'proven infeasible': its space held 4.6.0's --vllm_mode colocate,
    which 3.4.0 reads as async mode with num_infer_workers 1 (8 + 1 GPUs wanted of 8); a found answer printed
    --vllm_mode and --vllm_tensor_parallel_size, which 3.2-3.4's arguments lack. Colocated as those releases' examples
    run it (--num_infer_workers = NPROC_PER_NODE), and the printed command checks back valid by its own release."""
    from rlbatch_solver.scenario import Scenario

    for version in ("3.4.0", "3.3.1"):
        report = api.recommend(Scenario(framework=f"swift=={version}", gpu="a100-80gb", gpus=8, model="qwen2.5-7b"),
                               top=1)
        assert report.best is not None, version
        words = " ".join(report.best.native)
        assert "--num_infer_workers 8" in words and "--vllm_mode" not in words, words
        assert "--vllm_tensor_parallel_size" not in words, words
        back = api.check(list(report.best.native), framework=f"swift=={version}", gpus=8)
        assert errors(back) == set(), errors(back)


def _recommend(framework: str, **fixed):
    from rlbatch_solver.scenario import Scenario

    return api.recommend(Scenario(framework=framework, gpu="a100-80gb", gpus=8, model="qwen2.5-7b", fixed=fixed),
                         top=1)


def test_3_4_searches_the_colocated_engines_tensor_parallelism():
    """3.2-3.4's colocated engine takes --tensor_parallel_size (rlhf_args.py _check_grpo, grpo_trainer.py
    tp_group_ranks): recommend searched TP 1 only (29.8 s where 3.10.3 finds its answer at TP 4); now the same
    answer as 3.10.3's, printed with 3.4.0's flag."""
    newer, old = _recommend("swift==3.10.3"), _recommend("swift==3.4.0")
    assert old.best.step_time_s == pytest.approx(newer.best.step_time_s, rel=1e-6)
    tp = int(newer.best.values["vllm_tp"])
    assert tp > 1
    words = " ".join(old.best.native)
    assert f"--tensor_parallel_size {tp}" in words and "--num_infer_workers 8" in words, words
    assert errors(api.check(list(old.best.native), framework="swift==3.4.0")) == set()


def test_3_4_async_mode_searches_the_inference_workers_and_says_where_vllm_runs():
    """--async_generate needs 3.2-3.4's async mode: num_infer_workers engines (TP 1) on GPUs of their own, the node
    showing NPROC_PER_NODE + num_infer_workers GPUs (_check_grpo). The search splits the node, the command shows the
    GPUs (CUDA_VISIBLE_DEVICES), and the best line names the job's own engines, not a server 3.x does not have."""
    import io

    from rich.console import Console

    from rlbatch_solver.render import print_recommend

    report = _recommend("swift==3.4.0", async_generate=True)
    values = report.best.values
    workers = int(values["num_infer_workers"])
    assert values["vllm_server"] and 1 <= workers < 8 and int(values["gpus_per_node"]) + workers == 8
    words = list(report.best.native)
    assert words[0] == "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7" and f"--num_infer_workers {workers}" in words
    back = api.check(words, framework="swift==3.4.0", model="qwen2.5-7b", gpu="a100-80gb")  # no --gpus: the prefix
    assert errors(back) == set() and back.memory.verdict() == "yes"  # step time: tests/test_recommend_printed.py
    console = Console(file=io.StringIO(), record=True, width=400, force_terminal=False)
    print_recommend(console, report)
    best = next(line for line in console.export_text().splitlines() if line.startswith("best:"))
    assert "num_infer_workers" in best and "server" not in best, best


def test_3_4_async_mode_on_one_gpu_says_which_rule_refuses_it():
    """One GPU leaves none for an engine of its own: the answer is the rule (async_generate needs async mode), not a
    crash of the search (it had no ranks to offer)."""
    from rlbatch_solver.scenario import Scenario

    report = api.recommend(Scenario(framework="swift==3.4.0", gpu="a100-80gb", gpus=1, model="qwen2.5-0.5b",
                                    fixed={"async_generate": True}), top=1)
    assert report.best is None
    assert "swift.legacy.async_generate_needs_async_mode" in {r.id for r in report.conflict.rules}


def test_3_4_async_mode_counts_num_infer_workers_on_every_node(monkeypatch):
    """3.2-3.4's num_infer_workers is per node: _check_grpo compares it with a node's GPUs (visible = NPROC_PER_NODE +
    num_infer_workers) and the trainer spreads the prompts over nnodes * num_infer_workers engines (grpo_trainer.py of
    3.4.0). Priced as the job's total, two nodes had the one node's two engines for twice the completions (step 28.2 s
    where one node takes 26.9 s); with an engine pair on each node, twice the nodes take the same rollout time once the
    longest response is held fixed (the step waits for the longest of all its prompts' completions, and twice the
    prompts reach a longer one: lengths.straggler_factor, which this test pins to 1)."""
    from rlbatch_solver.costmodel import lengths
    from rlbatch_solver.scenario import Scenario

    monkeypatch.setattr(lengths, "straggler_factor", lambda samples, group_size: 1.0)

    def check(nodes: int):
        args = [f"NNODES={nodes}", "NPROC_PER_NODE=6", "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7", *BASE,
                "--per_device_train_batch_size", "4", "--use_vllm", "true", "--num_infer_workers", "2",
                "--async_generate", "true"]
        return api.check(args, framework="swift==3.4.0", model="qwen2.5-7b", gpu="a100-80gb")

    fw = get_framework("swift==3.4.0")
    flat = {"NNODES": 2, "NPROC_PER_NODE": 6, "use_vllm": True, "num_infer_workers": 2, "async_generate": True}
    values = fw.to_values(flat, gpus=16, model=None)
    assert values["server_dp"] == 4
    assert fw.describe_placement(values) == "async: 12 training + 4 vLLM GPUs (num_infer_workers)"
    one, two = check(1), check(2)
    assert errors(one) == errors(two) == set()
    # the rollout (the update differs by its inter-node traffic)
    assert two.memory.seconds["rollout"] == pytest.approx(one.memory.seconds["rollout"], rel=1e-3)
    # the search prices the same engines: num_infer_workers on each of the two nodes
    report = api.recommend(Scenario(framework="swift==3.4.0", gpu="a100-80gb", gpus=16, nnodes=2, model="qwen2.5-7b",
                                    fixed={"async_generate": True}), top=1)
    v = report.best.values
    assert int(v["server_dp"]) == 2 * int(v["num_infer_workers"]), v
