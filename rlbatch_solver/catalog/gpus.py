"""GPU catalog: memory, peak BF16 FLOP/s and bandwidths of the GPUs we know.

The built-in entries live in ``gpus.yaml`` next to this module (package data);
``docs/gpus.md`` gives the source of every number and the conventions:

* ``memory_bytes`` is what the device reports as its total (``nvidia-smi
  --query-gpu=memory.total``, or ``rocm-smi`` on AMD), not the marketing "GB".
* ``bf16_tflops`` is the dense (no 2:4 sparsity) BF16 tensor peak, TFLOP/s.
* bandwidths are GB/s (1e9 B/s); ``intra_node_bandwidth_gbps`` and
  ``host_link_bandwidth_gbps`` are per GPU and per direction.

A user file (``--gpu-file``) adds GPUs or overrides built-ins of the same name;
fields an override leaves out are kept from the built-in.
"""

from __future__ import annotations

import difflib
import functools
import importlib.resources
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from .. import safe_input
from ..errors import InputError, did_you_mean, shown

GIB = 2**30
MIB = 2**20

INTRA_NODE_KINDS = ("nvlink", "pcie", "infinity-fabric")

# Fields a GPU entry may hold (memory comes as exactly one of the three memory_* keys).
MEMORY_KEYS = {"memory_mib": MIB, "memory_gib": GIB, "memory_bytes": 1}
NUMBER_KEYS = ("bf16_tflops", "hbm_bandwidth_gbps", "intra_node_bandwidth_gbps", "host_link_bandwidth_gbps")
# optional: a GPU without inter_node_bandwidth_gbps takes the model's default (costmodel/constants.py
# INTER_NODE_BANDWIDTH_GBPS), one without matmul_tflops is held at its peak (costmodel/time.py pass_efficiency)
OPTIONAL_NUMBER_KEYS = ("inter_node_bandwidth_gbps", "matmul_tflops")
KNOWN_KEYS = {"name", "display_name", "intra_node", "hopper_fp8", "source", "aliases",
              *MEMORY_KEYS, *NUMBER_KEYS, *OPTIONAL_NUMBER_KEYS}

# Plausibility bounds that catch unit mix-ups (MiB given as GiB, FLOP/s given as TFLOP/s).
_MEMORY_RANGE = (1 * GIB, 4096 * GIB)
_UPPER = {
    "bf16_tflops": 100_000.0,
    "hbm_bandwidth_gbps": 100_000.0,
    "intra_node_bandwidth_gbps": 100_000.0,
    "host_link_bandwidth_gbps": 10_000.0,
    "inter_node_bandwidth_gbps": 10_000.0,
    "matmul_tflops": 100_000.0,
}
_UNITS = {
    "bf16_tflops": "TFLOP/s (dense BF16, e.g. 989 for H100 SXM)",
    "hbm_bandwidth_gbps": "GB/s (e.g. 3350 for H100 SXM)",
    "intra_node_bandwidth_gbps": "GB/s per GPU per direction (e.g. 450 for NVLink 4, 32 for PCIe 4.0 x16)",
    "host_link_bandwidth_gbps": "GB/s per direction (32 for PCIe 4.0 x16, 64 for PCIe 5.0 x16)",
    "inter_node_bandwidth_gbps": "GB/s per GPU per direction between nodes (50 for one 400 Gb/s NIC a GPU)",
    "matmul_tflops": "TFLOP/s a bf16 matmul measurably reaches, at most bf16_tflops (e.g. 794.5 for H100 SXM)",
}

_GPU_FILE_FIX = ("use one of: {names} (rlbatch catalog gpus), or describe your GPU in a YAML "
                 "file passed with --gpu-file")


@dataclass(frozen=True)
class GPU:
    """One GPU type. Bandwidths in GB/s (1e9 B/s), per GPU and per direction."""

    name: str
    display_name: str
    memory_bytes: int
    bf16_tflops: float
    hbm_bandwidth_gbps: float
    intra_node: str
    intra_node_bandwidth_gbps: float
    host_link_bandwidth_gbps: float
    hopper_fp8: bool = False
    inter_node_bandwidth_gbps: float = 0.0  # the standard node's network per GPU; 0: not stated
    matmul_tflops: float = 0.0  # the largest bf16 matmul throughput measured on it; 0: not stated
    source: str = ""
    aliases: tuple[str, ...] = ()

    @property
    def memory_gib(self) -> float:
        """Device memory in GiB (2^30 bytes)."""
        return self.memory_bytes / GIB


# ----------------------------------------------------------------------------- names
def normalize(name: str) -> str:
    """Lookup key: lower case, without '-', '_' and spaces ("RTX-4090" -> "rtx4090")."""
    return "".join(ch for ch in str(name).lower() if ch not in "-_ \t")


# ----------------------------------------------------------------------------- parsing
def _label(entry: Any, index: int) -> str:
    if isinstance(entry, Mapping) and isinstance(entry.get("name"), str) and entry["name"].strip():
        return entry["name"].strip().lower()
    return f"entry {index + 1}"


def _number(raw: Any, field: str, fix: str) -> float:
    """A finite number from YAML (ints, floats, and text such as "1e3" that YAML 1.1 leaves a string)."""
    value: Any = raw
    if isinstance(raw, str):
        try:
            value = float(raw.strip())
        except ValueError:
            raise InputError(field, f"must be a number, got {raw!r}.", fix) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(field, f"must be a number, got {shown(repr(raw), 40)}.", fix)
    try:
        number = float(value)  # an integer of 400 digits is no float
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise InputError(field, f"must be a finite number, got {shown(repr(raw), 40)}.", fix)
    return number


def _parse_entry(entry: Any, index: int, origin: str, base: GPU | None = None,
                 source_default: str = "") -> GPU:
    """Validate one YAML entry and build a GPU. ``base``: the built-in it overrides, if any."""
    prefix = f"{origin}: {_label(entry, index)}"
    _check_fields(entry, prefix)
    name = _entry_name(entry, prefix)
    values: dict[str, Any] = {} if base is None else dict(base.__dict__)
    values["name"] = name if base is None else base.name  # an override keeps the built-in's id
    _entry_memory(entry, prefix, values, base)
    _entry_numbers(entry, prefix, values, base)
    if base is not None and entry.get("bf16_tflops") is not None and entry.get("matmul_tflops") is None:
        values["matmul_tflops"] = 0.0  # the built-in's matmul was measured against its own peak, not this one
    _check_matmul(prefix, values)
    _entry_intra_node(entry, prefix, values, base)
    _entry_texts(entry, prefix, values, base, name, source_default)
    _entry_aliases(entry, prefix, values)
    return GPU(**values)


def _check_fields(entry: Any, prefix: str) -> None:
    """An entry is a mapping of known GPU fields."""
    if not isinstance(entry, Mapping):
        raise InputError(prefix, f"must be a mapping of GPU fields, got {type(entry).__name__}.",
                         "Write each GPU as a YAML mapping (see docs/gpus.md for an example).")
    unknown = sorted(str(k) for k in entry if k not in KNOWN_KEYS)
    if unknown:
        key = unknown[0]
        raise InputError(f"{prefix}.{key}", f"unknown field.{did_you_mean(key, sorted(KNOWN_KEYS))}",
                         "Remove it or fix its spelling (fields: " + ", ".join(sorted(KNOWN_KEYS)) + ").")


def _entry_name(entry: Mapping, prefix: str) -> str:
    """The entry's id, lower case."""
    raw_name = entry.get("name")
    if raw_name is None or (isinstance(raw_name, str) and not raw_name.strip()):
        raise InputError(f"{prefix}.name", "missing.", "Add name: <id>, e.g. name: rtx4090-48gb.")
    if not isinstance(raw_name, (str, int)) or isinstance(raw_name, bool) or not normalize(str(raw_name)):
        raise InputError(f"{prefix}.name", f"must be a text id, got {raw_name!r}.",
                         "Write name: <id>, e.g. name: rtx4090-48gb.")
    return str(raw_name).strip().lower()


def _entry_memory(entry: Mapping, prefix: str, values: dict[str, Any], base: GPU | None) -> None:
    """memory: exactly one of memory_mib / memory_gib / memory_bytes (an override may leave it out)."""
    given = [k for k in MEMORY_KEYS if entry.get(k) is not None]
    if len(given) > 1:
        raise InputError(f"{prefix}.{given[1]}", f"memory is given twice ({' and '.join(given)}).",
                         "Keep one of memory_mib, memory_gib or memory_bytes.")
    if given:
        key = given[0]
        fix = ("Write the total memory as a plain number: memory_mib as nvidia-smi "
               "--query-gpu=memory.total prints it (e.g. 24564), or memory_gib / memory_bytes.")
        amount = _number(entry[key], f"{prefix}.{key}", fix)
        if amount <= 0:
            raise InputError(f"{prefix}.{key}", f"must be positive, got {entry[key]!r}.", fix)
        memory = int(round(amount * MEMORY_KEYS[key]))
        low, high = _MEMORY_RANGE
        if not low <= memory <= high:
            raise InputError(f"{prefix}.{key}", f"{entry[key]!r} is {memory / GIB:.3g} GiB, outside "
                             f"{low // GIB}-{high // GIB} GiB: probably the wrong unit.", fix)
        values["memory_bytes"] = memory
    elif base is None:
        raise InputError(f"{prefix}.memory_mib", "missing (no memory_mib, memory_gib or memory_bytes).",
                         "Add memory_mib: <MiB> as nvidia-smi --query-gpu=memory.total prints it, "
                         "or memory_gib: <GiB>.")


def _entry_numbers(entry: Mapping, prefix: str, values: dict[str, Any], base: GPU | None) -> None:
    """The speeds: positive numbers, below a plausible bound (an override may leave them out)."""
    for key in NUMBER_KEYS + OPTIONAL_NUMBER_KEYS:
        fix = f"Write {key}: <number> in {_UNITS[key]}."
        if entry.get(key) is None:
            if base is None and key in NUMBER_KEYS:
                raise InputError(f"{prefix}.{key}", "missing.", f"Add {key}: <number> in {_UNITS[key]}.")
            continue
        value = _number(entry[key], f"{prefix}.{key}", fix)
        if value <= 0:
            raise InputError(f"{prefix}.{key}", f"must be positive, got {entry[key]!r}.", fix)
        if value > _UPPER[key]:
            raise InputError(f"{prefix}.{key}", f"{entry[key]!r} is implausibly large: probably the wrong unit.",
                             fix)
        values[key] = value


def _check_matmul(prefix: str, values: dict[str, Any]) -> None:
    """A measured matmul throughput cannot exceed the peak it is measured against."""
    matmul, peak = values.get("matmul_tflops") or 0.0, values.get("bf16_tflops") or 0.0
    if matmul > peak > 0:
        raise InputError(f"{prefix}.matmul_tflops", f"{matmul:g} TFLOP/s is above bf16_tflops ({peak:g}).",
                         "Write the matmul throughput measured on the GPU (at most its dense bf16 peak), or leave "
                         "matmul_tflops out.")


def _entry_intra_node(entry: Mapping, prefix: str, values: dict[str, Any], base: GPU | None) -> None:
    """The interconnect kind (an override may leave it out)."""
    if entry.get("intra_node") is None:
        if base is None:
            raise InputError(f"{prefix}.intra_node", "missing.",
                             f"Add intra_node: one of {', '.join(INTRA_NODE_KINDS)}.")
        return
    raw = entry["intra_node"]
    kind = str(raw).strip().lower().replace("_", "-").replace(" ", "-")
    if not isinstance(raw, str) or kind not in INTRA_NODE_KINDS:
        raise InputError(f"{prefix}.intra_node", f"must be one of {', '.join(INTRA_NODE_KINDS)}, "
                         f"got {raw!r}.{did_you_mean(str(raw), INTRA_NODE_KINDS)}",
                         "nvlink for SXM/NVSwitch boards, pcie when GPUs talk over PCIe, "
                         "infinity-fabric for AMD Instinct.")
    values["intra_node"] = kind


def _entry_texts(entry: Mapping, prefix: str, values: dict[str, Any], base: GPU | None, name: str,
                 source_default: str) -> None:
    """The optional fields: hopper_fp8, display_name and source (an override's source names the built-in's)."""
    if "hopper_fp8" in entry and entry["hopper_fp8"] is not None:
        if not isinstance(entry["hopper_fp8"], bool):
            raise InputError(f"{prefix}.hopper_fp8", f"must be true or false, got {entry['hopper_fp8']!r}.",
                             "Write hopper_fp8: true for Hopper or newer NVIDIA GPUs, else false.")
        values["hopper_fp8"] = entry["hopper_fp8"]
    else:
        values.setdefault("hopper_fp8", False)
    for key in ("display_name", "source"):
        raw = entry.get(key)
        if raw is None:
            continue
        if not isinstance(raw, (str, int, float)) or isinstance(raw, bool):
            raise InputError(f"{prefix}.{key}", f"must be text, got {raw!r}.", f"Write {key}: <text>.")
        values[key] = str(raw).strip()
    values.setdefault("display_name", name)
    if entry.get("source") is None:
        if base is None:
            values["source"] = source_default
        elif any(k in entry for k in (*MEMORY_KEYS, *NUMBER_KEYS, "intra_node", "hopper_fp8")):
            values["source"] = f"{source_default} (override of the built-in; built-in: {base.source})"


def _entry_aliases(entry: Mapping, prefix: str, values: dict[str, Any]) -> None:
    """Other names the GPU is found by: a name or a list of names."""
    raw_aliases = entry.get("aliases")
    if raw_aliases is not None:
        if isinstance(raw_aliases, (str, int)) and not isinstance(raw_aliases, bool):
            raw_aliases = [raw_aliases]
        if not isinstance(raw_aliases, list) or any(
                isinstance(a, bool) or not isinstance(a, (str, int)) or not normalize(str(a))
                for a in raw_aliases):
            raise InputError(f"{prefix}.aliases", f"must be a list of names, got {raw_aliases!r}.",
                             'Write aliases: ["4090", rtx-4090].')
        values["aliases"] = tuple(dict.fromkeys(str(a).strip().lower() for a in raw_aliases))
    values.setdefault("aliases", ())


def _entries(data: Any, origin: str, where: str) -> list[Any]:
    """The list of entries of a parsed YAML document: a list, or a mapping with key ``gpus``."""
    if isinstance(data, Mapping) and "gpus" in data:
        extra = sorted(str(k) for k in data if k != "gpus")
        if extra:
            raise InputError(origin, f"{where}: unexpected top-level key {extra[0]!r}.",
                             "The file holds a list of GPUs, or a mapping with the single key gpus.")
        data = data["gpus"]
    elif isinstance(data, Mapping) and "name" in data:
        data = [data]  # a single GPU entry
    if data is None or (isinstance(data, list) and not data):
        raise InputError(origin, f"{where} holds no GPU entries.",
                         "Write a list of GPUs (or gpus: [...]); see docs/gpus.md for an example.")
    if not isinstance(data, list):
        raise InputError(origin, f"{where} must hold a list of GPU entries, got {type(data).__name__}.",
                         "Write a list of GPUs (or gpus: [...]); see docs/gpus.md for an example.")
    return data


def _load_yaml(text: str, origin: str, where: str) -> Any:
    return safe_input.load_yaml(text, origin, where)


def _check_unique(gpus: Iterable[GPU], origin: str) -> None:
    seen: dict[str, str] = {}
    for gpu in gpus:
        for key in dict.fromkeys(normalize(n) for n in (gpu.name, *gpu.aliases)):
            if key in seen and seen[key] != gpu.name:
                raise InputError(f"{origin}: {gpu.name}.aliases",
                                 f"'{key}' already names GPU '{seen[key]}'.",
                                 "Give every GPU its own name and aliases.")
            seen[key] = gpu.name


# ----------------------------------------------------------------------------- built-ins
@functools.lru_cache(maxsize=1)
def _builtin() -> tuple[GPU, ...]:
    """Parse the bundled ``gpus.yaml`` once."""
    origin = "catalog gpus.yaml"
    text = importlib.resources.files(__package__).joinpath("gpus.yaml").read_text(encoding="utf-8")
    entries = _entries(safe_input.load_package_yaml(text), origin, "gpus.yaml")
    gpus = tuple(_parse_entry(e, i, origin) for i, e in enumerate(entries))
    names = [g.name for g in gpus]
    if len(set(names)) != len(names):
        raise InputError(origin, "duplicate GPU names.", "Fix the bundled catalog.")
    _check_unique(gpus, origin)
    return gpus


# ----------------------------------------------------------------------------- user files
def _read_user_file(path: str | Path) -> tuple[list[Any], Path]:
    origin = "gpu-file"
    p = Path(path).expanduser()
    text = safe_input.read_text(p, origin, safe_input.MAX_CONFIG_BYTES, "a YAML file of GPU types (docs/gpus.md)")
    return _entries(_load_yaml(text, origin, str(p)), origin, str(p)), p


def _merged(extra_yaml: str | Path | None) -> tuple[list[GPU], set[str]]:
    """(built-ins with the user file's overrides, then its new GPUs; names that came from the file)."""
    builtin = list(_builtin())
    if extra_yaml is None or (isinstance(extra_yaml, str) and not extra_yaml.strip()):
        return builtin, set()
    entries, path = _read_user_file(extra_yaml)
    by_name = {normalize(g.name): g for g in builtin}
    user: dict[str, GPU] = {}
    for i, entry in enumerate(entries):
        key = normalize(entry["name"]) if isinstance(entry, Mapping) and isinstance(entry.get("name"), str) else ""
        gpu = _parse_entry(entry, i, "gpu-file", base=by_name.get(key), source_default=f"user file {path.name}")
        if normalize(gpu.name) in user:
            raise InputError(f"gpu-file: {gpu.name}.name", f"'{gpu.name}' is defined twice in {path}.",
                             "Keep one entry per GPU name.")
        user[normalize(gpu.name)] = gpu
    _check_unique(user.values(), "gpu-file")
    from_file = {g.name for g in user.values()}
    merged = [user.pop(normalize(g.name), g) for g in builtin]
    merged.extend(user.values())
    return merged, from_file


def _index(gpus: list[GPU], from_file: set[str]) -> dict[str, GPU]:
    """Normalized name/alias -> GPU. Names beat aliases; the user file's aliases beat built-in ones."""
    index: dict[str, GPU] = {}
    ordered = [g for g in gpus if g.name not in from_file] + [g for g in gpus if g.name in from_file]
    for gpu in ordered:
        for alias in gpu.aliases:
            index[normalize(alias)] = gpu
    for gpu in ordered:
        index[normalize(gpu.name)] = gpu
    return index


# ----------------------------------------------------------------------------- public API
def list_gpus(extra_yaml: str | Path | None = None) -> list[GPU]:
    """Every known GPU: the built-ins (overridden by ``extra_yaml``), then the file's new ones."""
    return _merged(extra_yaml)[0]


def _suggest(name: str, gpus: list[GPU]) -> str:
    names = [g.name for g in gpus]
    hint = did_you_mean(name, names)
    if hint:
        return hint
    keys: dict[str, str] = {}
    for gpu in gpus:
        for n in (gpu.name, *gpu.aliases):
            keys.setdefault(normalize(n), gpu.name)
    close = difflib.get_close_matches(normalize(name), list(keys), n=6, cutoff=0.6)
    found = list(dict.fromkeys(keys[c] for c in close))[:3]
    return f" Did you mean: {', '.join(found)}?" if found else ""


def load_gpu(name: str, extra_yaml: str | Path | None = None) -> GPU:
    """The GPU called ``name`` (case, '-', '_' and spaces ignored; aliases accepted)."""
    gpus, from_file = _merged(extra_yaml)
    names = [g.name for g in gpus]
    fix = _GPU_FILE_FIX.format(names=", ".join(names))
    if name is None or not normalize(str(name)):
        raise InputError("gpu", "no GPU type given.", fix)
    found = _index(gpus, from_file).get(normalize(str(name)))
    if found is None:
        raise InputError("gpu", f"unknown GPU '{name}'.{_suggest(str(name), gpus)}", fix)
    return found

