"""Run configuration files: a grid (methods, datasets, seeds, hyperparameters, sweeps) in TOML.

``zslbench run --config configs/paper-ablation.toml`` reads one; any option given on the command
line overrides the file's value (``--dataset synth-all`` runs the paper's grid on the stand-ins;
``--set`` adds to the file's ``[set]`` table and wins on the same key). Every key is optional
except ``methods`` and ``datasets`` (in the file or on the command line)::

    # in the style of configs/paper-delta.toml (the paper's Delta ablation), with a [set] table
    methods = ["bt-gp"]
    datasets = ["all"]
    seeds = 3
    [set]                       # fixed hyperparameters: role-or-component.param = value
    "embedder.latent_dim" = 64
    [sweep]                     # one configuration per combination of values
    "embedder.margin" = [0.25, 0.5, 1, 2, 3, 4, 5, 6, 7, 8]

Keys: methods, datasets (string or list), seeds, base_seed, device, results_dir, data_dir,
executor, allow_nonstandard_split, description (free text), schedule ("full" or "reduced"),
[set], [sweep]. An unknown key is
refused with one line naming the file and the key (a typo must not silently run another grid).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from zslbench.errors import ConfigError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

#: The executors ``run`` knows (``--executor``, a config's ``executor``; zslbench.executors).
EXECUTORS = ("local", "ray")

KEYS = {
    "methods": (str, list),
    "datasets": (str, list),
    "seeds": (int,),
    "base_seed": (int,),
    "device": (str,),
    "results_dir": (str,),
    "data_dir": (str,),
    "executor": (str,),
    "allow_nonstandard_split": (bool,),
    "description": (str,),
    "set": (dict,),
    "sweep": (dict,),
    "schedule": (str,),
}
#: ``schedule = "reduced"`` marks every record of the grid as a reduced schedule (fewer epochs
#: than the paper, because the CPU requires it): the leaderboard badges such rows and ranks them
#: only where no full-schedule row competes.
SCHEDULES = ("full", "reduced")


def load_config(path: Path) -> dict[str, Any]:
    """The validated content of a run configuration file."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            raw = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(
            f"--config {path}: no such file", hint="see configs/ for the paper's tables"
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"--config {path}: cannot read it ({exc.strerror})",
            hint="check the path and its permissions",
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"--config {path}: not valid TOML ({exc})", hint="fix the line it names"
        ) from None
    for key, value in raw.items():
        if key not in KEYS:
            raise ConfigError(
                f"--config {path}: unknown key {key!r}", hint=f"valid keys: {', '.join(KEYS)}"
            )
        if isinstance(value, bool) and bool not in KEYS[key]:
            ok = False
        else:
            ok = isinstance(value, KEYS[key])
        if not ok:
            want = " or ".join(t.__name__ for t in KEYS[key])
            raise ConfigError(
                f"--config {path}: {key} = {value!r} must be a {want}",
                hint="see the example at the top of zslbench/config.py",
            )
    for key in ("methods", "datasets"):
        if isinstance(raw.get(key), str):
            raw[key] = [raw[key]]
        if key in raw and not all(isinstance(v, str) for v in raw[key]):
            raise ConfigError(
                f"--config {path}: {key} must list names (strings)",
                hint=f'e.g. {key} = ["bt-gp", "krr"]',
            )
    if "seeds" in raw and raw["seeds"] < 1:
        raise ConfigError(
            f"--config {path}: seeds = {raw['seeds']} must be at least 1 (it is the "
            "number of repetitions; 0 would run nothing)",
            hint="e.g. seeds = 3",
        )
    if "executor" in raw and raw["executor"] not in EXECUTORS:
        raise ConfigError(
            f"--config {path}: executor = {raw['executor']!r} is not an executor",
            hint=f"valid: {', '.join(EXECUTORS)}",
        )
    if "schedule" in raw and raw["schedule"] not in SCHEDULES:
        raise ConfigError(
            f"--config {path}: schedule = {raw['schedule']!r} is not a schedule",
            hint=f"valid: {', '.join(SCHEDULES)}",
        )
    for key, values in raw.get("sweep", {}).items():
        if not isinstance(values, list) or not values:
            raise ConfigError(
                f"--config {path}: sweep {key!r} must be a non-empty list of values",
                hint=f'e.g. "{key}" = [1, 2, 4]',
            )
    return raw
