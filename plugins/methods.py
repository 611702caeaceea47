"""The paper's method and the baselines of its ablation (Table 3), as compositions.

| method  | embedder | regressor | paper's name |
| ------- | -------- | --------- | ------------ |
| bt-gp   | bt       | gp        | L_BT + GP (ours) |
| t-gp    | t        | gp        | L_T + GP |
| gp      | identity | gp        | GP |
| krr     | identity | krr       | KRR |
| bt-krr  | bt       | krr       | L_BT + KRR |

All use the ``clip`` preprocessor (clip at 7, scale to [0, 1]) and the ``gamma`` calibrator, as in
the paper. Component defaults live with the components (``plugins/embedders.py`` etc.).
"""

from __future__ import annotations

from zslbench.hookspecs import hookimpl
from zslbench.methods import Citation, MethodSpec
from zslbench_plugins.citations import CITATIONS

METHODS = [
    MethodSpec(
        "bt-gp",
        model="prototype",
        components={"embedder": "bt", "regressor": "gp"},
        paper_name="L_BT + GP (ours)",
        description="Class-balanced triplet embedding + per-dimension GP prototypes (Ye et al. 2022)",
    ),
    MethodSpec(
        "t-gp",
        model="prototype",
        components={"embedder": "t", "regressor": "gp"},
        paper_name="L_T + GP",
        description="Plain triplet embedding + per-dimension GP prototypes (ablation)",
    ),
    MethodSpec(
        "gp",
        model="prototype",
        components={"embedder": "identity", "regressor": "gp"},
        paper_name="GP",
        description="GP prototypes on the raw feature space (ablation)",
    ),
    MethodSpec(
        "krr",
        model="prototype",
        components={"embedder": "identity", "regressor": "krr"},
        paper_name="KRR",
        description="Kernel ridge regression prototypes on the raw feature space (ablation)",
    ),
    MethodSpec(
        "bt-krr",
        model="prototype",
        components={"embedder": "bt", "regressor": "krr"},
        paper_name="L_BT + KRR",
        description="Class-balanced triplet embedding + kernel ridge regression (ablation)",
    ),
]


@hookimpl
def zslbench_methods() -> list[MethodSpec]:
    return list(METHODS)


@hookimpl
def zslbench_citations() -> list[Citation]:
    """Every built-in method's citation (``plugins/citations.py`` says why they live apart)."""
    return list(CITATIONS)
