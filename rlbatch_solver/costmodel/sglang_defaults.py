"""What SGLang sets on its own when a launcher leaves it unset: the chunked-prefill size, the decode CUDA-graph
batch and ``mem_fraction_static``, from the GPU's memory (SGLang 0.5.15.post1, the version slime 0.3.1's Docker
image pins: ``sglang/srt/server_args.py:ServerArgs._handle_gpu_memory_settings``; docs/cost-model.md, "SGLang's
own defaults").

``mem_fraction_static = round((gpu_mem - reserved) / gpu_mem, 3)`` in MiB, with ``reserved = 512 (attention
metadata) + max(chunked_prefill_size, 2048) * 1.5 (activations) + max_bs * 2 (decode CUDA graphs) + tp * pp / 8 *
1024 (large parallel sizes)``, at least 10 GiB on GPUs over 60 GiB. Left out: the prefill CUDA-graph term (8 MiB per
captured size, when that backend is on), DP attention and DeepEP (neither in slime's defaults).
"""

from __future__ import annotations

MIB = 1 << 20
# (GPU memory below, in MiB) -> (chunked_prefill_size, decode CUDA-graph max batch at TP < 4, at TP >= 4)
_TIERS = ((20 * 1024, 2048, 8, 8), (35 * 1024, 2048, 24, 80), (60 * 1024, 4096, 32, 160),
          (90 * 1024, 8192, 256, 512), (160 * 1024, 8192, 256, 512))
_LARGEST = (16384, 512, 512)


def chunked_prefill_and_max_bs(memory_bytes: float, tp: int) -> tuple[int, int]:
    """SGLang's chunked_prefill_size and decode CUDA-graph max batch for a GPU of ``memory_bytes`` at TP ``tp``."""
    mib = memory_bytes / MIB
    for below, chunk, small, large in _TIERS:
        if mib < below:
            return chunk, (small if tp < 4 else large)
    return _LARGEST[0], _LARGEST[1]


def mem_fraction_static(memory_bytes: float, tp: int, pp: int = 1) -> float:
    """SGLang's default ``mem_fraction_static`` on a GPU of ``memory_bytes`` for an engine of TP ``tp``, PP ``pp``."""
    mib = memory_bytes / MIB
    chunk, max_bs = chunked_prefill_and_max_bs(memory_bytes, tp)
    reserved = 512 + max(chunk, 2048) * 1.5 + max_bs * 2 + tp * pp / 8 * 1024
    if mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((mib - reserved) / mib, 3)
