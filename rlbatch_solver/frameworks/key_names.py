"""Keys a config sets that the framework's release does not have: a misspelt key ("did you mean
data.train_batch_size?") or one its parser refuses at launch.

A framework states what it knows of a release's keys (``Framework.key_list``): all of them (OpenRLHF's argparse
flags per release, TRL's script options), so that a key outside the list is refused by the framework itself, or only
some (verl's Hydra config: the keys our rules and search read), so that only a key one small edit away from a known
one is suspected, and an unknown key far from every known one is never flagged (it may be a real key we do not
follow)."""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass
from typing import Any, Iterable

from ..rules.base import Stage, Violation

# two spellings of one key part this alike (difflib's ratio: 2 x matched characters / both lengths) may be one key
# misspelt: train_bach_size / train_batch_size 0.97, acter / actor 0.8
SIMILAR = 0.8
# where the list is not complete, a suspected misspelling differs from a known key in one word (the parts between
# dots, underscores and dashes) by one typing slip (a letter missing, extra, wrong, or two neighbours swapped), two in a word
# of ``LONG_WORD`` letters or more: real keys we do not follow are often as alike by difflib's ratio (verl's
# data.val_batch_size / data.train_batch_size 0.8, fsdp_config.grad_offload / param_offload 0.8, ms-swift's
# vllm_server_port / vllm_server_host 0.88) but differ in a whole word
LONG_WORD = 8
# and a word this short is not judged there: top_k / top_p are two real keys one slip apart
MIN_WORD = 4


def slips(a: str, b: str) -> int:
    """Typing slips between two words: letters inserted, deleted, replaced, or two neighbours swapped (the optimal
    string alignment distance)."""
    prev2, prev = [], list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], prev2[j - 2] + 1)
        prev2, prev = prev, row
    return prev[-1]


@dataclass(frozen=True)
class KeyList:
    """What we know of the keys a framework release reads."""

    given: tuple[str, ...]  # the config's keys as the framework's parser reads them (judged in this order)
    keys: frozenset[str]  # keys the release has
    complete: bool  # ``keys`` is every key its parser takes: a key outside it is refused at launch
    others: frozenset[str] = frozenset()  # keys never judged here: other releases' (the release notes say what they
    # do), ours and the launcher's
    refusal: str = ""  # what the framework prints when it refuses a key: {key} the key as written, {leaf} its last part
    source: str = ""  # where it refuses it (file:function)
    flags: bool = False  # the framework's syntax writes keys as --flags
    refused: frozenset[str] = frozenset()  # keys of ``given`` the release's parser refuses though ``keys`` is not
    # complete (verl: a key under a section of its struct config that the section lacks), or though another release
    # has them (``others``: OpenRLHF's --bf16 under 0.11.2)
    # a refused key of another release -> (this release's key of the same meaning, None: none, drop it; the words
    # that say so, with the releases that have it)
    successors: tuple[tuple[str, str | None, str], ...] = ()
    # refused keys the framework adds when written with a leading "+" (verl: a key under a part of the config whose
    # keys are the user's own, engine_kwargs.sglang: {} in 0.9.1's, which the struct config refuses without one)
    plus_adds: frozenset[str] = frozenset()


@dataclass(frozen=True)
class UnknownKey:
    """One key of the config the release does not have (``refused``: the release's parser stops on it, else a
    suspected misspelling), and the known key it is nearest, if any."""

    key: str
    suggestion: str | None
    refused: bool
    shown: str  # the key as the user writes it (--key for a flag)
    suggestion_shown: str | None = None
    # another release's key this one refuses: where it has none of the same meaning, fix drops it ('' not such a key)
    release_words: str = ""
    drop: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "did_you_mean": self.suggestion, "refused": self.refused}


def _dots(key: str) -> list[str]:
    return key.split(".")


def _words(key: str) -> list[str]:
    return re.split(r"([._-])", key)  # the separators kept: data.x is not data_x


def _one_slip(a: str, b: str) -> bool:
    """Whether two words are one slip apart (two in long words), both at least ``MIN_WORD`` letters."""
    if min(len(a), len(b)) < MIN_WORD:
        return False
    return slips(a, b) <= (2 if min(len(a), len(b)) >= LONG_WORD else 1)


def split_index(known: Iterable[str], complete: bool) -> dict[int, list[tuple[str, list[str]]]]:
    """The known keys split into their parts (``nearest``'s reading), by number of parts: built once for many keys."""
    split = _dots if complete else _words
    index: dict[int, list[tuple[str, list[str]]]] = {}
    for other in known:
        theirs = split(other)
        index.setdefault(len(theirs), []).append((other, theirs))
    return index


def nearest(key: str, known: Iterable[str], complete: bool,
            index: dict[int, list[tuple[str, list[str]]]] | None = None) -> str | None:
    """The known key ``key`` most likely misspells: one part of the dotted key differs, by a small edit (difflib's
    ratio at least ``SIMILAR``; where ``known`` is not complete, one word by one slip, ``_one_slip``); None when no
    known key is that near. ``index``: ``split_index(known, complete)``, when many keys are judged."""
    split = _dots if complete else _words
    parts = split(key)
    best, score = None, 0.0
    for other, theirs in (index if index is not None else split_index(known, complete)).get(len(parts), []):
        differ = [(a, b) for a, b in zip(parts, theirs) if a != b]
        if len(differ) != 1:
            continue
        a, b = differ[0]
        if not complete and not _one_slip(a, b):
            continue
        ratio = difflib.SequenceMatcher(None, key, other).ratio() if not complete else \
            difflib.SequenceMatcher(None, a, b).ratio()
        if ratio >= SIMILAR and (ratio, other) > (score, best or ""):
            best, score = other, ratio
    if best is None and complete:  # argparse flags: a whole-name slip (train_bach_size for train_batch_size)
        close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.85)
        best = close[0] if close else None
    return best


def unknown_keys(key_list: KeyList) -> list[UnknownKey]:
    """The config's keys the release does not have: every one outside a complete list, else the near misses."""
    out = []
    index = split_index(key_list.keys, key_list.complete)
    for key in dict.fromkeys(key_list.given):
        if key in key_list.refused:  # judged by words (complete=False): the index is that reading where the list is
            # (a key another release has, that this one lacks, is refused though ``keys`` holds every release's)
            dash = "--" if key_list.flags else ""
            successor = {k: (new, words) for k, new, words in key_list.successors}.get(key)
            if successor is not None:  # another release's key: its successor, or none (dropped)
                new, words = successor
                out.append(UnknownKey(key, new, True, f"{dash}{key}", new and f"{dash}{new}", words, new is None))
                continue
            near = nearest(key, key_list.keys, complete=False, index=None if key_list.complete else index)
            near = None if near == key else near
            out.append(UnknownKey(key, near, True, f"{dash}{key}", near and f"{dash}{near}"))
            continue
        if key in key_list.keys or key in key_list.others:
            continue
        near = nearest(key, key_list.keys, key_list.complete, index)
        if near is None and not key_list.complete:
            continue  # far from every key we know: perhaps a real key we do not follow, never flagged
        dash = "--" if key_list.flags else ""
        out.append(UnknownKey(key, near, key_list.complete, f"{dash}{key}", near and f"{dash}{near}"))
    return out


def refusal_text(found: UnknownKey, key_list: KeyList) -> str:
    """What the framework prints when it refuses ``found``."""
    return key_list.refusal.format(key=found.shown, leaf=missing_part(found.key, key_list.keys))


def missing_part(key: str, known: frozenset[str]) -> str:
    """The first part of a dotted key that the config lacks, the one OmegaConf names ("Key 'foo' is not in struct"
    for foo.bar): its leaf where every section above it is known."""
    parts = key.split(".")
    sections = _sections(known)
    return next((p for i, p in enumerate(parts) if ".".join(parts[:i + 1]) not in sections), parts[-1])


@functools.lru_cache(maxsize=32)
def _sections(known: frozenset[str]) -> frozenset[str]:
    """Every known key and each section above it (a.b.c: a, a.b, a.b.c), once per key list."""
    return frozenset(k.rsplit(".", i)[0] for k in known for i in range(k.count(".") + 1))


def note(found: UnknownKey, key_list: KeyList, framework: str, version: str) -> str:
    """A suspected misspelling in words (a note: the key may be one we do not follow)."""
    stops = f"; if {framework} {version} has no such key, the launch stops with \"{refusal_text(found, key_list)}\"" \
        if key_list.refusal else ""
    return (f"{found.shown} is not a {framework} {version} key we know: did you mean {found.suggestion_shown}? "
            f"(as written it sets nothing we check{stops})")


def unknown_key_rule(framework: str) -> str:
    """The id of a key the release's parser refuses at launch (a rule of every framework with a key list, beside
    its rule set's)."""
    return f"{framework}.launch.unknown_key"


def _refused(message: str, key_list: KeyList, framework: str) -> Violation:
    """Keys the release's parser refuses, said in ``message``: an error at launch (the id, stage and source of
    every such violation)."""
    return Violation(unknown_key_rule(framework), message, Stage.DRIVER, key_list.source)


def violation(found: UnknownKey, key_list: KeyList, framework: str, version: str) -> Violation:
    """A key the release's parser refuses: an error at launch, with the framework's own message."""
    guess = f" (did you mean {found.suggestion_shown}?)" if found.suggestion else ""
    if found.key in key_list.plus_adds:
        guess = f" ({plus_words(found.key)})"
    if found.release_words:  # another release's key: its successor, or drop it
        guess = (f" ({found.release_words}; {version} names it {found.suggestion_shown}: rename it)" if found.suggestion
                 else f" ({found.release_words}; {version} has no {'flag' if key_list.flags else 'key'} of the same "
                      "meaning we know: drop it)")
    return _refused(f"{found.shown} is not an option of {framework} {version}{guess}: the launch stops with "
                    f"\"{refusal_text(found, key_list)}\"", key_list, framework)


def plus_words(key: str) -> str:
    """What to write for a key ``KeyList.plus_adds`` holds."""
    return (f"{key.rsplit('.', 1)[0]} holds no such key in the release's config, and Hydra adds one only with a "
            f"leading +: write +{key}=...")


def findings(key_list: KeyList, framework: str, version: str) -> tuple[list[UnknownKey], list[Violation], list[str]]:
    """The unknown keys, as violations (refused) and notes (suspected)."""
    found = unknown_keys(key_list)
    violations = [v for _, v in refused_violations(found, key_list, framework, version)]
    return found, violations, [note(u, key_list, framework, version) for u in found if not u.refused]


def refused_violations(found: Iterable[UnknownKey], key_list: KeyList, framework: str,
                       version: str) -> list[tuple[UnknownKey | None, Violation]]:
    """The refused keys among ``found`` as violations, each with the key it was built from: the first
    ``SHOWN_REFUSED`` one each, the rest counted in one more (its key None: it speaks of several)."""
    refused = [u for u in found if u.refused]
    out: list[tuple[UnknownKey | None, Violation]] = [
        (u, violation(u, key_list, framework, version)) for u in refused[:SHOWN_REFUSED]]
    if len(refused) > SHOWN_REFUSED:  # one more line for the rest (a pasted file of thousands of stray keys)
        rest = refused[SHOWN_REFUSED:]
        out.append((None, _refused(
            f"{len(rest):,} more keys are not options of {framework} {version} either "
            f"({', '.join(u.shown for u in rest[:3])}{', ...' if len(rest) > 3 else ''}; the JSON output lists them "
            "all): the launch stops at the "
            "first", key_list, framework)))
    return out


# refused keys shown one violation each; the rest are counted in one
SHOWN_REFUSED = 10


# how a framework's parser says it refuses keys, and the framework whose parser says so (None: the one asked about)
REFUSALS = (
    # argparse (OpenRLHF's train_ppo_ray, slime's train.py): "train_ppo_ray.py: error: unrecognized arguments: --x 8"
    (re.compile(r"unrecognized arguments:([^\n]*)"), None, "argparse"),
    # Hydra / OmegaConf struct mode (verl): "Could not override 'data.x'." ... "full_key: data.x"
    (re.compile(r"Could not override '([^']+)'"), "verl", "hydra"),
    (re.compile(r"full_key: (\S+)"), "verl", "hydra"),
    # HfArgumentParser (TRL, ms-swift): "Some specified arguments are not used by the HfArgumentParser: ['--x', '8']"
    (re.compile(r"not used by the HfArgumentParser: \[([^\]]*)\]"), "trl", "hf"),
)


# OpenRLHF's launcher without Ray named in a message: argparse's prog (``train_ppo.py: error: ...``, also under
# ``python -m openrlhf.cli.train_ppo``, whose sys.argv[0] is the file), a traceback's frame
# (``openrlhf/cli/train_ppo.py``) or the module; never train_ppo_ray's (the word goes on: no boundary before ``_ray``)
NON_RAY_IN_MESSAGE = re.compile(r"\btrain_ppo\.py\b|\bopenrlhf\.cli\.train_ppo\b")


def launcher_in_message(text: str) -> list[str]:
    """The words of the entry point a message names where the framework's parse reads them (OpenRLHF's
    ``train_ppo.py``: the launcher without Ray, whose parser lacks train_ppo_ray's flags); [] otherwise."""
    return ["train_ppo.py"] if NON_RAY_IN_MESSAGE.search(text) else []


def refused_in_message(text: str) -> tuple[str | None, list[str]]:
    """The keys a pasted parser error says it refused, and the framework whose parser prints it (None: not known
    from the message alone; OpenRLHF's when it names train_ppo_ray, and the newest release with the launcher without
    Ray when it names train_ppo.py: only releases before 0.6.2 ship it)."""
    for pattern, framework, kind in REFUSALS:
        found = pattern.search(text)
        if not found:
            continue
        words = found.group(1)
        if kind == "argparse":
            keys = [w[2:].split("=")[0] for w in words.split() if w.startswith("--")]
            if "train_ppo_ray" in text:
                framework = "openrlhf"
            elif launcher_in_message(text):
                from .openrlhf.versions import NON_RAY_NEWEST

                framework = f"openrlhf=={NON_RAY_NEWEST}"
            else:
                framework = None
        elif kind == "hf":
            keys = [w.strip(" '\"")[2:].split("=")[0] for w in words.split(",") if w.strip(" '\"").startswith("--")]
        else:
            keys = [words.lstrip("+")]
        if keys:
            return framework, list(dict.fromkeys(keys))
    return None, []


def refused_keys(fw: Any, keys: Iterable[str], entry: Iterable[str] = ()) -> list[UnknownKey]:
    """Keys a framework's parser refused (its own error says so) that no release we know has, each with the known
    key it likely misspells, and those of another release the release refuses by name (``KeyList.successors``), each
    with its successor or none; another key some release has was refused by another release (the release notes'
    matter, not a misspelling) and is left out."""
    keys = list(keys)
    # the entry point's words, as the framework's parse reads them (OpenRLHF's train_ppo.py: its own parser's flags)
    given = {**(fw.parse(list(entry))[0] if entry else {}), **{k: None for k in keys}}
    key_list = fw.key_list(given, command=True)
    dash = "--" if key_list.flags else ""
    successors = {k: (new, words) for k, new, words in key_list.successors}
    out = []
    for key in keys:
        if key in successors:  # another release's key this one refuses by name (OpenRLHF 0.11.2's --bf16)
            new, words = successors[key]
            out.append(UnknownKey(key, new, True, f"{dash}{key}", new and f"{dash}{new}", words, new is None))
            continue
        if key in key_list.keys or key in key_list.others:
            continue
        near = nearest(key, key_list.keys, key_list.complete)
        out.append(UnknownKey(key, near, True, f"{dash}{key}", near and f"{dash}{near}"))
    return out
