"""A tiny third-party method: identity embedding and KRR prototypes with fixed hyperparameters
(no search), so that a board run on ``toy`` takes a second."""

from zslbench.hookspecs import hookimpl
from zslbench.methods import MethodSpec


@hookimpl
def zslbench_methods():
    return [
        MethodSpec(
            "board-demo",
            model="prototype",
            components={"embedder": "identity", "regressor": "krr"},
            params={"regressor": {"alpha": 0.1, "width": 1.0}},
            paper_name="board demo (third-party)",
        )
    ]
