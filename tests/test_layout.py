"""The package layout: one folder per framework, every package installed, the façade complete."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

import rlbatch_solver
from rlbatch_solver import api
from rlbatch_solver.frameworks import FRAMEWORKS, get_framework
from rlbatch_solver.launch_script import entry_points

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = Path(rlbatch_solver.__file__).resolve().parent


def test_every_package_directory_is_installed():
    # a non-editable install (CI, users) ships only the packages pyproject.toml lists
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(("rlbatch_solver",) + p.parent.relative_to(PACKAGE).parts) for p in PACKAGE.rglob("__init__.py")}
    assert found - listed == set()


def test_each_framework_lives_in_its_own_folder_with_all_its_parts():
    for name in FRAMEWORKS:
        fw = get_framework(name)
        module = type(fw).__module__
        folder = module.split(".")[2]
        assert module.startswith(f"rlbatch_solver.frameworks.{folder}."), module
        for part in ("rules", "repair", "errors", "docs", "cost"):
            importlib.import_module(f"rlbatch_solver.frameworks.{folder}.{part}")
        assert fw.doc_intro and fw.version in fw.doc_intro, name
        assert fw.repair_policy({}) is not None
        assert fw.error_patterns() and {p.framework for p in fw.error_patterns()} & set(fw.error_families), name
        assert fw.model_keys, name
        # the rules come from the folder's rules modules (a mode of another framework's folder, as Unsloth of TRL's,
        # keeps that framework's rule ids for the rules it shares)
        assert all(r.id.split(".")[0] in {name.split("-")[0], name.replace("-", "_"), folder} | {"search"}
                   for r in fw.ruleset.rules), name


def test_every_framework_that_starts_from_a_script_names_its_entry_point():
    points = entry_points()
    assert "python3 -m verl.trainer.main_ppo" in points and "swift rlhf" in points and "megatron rlhf" in points
    assert "python3 -m openrlhf.cli.train_ppo_ray" in points


def test_api_is_the_facade_of_the_command_modules():
    for name in ("check", "enumerate", "recommend", "fix", "explain"):
        fn = getattr(api, name)
        assert fn.__module__ == f"rlbatch_solver.commands.{name}"
        assert getattr(rlbatch_solver, name) is fn
