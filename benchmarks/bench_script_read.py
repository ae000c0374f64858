"""Reading a launch script with quotes left open: its time against a script of the same size with none.

    python benchmarks/bench_script_read.py [--repeat 5]

A quote left open (a stray one, or a prompt over many lines) is carried from line to line up to 64 lines
(``launch_script._join_quoted``); reading it should cost about what a plain script of the same size costs, not the
square of the lines a quote spans. Prints the median seconds of each and their ratio (interleaved, so both see the
same load).
"""

from __future__ import annotations

import argparse
import statistics
import time

from rlbatch_solver.launch_script import parse_launch_script

TAIL = "\npython3 -m verl.trainer.main_ppo a.b=1\n"


def scripts(blocks: int) -> dict[str, str]:
    """Two scripts of the same size: blocks of 64 lines whose first opens a quote none
    closes, and the same with a letter for that quote."""
    open_quotes = "\n".join((['Y="' + "w" * 200] + ["z" * 200] * 62 + ["end"]) * blocks) + TAIL
    plain = open_quotes.replace('Y="', "Y=q")
    return {"open quotes": open_quotes, "plain": plain}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--blocks", type=int, default=60, help="64-line blocks (60: about 0.8 MB)")
    args = parser.parse_args()
    texts = scripts(args.blocks)
    times: dict[str, list[float]] = {name: [] for name in texts}
    for _ in range(args.repeat):
        for name, text in texts.items():
            start = time.perf_counter()
            parse_launch_script(text)
            times[name].append(time.perf_counter() - start)
    median = {name: statistics.median(t) for name, t in times.items()}
    for name, text in texts.items():
        print(f"{name:12s} {len(text):>9,} characters  median {median[name]:.3f} s")
    print(f"ratio open quotes / plain: {median['open quotes'] / median['plain']:.2f}")


if __name__ == "__main__":
    main()
