"""GPU catalog: built-ins load, names resolve, user files add/override, bad input is named.

Pinned numbers come from the vendors' datasheets/whitepapers and from what
nvidia-smi / rocm-smi print as total memory (docs/gpus.md), never from the code.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from rlbatch_solver.catalog.gpus import GPU, INTRA_NODE_KINDS, list_gpus, load_gpu, normalize
from rlbatch_solver.errors import InputError

MIB = 2**20
GIB = 2**30

REQUIRED = {
    "rtx3090", "rtx4090", "a10", "l4", "l40s", "a100-40gb", "a100-80gb", "h100", "h100-pcie",
    "h800", "h20", "h200", "b200", "mi300x", "a6000", "a800",
}

NEW_GPU = """\
gpus:
  - name: rtx4090-48gb
    display_name: RTX 4090 48GB (modded)
    memory_gib: 48
    bf16_tflops: 165.2
    hbm_bandwidth_gbps: 1008
    intra_node: pcie
    intra_node_bandwidth_gbps: 32
    host_link_bandwidth_gbps: 32
    aliases: [4090-48g]
"""


def write(tmp_path: Path, text: str, name: str = "gpus.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- built-ins
def test_required_gpus_are_built_in() -> None:
    names = {g.name for g in list_gpus()}
    assert REQUIRED <= names


@pytest.mark.parametrize("gpu", list_gpus(), ids=lambda g: g.name)
def test_every_builtin_is_complete(gpu: GPU) -> None:
    assert gpu.name == gpu.name.lower() and gpu.display_name
    assert isinstance(gpu.memory_bytes, int) and gpu.memory_bytes > 0
    for field in ("bf16_tflops", "hbm_bandwidth_gbps", "intra_node_bandwidth_gbps", "host_link_bandwidth_gbps"):
        assert getattr(gpu, field) > 0, field
    assert gpu.intra_node in INTRA_NODE_KINDS
    assert gpu.source and ("http" in gpu.source or "datasheet" in gpu.source.lower())
    assert isinstance(gpu.hopper_fp8, bool)
    assert isinstance(gpu.aliases, tuple)
    # Device memory is reported in GiB by the CLI; nothing we list is under the T4's 15 GiB.
    assert 14 < gpu.memory_gib < 200
    # Per-direction convention: PCIe boxes at the PCIe link rate, NVLink well above it.
    if gpu.intra_node == "pcie":
        assert gpu.intra_node_bandwidth_gbps <= gpu.host_link_bandwidth_gbps
    else:
        assert gpu.intra_node_bandwidth_gbps > 2 * gpu.host_link_bandwidth_gbps


def test_names_and_aliases_are_unique() -> None:
    seen: dict[str, str] = {}
    for gpu in list_gpus():
        for key in {normalize(n) for n in (gpu.name, *gpu.aliases)}:
            assert key not in seen, f"{key} names both {seen[key]} and {gpu.name}"
            seen[key] = gpu.name


def test_builtin_parse_is_cached() -> None:
    assert list_gpus()[0] is list_gpus()[0]


def test_json_dump_as_the_cli_does() -> None:
    out = json.dumps([g.__dict__ | {"aliases": list(g.aliases)} for g in list_gpus()])
    rows = json.loads(out)
    assert {r["name"] for r in rows} >= REQUIRED
    assert {"memory_bytes", "bf16_tflops", "hbm_bandwidth_gbps", "intra_node", "intra_node_bandwidth_gbps",
            "host_link_bandwidth_gbps", "hopper_fp8", "source", "aliases"} <= set(rows[0])


def test_gpu_is_a_plain_frozen_dataclass() -> None:
    gpu = load_gpu("h100")
    assert dataclasses.is_dataclass(gpu) and hasattr(gpu, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        gpu.bf16_tflops = 1.0  # type: ignore[misc]


# ----------------------------------------------------------------------------- pinned numbers
# (name, nvidia-smi/rocm-smi total MiB, dense BF16 TFLOP/s, memory GB/s, intra-node GB/s per direction)
PINNED = [
    ("rtx3090", 24576, 71.0, 936, 32),        # GA102 whitepaper App. A; PCIe 4.0 x16
    ("rtx4090", 24564, 165.2, 1008, 32),      # Ada whitepaper App. A (FP32 accumulate)
    ("a6000", 49140, 154.8, 768, 32),         # 309.7 TF sparse / 2
    ("a10", 23028, 125.0, 600, 32),
    ("l4", 23034, 121.0, 300, 32),            # 242 TF sparse / 2
    ("l40s", 46068, 362.05, 864, 32),
    ("a100-40gb", 40960, 312.0, 1555, 300),   # NVLink 3: 600 GB/s bidirectional
    ("a100-80gb", 81920, 312.0, 2039, 300),
    ("a800", 81920, 312.0, 2039, 200),        # NVLink capped at 400 GB/s bidirectional
    ("h100", 81559, 989.0, 3350, 450),        # NVLink 4: 900 GB/s bidirectional
    ("h100-pcie", 81559, 756.0, 2000, 64),    # 1513 TF sparse / 2; PCIe 5.0 x16
    ("h800", 81559, 989.0, 3350, 200),
    ("h20", 97871, 148.0, 4000, 450),
    ("h200", 143771, 989.0, 4800, 450),
    ("b200", 183359, 2250.0, 8000, 900),      # NVLink 5: 1.8 TB/s bidirectional
    ("mi300x", 196288, 1307.4, 5300, 448),    # rocm-smi 205822885888 B; 7 x 128 GB/s bidirectional
]


@pytest.mark.parametrize("name, mib, tflops, hbm, link", PINNED, ids=[p[0] for p in PINNED])
def test_numbers_match_datasheets(name: str, mib: int, tflops: float, hbm: float, link: float) -> None:
    gpu = load_gpu(name)
    assert gpu.memory_bytes == mib * MIB
    assert gpu.bf16_tflops == pytest.approx(tflops, abs=0.01)
    assert gpu.hbm_bandwidth_gbps == pytest.approx(hbm)
    assert gpu.intra_node_bandwidth_gbps == pytest.approx(link)


def test_memory_units() -> None:
    assert load_gpu("rtx4090").memory_gib == pytest.approx(23.99, abs=0.01)   # "24 GB" card
    assert load_gpu("a100-80gb").memory_gib == 80.0                            # exactly 80 GiB
    assert load_gpu("h200").memory_gib == pytest.approx(140.4, abs=0.05)       # "141 GB" card
    assert load_gpu("mi300x").memory_bytes == 205_822_885_888


def test_host_links_and_fp8() -> None:
    assert load_gpu("a100-80gb").host_link_bandwidth_gbps == 32    # PCIe 4.0 x16, per direction
    assert load_gpu("h100").host_link_bandwidth_gbps == 64         # PCIe 5.0 x16, per direction
    assert load_gpu("h100").hopper_fp8 and load_gpu("h200").hopper_fp8
    assert not load_gpu("a100-80gb").hopper_fp8 and not load_gpu("rtx4090").hopper_fp8
    assert load_gpu("mi300x").intra_node == "infinity-fabric"
    assert load_gpu("rtx4090").intra_node == "pcie" and load_gpu("h800").intra_node == "nvlink"


# ----------------------------------------------------------------------------- lookup
@pytest.mark.parametrize("query, expected", [
    ("rtx4090", "rtx4090"), ("4090", "rtx4090"), ("RTX-4090", "rtx4090"), ("RTX 4090", "rtx4090"),
    ("NVIDIA GeForce RTX 4090", "rtx4090"), ("geforce_rtx_4090", "rtx4090"),
    ("h100", "h100"), ("h100-sxm", "h100"), ("H100_SXM5", "h100"), ("NVIDIA H100 80GB HBM3", "h100"),
    ("h100-pcie", "h100-pcie"), ("H100 PCIe", "h100-pcie"),
    ("a100-80gb", "a100-80gb"), ("a100", "a100-80gb"), ("A100-80G", "a100-80gb"),
    ("NVIDIA A100-SXM4-80GB", "a100-80gb"), ("a100-40gb", "a100-40gb"),
    ("A800-SXM4-80GB", "a800"), ("RTX A6000", "a6000"), ("MI300X", "mi300x"), ("3090", "rtx3090"),
])
def test_aliases_resolve(query: str, expected: str) -> None:
    assert load_gpu(query).name == expected


@pytest.mark.parametrize("query, suggestion", [("rtx9090", "rtx4090"), ("h1000", "h100"), ("a100-80", "a100-80gb")])
def test_unknown_name_suggests(query: str, suggestion: str) -> None:
    with pytest.raises(InputError) as err:
        load_gpu(query)
    assert err.value.field == "gpu"
    assert f"unknown GPU '{query}'" in err.value.problem
    assert "Did you mean" in err.value.problem and suggestion in err.value.problem
    assert "--gpu-file" in err.value.fix and "rtx4090" in err.value.fix


@pytest.mark.parametrize("query", ["", "  ", None])
def test_empty_name(query) -> None:
    with pytest.raises(InputError) as err:
        load_gpu(query)
    assert err.value.field == "gpu"


# ----------------------------------------------------------------------------- user files
def test_user_file_adds_a_gpu(tmp_path: Path) -> None:
    path = write(tmp_path, NEW_GPU)
    gpu = load_gpu("rtx4090-48gb", path)
    assert gpu.memory_bytes == 48 * GIB and gpu.bf16_tflops == 165.2
    assert gpu.display_name == "RTX 4090 48GB (modded)"
    assert gpu.source.startswith("user file")
    assert load_gpu("4090-48G", str(path)).name == "rtx4090-48gb"
    names = [g.name for g in list_gpus(path)]
    assert names[-1] == "rtx4090-48gb" and REQUIRED <= set(names)
    # The built-in catalog is untouched.
    with pytest.raises(InputError):
        load_gpu("rtx4090-48gb")


def test_user_file_overrides_a_builtin(tmp_path: Path) -> None:
    path = write(tmp_path, """\
- name: A100-80GB
  intra_node: pcie
  intra_node_bandwidth_gbps: 32
""")
    gpu = load_gpu("a100", path)  # built-in aliases still lead to the (overridden) entry
    assert gpu.name == "a100-80gb"
    assert gpu.intra_node == "pcie" and gpu.intra_node_bandwidth_gbps == 32
    assert gpu.memory_bytes == 81920 * MIB and gpu.bf16_tflops == 312  # kept from the built-in
    assert gpu.inter_node_bandwidth_gbps == 25 and gpu.matmul_tflops == 271.2  # the optional ones too
    assert "override" in gpu.source
    assert [g.name for g in list_gpus(path)].count("a100-80gb") == 1
    assert load_gpu("a100-80gb").intra_node == "nvlink"  # built-in unchanged


def test_user_file_override_of_the_peak_drops_the_builtin_matmul(tmp_path: Path) -> None:
    # a power-capped H100: its peak below the built-in's measured matmul (794.5), which was measured at 989
    gpu = load_gpu("h100", write(tmp_path, "- {name: h100, bf16_tflops: 500}\n"))
    assert gpu.bf16_tflops == 500 and gpu.matmul_tflops == 0.0  # held at its own peak, as a GPU without one
    gpu = load_gpu("h100", write(tmp_path, "- {name: h100, bf16_tflops: 500, matmul_tflops: 400}\n"))
    assert gpu.matmul_tflops == 400
    with pytest.raises(InputError) as err:  # a matmul written above the peak written is still refused
        load_gpu("h100", write(tmp_path, "- {name: h100, bf16_tflops: 500, matmul_tflops: 600}\n"))
    assert err.value.field == "gpu-file: h100.matmul_tflops"
    assert load_gpu("h100", write(tmp_path, "- {name: h100, memory_gib: 80}\n")).matmul_tflops == 794.5


def test_user_file_full_override_and_alias_precedence(tmp_path: Path) -> None:
    path = write(tmp_path, """\
gpus:
  - name: h100
    display_name: H100 (our cluster)
    memory_mib: 81559
    bf16_tflops: 900
    hbm_bandwidth_gbps: 3000
    intra_node: nvlink
    intra_node_bandwidth_gbps: 400
    host_link_bandwidth_gbps: 64
    source: our measurements
  - name: my-4090
    memory_mib: 24564
    bf16_tflops: 150
    hbm_bandwidth_gbps: 1008
    intra_node: PCIe
    intra_node_bandwidth_gbps: 25
    host_link_bandwidth_gbps: 25
    aliases: "4090"
""")
    h100 = load_gpu("h100-sxm", path)
    assert h100.bf16_tflops == 900 and h100.source == "our measurements"
    assert load_gpu("4090", path).name == "my-4090"          # the file's alias wins
    assert load_gpu("rtx4090", path).name == "rtx4090"       # a name always finds its own entry
    assert load_gpu("my-4090", path).intra_node == "pcie"
    assert load_gpu("my-4090", path).display_name == "my-4090"


def test_user_file_plain_list_and_numbers_as_text(tmp_path: Path) -> None:
    path = write(tmp_path, """\
- name: big
  memory_bytes: 1e11
  bf16_tflops: "1e3"
  hbm_bandwidth_gbps: 2000
  intra_node: infinity_fabric
  intra_node_bandwidth_gbps: 100
  host_link_bandwidth_gbps: 64
""")
    gpu = load_gpu("big", path)
    assert gpu.memory_bytes == 100_000_000_000 and gpu.bf16_tflops == 1000.0
    assert gpu.intra_node == "infinity-fabric"


BASE_ENTRY = {
    "name": "x1", "memory_gib": 24, "bf16_tflops": 100, "hbm_bandwidth_gbps": 900, "intra_node": "pcie",
    "intra_node_bandwidth_gbps": 32, "host_link_bandwidth_gbps": 32,
}


def entry_yaml(**changes) -> str:
    import yaml

    entry = dict(BASE_ENTRY)
    for key, value in changes.items():
        if value is ...:
            entry.pop(key)
        else:
            entry[key] = value
    return yaml.safe_dump({"gpus": [entry]})


@pytest.mark.parametrize("changes, field, words", [
    ({"memory_gib": -24}, "gpu-file: x1.memory_gib", "positive"),
    ({"memory_gib": 0}, "gpu-file: x1.memory_gib", "positive"),
    ({"memory_gib": ...}, "gpu-file: x1.memory_mib", "missing"),
    ({"memory_gib": "24GB"}, "gpu-file: x1.memory_gib", "number"),
    ({"memory_gib": 24576}, "gpu-file: x1.memory_gib", "wrong unit"),  # MiB written as GiB
    ({"memory_mib": 24564}, "gpu-file: x1.memory_gib", "twice"),
    ({"bf16_tflops": ...}, "gpu-file: x1.bf16_tflops", "missing"),
    ({"bf16_tflops": "fast"}, "gpu-file: x1.bf16_tflops", "number"),
    ({"bf16_tflops": True}, "gpu-file: x1.bf16_tflops", "number"),
    ({"bf16_tflops": 1.65e14}, "gpu-file: x1.bf16_tflops", "wrong unit"),
    ({"hbm_bandwidth_gbps": -1}, "gpu-file: x1.hbm_bandwidth_gbps", "positive"),
    ({"hbm_bandwidth_gbps": ...}, "gpu-file: x1.hbm_bandwidth_gbps", "missing"),
    ({"intra_node_bandwidth_gbps": ...}, "gpu-file: x1.intra_node_bandwidth_gbps", "missing"),
    ({"host_link_bandwidth_gbps": 0}, "gpu-file: x1.host_link_bandwidth_gbps", "positive"),
    ({"intra_node": ...}, "gpu-file: x1.intra_node", "missing"),
    ({"intra_node": "nvlinc"}, "gpu-file: x1.intra_node", "nvlink"),
    ({"hopper_fp8": "yes"}, "gpu-file: x1.hopper_fp8", "true or false"),
    ({"aliases": {"a": 1}}, "gpu-file: x1.aliases", "list"),
    ({"bf16_tflop": 100}, "gpu-file: x1.bf16_tflop", "bf16_tflops"),
    ({"name": ...}, "gpu-file: entry 1.name", "missing"),
    ({"inter_node_bandwidth_gbps": 0}, "gpu-file: x1.inter_node_bandwidth_gbps", "positive"),
    ({"matmul_tflops": 1e6}, "gpu-file: x1.matmul_tflops", "wrong unit"),
    ({"matmul_tflops": 900}, "gpu-file: x1.matmul_tflops", "above bf16_tflops"),
])
def test_user_file_bad_field_is_named(tmp_path: Path, changes: dict, field: str, words: str) -> None:
    path = write(tmp_path, entry_yaml(**changes))
    with pytest.raises(InputError) as err:
        list_gpus(path)
    assert err.value.field == field
    assert words in err.value.problem
    assert err.value.fix


def test_user_file_bad_override_value_is_named(tmp_path: Path) -> None:
    path = write(tmp_path, "- {name: h100, memory_gib: -80}\n")
    with pytest.raises(InputError) as err:
        load_gpu("h100", path)
    assert err.value.field == "gpu-file: h100.memory_gib"


@pytest.mark.parametrize("text, words", [
    ("gpus: [name: x\n", "not valid YAML"),
    ("- name: a\n  memory_gib: [1\n", "not valid YAML"),
    ("", "no GPU entries"),
    ("gpus: []\n", "no GPU entries"),
    ("just text\n", "list of GPU entries"),
    ("gpus: [1, 2]\n", "mapping"),
    ("gpus: []\nextra: 1\n", "top-level key"),
])
def test_malformed_user_file(tmp_path: Path, text: str, words: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(InputError) as err:
        list_gpus(path)
    assert err.value.field.startswith("gpu-file")
    assert words in str(err.value)


def test_missing_user_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        load_gpu("h100", tmp_path / "nope.yaml")
    assert err.value.field == "gpu-file" and "does not exist" in err.value.problem
    with pytest.raises(InputError) as err:
        list_gpus(tmp_path)  # a directory
    assert err.value.field == "gpu-file"


def test_duplicate_names_in_user_file(tmp_path: Path) -> None:
    import yaml

    path = write(tmp_path, yaml.safe_dump({"gpus": [BASE_ENTRY, dict(BASE_ENTRY, name="X1")]}))
    with pytest.raises(InputError) as err:
        list_gpus(path)
    assert err.value.field == "gpu-file: x1.name" and "twice" in err.value.problem


def test_cli_catalog_lists_gpus(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from rlbatch_solver.cli import app

    runner = CliRunner()
    result = runner.invoke(app, ["catalog", "gpus", "--json", "--extra", str(write(tmp_path, NEW_GPU))])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert {r["name"] for r in rows} >= REQUIRED | {"rtx4090-48gb"}


def test_catalog_tables_fit_80_columns_without_cutting_a_name() -> None:
    """The names are what the user types next: at 80 columns each appears whole, and no line is wider."""
    from typer.testing import CliRunner

    from rlbatch_solver.catalog.models import list_models
    from rlbatch_solver.cli import app

    runner = CliRunner()
    for command, names in ((["catalog", "gpus"], [g.name for g in list_gpus()]),
                           (["catalog", "models"], list_models())):
        result = runner.invoke(app, command, env={"COLUMNS": "80"}, terminal_width=80)
        assert result.exit_code == 0, result.output
        lines = result.output.splitlines()
        assert max(len(line.rstrip()) for line in lines) <= 80
        firsts = {line.split()[0] for line in lines if line.strip()}
        assert set(names) <= firsts, set(names) - firsts
