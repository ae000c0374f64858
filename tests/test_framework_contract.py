"""A framework is a contract: every registered framework declares what the callers read (``Framework``'s members),
the CLI names it, its rules page is in docs/, its enumerate columns and accuracy family are set, and nothing under
frameworks/ reaches up into the commands. A new framework is one folder and one registry line: this file tells
what it still lacks (docs/architecture.md, "Adding a framework")."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from pathlib import Path

import pytest
from typer.testing import CliRunner

import rlbatch_solver
from rlbatch_solver.cli import app
from rlbatch_solver.costmodel.accuracy import family_of
from rlbatch_solver.frameworks import FRAMEWORKS, Framework, get_framework
from rlbatch_solver.frameworks.docs import rules_page
from rlbatch_solver.rules.base import RuleSet
from rlbatch_solver.runlog import FORMATS

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = Path(rlbatch_solver.__file__).resolve().parent
NAMES = list(FRAMEWORKS)

PAIRS = "pairs of str"
# member -> the type every framework's value has (PAIRS: a tuple of (str, str))
MEMBERS: dict[str, object] = {
    "name": str, "version": str, "ruleset": RuleSet, "syntax": str, "pinned": bool, "version_note": str,
    "versions": tuple, "doc_intro": str, "doc_ruleset": (RuleSet, type(None)), "legacy_flags": Mapping,
    "error_families": tuple, "entry_modules": tuple, "entry_commands": tuple, "launcher_flags": bool,
    "model_keys": tuple, "scenario_vars": Mapping, "gpu_count_vars": tuple, "shapes_learning": frozenset, "offload_switch": (tuple, type(None)), "lora_switch": (tuple, type(None)),
    "cost_input_keys": Mapping,
    "oom_frames": tuple, "oom_advice": Mapping, "table_columns": PAIRS, "derived_columns": PAIRS,
    "column_words": PAIRS, "log_formats": tuple, "accuracy_family": str,
}


def _is_pairs(value: object) -> bool:
    return isinstance(value, tuple) and all(
        isinstance(p, tuple) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in value)


def test_framework_declares_every_member_with_a_default():
    # what a caller reads is declared once, on Framework: a new framework inherits a default for it
    for member in MEMBERS:
        if member not in ("name", "version", "ruleset", "syntax"):
            assert hasattr(Framework, member), f"Framework does not declare {member}"


@pytest.mark.parametrize("name", NAMES)
def test_members_present_and_typed(name):
    fw = get_framework(name)
    for member, kind in MEMBERS.items():
        value = getattr(fw, member)
        ok = _is_pairs(value) if kind == PAIRS else isinstance(value, kind)
        assert ok, f"{name}.{member} = {value!r} is not {kind}"
    assert fw.name == name and fw.syntax in ("hydra", "flags")
    assert fw.versions and fw.versions[0] == fw.version and all(isinstance(v, str) for v in fw.versions)
    assert fw.resolve_version(fw.version) == (fw.version, None)
    assert not fw.pinned and not fw.version_note, "the registry's own instance is the newest version, unpinned"
    assert fw.doc_intro and fw.error_families and fw.model_keys
    assert set(fw.log_formats) <= set(FORMATS), f"{name} names a log format runlog.py does not read"


@pytest.mark.parametrize("name", NAMES)
def test_the_entry_words_have_one_definition(name):
    # launch_script.py tells a script's framework from entry_words.ENTRY_WORDS before importing it; every Framework
    # reads its entry words from there by name, and no class sets its own
    from rlbatch_solver.frameworks.entry_words import ENTRY_WORDS

    fw, words = get_framework(name), ENTRY_WORDS[name]
    assert (words.modules, words.commands, words.flags, words.companions) == (
        fw.entry_modules, fw.entry_commands, fw.entry_flags, fw.companion_entries)
    own = [(cls.__name__, attr) for cls in type(fw).__mro__ if cls is not Framework
           for attr in ("entry_modules", "entry_commands", "entry_flags", "companion_entries") if attr in vars(cls)]
    assert not own, f"{own}: entry words are entry_words.ENTRY_WORDS's, by name"
    assert list(ENTRY_WORDS) == NAMES
    assert words.modules or words.commands or name == "verl-megatron"  # verl-megatron starts from verl's


def test_a_frameworks_entry_words_are_one_row_read_once():
    """The four ``entry_*`` properties read one row of entry_words.ENTRY_WORDS (``Framework._entry_words``): a row put
    there is what all four answer."""
    from rlbatch_solver.frameworks.entry_words import ENTRY_WORDS, EntryWords

    row = EntryWords(modules=("m.x",), commands=(("a", "b"),), flags=("--f",), companions=(("c", "d"),))
    fw = get_framework("trl")
    assert fw._entry_words is ENTRY_WORDS["trl"]
    original = Framework.__dict__["_entry_words"]
    try:
        Framework._entry_words = property(lambda self: row)
        # (the row's scripts, bare script names, are read by launch_script from the table itself: no property)
        assert (fw.entry_modules, fw.entry_commands, fw.entry_flags, fw.companion_entries) == (
            row.modules, row.commands, row.flags, row.companions)
    finally:
        Framework._entry_words = original


@pytest.mark.parametrize("name", NAMES)
def test_each_version_is_pinned_to_itself(name):
    fw = get_framework(name)
    for version in fw.versions:
        pinned = get_framework(f"{name}=={version}")
        assert pinned.version == version
        assert pinned.pinned == (len(fw.versions) > 1), "only a framework with version packs pins a version"


@pytest.mark.parametrize("name", [n for n in NAMES if get_framework(n).releases is not None])
def test_a_named_release_resolves_the_same_way_in_every_framework(name):
    """One policy for every framework with release packs (base.resolve_release): a post release is its release's
    pack, an unlisted patch or a bare series its series' pack, each with a note; anything else none."""
    fw = get_framework(name)
    series_of = fw.releases.SERIES
    for version in fw.versions:
        assert fw.resolve_version(f"v{version}") == (version, None)
        pack, note = fw.resolve_version(f"{version}.post2")
        assert pack == version and note == f"{fw.releases.NAME} {version}.post2 is checked with the rules of {version}"
        series = version.rsplit(".", 1)[0]
        for named in (f"{series}.99", f"{series}.99.post1", series):
            pack, note = fw.resolve_version(named)
            assert pack == series_of[series] and note.endswith(f"the {series}.x release we follow"), named
    for named in (f"{fw.version}.postx", f"{fw.version}rc1", f"{fw.version.rsplit('.', 1)[0]}.x", "99.0.0", ""):
        assert fw.resolve_version(named) == (None, None), named


def test_architecture_doc_lists_every_member():
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text[text.index("### The contract"):text.index("## Versions of a framework")]
    members = {n for n in vars(Framework) if not n.startswith("_")} | set(Framework.__annotations__)
    missing = sorted(n for n in members if f"`{n}" not in section)
    assert not missing, f"docs/architecture.md's contract section does not name {missing}"


def _flat(text: str) -> str:
    """CLI help without its box drawing and line breaks."""
    return re.sub(r"\s+", " ", re.sub(r"[│╭╮╰╯─]", " ", text))


@pytest.fixture(scope="module")
def helps() -> dict[str, str]:
    runner = CliRunner()
    out = {}
    for command in ([], ["check"], ["fix"], ["recommend"], ["enumerate"], ["rules"], ["calibrate"]):
        result = runner.invoke(app, command + ["--help"], env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})
        assert result.exit_code == 0, result.output
        out[" ".join(command) or "rlbatch"] = _flat(result.output)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_cli_help_names_it(name, helps):
    for command, text in helps.items():
        assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text), f"`{command} --help` does not name {name}"


def test_help_shows_no_value_for_flags(helps):
    """A flag takes no value: its help row names none (no ``<bool>``)."""
    for command, text in helps.items():
        assert "<bool>" not in text, command


@pytest.mark.parametrize("name", NAMES)
def test_rules_page_exists(name):
    fw = get_framework(name)
    page = ROOT / "docs" / f"rules-{name}.md"
    assert page.is_file(), f"write it with: rlbatch rules --framework {name} --markdown > docs/rules-{name}.md"
    assert page.read_text() == rules_page(fw), f"docs/rules-{name}.md is out of date (rlbatch rules --markdown)"


def _keys_of_every_version(fw: Framework) -> set[str]:
    keys = set()
    for version in fw.versions:
        pinned = get_framework(f"{fw.name}=={version}")
        keys |= {pinned.native_key(n) for n in pinned.ruleset.variables}
    return keys


@pytest.mark.parametrize("name", NAMES)
def test_enumerate_columns_set(name):
    fw = get_framework(name)
    assert fw.derived_columns, f"{name} declares no derived columns for the enumerate table"
    own = type(fw).column_values is not Framework.column_values
    known = set(fw.ruleset.variables) | {d.name for d in fw.ruleset.derived}
    for column, title in fw.table_columns + fw.derived_columns:
        assert title and (column in known or own), f"{name}: column {column} is no rule variable of it"
    keys = _keys_of_every_version(fw)
    for word, _ in fw.column_words:
        assert any(word in key for key in keys), f"{name}: column word {word!r} is in none of its keys"


@pytest.mark.parametrize("name", NAMES)
def test_cost_spec_builds(name):
    """Memory and time are priced for every framework: ``cost_spec`` is abstract, and builds for a small model."""
    from rlbatch_solver.catalog.gpus import load_gpu
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.costmodel.tables import CostSpec

    assert isinstance(get_framework(name).cost_spec(load_model("qwen2.5-0.5b"), load_gpu("h100")), CostSpec)


@pytest.mark.parametrize("name", NAMES)
def test_accuracy_family_set(name):
    fw = get_framework(name)
    assert fw.accuracy_family in FRAMEWORKS, "a family is named after the framework whose runs it counts"
    assert family_of(name) == family_of(f"{name}=={fw.version}") == fw.accuracy_family


def _imported_modules(path: Path) -> set[str]:
    """The absolute names of the modules a file imports (relative imports resolved)."""
    package = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = base + (node.module.split(".") if node.module else [])
            out.add(".".join(module))
            out |= {".".join(module + [alias.name]) for alias in node.names}
    return out


def test_flag_values_are_coerced_in_one_module():
    """Booleans and whole numbers are read by frameworks/overrides.py's coercers (flag_bool, flag_int,
    whole_number, hydra_bool), which every framework imports; no framework writes its own."""
    own = [path.relative_to(PACKAGE) for path in (PACKAGE / "frameworks").rglob("*.py")
           if path.name != "overrides.py" and re.search(r"is not (a boolean|an integer)", path.read_text())]
    assert not own, f"coerce flag values with frameworks/overrides.py, not in {own}"


def test_no_framework_module_imports_the_commands():
    files = sorted((PACKAGE / "frameworks").rglob("*.py"))
    assert files
    for path in files:
        upward = {m for m in _imported_modules(path)
                  if m == "rlbatch_solver.commands" or m.startswith("rlbatch_solver.commands.")}
        assert not upward, f"{path.relative_to(PACKAGE)} imports {sorted(upward)}: move what it needs below"


def test_the_import_check_resolves_relative_imports():
    # the check above resolves `from ...layout import Layout` (three dots: from frameworks/verl/ to the package)
    path = PACKAGE / "frameworks" / "verl" / "fsdp.py"
    assert "rlbatch_solver.layout" in _imported_modules(path)
    assert "rlbatch_solver.frameworks.verl.columns" in _imported_modules(path)


@pytest.mark.parametrize("name,switch", [(n, s) for n in NAMES for s in ("offload_switch", "lora_switch")
                                         if getattr(get_framework(n), s)])
def test_the_offload_and_lora_switches_are_set_pairs_that_turn_them_on(name, switch):
    """The no-fit answer prints `--set <pair>` for each of offload_switch's (and lora_switch's) key=value pairs:
    slime's read "--set --optimizer-cpu-offload --optimizer-offload-fraction 1.0", which --set refuses. Each pair,
    set, turns the switch's variable on in the search space."""
    from rlbatch_solver.catalog.models import load_model
    from rlbatch_solver.frameworks.overrides import parse_scalar
    from rlbatch_solver.scenario import Scenario

    fw = get_framework(name)
    variable, pairs = getattr(fw, switch)
    fixed = {}
    for pair in pairs.split():
        assert re.fullmatch(r"[^\s=-][^\s=]*=\S+", pair), f"{name}: {pair!r} is not a --set key=value"
        key, value = pair.split("=", 1)
        fixed[key] = parse_scalar(value)  # as --set reads it
    sc = Scenario(framework=name, gpu="h100", gpus=8, model="qwen2.5-7b", fixed=fixed)
    domain = fw.space(sc, load_model("qwen2.5-7b"), with_knobs=True).domains[variable]
    assert domain and all(v not in (None, False, 0) for v in domain), f"{name}: {variable} = {domain}"


@pytest.mark.parametrize("name", [n for n in NAMES if get_framework(n).cost_input_keys])
def test_a_cost_input_is_written_in_keys_its_release_takes(name):
    """``cost_input_keys`` is the one place a cost input no rule reads gets its keys (fix's LoRA way out writes
    lora_rank under them): in a release whose parser we hold whole (OpenRLHF's train_ppo_ray, TRL's GRPOConfig and
    ModelConfig), the keys that switch LoRA on are keys that parser takes (OpenRLHF 0.11.2 refuses --lora_rank)."""
    fw = get_framework(name)
    for version in fw.versions:
        pinned = get_framework(f"{name}=={version}") if len(fw.versions) > 1 else fw
        assert pinned.native_key("lora_rank") == pinned.cost_input_keys["lora_rank"][0]
        known = pinned.key_list({}, command=True)
        if known.complete:
            missing = [k for k in pinned.cost_input_keys["lora_rank"] if k not in known.keys]
            assert not missing, f"{name}=={version} writes LoRA as {missing}, which its parser refuses"


_SLIME = ["--actor-num-nodes", "1", "--actor-num-gpus-per-node", "8", "--colocate", "--rollout-batch-size", "32",
          "--n-samples-per-prompt", "8", "--global-batch-size", "256"]
_TRL = ["--per_device_train_batch_size", "8", "--num_generations", "4"]
# one config per framework (and the releases whose plans differ: TRL 0.14 counts prompts per device), with a group
# of several completions per prompt, so that the rollout's group straggler is priced
_PLAN_CASES = {
    "verl": ["data.train_batch_size=64", "actor_rollout_ref.rollout.n=8"],
    "verl-megatron": ["data.train_batch_size=64", "actor_rollout_ref.rollout.n=8"],
    "openrlhf": ["--rollout_batch_size", "64", "--n_samples_per_prompt", "4"],
    "swift": _TRL, "swift-megatron": [],
    "swift==3.4.1": _TRL + ["--use_vllm", "true"],
    "trl": _TRL, "trl==0.14.0": _TRL, "trl==0.16.0": _TRL + ["--use_vllm", "true"], "unsloth": _TRL,
    "easyr1": ["data.rollout_batch_size=64", "worker.rollout.n=8"],
    "skyrl": ["trainer.train_batch_size=64", "generator.n_samples_per_prompt=8"],
    "slime": _SLIME,
}


def test_every_framework_has_a_plan_case():
    assert {get_framework(n).name for n in _PLAN_CASES} >= set(NAMES)


def _other(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value * 2 if value else 1
    return None


@pytest.mark.parametrize("name", sorted(_PLAN_CASES))
def test_every_key_a_phases_time_reads_is_an_input_of_its_table(name):
    """The solver prices a phase from a table over the phase's ``time_inputs``, every other variable held at one
    value; the checker prices the config itself (tables.full_reports). A key whose value moves a phase's time (the
    rollout's group of completions per prompt, Plan.group_size, among them) must be an input of that phase's table
    (and not one ``unread`` drops), or a search over it answers with the time of another value."""
    from rlbatch_solver.calibration import make_run
    from rlbatch_solver.costmodel.time import estimate_time

    run = make_run(name, _PLAN_CASES[name], gpu="h100", model="qwen2.5-7b", gpus=8)
    spec, values = run.spec, run.values
    phases = spec.phases_run(values)
    missing = []
    for phase, names in spec.time_inputs.items():
        if phase not in phases:
            continue
        base = estimate_time(spec.plan(values, phase)).phases.get(phase, 0.0)
        for key, value in values.items():
            other = _other(value)
            if other is None:
                continue
            moved = {**values, key: other}
            try:
                if spec.phases_run(moved) != phases:
                    continue  # the key runs or skips a phase: the step's sum reads it (searched_phases)
                t = estimate_time(spec.plan(moved, phase)).phases.get(phase, 0.0)
            except (ValueError, KeyError, ZeroDivisionError):
                continue  # not a value this key takes
            read = key in names and key not in (spec.unread(phase, "time", {**{k: [v] for k, v in values.items()},
                                                                            key: [value, other]})
                                                 if spec.unread else set())
            if abs(t - base) > 1e-9 * max(1.0, base) and not read:
                missing.append((phase, key))
    assert not missing, f"{name}: these keys move a phase's time but are no input of its table: {missing}"
