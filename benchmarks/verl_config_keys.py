"""Write the key list of a verl release's trainer config (rlbatch_solver/frameworks/verl/config_keys/).

verl ships its trainer config composed with its defaults as one reference file per backend
(verl/trainer/config/_generated_ppo_trainer.yaml for FSDP, _generated_ppo_megatron_trainer.yaml for Megatron; written
by verl's scripts/generate_trainer_config.sh from ppo_trainer.yaml / ppo_megatron_trainer.yaml, the configs
verl/trainer/main_ppo.py's hydra.main loads). This script reads those files from an unpacked wheel and writes every
key path: a mapping with keys as ``path.`` (a section: Hydra's struct mode refuses a key it lacks), any other value
(a scalar, a list, null or an empty mapping ``{}``, which takes keys of the user's own) as ``path``.

    pip download --no-deps verl==0.9.1 -d verl-0.9.1 && unzip -q verl-0.9.1/verl-0.9.1-py3-none-any.whl -d verl-0.9.1
    python benchmarks/verl_config_keys.py 0.9.1 verl-0.9.1
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

OUT = Path(__file__).resolve().parent.parent / "rlbatch_solver" / "frameworks" / "verl" / "config_keys"
FILES = {"fsdp": "_generated_ppo_trainer.yaml", "megatron": "_generated_ppo_megatron_trainer.yaml"}


def paths(node: object, prefix: str = "") -> list[str]:
    """Every key path under ``node``: ``a.b.`` for a non-empty mapping, ``a.b`` for any other value."""
    out = []
    for key, value in node.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.append(path + ".")
            out += paths(value, path + ".")
        else:
            out.append(path)
    return out


def main(version: str, unpacked: str) -> None:
    OUT.mkdir(exist_ok=True)
    for backend, name in FILES.items():
        source = Path(unpacked) / "verl" / "trainer" / "config" / name
        if not source.exists():
            print(f"verl {version}: no {name}", file=sys.stderr)
            continue
        keys = paths(yaml.safe_load(source.read_text()))
        target = OUT / f"{version}_{backend}.txt"
        target.write_text(f"# verl=={version} verl/trainer/config/{name}, written by benchmarks/verl_config_keys.py\n"
                          + "\n".join(keys) + "\n")
        print(f"{target.name}: {len(keys)} paths")


if __name__ == "__main__":
    main(*sys.argv[1:3])
