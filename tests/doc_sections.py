"""The generated sections of the docs: a block between a begin and an end marker line that a script writes
(``python tests/accuracy.py``, ``memory_corpus.py``, ``published.py``, ``verl_releases.py``, ``trl_releases.py``,
``rule_verdicts.py``, ``async_evidence.py``, ``python benchmarks/probe_report.py``) and a test compares with what the
script would write today."""

from __future__ import annotations

from pathlib import Path


def marked(text: str, begin: str, end: str) -> str:
    """The block of ``text`` from the ``begin`` marker through the ``end`` marker, both included."""
    start = text.index(begin)
    return text[start:text.index(end, start) + len(end)]


def rewrite_marked(path: Path, begin: str, end: str, block: str, append: str | None = None) -> None:
    """Replace the marked block of the file at ``path`` with ``block`` (markers included); where the file has no such
    block, add ``append`` + ``block`` at its end when ``append`` is given (a first run), else fail."""
    text = path.read_text()
    if begin not in text and append is not None:
        path.write_text(text.rstrip("\n") + append + block + "\n")
        return
    old = marked(text, begin, end)
    path.write_text(text.replace(old, block, 1))
