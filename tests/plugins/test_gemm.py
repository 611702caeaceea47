"""zslbench_plugins.gemm: F.linear with oneDNN's products, equal to it up to float rounding."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from zslbench_plugins import gemm

needs_onednn = pytest.mark.skipif(
    gemm._onednn_op() is None, reason="this torch has no oneDNN dense product (_linear_pointwise)"
)


def _inputs(dtype: torch.dtype = torch.float32, transposed: bool = False) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(96, 40, generator=gen, dtype=dtype)
    if transposed:  # a strided view, as the weight gradient's operands are
        x = torch.randn(40, 96, generator=gen, dtype=dtype).t()
    w = torch.randn(24, 40, generator=gen, dtype=dtype)
    b = torch.randn(24, generator=gen, dtype=dtype)
    return [t.requires_grad_() for t in (x, w, b)]


def _run(fn, tensors: list[torch.Tensor], bias: bool = True) -> list[torch.Tensor]:
    x, w, b = tensors
    out = fn(x, w, b if bias else None)
    out.backward(torch.linspace(-1.0, 1.0, out.numel()).reshape(out.shape).to(out.dtype))
    grads = [t.grad for t in (x, w, b) if t.grad is not None]
    results = [out.detach().clone(), *(g.clone() for g in grads)]
    for t in tensors:
        t.grad = None
    return results


@needs_onednn
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_and_its_gradients_equal_f_linear_up_to_float_rounding(transposed, bias):
    tensors = _inputs(transposed=transposed)
    ours, ref = _run(gemm.linear, tensors, bias), _run(F.linear, tensors, bias)
    assert len(ours) == len(ref) == (4 if bias else 3)
    for a, b in zip(ours, ref, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


@needs_onednn
def test_linear_runs_in_onednn_on_float32_cpu_tensors(monkeypatch):
    calls = []
    op = gemm._onednn_op()
    monkeypatch.setattr(gemm, "_onednn_op", lambda: lambda *a: calls.append(1) or op(*a))
    _run(gemm.linear, _inputs())
    assert len(calls) == 3  # the forward product and the two gradients


@needs_onednn
def test_only_the_gradients_that_are_needed_are_computed(monkeypatch):
    calls = []
    op = gemm._onednn_op()
    monkeypatch.setattr(gemm, "_onednn_op", lambda: lambda *a: calls.append(1) or op(*a))
    x, w, b = _inputs()
    gemm.linear(x.detach(), w, b).sum().backward()  # data in: no input gradient
    assert len(calls) == 2 and x.grad is None and w.grad is not None and b.grad is not None


@needs_onednn
def test_the_same_inputs_give_the_same_bits():
    a, b = _run(gemm.linear, _inputs()), _run(gemm.linear, _inputs())
    assert all(torch.equal(p, q) for p, q in zip(a, b, strict=True))


def test_elsewhere_it_is_f_linear_bit_for_bit(monkeypatch):
    # float64 (oneDNN's product is float32 only), oneDNN switched off, or a torch without it
    assert all(
        torch.equal(p, q)
        for p, q in zip(
            _run(gemm.linear, _inputs(torch.float64)),
            _run(F.linear, _inputs(torch.float64)),
            strict=True,
        )
    )
    with torch.backends.mkldnn.flags(enabled=False):
        assert all(
            torch.equal(p, q)
            for p, q in zip(_run(gemm.linear, _inputs()), _run(F.linear, _inputs()), strict=True)
        )
    monkeypatch.setattr(gemm, "_onednn_op", lambda: None)
    assert all(
        torch.equal(p, q)
        for p, q in zip(_run(gemm.linear, _inputs()), _run(F.linear, _inputs()), strict=True)
    )


def _raises(error: type[Exception]):
    def op(*args):
        raise error("no kernel for this backend")

    return op


def test_an_operator_that_fails_or_computes_wrongly_is_not_used():
    assert not gemm._works(_raises(NotImplementedError))  # named, no CPU kernel registered
    assert not gemm._works(_raises(RuntimeError))
    assert not gemm._works(lambda *a: torch.zeros(2, 4))
    assert not gemm._works(lambda *a: None)
    assert gemm._works(lambda x, w, b, *rest: x @ w.t())
