"""Dense layers whose CPU matrix products go through oneDNN, for the built-in torch methods.

Why: PyTorch's CPU wheels do float32 ``mm``/``addmm`` in MKL, and MKL picks its kernel by CPU
vendor: on an AMD CPU with AVX-512 (Zen 4, Zen 5) it runs the AVX2 kernels. oneDNN, also inside
every x86 wheel, picks its kernel by the CPU's features. On a 2-core AMD EPYC (family 26, AVX-512,
torch 2.13.0+cpu) a (645 x 1024) @ (1024 x 2048) product took 4.4 ms in oneDNN against 9.8 ms in
MKL, about 440 against 200 GFLOP/s (``benchmarks/profile_cnzsl.py`` prints both rates). On Intel CPUs both
libraries run the same instruction set; on an AVX2-only CPU both run AVX2.

:func:`linear` is ``torch.nn.functional.linear`` with the three products of a training step
(forward, input gradient, weight gradient) done by oneDNN's ``_linear_pointwise`` when the
tensors are float32 on the CPU and this torch has the operator; otherwise (another device or
dtype, a torch without oneDNN, oneDNN switched off with ``torch.backends.mkldnn.enabled``) it is
``F.linear`` itself. The two libraries sum in another order, so the results agree to float
rounding (~1e-7 relative), not bit for bit; which one ran is fixed by the torch build and the
device, both of which every record holds. oneDNN's products are deterministic: the same inputs
and thread count give the same bits.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
import torch.nn.functional as F


@functools.cache
def _onednn_op() -> Any | None:
    """oneDNN's dense product ``_linear_pointwise(x, w, b, "none", [], "") = x w^T + b``, or
    None where this torch lacks it (built without oneDNN, another CPU architecture)."""
    if not torch.backends.mkldnn.is_available():
        return None
    try:
        op = torch.ops.mkldnn._linear_pointwise
    except (AttributeError, RuntimeError):
        return None
    return op if _works(op) else None


def _works(op: Any) -> bool:
    """Whether ``op`` computes a known product. Any error means no: a build can name the operator
    and register no CPU kernel for it (``NotImplementedError``), or oneDNN can refuse the CPU
    (``RuntimeError``); the layer then falls back to ``F.linear`` rather than fail a fit."""
    try:
        out = op(torch.ones(2, 3), torch.ones(4, 3), None, "none", [], "")
    except Exception:
        return False
    return isinstance(out, torch.Tensor) and bool(torch.equal(out, torch.full((2, 4), 3.0)))


def _uses_onednn(*tensors: torch.Tensor) -> bool:
    return (
        torch.backends.mkldnn.enabled
        and all(t.device.type == "cpu" and t.dtype == torch.float32 for t in tensors)
        and all(t.numel() > 0 for t in tensors)
        and _onednn_op() is not None
    )


def _product(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """``x @ w.T (+ b)`` in oneDNN (strided views are read as they are, without a copy)."""
    op = _onednn_op()
    assert op is not None
    return op(x, w, b, "none", [], "")


class _Linear(torch.autograd.Function):
    """``x w^T + b`` with all three products in oneDNN; gradients only for the inputs that need
    one (a layer fed by data needs no input gradient)."""

    @staticmethod
    def forward(
        ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None
    ) -> torch.Tensor:
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        return _product(x, weight, bias)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, weight = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad
        grad = grad.contiguous()
        grad_x = _product(grad, weight.t()) if need_x else None  # grad @ weight
        grad_w = _product(grad.t(), x.t()) if need_w else None  # grad^T @ x
        grad_b = grad.sum(0) if need_b and ctx.has_bias else None
        return grad_x, grad_w, grad_b


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """``F.linear(x, weight, bias)`` for a 2-d ``x``, its products in oneDNN where that applies
    (module docstring)."""
    tensors = (x, weight) if bias is None else (x, weight, bias)
    if x.dim() != 2 or not _uses_onednn(*tensors):
        return F.linear(x, weight, bias)
    return _Linear.apply(x, weight, bias)


__all__ = ["linear"]
