"""The parity harnesses import what exists.

tests/parity/ is collected only where a framework's own package is installed (each test starts with
``pytest.importorskip``), so a renamed or moved function of ours, or of a sibling harness, breaks them in CI's parity
stages and nowhere else. This reads their imports without running them: every name imported from the package and
from a test module must be defined there.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
HARNESSES = sorted((HERE / "parity").glob("*.py"))


def _top_level_names(path: Path) -> set[str]:
    """Names a module defines or imports at its top level (inside if/try blocks too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(a.asname or a.name.split(".")[0] for a in node.names)
    return names


def _imports(path: Path) -> list[tuple[str, str]]:
    return [(node.module, a.name) for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ImportFrom) and node.module for a in node.names]


@pytest.mark.parametrize("path", HARNESSES, ids=lambda p: p.name)
def test_every_name_a_parity_harness_imports_exists(path):
    siblings = {p.stem: p for p in [*HARNESSES, *HERE.glob("*.py")]}
    missing = []
    for module, name in _imports(path):
        if module.startswith("rlbatch_solver"):
            mod = importlib.import_module(module)
            if not hasattr(mod, name):
                try:
                    importlib.import_module(f"{module}.{name}")
                except ImportError:
                    missing.append(f"{module}.{name}")
        elif module in siblings and name not in _top_level_names(siblings[module]):
            missing.append(f"{module}.{name}")
    assert not missing, f"{path.name} imports names that do not exist: {missing}"


def test_the_check_sees_a_missing_name(tmp_path):
    """The check itself: a harness importing a name its sibling lacks is caught."""
    sibling = tmp_path / "parity_x.py"
    sibling.write_text("def present():\n    pass\n")
    assert "present" in _top_level_names(sibling) and "absent" not in _top_level_names(sibling)
    harness = tmp_path / "test_x.py"
    harness.write_text("from parity_x import present, absent\n")
    assert ("parity_x", "absent") in _imports(harness)
