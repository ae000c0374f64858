"""Out-of-memory messages as users paste them: which kind, their numbers, and the phase the traceback names.

The messages come from the libraries under the frameworks, so one module reads them for all of them:

- torch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp): "CUDA out of memory. Tried to allocate X GiB.
  GPU 0 has a total capacity of Y GiB of which Z GiB is free. Including non-PyTorch memory, this process has W GiB
  memory in use. Of the allocated memory A GiB is allocated by PyTorch, and B GiB is reserved by PyTorch but
  unallocated." (torch >= 2.1), and before it "Tried to allocate X GiB (GPU 0; Y GiB total capacity; A GiB already
  allocated; Z GiB free; R GiB reserved in total by PyTorch)";
- vLLM's engine start: "No available memory for the cache blocks" (V0 worker), "The model's max seq len (N) is larger
  than the maximum number of tokens that can be stored in KV cache (M)" (V0), "To serve at least one request with the
  models's max seq len (N), (X GiB KV cache is needed, which is larger than the available KV cache memory (Y GiB)"
  (V1 kv_cache_utils), "Free memory on device ... on startup is less than desired GPU memory utilization" (V1 worker);
- SGLang's "Not enough memory. Please try to increase --mem-fraction-static";
- the libraries that allocate outside torch's caching allocator, once it holds the whole GPU (Megatron-LM #1509):
  NCCL's "NCCL WARN Cuda failure 2 'out of memory'" (src/include/checks.h CUCHECK/CUDACHECK print the CUDA error's
  number and text: error 2 is CUDA_ERROR_OUT_OF_MEMORY / cudaErrorMemoryAllocation, "out of memory"), and PyTorch's
  "CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`" (aten/src/ATen/cuda/CublasHandlePool.cpp
  createCublasHandle, through TORCH_CUDABLAS_CHECK in aten/src/ATen/cuda/Exceptions.h; cuBLAS's documentation: the
  status is "usually caused by a cudaMalloc() failure"). Neither says a size;
- Ray's memory monitor: "Memory on the node (...) was U GB / T GB (f), which exceeds the memory usage threshold of t";
- the kernel's OOM killer as launchers report it (exit code -9, SIGKILL).

The phase comes from the traceback pasted with the message: each framework declares the functions of its phases
(``Framework.oom_frames``: regular expressions, the most specific first) and the first that matches names it. Without
frames, the kind says it where it can (an engine-start message is the rollout engine's budget, Ray's is host RAM).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence

UNIT = {"b": 1 / 2**30, "bytes": 1 / 2**30, "kib": 1 / 2**20, "mib": 1 / 2**10, "gib": 1.0, "tib": 2**10,
        "kb": 1 / 2**20, "mb": 1 / 2**10, "gb": 1.0, "tb": 2**10}  # torch prints binary units with "GiB"
# torch's format_size (c10/cuda/CUDACachingAllocator.cpp) prints a size of at most 1 KiB as "N bytes": a full GPU's
# message says "of which 0 bytes is free"
_NUM = r"(\d+(?:\.\d+)?)\s*(bytes|[KMGT]?i?B)"
# ROCm builds of torch say "HIP out of memory" (hipify renames the message); torch 2.1 printed "total capacty"
_DEVICE_OOM = r"(?:CUDA|HIP) out of memory"

# (kind, pattern, the named numbers in GiB or as counts) — the first match wins
CUDA_OOM = "cuda_oom"
KV_NONE = "engine_no_kv_blocks"
KV_SHORT = "engine_kv_shorter_than_max_len"
ENGINE_FREE = "engine_util_above_free"
SGLANG = "sglang_not_enough_memory"
LIBRARY_OOM = "cuda_oom_outside_torch"
RAY_NODE = "ray_node_oom"
KILLED = "host_killed"

_TORCH_NEW = re.compile(
    _DEVICE_OOM + r"\.\s*Tried to allocate " + _NUM + r"\.\s*GPU\s*\d*\s*has a total capaci?ty of " + _NUM
    + r" of which " + _NUM + r" is free\.(?P<rest>.{0,600})", re.I | re.S)
_TORCH_OLD = re.compile(
    _DEVICE_OOM + r"\.\s*Tried to allocate " + _NUM + r"\s*\(GPU\s*\d+;\s*" + _NUM + r" total capacity;\s*"
    + _NUM + r" already allocated;\s*" + _NUM + r" free;\s*" + _NUM + r" reserved in total by PyTorch", re.I | re.S)
_IN_USE = re.compile(r"this process has " + _NUM + r" memory in use", re.I)
_ALLOC = re.compile(r"Of the allocated memory " + _NUM + r" is allocated by PyTorch, and " + _NUM
                    + r" is reserved by PyTorch but unallocated", re.I)
_OTHER_PROCS = re.compile(r"Process \d+ has " + _NUM + r" memory in use", re.I)
_KV_SHORT_V0 = re.compile(r"max seq len \((?P<max_len>\d+)\) is larger than the maximum number of tokens that can "
                          r"be stored in KV cache \((?P<kv_tokens>\d+)\)", re.I | re.S)
_KV_SHORT_V1 = re.compile(r"max seq len \((?P<max_len>\d+)\),?\s*\(?" + _NUM + r" KV cache is needed, which is larger "
                          r"than the available KV cache memory \(" + _NUM, re.I | re.S)
_KV_NONE = re.compile(r"No available memory for the cache blocks", re.I)
_ENGINE_FREE = re.compile(r"Free memory on device[^\n]{0,200}?\(?(\d+(?:\.\d+)?)\s*(?:[KMGT]?i?B)?\s*/\s*" + _NUM
                          + r"\)? on startup is less than desired GPU memory utilization "
                          r"\((?P<util>\d+(?:\.\d+)?),\s*" + _NUM, re.I | re.S)
# the exception's name alone (a Ray task error wrapping it, a message cut before its numbers, a thread's title)
_CUDA_NAMED = re.compile(r"OutOfMemoryError\)|torch\.(?:cuda\.)?OutOfMemoryError|(?:CUDA|HIP) out of memory|"
                         r"(?:CUDA|HIP) error: out of memory|\bCUDA OOM\b", re.I)
_LIBRARY = re.compile(r"Cuda failure (?:\d+ )?'out of memory'|CUBLAS_STATUS_ALLOC_FAILED", re.I)
_SGLANG = re.compile(r"Not enough memory\.?\s*Please try to increase --mem-fraction-static", re.I)
_RAY = re.compile(r"Memory on the node.{0,400}?was\s*" + _NUM + r"\s*/\s*" + _NUM + r"\s*\((?P<frac>\d+(?:\.\d+)?)\),?\s*which "
                  r"exceeds the memory usage threshold of (?P<thr>\d+(?:\.\d+)?)", re.I | re.S)
_KILLED = re.compile(r"exitcode\s*:?\s*-9|return code\s*=?\s*-9|SIGKILL|OOM killer|\bKilled\b", re.I)


def _gib(value: str, unit: str) -> float:
    return float(value) * UNIT.get(unit.lower(), 1.0)


@dataclass
class OomMessage:
    """One out-of-memory message: its kind, its numbers (GiB, or tokens for the KV cache), the phase it names."""

    kind: str
    numbers: dict[str, float] = field(default_factory=dict)
    phase: str | None = None
    phase_from: str = ""  # "traceback" (a frame named it), "message" (the kind implies it), "" (unknown)
    frame: str = ""  # the traceback frame that named the phase
    framework: str | None = None  # whose frames the traceback shows
    during: str | None = None  # a host kill: the phase the traceback was in

    @property
    def gpu_memory(self) -> bool:
        return self.kind not in (RAY_NODE, KILLED)

    @property
    def needed_gib(self) -> float | None:
        """What the process asked the GPU to hold at that moment: its memory in use plus the failed allocation
        (torch's message), a lower bound of the phase's real peak."""
        n = self.numbers
        if self.kind != CUDA_OOM or "tried_gib" not in n:
            return None
        held = n.get("in_use_gib")
        if held is None and "allocated_gib" in n:
            held = n["allocated_gib"] + n.get("reserved_unallocated_gib", 0.0)
        return None if held is None else held + n["tried_gib"]


def parse_oom(text: str) -> OomMessage | None:
    """The out-of-memory message in ``text`` (a line, or a whole pasted log), or None."""
    for parse in (_torch, _engine, _host, _named, _library):
        found = parse(text)
        if found is not None:
            return found
    return None


def _torch(text: str) -> OomMessage | None:
    m = _TORCH_NEW.search(text)
    if m:
        n = {"tried_gib": _gib(m[1], m[2]), "capacity_gib": _gib(m[3], m[4]), "free_gib": _gib(m[5], m[6])}
        rest = m["rest"]
        used = _IN_USE.search(rest)
        if used:
            n["in_use_gib"] = _gib(used[1], used[2])
        alloc = _ALLOC.search(rest)
        if alloc:
            n["allocated_gib"] = _gib(alloc[1], alloc[2])
            n["reserved_unallocated_gib"] = _gib(alloc[3], alloc[4])
        others = [_gib(a, u) for a, u in _OTHER_PROCS.findall(rest)]
        if others:
            n["other_processes_gib"] = sum(others)
        return OomMessage(CUDA_OOM, n)
    m = _TORCH_OLD.search(text)
    if m:
        allocated, reserved = _gib(m[5], m[6]), _gib(m[9], m[10])
        return OomMessage(CUDA_OOM, {"tried_gib": _gib(m[1], m[2]), "capacity_gib": _gib(m[3], m[4]),
                                     "allocated_gib": allocated, "free_gib": _gib(m[7], m[8]),
                                     "reserved_unallocated_gib": max(0.0, reserved - allocated)})
    return None


def _named(text: str) -> OomMessage | None:
    return OomMessage(CUDA_OOM) if _CUDA_NAMED.search(text) else None


def _library(text: str) -> OomMessage | None:
    return OomMessage(LIBRARY_OOM) if _LIBRARY.search(text) else None


def _engine(text: str) -> OomMessage | None:
    m = _KV_SHORT_V1.search(text)
    if m:
        return OomMessage(KV_SHORT, {"max_len": float(m["max_len"]), "kv_needed_gib": _gib(m[2], m[3]),
                                     "kv_available_gib": _gib(m[4], m[5])}, "rollout", "message")
    m = _KV_SHORT_V0.search(text)
    if m:
        return OomMessage(KV_SHORT, {"max_len": float(m["max_len"]), "kv_tokens": float(m["kv_tokens"])},
                          "rollout", "message")
    m = _ENGINE_FREE.search(text)
    if m:
        return OomMessage(ENGINE_FREE, {"free_gib": _gib(m[1], m[3]), "capacity_gib": _gib(m[2], m[3]),
                                        "utilization": float(m["util"]), "wanted_gib": _gib(m[5], m[6])},
                          "rollout", "message")
    if _KV_NONE.search(text):
        return OomMessage(KV_NONE, {}, "rollout", "message")
    if _SGLANG.search(text):
        return OomMessage(SGLANG, {}, "rollout", "message")
    return None


def _host(text: str) -> OomMessage | None:
    m = _RAY.search(text)
    if m:
        return OomMessage(RAY_NODE, {"node_used_gib": _gib(m[1], m[2]), "node_total_gib": _gib(m[3], m[4]),
                                     "threshold": float(m["thr"])}, "host", "message")
    if _KILLED.search(text):
        return OomMessage(KILLED, {}, "host", "message")
    return None


def phase_of(text: str, frames: Iterable[tuple[str, str, str]]) -> tuple[str, str, str] | None:
    """(framework, phase, frame) of the first of ``frames`` that matches the traceback, or None. ``frames``:
    (framework, regular expression over the traceback, phase), each framework's ``oom_frames`` in its order, the most
    specific first: a traceback shows the outer frames too (verl's compute_ref_log_prob calls the actor's
    compute_log_prob; TRL's compute_loss calls _get_per_token_logps), so the innermost frame does not name the phase."""
    for framework, pattern, phase in frames:
        m = re.search(pattern, text)
        if m is not None:
            return framework, phase, m.group(0)
    return None


def gpus_with_capacity(capacity_gib: float, gpus: Sequence[tuple[str, float]], tolerance: float = 0.03) -> list[str]:
    """The catalog GPUs whose memory is the capacity a message reports (torch reports the device's total less what
    the driver keeps: 79.1 GiB for an 80 GB H100), nearest first."""
    near = [(abs(mem - capacity_gib) / mem, name) for name, mem in gpus if abs(mem - capacity_gib) <= tolerance * mem]
    return [name for _, name in sorted(near)]
