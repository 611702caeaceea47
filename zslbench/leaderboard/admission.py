"""What the write job of the public board requires of a third-party record before it takes it
(``zslbench board accept``, :mod:`zslbench.board`).

The job that ran the listed plugins' code hands its records on as an artifact: untrusted data,
whoever wrote it. A file is taken only when it meets every entry of :data:`REQUIREMENTS`, a list
of small checks that each return why a file is refused ("" when it meets it); the first one a file
fails is its refusal line. Together they recompute every claim a record makes that can be
recomputed from the record alone (its key, configuration id, run id, data fingerprint, H), and
admit only the listed third-party methods, on the synthetic stand-ins the board runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, cast

from zslbench.errors import UserError
from zslbench.leaderboard.manifest import PLUGINS_NAME, plain_file
from zslbench.records import Record, RecordError, read_record, valid_record
from zslbench.registry import BUILTIN_DISTRIBUTION, canonical_distribution

#: The largest record file ``accept`` reads, in bytes. A record of the stand-ins holds its
#: per-class results and its curve: the largest on the committed board is 160 kB (synth-sun's 72
#: unseen classes), so 10 MB leaves sixty times that, and is ten times under the 100 MB above which
#: the repository host refuses a file (one such record would block every board update).
MAX_RECORD_BYTES = 10 * 2**20


@dataclass(frozen=True)
class Admission:
    """What the board admits, against which each record is checked."""

    #: a method ``plugins.toml`` lists -> the distribution it is listed for
    owner: Mapping[str, str]
    #: the methods zslbench itself provides: no entry may list one
    builtins: frozenset[str]
    #: the synthetic stand-ins the board runs, the only datasets it takes records of
    datasets: frozenset[str]
    #: every installed dataset's declaration (:mod:`zslbench.records.validation`)
    declarations: Any


def admission(owner: Mapping[str, str]) -> Admission:
    """What the board admits of the listed methods ``owner``: zslbench's own built-in methods and
    stand-ins are read from the registry (the write job installs no plugin, so only zslbench's are
    registered there; the distribution is checked anyway, so that an installed plugin can declare
    neither)."""
    from zslbench.records.validation import declared_datasets
    from zslbench.registry import load_registry

    registry = load_registry()
    ours = {
        kind: {n for n, p in registry.items[kind].items() if p.distribution == BUILTIN_DISTRIBUTION}
        for kind in ("method", "dataset")
    }
    declared = declared_datasets(registry)
    synthetic = {n for n in ours["dataset"] if getattr(declared[n], "kind", None) == "synthetic"}
    return Admission(dict(owner), frozenset(ours["method"]), frozenset(synthetic), declared)


@dataclass
class Candidate:
    """One file of the artifact, as ``accept`` checks it: read at most once, and only when the
    checks before the reading passed (:data:`REQUIREMENTS`)."""

    path: Path
    #: where it would be written on the board
    target: Path
    admits: Admission
    #: other files of the artifact with this file's name and other content
    twins: tuple[Path, ...] = ()

    @cached_property
    def read(self) -> Record | RecordError:
        """The record, or the error that refuses it (:func:`zslbench.records.valid_record`)."""
        return valid_record(self.path, self.admits.declarations)

    @property
    def rec(self) -> Record:
        """The record: for the requirements after :func:`_is_a_valid_record`, which refuses a
        file that is not one."""
        return cast("Record", self.read)


# -- what accept requires: each returns "" when the file meets it, else why it is refused ------


def _is_a_record_file(c: Candidate) -> str:
    """A plain ``*.json`` file: a link could point anywhere, a FIFO would hang the job."""
    return "" if c.path.suffix == ".json" and plain_file(c.path) else "not a record file"


def _is_within_the_size_cap(c: Candidate) -> str:
    """Sized before it is read (:data:`MAX_RECORD_BYTES` says why the cap)."""
    size = c.path.lstat().st_size
    cap = f"is {size} bytes, over the {MAX_RECORD_BYTES} bytes a board record may have"
    return "" if size <= MAX_RECORD_BYTES else cap


def _is_the_only_one_of_its_name(c: Candidate) -> str:
    """Two different records of one run: the artifact cannot say which is the run, so neither is
    taken (taking one would depend on the order the folder is listed in)."""
    twins = ", ".join(map(str, c.twins))
    why = f"{twins} of the artifact is also named {c.path.name} with other content: "
    return why + "neither is taken" if twins else ""


def _is_a_valid_record(c: Candidate) -> str:
    """Valid, intact, and its claims agree (:mod:`zslbench.records.validation`, which also
    refuses a record without an identity: it would have no key, configuration id or run id to
    recompute)."""
    return "" if isinstance(c.read, Record) else f"not a valid zslbench record: {c.read}"


def _has_its_content_parts(c: Candidate) -> str:
    """Without its split's content parts and features hash, its data fingerprint cannot be
    recomputed (:func:`zslbench.records.validation.check` skips that claim for such records)."""
    parts, fhash = c.rec.split.get("parts"), c.rec.data.get("features_hash")
    ok = isinstance(parts, dict) and parts and isinstance(fhash, str) and fhash
    why = "has no split content parts or features hash, so its data fingerprint cannot be "
    return "" if ok else why + "recomputed"


def _identity_names_its_components(c: Candidate) -> str:
    """The identity's components are the configuration's, role by role (the key covers the
    identity's; the configuration is what the board shows)."""
    own = {role: comp.get("name") for role, comp in c.rec.config.get("components", {}).items()}
    comps = c.rec.identity.get("components")
    claimed = isinstance(comps, dict) and {  # never a dict when it has none
        role: comp.get("component") for role, comp in comps.items() if isinstance(comp, dict)
    }
    return "" if claimed == own else "its identity's components are not its configuration's"


def _h_is_the_harmonic_mean(c: Candidate) -> str:
    """H is the harmonic mean of A_U and A_S: the one metric recomputable from the others."""
    m = c.rec.metrics
    u, s = m["A_U"], m["A_S"]
    h = 2 * u * s / (u + s) if u + s else 0.0
    close = abs(h - m["H"]) <= 1e-9 * max(1.0, abs(h))
    return "" if close else f"its H {m['H']!r} is not the harmonic mean of its A_U and A_S ({h!r})"


def _is_named_by_its_run_id(c: Candidate) -> str:
    named = c.path.name == f"{c.rec.run_id}.json"
    return "" if named else f"is not named by its run id {c.rec.run_id!r}"


def _is_of_a_listed_method(c: Candidate) -> str:
    listed = c.rec.method in c.admits.owner
    return "" if listed else f"method {c.rec.method!r} is not listed in {PLUGINS_NAME}"


def _is_not_a_built_in(c: Candidate) -> str:
    """``board run`` refuses an entry that lists a built-in; a record must not slip one in."""
    built_in = f"method {c.rec.method!r} is built into zslbench, which the board already runs"
    return built_in if c.rec.method in c.admits.builtins else ""


def _was_run_from_the_listed_distribution(c: Candidate) -> str:
    owner = c.admits.owner[c.rec.method]
    ran_from = str((c.rec.config.get("method_distribution") or {}).get("distribution"))
    same = canonical_distribution(ran_from) == canonical_distribution(owner)
    return "" if same else f"method {c.rec.method!r} was not run from {owner}"


def _is_on_a_board_stand_in(c: Candidate) -> str:
    """Only the stand-ins the board runs: a record of real or undeclared data could not be
    re-checked by anyone, whatever it claims."""
    if c.rec.dataset_kind == "synthetic" and c.rec.dataset in c.admits.datasets:
        return ""
    stand_ins = ", ".join(sorted(c.admits.datasets))
    return f"ran on {c.rec.dataset!r}, not one of the board's synthetic stand-ins ({stand_ins})"


def _replaces_no_other_method(c: Candidate) -> str:
    other = c.target.exists() and _method_of(c.target) != c.rec.method
    return f"would replace {c.target}, which is not a record of {c.rec.method!r}" if other else ""


#: What ``accept`` requires of every file of the artifact, in order: the first one a file fails
#: is the reason it is refused. A new requirement is one more function here.
REQUIREMENTS: tuple[Callable[[Candidate], str], ...] = (
    _is_a_record_file,
    _is_within_the_size_cap,
    _is_the_only_one_of_its_name,
    _is_a_valid_record,
    _has_its_content_parts,
    _identity_names_its_components,
    _h_is_the_harmonic_mean,
    _is_named_by_its_run_id,
    _is_of_a_listed_method,
    _is_not_a_built_in,
    _was_run_from_the_listed_distribution,
    _is_on_a_board_stand_in,
    _replaces_no_other_method,
)


def refusal(candidate: Candidate) -> str:
    """Why ``candidate`` is refused: the first requirement it fails ("" when it meets them all)."""
    return next((why for requirement in REQUIREMENTS if (why := requirement(candidate))), "")


def admit(
    owner: Mapping[str, str], source: Path, results_dir: Path
) -> tuple[list[Path], list[str]]:
    """Take the records that the job running third-party code handed on (``source``, an
    artifact: untrusted) into ``results_dir``: (the files written, one line per file refused).
    ``owner`` maps each method ``plugins.toml`` lists to the distribution it is listed for.

    A record is taken only when it meets every one of :data:`REQUIREMENTS`. Nothing else of the
    artifact is ever read as code or written. A refusal line names the file with its control
    characters escaped, so that a file name cannot split the log. A ``source`` that is not a
    folder, or a ``results_dir`` that cannot be written, is a ``UserError`` naming it."""
    from zslbench.files import atomic_write_text

    source, results_dir = Path(source), Path(results_dir)
    if not source.is_dir():
        raise UserError(
            f"{_one_line(str(source))}: {'not a folder' if source.exists() else 'no such folder'}",
            hint="--from names the folder the artifact of records was downloaded to",
        )
    admits = admission(owner)
    files = [p for p in sorted(source.rglob("*")) if p.is_symlink() or not p.is_dir()]
    written: list[Path] = []
    refused: list[str] = []
    for path in files:
        target = results_dir / path.name
        if _same_content(path, target):
            continue  # already on the board (the committed records it was run beside)
        namesakes = (p for p in files if p.name == path.name and p != path)
        twins = tuple(p for p in namesakes if not _same_content(p, path))
        candidate = Candidate(path, target, admits, twins)
        why = refusal(candidate)
        if why:
            refused.append(_one_line(f"{path}: {why}"))
            continue
        try:
            atomic_write_text(target, candidate.rec.to_json())
        except OSError as exc:
            raise UserError(
                f"{_one_line(str(results_dir))}: cannot write {_one_line(target.name)} "
                f"({exc.strerror or exc}); {len(written)} record(s) taken before it",
                hint="make the folder writable, or free space on its disk, and run accept again",
            ) from None
        written.append(target)
    return written, refused


def _one_line(text: str) -> str:
    """``text`` on one line: its control characters and line or paragraph separators escaped."""
    from zslbench.data.dataset import printable as escaped

    return escaped(text).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _same_content(a: Path, b: Path) -> bool:
    """Whether two plain files within the size cap hold the same bytes (larger ones are never
    read)."""
    if not (plain_file(a) and plain_file(b)):
        return False
    size = a.stat().st_size
    return size == b.stat().st_size <= MAX_RECORD_BYTES and a.read_bytes() == b.read_bytes()


def _method_of(target: Path) -> str | None:
    """The method of the record at ``target``; None when it is not a readable record."""
    try:
        return read_record(target).method
    except Exception:  # noqa: BLE001 - whatever is there, it is not this method's
        return None
