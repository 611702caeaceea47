"""Numbers never change silently: every built-in method's metrics on ``toy``, pinned.

``tests/golden/toy.json`` holds, for every method the built-in plugins register, the metrics
(A_T, A_U, A_S, H, AUSUC) and the calibrated gamma of one run on ``toy`` (seed 0) with the small
settings in :data:`SETTINGS` (fewer epochs and episodes, and the slow methods' searched values
fixed; the numbers still go through every component, the search of the methods that keep one,
calibration and the metrics).

How exact, as chosen:

- **On an environment the file holds: exact.** A float can change with the CPU's instruction
  set, the BLAS library and kernel, the thread count and the numpy/scipy/torch versions
  (:func:`environment`). The file keeps the numbers of every environment it was made or checked
  on (``environments``; the first is the reference), and on any of them every value must be equal
  to the last bit.
- **Elsewhere: a band per method.** Some methods train by many small steps (Adam on a network or
  on GP hyperparameters), and there a different rounding in one product grows into another
  trajectory: t-gp's A_S moved 2.8 points between an AMD and an Intel CPU with the same wheels.
  No fixed tolerance holds across machines for them and still means something. So a method that
  is stable on every environment the file holds (:data:`STABLE_MOVE`) is compared within
  :data:`STABLE_TOLERANCE` points (and gamma within a relative 1e-3); a method that is not is
  compared within :data:`BAND_SDS` standard deviations of its training noise, never less than
  :data:`STABLE_TOLERANCE`. The training noise is the spread over the model's own random draws
  (initialisation, batches: ``model_seed`` :data:`SPREAD_SEEDS`) with the split fixed, on the
  reference environment, stored as ``spread`` for these methods only: a trajectory that diverged
  through rounding is another draw of the same kind. (The spread over whole run seeds would also
  vary the validation split, and be several times wider.) Such a band still fails on a change that
  moves a number by more than the method's training noise; a smaller change is caught on every
  environment the file holds.
- **A GPU** is one more environment: ``tests/test_gpu.py`` compares ``--device cuda`` with the
  reference through the same bands.

Commands:

- ``pytest tests/test_golden.py --update-golden``: an intended change. Re-writes the file from this
  machine alone and drops every other environment, whose numbers the change made stale: seed 0 with
  this machine's threads and with one thread (two environments; a method whose numbers differ
  between them is float-sensitive), and the spread seeds of the float-sensitive methods. Say why
  in ``CHANGES.md``, in the same commit.
- ``pytest tests/test_golden.py --remake-golden-method NAME``: an intended change to one method
  (NAME, or several, comma-separated), made where the reference environment cannot be re-made
  (another CPU). NAME's numbers leave every stored environment; this machine's (its threads and
  one thread, and its spread when float-sensitive) are stored in this machine's environment, which
  becomes NAME's reference: a method's reference is the first environment that holds it. The other
  methods' numbers stay as they are. Say why in ``CHANGES.md``, in the same commit.
- ``pytest tests/test_golden.py --add-golden-environment``: this machine's numbers join the file,
  so that it is compared exactly from then on. Refused when they are outside the bands. On an
  environment the file holds already, it adds the methods that environment lacks (a method added
  since it was made), leaving every stored number as it is.

Each method is its own test (``pytest -n`` spreads them over its workers); the update and add
commands write the file once every method's test has run, and passed when adding, in one process:
run them without ``-n`` and ``-k``. ``--remake-golden-method`` needs only the named methods to
have run in the process (``-k NAME`` is enough; still no ``-n``).

A stored environment made before a method existed (one that cannot be re-made, such as another
CPU) holds no numbers of that method: there it is exact for the methods it holds, and the method
it lacks is compared within the bands, as on an environment the file does not hold. The bands of a
method are centred on its reference, the first environment that holds it (the first of the file
for every method, except one re-made with ``--remake-golden-method``); every built-in method has
one.
"""

from __future__ import annotations

import json
import math
import platform
import statistics
from pathlib import Path
from typing import Any

import pytest

from zslbench.prepare import prepare_method
from zslbench.protocol import run_protocol
from zslbench.registry import load_registry
from zslbench.request import parse_overrides

GOLDEN = Path(__file__).parent / "golden" / "toy.json"
SEED = 0
SPREAD_SEEDS = (0, 1, 2, 3, 4)
METRICS = ("A_T", "A_U", "A_S", "H", "AUSUC")
STABLE_TOLERANCE = 0.05
BAND_SDS = 3.0
#: A method whose metrics moved at most this much (points) between the stored environments is
#: stable: rounding in a computation that does not amplify it (bt-gp's AUSUC moved 4e-4 with
#: torch's default, non-SIMD kernels). A trajectory that diverged moves by a sizeable part of its
#: seed spread (t-gp: 2.8 points of A_S). Gamma is left out of that test: it is a float32
#: threshold chosen on validation scores, and its last bits move (~2e-5 seen) where every metric
#: is identical.
STABLE_MOVE = STABLE_TOLERANCE / 2

#: Small settings per method (``--set`` syntax); methods not listed run at their defaults.
SETTINGS: dict[str, list[str]] = {
    "bt-gp": ["embedder.episodes=40"],
    "bt-krr": ["embedder.episodes=40"],
    "t-gp": ["embedder.episodes=40"],
    "f-clswgan": [
        "generator.ngh=128",
        "generator.ndh=128",
        "generator.nepoch=2",
        "generator.pretrain_epochs=2",
        "model.syn_num=50",
        "model.classifier_epochs=3",
    ],
    "tf-vaegan": [
        "generator.hidden=128",
        "generator.ngh=128",
        "generator.ndh=128",
        "generator.nepoch=2",
        "model.syn_num=50",
        "model.classifier_epochs=3",
    ],
    "free": [
        "generator.hidden=128",
        "generator.ngh=128",
        "generator.ndh=128",
        "generator.nepoch=2",
        "model.syn_num=50",
        "model.classifier_epochs=3",
    ],
    "ce-gzsl": [
        "generator.ngh=128",
        "generator.ndh=128",
        "generator.embed_size=128",
        "generator.nhF=64",
        "generator.nepoch=5",
        "model.syn_num=50",
        "model.classifier_epochs=3",
    ],
    "cada-vae": [
        "generator.image_encoder_hidden=128",
        "generator.image_decoder_hidden=128",
        "generator.attribute_encoder_hidden=128",
        "generator.attribute_decoder_hidden=128",
        "generator.epochs=3",
        "model.classifier_epochs=3",
    ],
    "hsva": [
        "generator.encoder_hidden=128",
        "generator.decoder_hidden=128",
        "generator.coarse_size=128",
        "generator.latent_hidden=128",
        "generator.epochs=3",
        "model.classifier_epochs=3",
    ],
    "sdgzsl": [
        "generator.hidden=128",
        "generator.s_dim=64",
        "generator.ns_dim=64",
        "generator.nepoch=3",
        "model.syn_num=50",
        "model.classifier_epochs=3",
    ],
}


def environment() -> dict[str, Any]:
    """What can change the last bits of a float on a CPU: the exact comparison needs all equal."""
    import numpy
    import scipy
    import torch

    from zslbench.provenance import cpu_name

    blas = []
    try:
        import threadpoolctl

        blas = sorted(
            f"{i.get('internal_api')}/{i.get('architecture')}/{i.get('num_threads')}"
            for i in threadpoolctl.threadpool_info()
        )
    except ImportError:  # pragma: no cover - threadpoolctl comes with the dependencies
        pass
    return {
        "cpu": cpu_name(),
        "machine": platform.machine(),
        "blas": blas,
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch_threads": torch.get_num_threads(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "torch": torch.__version__,
    }


def compute(
    seed: int = SEED,
    device: str = "cpu",
    methods: list[str] | None = None,
    model_seed: int | None = None,
) -> dict[str, dict[str, float]]:
    """Every built-in method's numbers on toy at ``seed`` (or only ``methods``); ``model_seed``
    replaces the seed of the model's own draws (initialisation, batches) and keeps the split's."""
    reg = load_registry()
    data = reg.get("dataset", "toy").obj.load(None)
    builtin = sorted(
        p.name for p in reg.items["method"].values() if reg.plugins.get(p.plugin) == "zslbench"
    )
    out = {}
    for name in methods if methods is not None else builtin:
        prep = prepare_method(reg, name, parse_overrides(SETTINGS.get(name, [])))
        method = prep.instantiate(seed=seed if model_seed is None else model_seed, device=device)
        result = run_protocol(data, method, seed, device)
        out[name] = {
            **{k: float(result.evaluation[k]) for k in METRICS},
            "gamma": float(result.gamma),
        }
    return out


def builtin_methods() -> list[str]:
    reg = load_registry()
    return sorted(
        p.name for p in reg.items["method"].values() if reg.plugins.get(p.plugin) == "zslbench"
    )


# -- the comparison (pure: tests/test_golden.py tests it on made-up files) ---------------------


def matching_environment(golden: dict[str, Any], env: dict[str, Any]) -> dict[str, Any] | None:
    """The stored environment ``env`` is, if any: every key the stored one has is equal (an
    entry written before a key was added still matches on the keys it has)."""
    for entry in golden["environments"]:
        if all(env.get(k) == v for k, v in entry["environment"].items()):
            return entry
    return None


def references(golden: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Each method's reference numbers: those of the first environment that holds it."""
    out: dict[str, dict[str, float]] = {}
    for entry in golden["environments"]:
        for method, values in entry["methods"].items():
            out.setdefault(method, values)
    return out


def reproducibility(golden: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per method: bit-identical on every stored environment or not, stable (every metric within
    :data:`STABLE_MOVE`) or float-sensitive, and how far its values moved between them (the
    largest difference from its reference, per key)."""
    envs = golden["environments"]
    out = {}
    for method, values in references(golden).items():
        holding = [e for e in envs if method in e["methods"]]  # made after the method existed
        moved = {
            k: max(abs(e["methods"][method][k] - v) for e in holding) for k, v in values.items()
        }
        out[method] = {
            "bit_identical": all(m == 0.0 for m in moved.values()),
            "stable": all(m <= STABLE_MOVE for k, m in moved.items() if k != "gamma"),
            "environments": len(holding),
            "moved": moved,
        }
    return out


def band(golden: dict[str, Any], method: str, key: str) -> float:
    """How far ``key`` of ``method`` may move on an environment the file does not hold: from its
    training noise when the file keeps one (a float-sensitive method), else the fixed tolerance."""
    if method not in golden["spread"]:
        ref = references(golden)[method][key]
        return abs(ref) * 1e-3 if key == "gamma" else STABLE_TOLERANCE
    values = golden["spread"][method][key]
    return max(STABLE_TOLERANCE, BAND_SDS * statistics.stdev(values))


def differences(
    golden: dict[str, Any], got: dict[str, dict[str, float]], env: dict[str, Any]
) -> tuple[str, list[str]]:
    """(how it compared, one line per value out of bounds) for ``got`` made on ``env``: exact
    for the methods a stored ``env`` holds, within the bands around the reference for the rest
    (all of them on an environment the file does not hold)."""
    entry = matching_environment(golden, env)
    reference = references(golden)
    held = entry["methods"] if entry is not None else {}
    if sorted(got) != sorted(reference) or not set(held) <= set(got):
        return "methods", [f"methods changed: {sorted(reference)} -> {sorted(got)}"]
    out = []
    for method, values in got.items():
        for key, value in values.items():
            if method in held:
                want = held[method][key]
                if value != want:
                    out.append(f"{method} {key}: {want!r} -> {value!r} (exact: same environment)")
                continue
            want = reference[method][key]
            if not abs(value - want) <= band(golden, method, key):
                out.append(
                    f"{method} {key}: {want!r} -> {value!r} (band ±{band(golden, method, key):.3g})"
                )
    if entry is None:
        how = f"within per-method bands: this environment {json.dumps(env)} is not in the file"
    else:
        how = "exact, on the stored environment " + json.dumps(entry["environment"])
        lacking = sorted(set(got) - set(held))
        if lacking:
            how += f" (within bands for {', '.join(lacking)}: made before they existed)"
    return how, out


def _write(body: dict[str, Any]) -> None:
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n")


def _one_thread_numbers(
    methods: list[str] | None = None,
) -> tuple[dict[str, Any], dict[str, dict[str, float]]]:
    """This machine's environment and numbers (of ``methods``, default all) with one thread
    (torch, BLAS and OpenMP)."""
    import threadpoolctl
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpoolctl.threadpool_limits(1):
            return environment(), compute(methods=methods)
    finally:
        torch.set_num_threads(before)


def seed_spread(
    got: dict[str, dict[str, float]], sensitive: list[str]
) -> dict[str, dict[str, list[float]]]:
    """The numbers of the ``sensitive`` methods over :data:`SPREAD_SEEDS` of the model's own
    draws (seed 0's are ``got``'s), the split fixed: their training noise."""
    spread = {m: {k: [v] for k, v in got[m].items()} for m in sensitive}
    for seed in SPREAD_SEEDS[1:]:
        for m, values in (
            compute(SEED, methods=sensitive, model_seed=seed) if sensitive else {}
        ).items():
            for k, v in values.items():
                spread[m][k].append(v)
    return spread


def update_golden(got: dict[str, dict[str, float]], env: dict[str, Any]) -> dict[str, Any]:
    """The file made anew on this machine: its numbers, the same with one thread (a second
    environment, and the test of which methods are float-sensitive: a method whose numbers move
    with the thread count gets a band from its seed spread), and that spread."""
    environments = [{"environment": env, "methods": got}]
    env1, got1 = _one_thread_numbers()
    if env1 != env:
        environments.append({"environment": env1, "methods": got1})
    body: dict[str, Any] = {
        "about": "tests/test_golden.py: --update-golden (and a CHANGES.md line), or "
        "--add-golden-environment",
        "seed": SEED,
        "settings": SETTINGS,
        "spread_seeds": list(SPREAD_SEEDS),
        "spread": {},
        "environments": environments,
    }
    # Float-sensitive: moved with the thread count here, or known to be from the file it replaces
    # (ALE moved only with AVX2 kernels, which this machine may not show).
    before = json.loads(GOLDEN.read_text()).get("spread", {}) if GOLDEN.exists() else {}
    sensitive = sorted(
        {m for m, row in reproducibility(body).items() if not row["stable"]}
        | (set(before) & set(got))
    )
    body["spread"] = seed_spread(got, sensitive)
    return body


def remade(
    golden: dict[str, Any],
    runs: list[tuple[dict[str, Any], dict[str, dict[str, float]]]],
    spread: dict[str, dict[str, list[float]]],
) -> dict[str, Any]:
    """``golden`` with the methods of ``runs`` (``(environment, numbers)`` pairs of this machine)
    re-made: gone from every stored environment (an environment left empty goes too) and from the
    spread, then stored in ``runs``' environments, with ``spread`` for the float-sensitive ones.
    Every other method's numbers stay as they are."""
    methods = {m for _, got in runs for m in got}
    environments = [
        {**e, "methods": {m: v for m, v in e["methods"].items() if m not in methods}}
        for e in golden["environments"]
    ]
    out = {
        **golden,
        "environments": [e for e in environments if e["methods"]],
        "spread": {
            **{m: v for m, v in golden["spread"].items() if m not in methods},
            **spread,
        },
    }
    for env, got in runs:
        entry = matching_environment(out, env)
        if entry is None:
            entry = {"environment": env, "methods": {}}
            out["environments"].append(entry)
        entry["methods"].update(got)
    return out


def remake_golden(golden: dict[str, Any], got: dict[str, dict[str, float]]) -> dict[str, Any]:
    """:func:`remade` with this machine's numbers of the methods of ``got``: its threads and one
    thread, and their spread over :data:`SPREAD_SEEDS` for a method that moved with the thread
    count or was float-sensitive before."""
    methods = sorted(got)
    env1, got1 = _one_thread_numbers(methods)
    runs = [(environment(), got)] + ([(env1, got1)] if env1 != environment() else [])
    sensitive = [
        m
        for m in methods
        if m in golden["spread"] or any(abs(got[m][k] - got1[m][k]) > STABLE_MOVE for k in METRICS)
    ]
    return remade(golden, runs, seed_spread(got, sensitive))


def only(golden: dict[str, Any], method: str) -> dict[str, Any]:
    """``golden`` with every environment and the spread cut down to ``method``: what
    :func:`differences` compares one method's numbers with (the same values, the same bands)."""
    return {
        **golden,
        "environments": [
            {**e, "methods": {m: v for m, v in e["methods"].items() if m == method}}
            for e in golden["environments"]
        ],
        "spread": {m: v for m, v in golden["spread"].items() if m == method},
    }


class GoldenRun:
    """Every method's numbers of this session, for ``--update-golden`` and
    ``--add-golden-environment``, which write the file once every method has run (and, when adding,
    passed its comparison)."""

    def __init__(self, config: pytest.Config) -> None:
        self.update = bool(config.getoption("--update-golden"))
        self.adding = bool(config.getoption("--add-golden-environment"))
        names = config.getoption("--remake-golden-method") or ""
        self.remaking = sorted(filter(None, (n.strip() for n in names.split(","))))
        self.got: dict[str, dict[str, float]] = {}

    def write(self) -> None:
        """The file re-made (``--update-golden``) or with this environment added, from every
        method's numbers; refused when some method did not run or did not pass here."""
        if self.remaking:
            missing = sorted(set(self.remaking) - set(self.got))
            if missing:
                pytest.fail(
                    f"--remake-golden-method: not written, {', '.join(missing)} did not run",
                    pytrace=False,
                )
            got = {m: self.got[m] for m in self.remaking}
            _write(remake_golden(json.loads(GOLDEN.read_text()), got))
            return
        if not (self.update or self.adding) or not self.got:
            return
        option = "--update-golden" if self.update else "--add-golden-environment"
        missing = sorted(set(builtin_methods()) - set(self.got))
        if missing:
            pytest.fail(
                f"{option}: not written, {', '.join(missing)} did not run or did not pass in this "
                f"process: run pytest {__file__} {option} (no -n, no -k)",
                pytrace=False,
            )
        got = {m: self.got[m] for m in sorted(self.got)}
        env = environment()
        if self.update:
            _write(update_golden(got, env))
            return
        golden = json.loads(GOLDEN.read_text())
        reference = golden["environments"][0]
        if matching_environment(golden, env) is reference:  # the reference adds a new method
            reference["methods"].update(
                {m: v for m, v in got.items() if m not in reference["methods"]}
            )
        entry = matching_environment(golden, env)
        if entry is None:
            golden["environments"].append({"environment": env, "methods": got})
        else:  # the methods it lacks join it; its stored numbers stay as they are
            entry["methods"].update({m: v for m, v in got.items() if m not in entry["methods"]})
        _write(golden)


@pytest.fixture
def threads_per_worker():
    """Overrides tests/conftest.py's: the numbers are compared exactly on an environment the file
    holds, and its thread count is part of one (this machine's default count is stored, the
    single-thread count not on every machine), so the golden runs keep the default threads."""
    yield


@pytest.fixture(scope="session")
def golden_run(request: pytest.FixtureRequest):
    """Collects each method's numbers; writes the file at the end of the session when asked."""
    run = GoldenRun(request.config)
    yield run
    run.write()


@pytest.mark.parametrize("method", builtin_methods())
def test_builtin_method_on_toy_matches_the_golden_file(method: str, golden_run: GoldenRun):
    """One method per test (so that pytest -n spreads them), each compared exactly as the whole
    file is: :func:`differences` on the file cut down to the method (:func:`only`) compares the
    same values with the same bands. That the file holds every built-in method, and no other, is
    :func:`test_the_committed_file_knows_every_builtin_method_and_the_noise_of_the_sensitive_ones`.
    """
    got = compute(methods=[method])
    env = environment()
    if golden_run.update or method in golden_run.remaking:
        golden_run.got.update(got)
        return
    assert GOLDEN.exists(), f"{GOLDEN} is missing: run pytest {__file__} --update-golden"
    golden = only(json.loads(GOLDEN.read_text()), method)
    assert golden["settings"] == SETTINGS, "SETTINGS changed: --update-golden, and CHANGES.md"
    reference = golden["environments"][0]
    if golden_run.adding and matching_environment(golden, env) is reference:
        # the reference adds a new method (no band to compare it with yet): the rest is exact
        reference["methods"].update({m: v for m, v in got.items() if m not in reference["methods"]})
    how, diffs = differences(golden, got, env)
    assert not diffs, (
        "numbers changed (compared "
        + how
        + "):\n  "
        + "\n  ".join(diffs)
        + "\nIf intended: pytest tests/test_golden.py --update-golden, and a "
        "CHANGES.md section"
    )
    golden_run.got.update(got)


# -- the comparison itself fails where it should ------------------------------------------------


def _made_up() -> dict[str, Any]:
    ref = {"closed": {"H": 30.0, "gamma": 0.5}, "trained": {"H": 20.0, "gamma": 1.0}}
    other = {"closed": {"H": 30.001, "gamma": 0.5 + 1e-16}, "trained": {"H": 19.0, "gamma": 1.2}}
    return {
        "environments": [
            {"environment": {"cpu": "A", "threads": 2}, "methods": ref},
            {"environment": {"cpu": "B", "threads": 2}, "methods": other},
        ],
        "spread": {"trained": {"H": [20.0, 21.0, 19.0, 20.5, 19.5], "gamma": [1.0] * 5}},
    }


def test_on_a_stored_environment_any_change_fails():
    golden = _made_up()
    got = json.loads(json.dumps(golden["environments"][1]["methods"]))
    assert differences(golden, got, {"cpu": "B", "threads": 2, "new_key": 1})[1] == []
    got["closed"]["H"] = 30.001 + 1e-12
    how, diffs = differences(golden, got, {"cpu": "B", "threads": 2})
    assert how.startswith("exact") and diffs == [
        "closed H: 30.001 -> 30.001000000001 (exact: same environment)"
    ]


def test_elsewhere_a_bit_identical_method_keeps_its_tight_tolerance_and_a_trained_one_its_band():
    golden = _made_up()
    rep = reproducibility(golden)
    assert rep["closed"]["stable"] and not rep["closed"]["bit_identical"]  # rounding only
    assert not rep["trained"]["stable"] and not rep["trained"]["bit_identical"]
    assert rep["trained"]["moved"] == {"H": 1.0, "gamma": pytest.approx(0.2)}
    sd = statistics.stdev([20.0, 21.0, 19.0, 20.5, 19.5])
    assert band(golden, "trained", "H") == pytest.approx(BAND_SDS * sd)
    assert band(golden, "trained", "gamma") == STABLE_TOLERANCE  # no spread: the floor
    assert band(golden, "closed", "H") == STABLE_TOLERANCE
    new = {"cpu": "C", "threads": 1}
    within = {
        "closed": {"H": 30.04, "gamma": 0.5004},
        "trained": {"H": 20.0 - BAND_SDS * sd * 0.99, "gamma": 1.04},
    }
    assert differences(golden, within, new)[1] == []
    beyond = {
        "closed": {"H": 30.06, "gamma": 0.5},
        "trained": {"H": 20.0 + BAND_SDS * sd * 1.01, "gamma": 1.0},
    }
    assert [d.split(":")[0] for d in differences(golden, beyond, new)[1]] == [
        "closed H",
        "trained H",
    ]


def test_the_committed_file_knows_every_builtin_method_and_the_noise_of_the_sensitive_ones():
    golden = json.loads(GOLDEN.read_text())
    methods = builtin_methods()
    assert sorted(references(golden)) == methods, "some method has no reference"
    for entry in golden["environments"][1:]:  # made before a method existed: a subset
        assert set(entry["methods"]) <= set(methods), entry["environment"]
    moved = sorted(m for m, row in reproducibility(golden).items() if not row["stable"])
    assert set(moved) <= set(golden["spread"]), "a method that moved needs its training noise"
    for method in golden["spread"]:
        assert sorted(golden["spread"][method]) == sorted([*METRICS, "gamma"])
        assert all(len(v) == len(SPREAD_SEEDS) for v in golden["spread"][method].values())
        ref = references(golden)[method]
        assert {k: v[0] for k, v in golden["spread"][method].items()} == ref  # seed 0 is the ref
    reference = references(golden)
    for entry in golden["environments"][1:]:  # every environment passes the reference's bands
        got = {**reference, **entry["methods"]}
        assert differences(golden, got, {"cpu": "not stored"})[1] == []


def test_a_stored_environment_made_before_a_method_is_exact_for_the_rest_and_bands_that_one():
    golden = _made_up()
    del golden["environments"][1]["methods"]["trained"]  # "B" was stored before "trained" existed
    sd = statistics.stdev([20.0, 21.0, 19.0, 20.5, 19.5])
    b = {"cpu": "B", "threads": 2}
    got = {
        "closed": {"H": 30.001, "gamma": 0.5 + 1e-16},
        "trained": {"H": 20.0 + BAND_SDS * sd * 0.99, "gamma": 1.0},
    }
    how, diffs = differences(golden, got, b)
    assert diffs == [] and how.startswith("exact") and "within bands for trained" in how
    assert reproducibility(golden)["trained"]["environments"] == 1
    got["closed"]["H"] += 1e-12  # exact for the method it holds
    got["trained"]["H"] = 20.0 + BAND_SDS * sd * 1.01  # the band for the one it lacks
    assert [d.split(" (")[1] for d in differences(golden, got, b)[1]] == [
        "exact: same environment)",
        f"band ±{BAND_SDS * sd:.3g})",
    ]
    del golden["environments"][0]["methods"]["trained"]  # the reference must hold every method
    assert differences(golden, got, b)[0] == "methods"


def test_a_nan_is_never_within_a_band():
    golden = _made_up()
    got = {"closed": {"H": math.nan, "gamma": 0.5}, "trained": {"H": 20.0, "gamma": 1.0}}
    assert [d.split(":")[0] for d in differences(golden, got, {"cpu": "Z"})[1]] == ["closed H"]


def test_a_remade_method_leaves_every_environment_and_is_exact_and_centred_on_its_new_one():
    golden = _made_up()
    c = {"cpu": "C", "threads": 2}
    new = {"trained": {"H": 25.0, "gamma": 2.0}}
    spread = {"trained": {"H": [25.0, 26.0, 24.0, 25.5, 24.5], "gamma": [2.0] * 5}}
    out = remade(golden, [(c, new)], spread)
    assert [sorted(e["methods"]) for e in out["environments"]] == [
        ["closed"],
        ["closed"],
        ["trained"],
    ]
    assert references(out) == {"closed": golden["environments"][0]["methods"]["closed"], **new}
    assert out["spread"] == spread and golden["spread"]["trained"]["H"][0] == 20.0  # not mutated
    closed_b = golden["environments"][1]["methods"]["closed"]
    got = {"closed": dict(closed_b), "trained": {"H": 25.0, "gamma": 2.0}}
    assert differences(out, got, c)[1] == []  # exact on C for trained
    got["trained"]["H"] = 25.0 + 1e-12
    assert differences(out, got, c)[1] == [
        "trained H: 25.0 -> 25.000000000001 (exact: same environment)"
    ]
    how, diffs = differences(
        out, {"closed": closed_b, "trained": {"H": 24.0, "gamma": 2.0}}, {"cpu": "B", "threads": 2}
    )
    assert (
        diffs == [] and "within bands for trained" in how
    )  # B: exact for closed, band for trained
    far = {"closed": closed_b, "trained": {"H": 20.0, "gamma": 2.0}}  # the old centre: out of band
    assert [d.split(":")[0] for d in differences(out, far, {"cpu": "B", "threads": 2})[1]] == [
        "trained H"
    ]
