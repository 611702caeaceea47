"""What identifies a run, per component, so that only the runs an edit can change are re-run.

A run's key (:func:`run_key`) hashes its :func:`run_identity`:

- ``config_id``: the resolved configuration (method, component of every role, hyperparameters);
- ``data``: the dataset's fingerprint (its bytes, as :mod:`zslbench.data.checks` hashes them);
- ``seed`` and ``device_type`` (``cpu`` or ``cuda``);
- ``components``: per role, a digest of the source of the module that defines the component,
  and of every module it imports, transitively, from its own plugin package (``zslbench_plugins``
  for the built-ins, ``mypkg`` for a third party's ``mypkg.models``). The digest is taken from the
  AST with docstrings removed, so comments, docstrings and formatting never re-run anything;
- ``protocol``: :data:`PROTOCOL_VERSION`, which stands for the core numerics shared by every run
  (:data:`PROTOCOL_MODULES`: protocol, search, calibration and scoring, metrics, data checks, and
  :func:`derive_seed`). The core is not hashed into the key: that would re-run the whole board
  for a refactoring. Instead ``tests/test_identity.py`` pins the AST digest of those modules and
  fails, telling the editor to bump the version, whenever they change; bump it when the change
  can move a number, and only re-pin the digest when it cannot.

Editing the leaderboard, the CLI, the README, the tests, or another method's plugin therefore
leaves a run cached. Records keep this identity (``Record.identity``), so that a run that is not
taken from the cache can say why (:func:`difference`); the git commit stays in the record for
provenance, but does not decide caching.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import inspect
import json
import sys
from collections.abc import Iterable, Mapping
from typing import Any

#: Bump when a change to :data:`PROTOCOL_MODULES` or :func:`derive_seed` can change a number; every
#: record made under another version is re-run ("protocol changed").
#: Version 2: seeds do not depend on the method (hash of base seed, dataset, repetition; under
#: version 1 they did), and the ``refine`` search climbs until no full-resolution neighbour is
#: better (under version 1 it stopped after one step).
PROTOCOL_VERSION = 2

#: The core numerics every run shares; ``tests/test_identity.py`` pins their digest.
PROTOCOL_MODULES = (
    "zslbench.protocol",
    "zslbench.search",
    "zslbench.metrics",
    "zslbench.classifier",
    "zslbench.model",
    "zslbench.data.checks",
    "zslbench.data.fingerprints",
    "zslbench.data.splits",
)

#: Packages whose imports are followed from a component's module (besides its own top package).
PLUGIN_PACKAGES = ("zslbench_plugins",)


def derive_seed(base_seed: int, dataset: str, repetition: int) -> int:
    """A 31-bit seed from (base seed, dataset, repetition), as benchopt derives them.

    The method is deliberately not hashed: every method gets the same seeds on a dataset, so adding
    a method never changes another's seeds, and two methods' runs pair up by seed for the paired
    tests of :mod:`zslbench.stats`.
    """
    text = f"{base_seed}|{dataset}|{repetition}".encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:4], "big") & 0x7FFFFFFF


# -- source digests -----------------------------------------------------------------------------
def read_source(module_name: str) -> str | None:
    """The source of an importable module (None when it has none, e.g. a compiled extension).

    Tests replace this function to simulate an edit without touching the repository."""
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None) if module is not None else None
    if path is None:
        try:
            spec = importlib.util.find_spec(module_name)
        except (ImportError, ValueError):
            return None
        path = spec.origin if spec is not None else None
    if not path or not str(path).endswith(".py"):
        return None
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]
    return tree


def canonical_dump(node: object) -> str:
    """The AST as text, the same on every Python from 3.10 to 3.13: each node as
    ``Type(field=value, ...)`` in its fields' order, leaving out every field that is ``None`` or
    an empty list, and the empty string parts of an f-string.

    ``ast.dump`` itself differs by version: 3.12 adds ``type_params=[]`` to functions and
    classes, 3.13 drops empty fields, and 3.12's f-string parser (PEP 701) keeps empty string
    parts that 3.10 and 3.11 drop. Leaving out what is empty erases all three differences
    without a per-version table; nothing is lost, since an empty field is the same as an absent
    one (``return`` is ``Return()``, ``return None`` is ``Return(value=Constant())``)."""
    if isinstance(node, ast.AST):
        args = []
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(node, ast.JoinedStr) and name == "values" and value is not None:
                value = [v for v in value if not (isinstance(v, ast.Constant) and v.value == "")]
            if value is None or value == []:
                continue
            args.append(f"{name}={canonical_dump(value)}")
        return f"{type(node).__name__}({', '.join(args)})"
    if isinstance(node, list):
        return "[" + ", ".join(canonical_dump(item) for item in node) + "]"
    return repr(node)


@functools.lru_cache(maxsize=1024)
def source_digest(source: str) -> str:
    """sha256 of the AST of ``source`` without docstrings, comments, formatting or line numbers;
    the same on every supported Python (:func:`canonical_dump`).

    Memoised on the text itself, so never stale: planning a grid digests the same few plugin
    modules once per (dataset, method), and parsing and dumping them was most of its time."""
    tree = _strip_docstrings(ast.parse(source))
    return hashlib.sha256(canonical_dump(tree).encode()).hexdigest()


def _is_package(module_name: str) -> bool:
    module = sys.modules.get(module_name)
    if module is not None:
        return hasattr(module, "__path__")
    try:
        spec = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        return False
    return spec is not None and spec.submodule_search_locations is not None


def _exists(module_name: str) -> bool:
    if module_name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(module_name) is not None
    except (ImportError, ValueError):
        return False


@functools.lru_cache(maxsize=1024)
def _import_statements(source: str) -> tuple[tuple[str, int, tuple[str, ...]], ...]:
    """``(module, level, names)`` of every import statement of ``source``: ``level`` -1 for a
    plain ``import`` (``names`` are then the imported modules). Memoised on the text, as
    :func:`source_digest` is."""
    out: list[tuple[str, int, tuple[str, ...]]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.append(("", -1, tuple(alias.name for alias in node.names)))
        elif isinstance(node, ast.ImportFrom):
            out.append((node.module or "", node.level, tuple(a.name for a in node.names)))
    return tuple(out)


def _imports(module_name: str, source: str) -> set[str]:
    """Modules that ``module_name``'s source imports (``from pkg import sub`` counts ``pkg.sub``
    when that is a module)."""
    package = module_name if _is_package(module_name) else module_name.rpartition(".")[0]
    out: set[str] = set()
    for base, level, names in _import_statements(source):
        if level < 0:
            out.update(names)
            continue
        if level:
            try:
                base = importlib.util.resolve_name("." * level + base, package)
            except (ImportError, ValueError):
                continue
        if not base:
            continue
        out.add(base)
        for name in names:
            if _exists(f"{base}.{name}"):
                out.add(f"{base}.{name}")
    return out


def module_closure(module_name: str, within: Iterable[str] | None = None) -> list[str]:
    """``module_name`` and every module it imports, transitively, inside ``within`` (top-level
    package names; default: the module's own top package and :data:`PLUGIN_PACKAGES`).

    The core (``zslbench``) is never followed from a plugin: the core's numerics are versioned by
    :data:`PROTOCOL_VERSION`, and the rest of it (CLI, leaderboard) cannot change a number."""
    top = module_name.split(".")[0]
    allowed = set(within) if within is not None else {top, *PLUGIN_PACKAGES}
    if top != "zslbench":
        allowed.discard("zslbench")
    seen: set[str] = set()
    todo = [module_name]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        source = read_source(name)
        if source is None:
            continue
        for dep in _imports(name, source):
            if dep.split(".")[0] in allowed and dep not in seen:
                todo.append(dep)
    return sorted(seen)


def modules_digest(names: Iterable[str]) -> dict[str, str]:
    """{module: digest of its source} (``"-"`` for a module without Python source)."""
    out = {}
    for name in sorted(set(names)):
        source = read_source(name)
        out[name] = source_digest(source)[:16] if source is not None else "-"
    return out


def _combine(parts: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def component_digest(cls: type) -> dict[str, Any]:
    """``{"component": name, "module": defining module, "digest": ..., "modules": {...}}`` for a
    component class: the digest covers its module's closure (:func:`module_closure`)."""
    module = cls.__module__
    modules = modules_digest(module_closure(module))
    return {
        "component": getattr(cls, "name", cls.__name__),
        "module": module,
        "digest": _combine(modules)[:16],
        "modules": modules,
    }


def protocol_digest() -> str:
    """Digest of the core numerics that :data:`PROTOCOL_VERSION` stands for (pinned by a test)."""
    parts = modules_digest(PROTOCOL_MODULES)
    parts["derive_seed"] = source_digest(inspect.getsource(derive_seed))
    return _combine(parts)


# -- identity, key, reasons ---------------------------------------------------------------------
def run_identity(
    config_id: str,
    data_fingerprint: str,
    seed: int,
    device_type: str,
    components: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """Everything a run's key covers, as stored in its record (``Record.identity``)."""
    return {
        "protocol": PROTOCOL_VERSION,
        "config_id": config_id,
        "data": data_fingerprint,
        "seed": int(seed),
        "device_type": device_type,
        "components": {role: dict(c) for role, c in sorted(components.items())},
    }


def run_key(identity: Mapping[str, Any], schema: int) -> str:
    """The cache key: sha256 of the identity (and the record schema)."""
    body = {"identity": identity, "schema": schema}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def code_digest(identity: Mapping[str, Any]) -> str:
    """The code part of an identity (components and protocol version), kept in the record's
    ``code_fingerprint``."""
    return _combine({"protocol": identity["protocol"], "components": identity["components"]})


def changed_components(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """``["`krr` (zslbench_plugins.krr)", ...]``: the components whose code differs between two
    identities, with the modules that changed (a swapped component is a config change)."""
    out = []
    old_c, new_c = old.get("components") or {}, new.get("components") or {}
    for role, comp in new_c.items():
        was = old_c.get(role)
        if (
            was is None
            or was.get("component") != comp["component"]
            or was.get("digest") == comp["digest"]
        ):
            continue
        before, after = was.get("modules") or {}, comp.get("modules") or {}
        mods = sorted(m for m in set(before) | set(after) if before.get(m) != after.get(m))
        out.append(f"`{comp['component']}`" + (f" ({', '.join(mods)})" if mods else ""))
    return out


def difference(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> str:
    """Why a run with identity ``new`` is not the recorded run with identity ``old``: one short
    phrase ("new", "data changed", "config changed", "protocol changed", "code of `krr`
    changed", ...)."""
    if old is None:
        return "new"
    if old.get("data") != new["data"]:
        return f"data changed (fingerprint {str(old.get('data'))[:8]} -> {new['data'][:8]})"
    if old.get("config_id") != new["config_id"]:
        return "config changed"
    if old.get("protocol") != new["protocol"]:
        return f"protocol changed (version {old.get('protocol')} -> {new['protocol']})"
    if old.get("seed") != new["seed"]:
        return f"seed changed ({old.get('seed')} -> {new['seed']})"
    if old.get("device_type") != new["device_type"]:
        return f"device changed ({old.get('device_type')} -> {new['device_type']})"
    names = changed_components(old, new)
    if names:
        return "code of " + ", ".join(names) + " changed"
    return "key changed (record schema)"
