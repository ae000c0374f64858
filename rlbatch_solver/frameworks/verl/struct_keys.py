"""The keys of a verl release's trainer config, and the keys of a config that its Hydra struct config refuses.

verl/trainer/main_ppo.py's ``hydra.main`` loads the trainer config (ppo_trainer.yaml composed with its defaults); Hydra
sets it to struct mode, so an override of a key the config lacks, written without a leading ``+``, stops the launch:
"Could not override '<key>'. ... Key '<name>' is not in struct". The key lists are the release's own composed config
(verl/trainer/config/_generated_ppo_trainer.yaml and _generated_ppo_megatron_trainer.yaml), written to
config_keys/<version>_<backend>.txt by benchmarks/verl_config_keys.py: ``a.b.`` is a section (a mapping with keys),
``a.b`` any other value. A key the release lacks is refused under a value (``{}``, null, a scalar: 0.9.1's
engine_kwargs.vllm, override_config) and under a mapping of the user's own keys (``*_kwargs``, ``override_*``) whatever
it is, unless written with a leading + (``_holds_no_new_key``); elsewhere only under a section the list holds
completely: never under another free-form part (custom_reward_function), never a Hydra key (hydra.*), never a key
some other release has unless the user named the release (``refused``'s ``named``: the release notes' matter, and
the release a pasted config is checked with may be inferred; a recipe's own keys, ``RECIPE_KEYS``, never),
and not at all in a config that picks another config group (model_engine=torchtitan, a group/option or pkg@group
override): its composed config is another.
And a key under a section is refused only where it is one typing slip (key_names.nearest) from a key of the
release: a recipe's entry point (recipe/dapo's main_dapo, dapo_trainer.yaml) composes the trainer config with keys of
its own (algorithm.filter_groups.*), and a pull request's branch adds keys (fsdp_config.optimizer_offload_step),
neither of them a misspelling; such a key far from every key of the release is never flagged. A key outside every
section (``foo.bar``, ``trainr.total_epochs``: its first part is no top-level key of any release's trainer config) is
refused whatever it is near: Hydra names its first part ("Key 'foo' is not in struct"), unless it is a section verl's
own recipe entry points add (``RECIPE_SECTIONS``) or an environment word a script exports."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..key_names import nearest, split_index

HERE = Path(__file__).resolve().parent / "config_keys"
BACKENDS = ("fsdp", "megatron")
# parts whose keys are the user's own (verl passes them on as keyword arguments or merges them into a model config)
FREE_FORM_NAMES = ("custom_reward_function", "kw_args")
FREE_FORM_PREFIXES = ("override_",)
FREE_FORM_SUFFIXES = ("kwargs",)
# parts named like those whose keys the release fixes where it has them (custom_reward_function: path, name;
# rollout.val_kwargs: the validation's sampling keys): a key it lacks there is judged as any section's
FIXED_KEYS = frozenset({"custom_reward_function", "val_kwargs"})
# the top-level sections verl's recipe entry points compose beside the trainer config's (verl 0.8.0 and 0.9.1:
# verl/experimental/fully_async_policy/config/fully_async_ppo_trainer.yaml async_training and rollout,
# verl/experimental/one_step_off_policy/config/one_step_off_ppo_trainer.yaml rollout; recipe/ before)
RECIPE_SECTIONS = frozenset({"async_training", "rollout"})
# the keys a recipe's trainer config adds that a later release's trainer config took in: recipe/dapo's
# dapo_trainer.yaml (composed by recipe.dapo.main_dapo, 0.3-0.8) has data.gen_batch_size and algorithm.filter_groups.*,
# in verl/trainer/config from 0.9.0 (config_keys/0.9.0_fsdp.txt): a run of the recipe under an older release sets
# them, and that release's Hydra takes them (``_lacks_held``)
RECIPE_KEYS = ("data.gen_batch_size", "algorithm.filter_groups")
# a config group the trainer config's defaults list chooses without a package (verl 0.9.1
# verl/trainer/config/ppo_trainer.yaml: "- model_engine: dp"): its override picks a group, it is no key
CONFIG_GROUPS = frozenset({"model_engine"})
# the backends whose keys the lists hold (both together): model_engine's other choices compose other configs
ENGINES = ("dp", "megatron")


@lru_cache(maxsize=None)
def release_paths(version: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """(sections, other keys) of ``version``'s trainer config, both backends together; None without a list."""
    sections: set[str] = set()
    values: set[str] = set()
    found = False
    for backend in BACKENDS:
        path = HERE / f"{version}_{backend}.txt"
        if not path.exists():
            continue
        found = True
        for line in path.read_text().splitlines():
            if not line or line.startswith("#"):
                continue
            (sections if line.endswith(".") else values).add(line.rstrip("."))
    return (frozenset(sections), frozenset(values)) if found else None


def release_keys(version: str) -> frozenset[str]:
    """Every key path of ``version``'s trainer config (empty without a list)."""
    paths = release_paths(version)
    return paths[0] | paths[1] if paths else frozenset()


def _free_form(part: str) -> bool:
    return part in FREE_FORM_NAMES or part.startswith(FREE_FORM_PREFIXES) or part.endswith(FREE_FORM_SUFFIXES)


def under_free_form(key: str) -> bool:
    """Whether a key lies under a part whose keys are the user's own (``_free_form``): where the release's config has
    that part empty (``{}``: 0.9.1's engine_kwargs.sglang), its struct config refuses a new key written without a
    leading + (OmegaConf.update, as Hydra applies an override, raises "Key '<name>' is not in struct" on an empty
    struct node), and adds it with one: verl's own scripts write +actor_rollout_ref.rollout.engine_kwargs.vllm.*."""
    return any(_free_form(part) for part in key.lstrip("+").split(".")[:-1])


def picks_group(flat: Mapping[str, Any]) -> bool:
    """Whether a config chooses config groups our lists do not hold (its composed config is then another)."""
    engine = flat.get("model_engine")
    return (engine is not None and str(engine) not in ENGINES) or any("/" in str(k) or "@" in str(k) for k in flat)


@lru_cache(maxsize=None)
def _all_keys() -> frozenset[str]:
    versions = {p.name.rsplit("_", 1)[0] for p in HERE.glob("*.txt")}
    return frozenset().union(*(release_keys(v) for v in versions))


def refused(flat: Mapping[str, Any], keys: Iterable[str], version: str, named: bool = False) -> list[str]:
    """The ``keys`` of config ``flat`` (as Hydra reads them: no +, ~ or hydra.) that ``version``'s struct trainer
    config refuses and that misspell one of its keys; ``named`` (the user named the release: ``--framework
    verl==0.9.0``), also those another release's config has and this one's lacks (``_lacks_held``): that release's
    Hydra refuses them as any key it lacks. A release dated from the config or taken by default judges no such key:
    the config may be another release's."""
    paths = release_paths(version)
    keys = [k for k in keys if not k.startswith(("+", "~", "hydra."))]
    if paths is None or picks_group(flat):
        return []
    sections, values = paths
    known, others = release_keys(version), _all_keys()
    out = []
    for key in keys:
        if key in others:
            if named and key not in known and _lacks_held(key.split("."), version):
                out.append(key)
            continue
        parts = key.split(".")
        inside = _inside(parts, sections, values)
        if key not in known and _unknown_top(parts[0]):  # outside every section of any release's config
            out.append(key)
            continue
        if (inside is not None and key not in known and _holds_no_new_key(inside, sections)
                and not parts[inside.count(".") + 1].isdigit()):  # trainer.logger.0=...: a list's item, set
            out.append(key)
            continue
        if any(_free_form(p) for p in parts):
            continue
        if inside not in sections:  # under a value (null, {}, a scalar) or a section we do not hold: not judged
            continue
        if nearest(key, known, complete=False, index=_index(version)) is not None:
            out.append(key)
    return out


def _lacks_held(parts: list[str], version: str) -> bool:
    """Whether a key another release's trainer config has (``parts``) is one ``version``'s struct config refuses: its
    list holds the part the key would go under, or lacks its top-level part (Hydra: "Key '<name>' is not in struct",
    as for any key the release lacks), bar a section verl's recipe entry points compose beside the trainer config
    (``RECIPE_SECTIONS``: its keys are the recipe's, not the release's), a key a recipe's config adds (``RECIPE_KEYS``)
    and a list's item (``trainer.logger.0``)."""
    key = ".".join(parts)
    if parts[0] in RECIPE_SECTIONS or parts[-1].isdigit() or any(key == k or key.startswith(k + ".") for k in RECIPE_KEYS):
        return False
    sections, values = release_paths(version)
    inside = _inside(parts, sections, values)
    return inside is None or _holds_no_new_key(inside, sections) or inside in sections


def listed_around(release: str) -> tuple[str | None, str | None]:
    """The releases we hold a key list of nearest before and after ``release`` (None where there is none)."""
    from ...release_numbers import release_numbers

    at = release_numbers(release)
    listed = sorted({p.name.rsplit("_", 1)[0] for p in HERE.glob("*.txt")}, key=release_numbers)
    before = [v for v in listed if release_numbers(v) < at]
    after = [v for v in listed if release_numbers(v) > at]
    return (before[-1] if before else None), (after[0] if after else None)


def moved_to(key: str, version: str) -> str | None:
    """The key of ``version``'s trainer config that another release's ``key`` moved to, one section up or down: the
    same path without its first part or under one more (0.7.0's top-level reward_manager.name is 0.7.1's
    reward.reward_manager.name, verl/trainer/config/reward_manager.yaml composed under reward; 0.5.0's ray_init.* is
    ray_kwargs.ray_init.*; reward_model.sandbox_fusion.* and sandbox_fusion.*), where exactly one such key is there;
    None otherwise."""
    known = release_keys(version)
    if key in known:
        return None
    found = {key.split(".", 1)[1]} & known if "." in key else set()
    found |= {k for k in known if k.endswith("." + key) and k.count(".") == key.count(".") + 1}
    return found.pop() if len(found) == 1 else None


def releases_having(key: str) -> list[str]:
    """The releases whose trainer config (the lists we hold) has ``key``, oldest first."""
    return [v for v in held_releases() if key in release_keys(v)]


def held_releases() -> list[str]:
    """The releases whose trainer config keys we hold (config_keys/), oldest first."""
    from ...release_numbers import release_numbers

    return sorted({p.name.rsplit("_", 1)[0] for p in HERE.glob("*.txt")}, key=release_numbers)


def some_releases_keys(flat: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    """The config's keys that only some of the releases whose keys we hold have in their trainer config, with those
    releases (oldest first), in the config's order: bar a key a "+" adds, a list's item (``trainer.logger.0``) and a
    key a recipe's config adds (``RECIPE_SECTIONS``, ``RECIPE_KEYS``: a run of the recipe under an older release sets
    it too). ``versions.detect`` dates a config by its own tables, not by these: its note names them."""
    from ..overrides import AddedKey

    held = held_releases()
    out = []
    for key in flat:
        name = str(key)
        parts = name.split(".")
        if isinstance(key, AddedKey) or name.startswith(("+", "~", "hydra.")) or parts[0] in RECIPE_SECTIONS \
                or parts[-1].isdigit() or any(name == k or name.startswith(k + ".") for k in RECIPE_KEYS):
            continue
        having = releases_having(name)
        if having and len(having) < len(held):
            out.append((name, having))
    return out


def _holds_no_new_key(inside: str, sections: frozenset[str]) -> bool:
    """Whether a key under ``inside`` (the deepest part of it the release's config has) is refused whatever it is:
    ``inside`` is a value (``{}``, null, a scalar: 0.9.1's engine_kwargs.vllm, model.override_config), or a mapping of
    the user's own keys (``_free_form`` by a part of it, bar ``FIXED_KEYS``: 0.5.0's engine_kwargs.vllm, which holds
    swap_space). Hydra applies an override without + with OmegaConf.update, which on a struct node lacking the key
    raises "Key '<name>' is not in struct" (checked with OmegaConf 2.3.0 and hydra-core 1.3's compose: a config with
    engine_kwargs.vllm: {} and the override engine_kwargs.vllm.enable_expert_parallel=True stops with "Could not
    override '...'. To append to your config use +...", and composes with the +; likewise under null, a scalar and
    override_config: {}). verl builds no structured config (no ConfigStore: hydra.main reads the yaml files), so
    every node is struct; and verl's own scripts write such keys with + (examples/*: +actor_rollout_ref.rollout.
    engine_kwargs.vllm.*, +actor_rollout_ref.model.override_config.*)."""
    return inside not in sections or any(_free_form(p) and p not in FIXED_KEYS for p in inside.split("."))


def _inside(parts: list[str], sections: frozenset[str], values: frozenset[str]) -> str | None:
    """The deepest part of a key (its ``parts``) that the release's config has, the key itself left out."""
    return next((".".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)
                 if ".".join(parts[:i]) in sections or ".".join(parts[:i]) in values), None)


def adds_with_plus(key: str, version: str) -> bool:
    """Whether a refused key is one Hydra adds when written with a leading +: a key under a part of the user's own,
    or under a value or free-form mapping of ``version``'s config (``_holds_no_new_key``)."""
    paths = release_paths(version)
    if under_free_form(key):
        return True
    if paths is None:
        return False
    inside = _inside(key.split("."), *paths)
    return inside is not None and _holds_no_new_key(inside, paths[0])


@lru_cache(maxsize=None)
def _tops() -> frozenset[str]:
    """The top-level keys of every release's trainer config we hold."""
    return frozenset(k.split(".", 1)[0] for k in _all_keys())


def _unknown_top(part: str) -> bool:
    """A top-level key no release's trainer config has, no recipe adds, no config group, and no environment word
    (VLLM_USE_V1)."""
    return part not in _tops() | RECIPE_SECTIONS | CONFIG_GROUPS and not part.isupper()


@lru_cache(maxsize=None)
def _index(version: str) -> dict:
    return split_index(release_keys(version), complete=False)
