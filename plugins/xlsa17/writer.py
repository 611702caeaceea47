"""Write any loaded dataset in the xlsa17 layout: ``<folder>/res101.mat`` + ``att_splits.mat``.

Why: official code of the methods we compare with reads exactly these two files. Writing a
stand-in (``toy``, ``synth-apy``) or a dataset built on a real split file in this layout lets
that code and zslbench run on the same bytes, side by side. (For zslbench's own format,
``zslbench_plugins.npz.save_dataset``.)

The layout is the one :mod:`zslbench_plugins.xlsa17.loader` reads: ``features`` d x N,
``labels`` N x 1 (1-based), ``att`` attr x classes, ``trainval_loc`` / ``test_seen_loc`` /
``test_unseen_loc`` 1-based column vectors, and, when the dataset has validation classes, V2-style
``train_loc`` / ``val_loc`` (subsets of trainval: the images of the other seen classes and of the
validation classes), plus ``allclasses_names``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.io

from zslbench.data.dataset import ZSLData

RES101 = "res101.mat"
ATT_SPLITS = "att_splits.mat"


def save_xlsa17(
    data: ZSLData, folder: str | Path, *, dtype: type = np.float32
) -> tuple[Path, Path]:
    """Write ``data`` as ``folder/res101.mat`` and ``folder/att_splits.mat``; return both paths.

    ``dtype`` is the stored feature type: float32 (half the size of xlsa17's float64) keeps every
    value of a float32 dataset exactly. Loading the folder back (as an xlsa17 dataset's folder,
    e.g. ``<data-dir>/APY``) gives the same content fingerprint as ``data``.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    features = np.asarray(data.features, dtype=dtype)
    labels1 = np.asarray(data.labels, dtype=np.int64) + 1
    res = {"features": features.T, "labels": labels1.reshape(-1, 1).astype(np.float64)}

    def loc(idx: np.ndarray) -> np.ndarray:
        # integers, as in the released files (uint16 there): the official codes index with
        # ``loc.squeeze() - 1`` directly, which a float array cannot do
        one_based = np.sort(np.asarray(idx, dtype=np.int64)) + 1
        kind = (
            np.uint16
            if one_based.size == 0 or one_based.max() <= np.iinfo(np.uint16).max
            else np.uint32
        )
        return one_based.reshape(-1, 1).astype(kind)

    att = {
        "att": np.asarray(data.attributes, dtype=np.float64).T,
        "trainval_loc": loc(data.trainval_idx),
        "test_seen_loc": loc(data.test_seen_idx),
        "test_unseen_loc": loc(data.test_unseen_idx),
    }
    if data.val_classes is not None and len(data.val_classes):
        trainval = np.asarray(data.trainval_idx)
        in_val = np.isin(np.asarray(data.labels)[trainval], data.val_classes)
        att["val_loc"], att["train_loc"] = loc(trainval[in_val]), loc(trainval[~in_val])
    names = data.class_names or [f"class{c:03d}" for c in range(1, data.n_classes + 1)]
    cells = np.empty((len(names), 1), dtype=object)
    for i, name in enumerate(names):
        cells[i, 0] = np.array([str(name)])
    att["allclasses_names"] = cells
    res_path, att_path = folder / RES101, folder / ATT_SPLITS
    scipy.io.savemat(str(res_path), res, format="5", oned_as="column")
    scipy.io.savemat(str(att_path), att, format="5", oned_as="column")
    return res_path, att_path


__all__ = ["save_xlsa17"]
