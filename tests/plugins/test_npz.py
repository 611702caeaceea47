"""Bring-your-own-features datasets (``zslbench_plugins.npz``): format, mistakes, runs, records."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.cli_helpers import invoke_main
from zslbench.data.checks import check_dataset
from zslbench.data.synthetic import generate
from zslbench.errors import DataError
from zslbench_plugins import npz
from zslbench_plugins.synthetic import SHAPES


def arrays(
    seed: int = 0, *, n_seen: int = 6, n_unseen: int = 3, per_class: int = 12, dim: int = 24
) -> dict[str, Any]:
    """A small learnable GZSL problem in the format: features are a linear image of the class
    semantics plus noise (non-negative, as ResNet activations), every index 0-based."""
    rng = np.random.default_rng(seed)
    c = n_seen + n_unseen
    sem = rng.uniform(0.1, 1.0, size=(c, 8))
    proj = rng.standard_normal((8, dim))
    labels = rng.permutation(np.repeat(np.arange(c), per_class))
    feats = np.abs(sem[labels] @ proj + 0.2 * rng.standard_normal((labels.size, dim)))
    tv, ts, tu = [], [], []
    for k in range(c):
        idx = np.flatnonzero(labels == k)
        if k >= n_seen:
            tu += idx.tolist()
        else:
            tv += idx[: 2 * idx.size // 3].tolist()
            ts += idx[2 * idx.size // 3 :].tolist()
    return {
        "features": feats.astype(np.float32),
        "labels": labels,
        "class_semantics": sem,
        "class_names": [f"class {k}" for k in range(c)],
        "trainval_idx": np.array(tv),
        "test_seen_idx": np.array(ts),
        "test_unseen_idx": np.array(tu),
        "val_classes": np.array([0, 1]),
    }


def write_raw(path: Path, a: dict[str, Any]) -> Path:
    """What a user writes with plain numpy (no checks on the way)."""
    np.savez(
        path,
        **{
            k: (np.asarray(v, dtype=str) if isinstance(v, list) else np.asarray(v))
            for k, v in a.items()
        },
    )
    return path


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    a = arrays()
    path = npz.save_npz(tmp_path / "mine", **a)
    assert path == tmp_path / "mine.npz"
    d = npz.load_npz(path)
    assert d.name == "mine" and d.source["kind"] == "custom" and d.source["format"] == "npz"
    assert d.features.dtype == np.float32 and not d.features.flags.writeable
    np.testing.assert_array_equal(d.features, a["features"])
    np.testing.assert_array_equal(d.labels, a["labels"])
    assert d.labels.dtype == np.int64
    np.testing.assert_array_equal(d.attributes, a["class_semantics"].astype(np.float32))
    for key, got in (
        ("trainval_idx", d.trainval_idx),
        ("test_seen_idx", d.test_seen_idx),
        ("test_unseen_idx", d.test_unseen_idx),
        ("val_classes", d.val_classes),
    ):
        np.testing.assert_array_equal(got, a[key])
    assert d.class_names == a["class_names"]
    verdict = check_dataset(d, "custom")
    assert verdict.standard and verdict.kind == "custom"


def test_a_folder_of_npy_files_is_the_same_dataset(tmp_path: Path) -> None:
    a = arrays()
    folder = tmp_path / "mine"
    folder.mkdir()
    for key, value in a.items():
        np.save(
            folder / f"{key}.npy", np.asarray(value, dtype=str) if key == "class_names" else value
        )
    from_folder = npz.load_npz(folder)
    from_file = npz.load_npz(npz.save_npz(tmp_path / "other.npz", **a))
    assert from_folder.name == "mine" and from_folder.source["layout"] == "folder of .npy"
    assert isinstance(from_folder.features, np.memmap)  # float32 .npy: memory-mapped, not copied
    assert (
        check_dataset(from_folder, "custom").fingerprint
        == check_dataset(from_file, "custom").fingerprint
    )


def test_optional_keys_and_kind(tmp_path: Path) -> None:
    a = arrays()
    del a["val_classes"]
    d = npz.load_npz(npz.save_npz(tmp_path / "x.npz", **a, kind="synthetic"))
    assert d.val_classes is None and d.source["kind"] == "synthetic"
    assert npz.read_kind(tmp_path / "x.npz") == "synthetic"


def test_export_of_an_embedded_dataset_keeps_its_content(tmp_path: Path) -> None:
    toy = generate(SHAPES["toy"])
    back = npz.load_npz(npz.save_dataset(toy, tmp_path / "toy-copy.npz"))
    a, b = check_dataset(toy, "synthetic"), check_dataset(back, "custom")
    assert (
        a.parts == b.parts and a.features_hash == b.features_hash and a.fingerprint == b.fingerprint
    )


# ------------------------------------------------------------------------------------ mistakes


def _set(key: str, value: Any):
    def change(a: dict[str, Any]) -> None:
        a[key] = value(a) if callable(value) else value

    return change


def _drop(key: str):
    return lambda a: a.pop(key)


def _nan(a: dict[str, Any]) -> None:
    a["features"] = a["features"].copy()
    a["features"][5, 3] = np.nan


def _huge(a: dict[str, Any]) -> None:
    a["features"] = a["features"].astype(np.float64)
    a["features"][5, 3] = 1e300


MISTAKES = [
    # (id, change, key named in the line, what the line says, what the fix says)
    ("missing-key", _drop("labels"), "'labels'", "lacks the key 'labels'", "add labels: (n,) int"),
    (
        "unknown-key",
        _set("label", lambda a: a["labels"]),
        "'label'",
        "has an unknown key 'label'",
        "did you mean 'labels'?",
    ),
    (
        "features-1d",
        _set("features", lambda a: a["features"][:, 0]),
        "'features'",
        "must be a non-empty (n, d) matrix",
        "store features as an (n, d) array",
    ),
    (
        "features-int",
        _set("features", lambda a: (a["features"] * 10).astype(np.int64)),
        "'features'",
        "have dtype int64; they must be real floating-point numbers",
        "features.astype(np.float32)",
    ),
    (
        "features-bool",
        _set("features", lambda a: a["features"] > 1),
        "'features'",
        "have dtype bool; they must be real floating-point numbers",
        "features.astype(np.float32)",
    ),
    (
        "features-nan",
        _nan,
        "'features'",
        "contain NaN or Inf (first at image 5, dimension 3, 0-based)",
        "re-extract",
    ),
    (
        "features-1e300",
        _huge,
        "'features'",
        "value 1e+300 (image 5, dimension 3, 0-based) does not fit in float32",
        "rescale",
    ),
    (
        "features-constant",
        _set("features", lambda a: np.full_like(a["features"], 0.5)),
        "'features'",
        "every value of 'features' is 0.5: the features are constant",
        "re-extract",
    ),
    (
        "labels-float",
        _set("labels", lambda a: a["labels"].astype(np.float64)),
        "'labels'",
        "has dtype float64; it must hold integers",
        "labels.astype(np.int64)",
    ),
    (
        "labels-1-based",
        _set("labels", lambda a: a["labels"] + 1),
        "'labels'",
        "run from 1 to 9, the number of classes: they look 1-based",
        "subtract 1",
    ),
    (
        "labels-out-of-range",
        _set("labels", lambda a: np.where(a["labels"] == 8, 9, a["labels"])),
        "'labels'",
        "hold 9, outside 0..8 (class_semantics has 9 rows)",
        "0-based rows of class_semantics",
    ),
    (
        "labels-negative",
        _set("labels", lambda a: np.where(a["labels"] == 0, -1, a["labels"])),
        "'labels'",
        "hold -1, outside 0..8",
        "0-based rows",
    ),
    (
        "labels-length",
        _set("labels", lambda a: a["labels"][:-1]),
        "'labels'",
        "has 107 entries but features has 108",
        "labels needs one entry per image",
    ),
    (
        "labels-column",
        _set("labels", lambda a: a["labels"].reshape(-1, 1)),
        "'labels'",
        "has shape (108, 1); it must be a vector",
        "labels.ravel()",
    ),
    (
        "semantics-1d",
        _set("class_semantics", lambda a: a["class_semantics"][:, 0]),
        "'class_semantics'",
        "must be a non-empty (c, a) matrix",
        "(c, a)",
    ),
    (
        "semantics-zero-row",
        _set("class_semantics", lambda a: a["class_semantics"] * (np.arange(9) != 7)[:, None]),
        "'class_semantics'",
        "row 7 is all zeros, and class 7 has images",
        "non-zero semantic vector",
    ),
    (
        "names-length",
        _set("class_names", lambda a: a["class_names"][:-1]),
        "'class_names'",
        "has 8 entries but class_semantics has 9",
        "one entry per class",
    ),
    (
        "names-pickled",
        _set("class_names", lambda a: np.array(a["class_names"], dtype=object)),
        "'class_names'",
        "is an object (pickled) array",
        "np.array(names, dtype=str)",
    ),
    (
        "indices-1-based",
        lambda a: a.update({k: a[k] + 1 for k in npz.INDEX_KEYS}),
        "idx'",
        "one past the 108 images, and no set holds index 0: the indices look 1-based",
        "subtract 1",
    ),
    (
        "index-out-of-range",
        _set("test_seen_idx", lambda a: a["test_seen_idx"] + 500),
        "'test_seen_idx'",
        "indices outside 0..107",
        "0-based rows of features",
    ),
    (
        "index-float",
        _set("trainval_idx", lambda a: a["trainval_idx"].astype(np.float64)),
        "'trainval_idx'",
        "has dtype float64; it must hold integers",
        "trainval_idx.astype(np.int64)",
    ),
    (
        "index-duplicate",
        _set("test_unseen_idx", lambda a: np.r_[a["test_unseen_idx"], a["test_unseen_idx"][:2]]),
        "'test_unseen_idx'",
        "more than once",
        "each image may appear once",
    ),
    (
        "index-empty",
        _set("test_seen_idx", np.array([], dtype=np.int64)),
        "'test_seen_idx'",
        "is empty",
        "at least one image",
    ),
    (
        "val-classes-out-of-range",
        _set("val_classes", np.array([0, 12])),
        "'val_classes'",
        "holds 12, outside 0..8",
        "0-based rows of class_semantics",
    ),
    (
        "val-classes-all-seen",
        _set("val_classes", np.arange(6)),
        "'val_classes'",
        "holds every one of the 6 seen classes",
        "about a third",
    ),
    (
        "kind",
        _set("kind", "published"),
        "'kind'",
        "'kind' is 'published'; it must be one of",
        "np.array('custom')",
    ),
]


@pytest.mark.parametrize(
    "change, key, says, fix", [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES]
)
def test_every_mistake_is_one_line_naming_file_key_and_fix(
    tmp_path: Path, change, key, says, fix
) -> None:
    a = arrays()
    change(a)
    path = write_raw(tmp_path / "mine.npz", a)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(DataError) as info:
            npz.load_npz(path)
    line = str(info.value)
    assert "\n" not in line and line.startswith(str(path)), line
    assert key in line and says in line and " — " in line, line
    assert fix in line.split(" — ", 1)[1], line


#: Mistakes save_npz cannot be handed (a missing or unknown keyword is a TypeError; it stores
#: object arrays of names as strings).
_NOT_THROUGH_SAVE = {"missing-key", "unknown-key", "names-pickled"}


@pytest.mark.parametrize(
    "change",
    [m[1] for m in MISTAKES if m[0] not in _NOT_THROUGH_SAVE],
    ids=[m[0] for m in MISTAKES if m[0] not in _NOT_THROUGH_SAVE],
)
def test_the_writer_refuses_what_the_loader_refuses(tmp_path: Path, change) -> None:
    a = arrays()
    change(a)
    with pytest.raises(DataError) as info:
        npz.save_npz(tmp_path / "mine.npz", **a)
    assert str(info.value).startswith(str(tmp_path / "mine.npz"))
    assert list(tmp_path.iterdir()) == []  # nothing written, no temporary left


@pytest.mark.parametrize(
    "content, says",
    [
        (b"hello, not numpy", "is not an .npz file"),
        (None, "holds a single array, not an .npz archive"),
        ("truncated", "is not an .npz file"),
    ],
)
def test_a_file_that_is_not_an_npz(tmp_path: Path, content, says) -> None:
    path = tmp_path / "mine.npz"
    if content is None:
        with open(path, "wb") as fh:
            np.save(fh, np.zeros(3))
    elif content == "truncated":
        data = write_raw(tmp_path / "full.npz", arrays()).read_bytes()
        path.write_bytes(data[: len(data) // 2])
    else:
        path.write_bytes(content)
    with pytest.raises(DataError) as info:
        npz.load_npz(path)
    line = str(info.value)
    assert line.startswith(str(path)) and says in line and "save_npz" in line and "\n" not in line


def test_missing_file_and_what_the_open_hook_claims(tmp_path: Path) -> None:
    assert npz.zslbench_open_dataset("awa3") is None  # a typo stays an unknown dataset
    assert npz.zslbench_open_dataset(str(tmp_path)) is None  # a folder without the format's files
    spec = npz.zslbench_open_dataset(str(tmp_path / "nope.npz"))
    assert spec is not None and spec.name == "nope" and spec.kind == "custom"
    (line,) = spec.missing(None)
    assert str(tmp_path / "nope.npz") in line and "save_npz" in line
    folder = tmp_path / "feats"
    folder.mkdir()
    np.save(folder / "features.npy", np.ones((2, 2)))
    assert npz.zslbench_open_dataset(str(folder)).name == "feats"


def test_npz_dataset_for_a_third_party_plugin(tmp_path: Path) -> None:
    npz.save_npz(tmp_path / "data" / "mine.npz", **arrays(), kind="synthetic")
    spec = npz.npz_dataset("my-bench", "mine.npz", description="mine")  # relative: in the data dir
    assert spec.missing(tmp_path / "data") == [] and spec.missing(tmp_path) != []
    d = spec.load(tmp_path / "data")
    assert d.name == "my-bench" and d.source["kind"] == "synthetic"
    absolute = npz.npz_dataset("my-bench", tmp_path / "data" / "mine.npz")
    assert absolute.kind == "synthetic"  # the file's own kind
    with pytest.raises(DataError, match="kind 'published' is not one of"):
        npz.npz_dataset("x", tmp_path / "data" / "mine.npz", kind="published")


# ------------------------------------------------------------------------------ through the CLI


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(path.glob("*.json"))]


def test_run_a_file_through_the_command_line(tmp_path: Path) -> None:
    """`zslbench run --method krr --dataset FILE`: a custom, standard record named after the file;
    writing the same arrays again gives the same fingerprint (the run is then cached)."""
    a = arrays()
    file = npz.save_npz(tmp_path / "mine.npz", **a)
    results = tmp_path / "results"
    res = invoke_main(
        "run", "--method", "krr", "--dataset", str(file), "--results-dir", str(results)
    )
    assert res.exit_code == 0, res.output
    (rec,) = _records(results)
    assert rec["dataset"] == "mine" and rec["dataset_kind"] == "custom"
    assert rec["split"]["standard"] is True and rec["split"]["reason"] == ""
    assert rec["data"]["source"]["format"] == "npz" and rec["data"]["n_images"] == 108
    assert rec["metrics"]["H"] > 0

    file.unlink()
    npz.save_npz(file, **a)  # the same arrays, written again (a new file, same content)
    again = invoke_main(
        "run", "--method", "krr", "--dataset", str(file), "--results-dir", str(results)
    )
    assert again.exit_code == 0, again.output
    assert "cached" in again.stdout
    (rec2,) = _records(results)
    assert rec2["data"]["fingerprint"] == rec["data"]["fingerprint"]

    a["features"] = a["features"] * 1.5  # other features: another dataset identity
    other = npz.save_npz(tmp_path / "copy" / "mine.npz", **a)
    assert check_dataset(npz.load_npz(other), "custom").fingerprint != rec["data"]["fingerprint"]


def test_two_files_with_one_name_in_one_grid_are_refused(tmp_path: Path) -> None:
    """Two different files named mine.npz in one --dataset list would share one name (and one
    row on the board): refused with one line. A name taken by a registered dataset is refused."""
    a = arrays()
    first = npz.save_npz(tmp_path / "a" / "mine.npz", **a)
    second = npz.save_npz(tmp_path / "b" / "mine.npz", **a)
    res = invoke_main(
        "run",
        "--method",
        "krr",
        "--dataset",
        f"{first},{second}",
        "--results-dir",
        str(tmp_path / "r"),
    )
    assert res.exit_code != 0 and "already a registered dataset" in res.stderr
    assert not list((tmp_path / "r").glob("*.json"))
    toy = npz.save_npz(tmp_path / "toy.npz", **a)
    res = invoke_main(
        "run", "--method", "krr", "--dataset", str(toy), "--results-dir", str(tmp_path / "r")
    )
    assert res.exit_code != 0 and "'toy' is already a registered dataset" in res.stderr


def test_a_mistake_through_the_command_line_is_one_line(tmp_path: Path) -> None:
    a = arrays()
    a["labels"] = a["labels"] + 1
    file = write_raw(tmp_path / "mine.npz", a)
    res = invoke_main(
        "run", "--method", "krr", "--dataset", str(file), "--results-dir", str(tmp_path / "r")
    )
    assert res.exit_code == DataError.exit_code
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("zslbench: error:")]
    assert len(errors) == 1 and "Traceback" not in res.output  # (progress lines aside)
    assert errors[0].startswith(f"zslbench: error: {file}: 'labels' run from 1 to 9")
    assert not list((tmp_path / "r").glob("*.json"))


def test_negative_features_run_with_preprocessor_none(tmp_path: Path) -> None:
    """As the format's documentation says: `clip` (the paper's preprocessor) refuses features
    with negative values (CLIP, ViT); `--set preprocessor=none` runs them."""
    a = arrays()
    a["features"] = a["features"] - a["features"].mean(axis=0)  # centred: half the values < 0
    file = npz.save_npz(tmp_path / "clipfeats.npz", **a)
    results = str(tmp_path / "results")
    refused = invoke_main(
        "run", "--method", "krr", "--dataset", str(file), "--results-dir", results
    )
    assert refused.exit_code != 0 and "negative values" in refused.output
    res = invoke_main(
        "run",
        "--method",
        "krr",
        "--dataset",
        str(file),
        "--results-dir",
        results,
        "--set",
        "preprocessor=none",
    )
    assert res.exit_code == 0, res.output
    (rec,) = _records(tmp_path / "results")
    assert (
        rec["dataset"] == "clipfeats"
        and rec["config"]["components"]["preprocessor"]["name"] == "none"
    )


# ----------------------------------------------------------- names and headers (issue 18 defects)


@pytest.mark.parametrize(
    "filename, says",
    [
        (".npz", "a file named '.npz' gives no dataset name"),
        (".hidden.npz", "the dataset name '.hidden' starts with '.'"),
        ("...npz", "the dataset name '..' starts with '.'"),
        ("tab\there.npz", "contains the control character '\\t'"),
        ("new\nline.npz", "contains the control character '\\n'"),
        ("x" * 120 + ".npz", "has 120 characters (at most 100)"),
    ],
)
def test_a_file_whose_name_cannot_name_a_dataset_is_refused(
    tmp_path: Path, filename: str, says: str
) -> None:
    """Issue 18: a file named ``.npz`` gave an empty dataset name, and zslbench refused its own
    records; a leading '.' would hide them (hidden files are temporaries), and a control
    character or an overlong name breaks the record's file name. Each is one line that names the
    file and says to rename it, before anything runs."""
    file = write_raw(tmp_path / "x.npz", arrays()).rename(tmp_path / filename)
    res = invoke_main(
        "run", "--method", "krr", "--dataset", str(file), "--results-dir", str(tmp_path / "r")
    )
    assert res.exit_code == DataError.exit_code and "Traceback" not in res.output
    (line,) = [ln for ln in res.stderr.splitlines() if ln.strip()]
    shown = str(file).replace("\t", "\\t").replace("\n", "\\n")  # escaped: still one line
    assert line.startswith(f"zslbench: error: {shown}: ") and says in line and "rename" in line
    assert not (tmp_path / "r").exists()
    with pytest.raises(DataError, match="rename"):
        npz.load_npz(file)


def test_a_plugin_cannot_register_a_name_that_cannot_name_a_dataset(tmp_path: Path) -> None:
    file = npz.save_npz(tmp_path / "mine.npz", **arrays())
    for bad in ("", "a/b", "../up", ".hidden", "bell\a"):
        with pytest.raises(DataError, match="the dataset name"):
            npz.npz_dataset(bad, file)


def test_a_file_datasets_record_keeps_its_full_path(tmp_path: Path) -> None:
    """A file dataset is named by its stem; its record keeps the path it was read from, so that
    whatever shows the record can name the file (a Reproduce line, say)."""
    file = npz.save_npz(tmp_path / "odd name #1.npz", **arrays())
    res = invoke_main(
        "run", "--method", "krr", "--dataset", str(file), "--results-dir", str(tmp_path / "r")
    )
    assert res.exit_code == 0, res.output
    (rec,) = _records(tmp_path / "r")
    assert rec["dataset"] == "odd name #1" and rec["data"]["source"]["path"] == str(file.resolve())


def _claim_huge_shape(path: Path, key: str) -> None:
    """Rewrite the .npy header of ``key`` in the archive at ``path`` to claim 10**12 rows."""
    import zipfile

    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    raw = members[f"{key}.npy"]
    header_len = int.from_bytes(raw[8:10], "little")
    header = raw[10 : 10 + header_len].decode("latin1")
    start = header.index("'shape': (") + len("'shape': (")
    end = header.index(")", start)
    rows = header[start:end].split(",")
    huge = header[:start] + ",".join(["1000000000000", *rows[1:]]) + header[end:]
    huge = huge.rstrip(" \n")[: header_len - 1].ljust(header_len - 1) + "\n"
    members[f"{key}.npy"] = raw[:10] + huge.encode("latin1") + raw[10 + header_len :]
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)


@pytest.mark.parametrize("key", ["features", "labels"])
def test_a_header_claiming_a_huge_shape_is_refused_before_allocating(
    tmp_path: Path, key: str
) -> None:
    """Issue 18: a corrupt .npz whose header claims a huge shape gave "internal error:
    MemoryError". The header is checked against the bytes the file holds, first."""
    file = write_raw(tmp_path / "mine.npz", arrays())
    _claim_huge_shape(file, key)
    with pytest.raises(DataError) as info:
        npz.load_npz(file)
    line = str(info.value)
    assert line.startswith(f"{file}: the header of {key!r} claims a ") and "(1000000000000," in line
    assert "truncated or corrupt" in line and "write it again" in line
    res = invoke_main(
        "run", "--method", "krr", "--dataset", str(file), "--results-dir", str(tmp_path / "r")
    )
    assert res.exit_code == DataError.exit_code and "internal error" not in res.output


def test_a_folder_npy_header_claiming_a_huge_shape_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    for key, value in arrays().items():
        np.save(
            folder / f"{key}.npy",
            np.asarray(value, dtype=str) if isinstance(value, list) else np.asarray(value),
        )
    raw = (folder / "labels.npy").read_bytes()
    header_len = int.from_bytes(raw[8:10], "little")
    header = raw[10 : 10 + header_len].decode("latin1").replace("(108,)", "(999999999999,)")
    header = header.rstrip(" \n")[: header_len - 1].ljust(header_len - 1) + "\n"
    (folder / "labels.npy").write_bytes(raw[:10] + header.encode("latin1") + raw[10 + header_len :])
    with pytest.raises(
        DataError,
        match=r"labels.npy: the header of 'labels' claims a int64 array "
        r"of shape \(999999999999,\)",
    ):
        npz.load_npz(folder)
