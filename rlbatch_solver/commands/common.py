"""What every command shares: reading the pasted config into rule values, the model card, checking every returned solution, and the text that names a config's waste."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..catalog.models import ModelCard, load_model
from ..errors import InputError
from ..frameworks import Framework
from ..frameworks.overrides import load_config_file
from ..rules.base import RuleSet, Value


def release_notes(fw: Framework) -> list[str]:
    """[the note saying a named release is judged by another release's rules (swift==3.8.0 by 3.10.3's)], or [] for
    a release judged by its own: what check, recommend and enumerate say first."""
    return [fw.version_note] if fw.version_note else []


def memory_evaluated(gpu: str | None, card: ModelCard | None, fw: Framework | None = None,
                     flat: Mapping[str, Any] | None = None) -> bool:
    """Whether a config's memory is evaluated (priced): a GPU type and a model are both known, and (given the
    framework and the config) its training backend is one we model (``Framework.unmodelled_backend``). The one test
    of check, fix and recommend, and what their notes are told (``Framework.config_notes``' ``priced``)."""
    modelled = fw is None or flat is None or fw.unmodelled_backend(flat) is None
    return bool(gpu) and card is not None and modelled


def unmodelled_note(fw: Framework, flat: Mapping[str, Any]) -> str:
    """check's and fix's note where a GPU and a model are given but the config's backend is not modelled."""
    return (f"memory was not evaluated: {fw.unmodelled_backend(flat)} (its memory is not the one we price); the rules "
            "were checked")


def framework_for(fw: Framework, flat: Mapping[str, Any]) -> tuple[Framework, list[str]]:
    """The framework version a pasted config is checked with (verl: the one its keys show, unless the user named
    one), and notes saying which and why."""
    notes = release_notes(fw)
    chosen, note = fw.for_config(flat)
    if note:
        notes.append(note)
    return chosen, notes


@dataclass
class Upgrade:
    """A config checked with the older release its keys show: the rules of the newest release that it breaks and
    the older one does not, (rule id, message) — what breaks on upgrading."""

    framework: str
    version: str
    fails: list[tuple[str, str]] = field(default_factory=list)
    unknown_keys: list[str] = field(default_factory=list)  # keys the newest release's config lacks (refused)
    plus_adds: list[str] = field(default_factory=list)  # of those, the ones it adds written with a leading +

    def text(self) -> str | None:
        """One line, or None when the newest release passes what the older one passes."""
        if not self.fails and not self.unknown_keys:
            return None
        parts = []
        if len(self.fails) == 1:
            parts.append(": ".join(self.fails[0]))
        elif self.fails:
            parts.append(", ".join(rule for rule, _ in self.fails)
                         + f" (--framework {self.framework}=={self.version} prints them with their numbers)")
        if self.unknown_keys:
            from ..frameworks.key_names import plus_words

            parts.append(f"its config has no {', '.join(self.unknown_keys)} (refused as an unknown key"
                         + "".join(f"; {plus_words(k)}" for k in self.unknown_keys if k in self.plus_adds) + ")")
        return f"on {self.framework} {self.version} this config fails: " + "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "fails": [{"rule": r, "message": m} for r, m in self.fails],
                "unknown_keys": self.unknown_keys}


def upgrade_check(asked: Framework, chosen: Framework, flat: Mapping[str, Any], broken: set[str], *,
                  gpus: int | None, model: ModelCard | None) -> Upgrade | None:
    """When ``chosen`` is an older release that the config's keys show (the user named none), ``asked``'s rules (the
    newest release's) on the same config: what they refuse beyond ``broken`` (the rule ids the older release
    refuses), and the keys its config lacks (verl 0.9.0's, judged by the same pack: its keys alone differ). None
    when the config is checked with the release asked for."""
    if chosen is asked or (chosen.version, chosen.keys_version) == (asked.version, asked.keys_version) or asked.pinned:
        return None
    try:
        values = asked.to_values(flat, gpus=gpus, model=model)
    except InputError:  # a value the newest release reads differently: its rules cannot say more than the note
        return None
    result = asked.ruleset.check(values)
    unknown = asked.unknown_keys(flat)
    plus = asked.key_list(flat).plus_adds if unknown else frozenset()
    return Upgrade(asked.name, asked.version, [(v.rule, v.message) for v in result.errors if v.rule not in broken],
                   unknown, [k for k in unknown if k in plus])


def read_inputs(fw: Framework, flat: Mapping[str, Any], *, gpus: int | None, model: str | ModelCard | None,
            gpu: str | None, extra_gpus: str | Path | None) -> tuple[ModelCard | None, dict[str, Value]]:
    """The model card and rule-variable values of a pasted config, every flag checked whether or not
    this command will use it (an unknown --gpu is an error even without --model)."""
    from ..errors import check_gpu_count, check_size

    check_gpu_count(gpus)
    if gpu is not None:
        from ..catalog.gpus import load_gpu

        load_gpu(gpu, extra_gpus)
    card = model_card(model)
    values = fw.to_values(flat, gpus=gpus, model=card)
    for name, value in values.items():  # whatever the framework's parser let through: no size beyond range
        check_size(fw.native_key(name) if name in fw.ruleset.variables else name, value,
                   "write it as a whole number of at most a billion.")
    return card, values


def model_card(model: str | ModelCard | None) -> ModelCard | None:
    if model is None or isinstance(model, ModelCard):
        return model
    return load_model(model)


def read_config(framework: Framework, config: Sequence[str] | Mapping[str, Any] | str | Path) -> tuple[dict, list[str]]:
    """Pasted tokens, a flat/nested mapping, or a YAML file path -> (flat config, ignored tokens)."""
    if isinstance(config, Mapping):
        from ..frameworks.overrides import flatten

        return flatten(config), []
    if isinstance(config, (str, Path)) and Path(config).suffix in (".yaml", ".yml", ".json"):
        return load_config_file(config), []
    if isinstance(config, str):
        config = [config]
    return framework.parse(list(config))


def validate_solutions(ruleset: RuleSet, solutions: list[dict[str, Value]]) -> list[dict[str, Value]]:
    """Re-check every solver answer with the plain checker (solver-independent); each answer's checked values, its
    derived quantities with them (``RuleSet.full_env``), for a caller that reads them next (enumerate's headroom)."""
    envs = []
    for sol in solutions:
        result = ruleset.check(sol)
        if not result.strictly_valid:
            broken = result.errors + result.tolerated
            raise AssertionError(f"solver returned an invalid config: {[v.message for v in broken]}")
        envs.append(result.env)
    return envs


def waste_text(fw: Framework, ruleset: RuleSet, before: Mapping[str, Value], after: Mapping[str, Value]) -> str:
    """What the repaired config makes the framework pad or drop, in words ('' when nothing)."""
    from ..solver.costs import waste_of

    if not waste_of(ruleset, after):
        return ""
    return "; ".join(v.message for v in ruleset.check(after).warnings if ".advice.batch_padded" in v.rule)


# what each framework trains of a vision-language model by default, as the Plan prices it (the whole model): the
# ViT's weights, gradients and optimizer states (docs/cost-model.md, "Vision-language models")
VISION_TRAINED_BY_DEFAULT = {
    "verl": "verl's FSDP workers freeze nothing: fsdp_workers.py",
    "easyr1": "EasyR1's worker.actor.model.freeze_vision_tower defaults to False: verl/workers/actor/config.py",
    "trl": "TRL's GRPOTrainer trains every parameter of the model it loads",
    "unsloth": "read as a full fine-tune of the whole model",
}


def vision_note(fw: Framework, card: ModelCard | None, values: Mapping[str, Value], priced: bool) -> list[str]:
    """A priced vision-language model whose framework reads no image input (every one but ms-swift's HF path,
    which sets ``vision_patches``): what is and is not priced of its images."""
    if not priced or card is None or not card.has_vision or values.get("vision_patches"):
        return []
    default = VISION_TRAINED_BY_DEFAULT.get(fw.name, "the whole model is read as trained, its freeze settings not read")
    return [f"vision-language model ({card.name}): {fw.name} is priced without its images. Priced: the ViT's weights, "
            f"gradients and optimizer states, as trained ({default}). Not priced: the image tokens, the ViT's "
            "activations and its forward passes; step time counts the language model only"]
