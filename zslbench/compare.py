"""``zslbench compare``: is the difference between two configurations on a dataset real?

A configuration is named on the command line as a method (its default configuration) or
``METHOD[PARAM=VALUE,...]`` (:class:`ConfigSpec`); :func:`comparison_sides` picks the runs of each
on one data version, and the command tests their difference over seeds
(:func:`zslbench.stats.compare_runs`).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from zslbench.console import RESULTS_DIR, echo
from zslbench.errors import UserError

if TYPE_CHECKING:  # pandas, scipy and the records are imported when the command runs
    import pandas as pd


@dataclass(frozen=True)
class ConfigSpec:
    """A configuration named on the command line: ``bt-gp`` (the method's default configuration)
    or ``bt-gp[embedder.margin=1,gp.optimizer=adam]`` (exactly these ``--set``/``--sweep``
    values, in any order; a component may be named by its role or its name)."""

    text: str
    method: str
    settings: dict[str, Any]

    def matches(self, method: str, settings: dict[str, Any], config: dict[str, Any]) -> bool:
        """Whether a run of ``method`` that set ``settings`` (its ``--set`` and swept values), in
        the resolved configuration ``config``, is this configuration.

        The run set no value that the spec does not name, and each value the spec names is the
        run's: set, or its default for a hyperparameter that was not searched. A value equal to
        an unsearched default runs the default configuration (:func:`zslbench.prepare._effective`
        drops it), so ``bt-gp[embedder.margin=4]`` names bt-gp's default runs; a searched one
        fixed at its default is another configuration, which only a run that set it matches."""
        if method != self.method:
            return False
        comps = config.get("components") or {}
        search = config.get("search") or {}
        mine, theirs = _by_role(self.settings, comps), _by_role(settings, comps)
        if not set(theirs) <= set(mine):
            return False
        for key, value in mine.items():
            if key in theirs:
                if not _same_value(value, theirs[key]):
                    return False
                continue
            role, dot, param = key.partition(".")
            comp = comps.get(role)
            if not isinstance(comp, dict):
                return False
            if not dot:  # role=component: the component the run used
                if comp.get("name") != value:
                    return False
                continue
            params = comp.get("params") or {}
            searched = param if role == "model" else key
            if param not in params or searched in search or not _same_value(params[param], value):
                return False
        return True


def _by_role(settings: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
    """Settings keyed by role: ``bt.margin`` -> ``embedder.margin`` when the run's embedder is bt."""
    roles = {c.get("name"): role for role, c in components.items() if isinstance(c, dict)}
    out = {}
    for key, value in settings.items():
        target, dot, param = key.partition(".")
        out[f"{roles.get(target, target) if target not in components else target}{dot}{param}"] = (
            value
        )
    return out


def _same_value(a: Any, b: Any) -> bool:
    """Equal as hyperparameters: ``1`` and ``1.0`` are one number; ``true`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _split_top(text: str) -> list[str]:
    """``a=1,b=[1,2]`` -> ``["a=1", "b=[1,2]"]``: commas inside brackets or quotes stay."""
    parts, depth, quote, cur = [], 0, "", ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[({":
            depth += 1
        elif ch in "])}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def parse_config_spec(text: str) -> ConfigSpec:
    """``bt-gp`` or ``bt-gp[embedder.margin=1,gp.optimizer=adam]`` -> :class:`ConfigSpec`."""
    from zslbench.request import parse_value  # the values are read as --set reads them

    text = text.strip()
    method, bracket, rest = text.partition("[")
    method = method.strip()
    example = "e.g. 'bt-gp[embedder.margin=1]' (quote it in the shell)"
    if not method or (bracket and not rest.endswith("]")):
        raise UserError(
            f"{text!r} is not a configuration: METHOD or METHOD[PARAM=VALUE,...]", hint=example
        )
    settings: dict[str, Any] = {}
    for item in _split_top(rest[:-1]) if bracket else []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(
                f"{text!r}: {item!r} is not of the form component.param=value or role=component",
                hint=example,
            )
        if key.strip() in settings:  # the last would win silently: say which to keep
            raise UserError(
                f"{text!r}: {key.strip()!r} is given twice",
                hint="give each parameter once, e.g. 'krr[regressor.alpha=5]'",
            )
        settings[key.strip()] = parse_value(value.strip()) if "." in key else value.strip()
    return ConfigSpec(text, method, settings)


def spec_text(method: str, settings: dict[str, Any]) -> str:
    """How to name a run's configuration for ``zslbench compare`` (:func:`parse_config_spec`)."""
    from zslbench.records.rows import value_text

    return method + (
        f"[{','.join(f'{k}={value_text(v)}' for k, v in sorted(settings.items()))}]"
        if settings
        else ""
    )


def run_settings(runs: pd.DataFrame) -> list[dict[str, Any]]:
    """Per run: what it set on top of its method's defaults (``--set`` and swept values)."""
    return [{**o, **w} for o, w in zip(runs["overrides_map"], runs["sweep_map"], strict=True)]


@dataclass(frozen=True)
class Side:
    """One configuration's runs in a comparison: which it is and its values by seed per metric."""

    spec: str
    method: str
    config_id: str
    overrides: str
    device_type: str
    schedule: str
    samples: dict[str, dict[int, float]]
    others: int  # other configurations of the method on the dataset, not compared

    @property
    def seeds(self) -> list[int]:
        return sorted(self.samples["H"])


def _found(sub: pd.DataFrame) -> str:
    """The configurations with records in ``sub``, as they are named, with their run counts."""
    counts = Counter(
        spec_text(method, settings)
        for method, settings in zip(sub["method"], run_settings(sub), strict=True)
    )
    return ", ".join(f"{n} ({c} run(s))" for n, c in sorted(counts.items()))


def comparison_sides(
    runs: pd.DataFrame, spec_a: str, spec_b: str, dataset: str
) -> tuple[Side, Side, str]:
    """The runs of two configurations on one dataset to compare (``zslbench compare``), and the
    data fingerprint they share: runs on a standard split, on the data version both ran most.

    A configuration is a method, which matches its default configuration (no ``--set``, not
    swept), or ``METHOD[PARAM=VALUE,...]``, which matches the runs of exactly these values
    (:meth:`ConfigSpec.matches`: a value equal to an unsearched default names the default runs). Among matching runs, those of one configuration id on one device type
    are compared: the full schedule first, then the one with the most runs."""
    specs = [parse_config_spec(spec_a), parse_config_spec(spec_b)]
    sub = (
        runs[(runs["dataset"] == dataset) & runs["standard"].astype(bool)]
        if not runs.empty
        else runs
    )
    if sub.empty:
        raise UserError(
            f"no records on dataset {dataset!r} (runs on a standard split)",
            hint="check --dataset and --results-dir",
        )
    settings = run_settings(sub)
    picked = [_matching(spec, sub, settings, dataset) for spec in specs]
    shared = set(picked[0]["data_fp"]) & set(picked[1]["data_fp"])
    if not shared:
        raise _never_paired(spec_a, spec_b, specs, picked, dataset)
    import pandas as pd

    counts = pd.concat(picked).groupby("data_fp").size()
    fp = max(sorted(shared), key=lambda f: int(counts.get(f, 0)))
    sides = [_side(spec, runs_of, sub, fp) for spec, runs_of in zip(specs, picked, strict=True)]
    return sides[0], sides[1], fp


def _matching(
    spec: ConfigSpec, sub: pd.DataFrame, settings: list[dict[str, Any]], dataset: str
) -> pd.DataFrame:
    """The runs of ``sub`` that are ``spec``; none is a ``UserError`` naming what there is."""
    mask = [
        spec.matches(m, s, c)
        for m, s, c in zip(sub["method"], settings, sub["config"], strict=True)
    ]
    if any(mask):
        return sub[mask]
    mine = sub[sub["method"] == spec.method]
    if mine.empty:
        raise UserError(
            f"no records of {spec.text!r} on {dataset}",
            hint=f"configurations with records there: {_found(sub)}",
        )
    what = "its default configuration" if not spec.settings else "this configuration"
    raise UserError(
        f"no records of {spec.text!r} ({what}) on {dataset}",
        hint=f"configurations of {spec.method} with records there: {_found(mine)}; name one "
        "as METHOD[PARAM=VALUE,...], quoted",
    )


def _never_paired(
    spec_a: str, spec_b: str, specs: list[ConfigSpec], picked: list[pd.DataFrame], dataset: str
) -> UserError:
    backbones = [sorted(set(side["backbone"]) - {""}) for side in picked]
    if backbones[0] and backbones[1] and not set(backbones[0]) & set(backbones[1]):
        return UserError(
            f"{spec_a} ran on backbone {', '.join(backbones[0])} and {spec_b} on backbone "
            f"{', '.join(backbones[1])} ({dataset}): runs on different backbones are never paired",
            hint=f"run both on one feature set (zslbench run --method "
            f"{specs[0].method},{specs[1].method} --dataset {dataset})",
        )
    return UserError(
        f"{spec_a} and {spec_b} never ran on the same version of {dataset} (data fingerprints "
        "differ), so their numbers are not comparable",
        hint="re-run both on the same data (zslbench run ... --dataset " + dataset + ")",
    )


def _side(spec: ConfigSpec, runs_of: pd.DataFrame, sub: pd.DataFrame, fp: str) -> Side:
    """One side of a comparison: the full schedule first, then the configuration with most runs."""
    from zslbench.records.results import samples_by_seed
    from zslbench.records.schema import metric_names

    mine = runs_of[runs_of["data_fp"] == fp]
    configs = list(mine.groupby(["config_id", "device_type", "schedule"], sort=True))
    (cid, device, schedule), group = max(
        configs, key=lambda kv: (kv[0][2] == "", len(kv[1]), max(kv[1]["finished_at"]))
    )
    of_method = sub[(sub["method"] == spec.method) & (sub["data_fp"] == fp)]
    n_configs = len(of_method.groupby(["config_id", "device_type", "schedule"]))
    overrides = ", ".join(x for x in (group["overrides"].iloc[0], group["sweep"].iloc[0]) if x)
    return Side(
        spec.text,
        spec.method,
        cid,
        overrides,
        device,
        schedule,
        {m: samples_by_seed(group, m) for m in metric_names(tested=True)},
        n_configs - 1,
    )


def _num(value: float, sign: bool = False) -> str:
    return "–" if not math.isfinite(value) else (f"{value:+.2f}" if sign else f"{value:.2f}")


@click.command("compare")
@click.argument("method_a", metavar="CONFIG_A")
@click.argument("method_b", metavar="CONFIG_B")
@click.option("-d", "--dataset", required=True, help="The dataset both methods ran on.")
@RESULTS_DIR
def compare(method_a: str, method_b: str, dataset: str, results_dir: Path) -> None:
    """Is CONFIG_A really better than CONFIG_B on a dataset? The mean difference A - B of H, A_T
    and AUSUC over seeds, with its 95% confidence interval and the two-sided p-value of a t-test:
    paired by seed when both ran the same seeds, Welch's test when the seeds do not pair up.

    \b
    A configuration is a method (its default configuration: no --set, not swept) or
    METHOD[PARAM=VALUE,...] (the runs that set exactly these --set or --sweep values), e.g.
      zslbench compare 'bt-gp[embedder.margin=1]' 'bt-gp[embedder.margin=4]' --dataset toy
    When nothing matches, it lists the configurations with records there."""
    from zslbench import stats
    from zslbench.records.results import newest_runs
    from zslbench.records.schema import metric_names

    kept, _, refused = newest_runs(results_dir, link_base=results_dir)
    for path, reason in refused:
        echo(f"warning: {path}: skipped, not a valid zslbench record: {reason}", err=True)
    a, b, fp = comparison_sides(kept, method_a, method_b, dataset)
    echo(
        f"{method_a} vs {method_b} on {dataset} (data {fp[:8]}; records in {results_dir.as_posix()})"
    )
    for side in (a, b):
        echo(_side_line(side))
    tested = metric_names(tested=True)
    diffs = {m: stats.compare_runs(a.samples[m], b.samples[m]) for m in tested}
    test = next((d.test for d in diffs.values() if d is not None), "no test possible")
    echo(f"  seeds: {stats.pairing(a.samples['H'], b.samples['H'])[1]}; {test}")
    width = max(len(method_a), len(method_b), 14) + 13
    echo(
        f"  {'metric':<7} {method_a + ' (mean ± std)':>{width}} {method_b + ' (mean ± std)':>{width}} "
        f"{'A - B':>7} {'95% CI':>17} {'p':>8}"
    )
    seeds, _ = stats.pairing(a.samples["H"], b.samples["H"])
    if seeds and len(seeds) < max(len(a.seeds), len(b.seeds)):
        echo(f"  means over the {len(seeds)} paired seeds, as A - B")
    for m in tested:
        echo(_metric_line(m, a.samples[m], b.samples[m], diffs[m], width))
    h = diffs["H"]
    if h is not None:
        echo(
            f"  {'a' if h.p < stats.ALPHA else 'no'} significant difference in H at α = {stats.ALPHA} "
            "(two-sided; one comparison, so no multiplicity correction)"
        )


def _side_line(side: Any) -> str:
    extra = [f"overrides {side.overrides}"] if side.overrides else []
    extra += [side.schedule] if side.schedule else []
    extra += [f"{side.others} other configuration(s) not compared"] if side.others else []
    return (
        f"  {side.spec}: config {side.config_id[:8]} on {side.device_type}, {len(side.seeds)} run(s), "
        f"seeds {', '.join(map(str, side.seeds))}" + (f" ({'; '.join(extra)})" if extra else "")
    )


def _metric_line(m: str, a: Any, b: Any, d: Any, width: int) -> str:
    from zslbench import stats

    ia, ib = (stats.t_interval(values) for values in stats.compared_values(a, b))
    if d is None:
        tail = f"{_num(ia.mean - ib.mean, sign=True):>7} {'–':>17} {'–':>8}  (too few runs to test)"
    else:
        tail = f"{_num(d.mean, sign=True):>7} {f'[{_num(d.low, sign=True)}, {_num(d.high, sign=True)}]':>17} {d.p:>8.4f}"
    return (
        f"  {m:<7} {f'{_num(ia.mean)} ± {_num(ia.std)}':>{width}} {f'{_num(ib.mean)} ± {_num(ib.std)}':>{width}} "
        f"{tail}"
    )
