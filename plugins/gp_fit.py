"""Exact type-II maximum likelihood for a bank of independent zero-mean RBF Gaussian processes.

Every output ``i`` (one latent dimension) has its own lengthscale ``l_i``, outputscale ``s_i`` and
noise ``v_i``, chosen to maximise the exact log marginal likelihood (Rasmussen & Williams 2006,
eq. 2.30; the paper's eq. 6 with the noise inside the log-determinant)::

    log p(y_i) = -1/2 y_i^T C_i^-1 y_i - 1/2 log|C_i| - n/2 log 2 pi,
    C_i = s_i K(l_i) + v_i I,    K(l)_jk = exp(-|x_j - x_k|^2 / (2 l^2)),

under GPyTorch's default constraints (``l, s > 0`` and ``v >= 1e-4``, the ``GaussianLikelihood``
noise floor), i.e. the objective that GPyTorch's ``ExactMarginalLogLikelihood`` (which divides by
n) and the paper's Adam schedule climb. The problem is separable: output ``i`` only sees
``(l_i, s_i, v_i)``.

Why not Adam (the paper's schedule: lr 0.01, 1000 steps)? Each step needs a Cholesky factorisation
and its backward pass per output, ~40-80 ms for 645 classes on one CPU core, so 64 latent
dimensions take about an hour; and on small problems 1000 steps of size ~0.01 in softplus space
stop short of the optimum. We solve the same problem in two exact stages:

1. **Shared eigendecompositions (global search).** For a fixed lengthscale, ``K = Q diag(lam)
   Q^T`` is shared by every output; rotating all targets once (``z = Q^T y``) makes the likelihood
   of any ``(s, v)`` an ``O(n)`` sum::

       log p = -1/2 sum_j z_j^2 / (s lam_j + v) - 1/2 sum_j log(s lam_j + v) - n/2 log 2 pi.

   With ``s = tau`` and ``v = tau eta`` the best ``tau`` for a given ``eta`` is closed-form,
   ``tau = max(sum_j z_j^2 / (lam_j + eta) / n, 1e-4 / eta)`` (the ``max`` enforces the noise
   floor; the objective is unimodal in ``tau``), so a dense ``eta`` grid for all outputs is one
   matrix product: (s, v) are profiled out exactly. Every output keeps its best point on a
   log-lengthscale grid (step ``LOG_LENGTHSCALE_STEP``) over the search box. From there one Newton
   step, with the exact gradient and Hessian computed in the same eigenbasis (``O(n^2)`` per
   output), predicts its optimal lengthscale; predictions are rounded to a lattice of step
   ``LATTICE_STEP`` = 0.02 and (s, v) are profiled again at each lattice value used (one more
   shared eigendecomposition each). An output moves there only if its exact objective improves.
2. **Projected Newton (local refinement).** Batched Newton ascent on ``(log l, log s, log v)``
   from that start, with exact derivatives from one Cholesky factorisation per output and step,
   the box constraints, an Armijo backtracking line search (every accepted step increases the
   exact objective) and the stopping rule "predicted gain of one more Newton step < ``tol`` nats
   per data point". Small steps take the gradient only and a BFGS update of the last exact
   Hessian (half the cost; superlinear), large ones a fresh exact Hessian. Stopping needs the
   gradient to vanish, so the fixed point is that of exact Newton.

Every value compared is an exact evaluation of the same objective, so the result can only match or
beat the best grid point; the tests check that GPyTorch's own gradient vanishes there, that no
point of a dense brute-force grid is better, and that the objective is at least that of the Adam
schedule. Everything runs in float64 (the noise often sits at its 1e-4 floor while ``s`` is O(1),
which float32 factorises poorly) on the tensors' device. On the CPU, independent work items
(lengthscales, chunks of outputs) run on parallel threads with one BLAS thread each (see
``worker_map``); the results do not depend on the schedule.

The search box (``LENGTHSCALE_*_FACTOR``, ``LOG_OUTPUTSCALE_SPAN``) is the one place where this
differs from GPyTorch's open domain: an optimum beyond it (where the kernel is numerically white
noise or a constant plus a quadratic form) is reported as ``RBFFit.at_bound``. Adam's 1000 steps of
~0.01 in softplus space cannot leave ``l, s <= ~11`` anyway.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

#: GPyTorch's ``GaussianLikelihood`` default noise constraint is ``GreaterThan(1e-4)``.
NOISE_FLOOR = 1e-4

_LOG_2PI = math.log(2.0 * math.pi)

#: Lengthscale search box, as multiples of the inputs' own distances (so it is scale-free). Below a
#: quarter of the 1st-percentile pairwise distance the RBF kernel is the identity to within
#: exp(-8) on 99% of pairs (a white-noise model, flat in the lengthscale); above 100x the largest
#: distance it is a constant plus a quadratic form to within 5e-5, and larger values only add
#: round-off. Outputs that end on this box are counted in ``RBFFit.at_bound``.
LENGTHSCALE_LOW_FACTOR = 0.25
LENGTHSCALE_HIGH_FACTOR = 100.0
#: Stage-1 grid spacing in log-lengthscale (adjacent kernels differ by a factor 1.5 in l).
LOG_LENGTHSCALE_STEP = math.log(1.5)
#: Stage-1 grid over log(noise / outputscale): start, stop, step.
LOG_ETA_GRID = (-23.0, 12.0, 0.25)
#: Outputscale box: +-30 in log around the output's mean square (keeps s finite on flat ridges).
LOG_OUTPUTSCALE_SPAN = 30.0
#: Stage-1 lattice spacing in log-lengthscale for the refined shared eigenbases.
LATTICE_STEP = 0.02
#: A Newton step larger than this (max over log-parameters) gets a fresh Hessian, not BFGS.
_FRESH_HESSIAN_STEP = 0.3
#: Bytes one (chunk, n, n) float64 work tensor may take in stage 2 (bounds peak memory).
_STAGE2_BYTES = 48 * 2**20
#: Bytes of (lengthscales, n, n) float64 work that one batch of stage 1 may hold.
_STAGE1_BYTES = 192 * 2**20


@dataclass
class RBFFit:
    """Per-output hyperparameters (k,) and the evidence that they are an optimum.

    ``log_marginal_likelihood`` is log p(y_i) (not divided by n); ``n_newton`` counts the accepted
    stage-2 Newton steps per output; ``converged`` says whether the predicted
    gain of a further step fell below ``tol``; ``at_bound`` flags outputs whose lengthscale or
    outputscale sits on the search box (the noise floor is GPyTorch's own constraint, not counted).
    """

    lengthscale: torch.Tensor
    outputscale: torch.Tensor
    noise: torch.Tensor
    log_marginal_likelihood: torch.Tensor
    n_newton: torch.Tensor
    converged: torch.Tensor
    at_bound: torch.Tensor


def squared_distances(x1: torch.Tensor, x2: torch.Tensor | None = None) -> torch.Tensor:
    """Pairwise squared Euclidean distances, computed the way GPyTorch computes them.

    The inputs are centred first (distances are translation invariant, and centring limits the
    round-off of the ``|a|^2 + |b|^2 - 2 a.b`` expansion); a self-distance matrix is made exactly
    symmetric with a zero diagonal so that ``K`` is exactly symmetric with a unit diagonal.
    """
    same = x2 is None
    x2 = x1 if x2 is None else x2
    shift = x1.mean(dim=0, keepdim=True)
    a, b = x1 - shift, x2 - shift
    d2 = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * (a @ b.T)
    d2 = d2.clamp_min(0.0)
    if same:
        d2 = 0.5 * (d2 + d2.T)
        d2.fill_diagonal_(0.0)
    return d2


def log_marginal_likelihood(
    x: torch.Tensor,
    y: torch.Tensor,
    lengthscale: torch.Tensor,
    outputscale: torch.Tensor,
    noise: torch.Tensor,
) -> torch.Tensor:
    """Exact log p(y_i) of every output (k,), by Cholesky factorisation in float64.

    ``x`` (n, a) inputs, ``y`` (k, n) targets, hyperparameters (k,). Not divided by n.
    """
    d2 = squared_distances(x.to(torch.float64))
    y = y.to(torch.float64)
    theta = torch.stack([lengthscale.log(), outputscale.log(), noise.log()], dim=1).to(y)
    return torch.cat(
        [_evaluate(d2, y[sl], theta[sl], order=0)[0] for sl in _chunks(y.shape[0], d2.shape[0])]
    )


def posterior_mean(
    x: torch.Tensor,
    y: torch.Tensor,
    x_new: torch.Tensor,
    lengthscale: torch.Tensor,
    outputscale: torch.Tensor,
    noise: torch.Tensor,
    pmap: Callable[..., list[Any]],
) -> torch.Tensor | None:
    """Posterior means (k, m) at ``x_new`` (m, a) of the k zero-mean GPs with targets ``y`` (k, n)
    at ``x`` (n, a): ``k_*ᵀ C_i⁻¹ y_i`` (R&W eq. 2.25, the paper's eq. 7), one Cholesky factor per
    output, float64.

    Why not GPyTorch's prediction (the tests check that the two agree to 1e-10): at these sizes
    its lazy-tensor machinery costs more than the arithmetic, and its first call in a process
    imports ``torch._refs`` (0.4 s on the 2-core CPU, inside every run's train time). The
    distances are those of the joint point set, as GPyTorch's joint covariance takes them. Returns ``None`` where a kernel matrix is not numerically positive
    definite, so that the caller can take GPyTorch's jittered factorisation instead. ``pmap``
    (one of ``worker_map``'s) runs the chunks of outputs; each is computed alone, so the result
    does not depend on it.
    """
    n = x.shape[0]
    d2_all = squared_distances(torch.cat([x, x_new]))
    d2, d2_new = d2_all[:n, :n], d2_all[n:, :n]

    def chunk(sl: slice) -> torch.Tensor | None:
        scale = outputscale[sl, None, None]
        minus_half_inv_l2 = (-0.5 / lengthscale[sl] ** 2)[:, None, None]
        c = scale * torch.exp(d2 * minus_half_inv_l2)
        c.diagonal(dim1=-2, dim2=-1).add_(noise[sl, None])
        chol, info = torch.linalg.cholesky_ex(c)
        if bool(info.any()):
            return None
        alpha = torch.cholesky_solve(y[sl, :, None], chol)
        return ((scale * torch.exp(d2_new * minus_half_inv_l2)) @ alpha)[..., 0]

    means = pmap(chunk, _chunks(y.shape[0], n + x_new.shape[0]))
    return None if any(m is None for m in means) else torch.cat(means)


def fit_rbf_marginal_likelihood(
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    noise_floor: float = NOISE_FLOOR,
    tol: float = 1e-9,
    max_newton: int = 100,
) -> RBFFit:
    """Maximise log p(y_i) over (lengthscale, outputscale, noise) for every output i.

    ``x`` (n, a) inputs shared by all outputs, ``y`` (k, n) targets (one row per output), on any
    device. ``tol`` bounds the predicted gain of one more Newton step, in nats per data point (the
    scale of GPyTorch's ``ExactMarginalLogLikelihood``, which divides by n).
    """
    x = x.to(torch.float64)
    y = y.to(torch.float64)
    n, k = x.shape[0], y.shape[0]
    with worker_map(x.device) as pmap:
        d2 = squared_distances(x)
        lo, hi = _search_box(d2, y, noise_floor)
        theta0, f0, g0, h0 = _grid_start(d2, y, lo, hi, noise_floor, pmap)
        chunks = _chunks(k, n)
        results = pmap(
            lambda sl: _newton(
                d2, y[sl], theta0[sl], (f0[sl], g0[sl], h0[sl]), lo[sl], hi[sl], tol * n, max_newton
            ),
            chunks,
        )
    theta = torch.cat([r[0] for r in results])
    value = torch.cat([r[1] for r in results])
    steps = torch.cat([r[2] for r in results])
    converged = torch.cat([r[3] for r in results])
    edge = 1e-9
    at_bound = ((theta[:, :2] <= lo[:, :2] + edge) | (theta[:, :2] >= hi[:, :2] - edge)).any(1)
    return RBFFit(
        lengthscale=theta[:, 0].exp(),
        outputscale=theta[:, 1].exp(),
        noise=theta[:, 2].exp(),
        log_marginal_likelihood=value,
        n_newton=steps,
        converged=converged,
        at_bound=at_bound,
    )


# --------------------------------------------------------------------------------------------
# Derivatives. Parameters theta = (log l, log s, log v); C = s K + v I; R = D^2 / l^2;
# P = dC/dlog l = s K o R; alpha = C^-1 y. Then
#   g_i  = 1/2 alpha^T C_i alpha - 1/2 tr(C^-1 C_i)
#   H_ij = -alpha^T C_i C^-1 C_j alpha + 1/2 alpha^T C_ij alpha
#          + 1/2 tr(C^-1 C_i C^-1 C_j) - 1/2 tr(C^-1 C_ij)
# with C_l = P, C_s = sK = C - vI, C_v = vI, C_ll = P o R - 2P, C_ls = P, C_ss = sK, C_vv = vI and
# C_lv = C_sv = 0. Both routes below (Cholesky, shared eigenbasis) reduce to the same scalars.


def _gradient(n, v, y_a, a_a, tr_ci, a_p_a, tr_cip):
    """g (..., 3) from the scalars (each (...)): the data term and the trace term of each component
    are stacked, so that the halving and the difference are one operation each."""
    v_a_a = v * a_a
    v_tr_ci = v * tr_ci
    data = torch.stack([a_p_a, y_a - v_a_a, v_a_a], dim=-1)
    trace = torch.stack([tr_cip, n - v_tr_ci, v_tr_ci], dim=-1)
    return 0.5 * data - 0.5 * trace


def _hessian(n, v, g, q, a_p_a, a_pr_a, tr_cip, tr_cipr, tr_ci, tr_ll, tr_l_ci, tr_ci_ci):
    """Assemble H (..., 3, 3) from the scalars; ``q[..., i, j] = (C_i alpha)^T C^-1 (C_j alpha)``."""
    # tr(M_i M_j) with M_l = C^-1 P, M_s = C^-1 sK = I - v C^-1, M_v = v C^-1.
    v_tr_ci = v * tr_ci
    t_vv = v * v * tr_ci_ci
    t_lv = v * tr_l_ci
    t_ls = tr_cip - t_lv
    t_ss = n - 2.0 * v_tr_ci + t_vv
    t_sv = v_tr_ci - t_vv
    # C_ll = P o R - 2P; C_ls = C_l, C_ss = C_s and C_vv = C_v give the gradient's own entries.
    c_ll = 0.5 * (a_pr_a - 2.0 * a_p_a) - 0.5 * (tr_cipr - 2.0 * tr_cip)
    g_l, g_s, g_v = g.unbind(-1)
    zero = torch.zeros_like(g_l)
    rows = torch.stack(
        [
            tr_ll,
            t_ls,
            t_lv,
            t_ls,
            t_ss,
            t_sv,
            t_lv,
            t_sv,
            t_vv,
            c_ll,
            g_l,
            zero,
            g_l,
            g_s,
            zero,
            zero,
            zero,
            g_v,
        ],
        dim=-1,
    ).unflatten(-1, (2, 3, 3))
    traces, second = rows.unbind(-3)
    return -q + second + 0.5 * traces


def _fdot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Batched Frobenius inner product sum(a o b) over the last two dims, without a temporary."""
    m = a.shape[0]
    return (a.reshape(m, 1, -1) @ b.reshape(m, -1, 1)).view(m)


def _evaluate(d2: torch.Tensor, y: torch.Tensor, theta: torch.Tensor, order: int):
    """log p(y) (b,) and, for ``order`` 1 or 2, gradient (b, 3) and Hessian (b, 3, 3).

    One Cholesky factorisation per output; ``f`` is ``-inf`` where ``C`` is not numerically
    positive definite (the line search then rejects the point). Full-size temporaries are kept
    few because on a CPU these memory-bound passes cost as much as the factorisation itself.
    """
    b, n = y.shape
    v = theta[:, 2].exp()
    inv_l2 = torch.exp(-2.0 * theta[:, 0])  # R = D^2 / l^2 = inv_l2 * D^2
    # s K = exp(log s - R / 2), built in one pass.
    c = torch.addcmul(theta[:, 1, None, None], d2[None], (-0.5 * inv_l2)[:, None, None]).exp_()
    c.diagonal(dim1=-2, dim2=-1).add_(v[:, None])
    chol, info = torch.linalg.cholesky_ex(c)
    ok = info == 0
    if not bool(ok.all()):
        chol = torch.where(ok[:, None, None], chol, torch.eye(n, dtype=c.dtype, device=c.device))
    alpha = torch.cholesky_solve(y[..., None], chol)[..., 0]
    y_a = (y * alpha).sum(-1)
    logdet = 2.0 * chol.diagonal(dim1=-2, dim2=-1).log().sum(-1)
    f = torch.where(ok, -0.5 * y_a - 0.5 * logdet - 0.5 * n * _LOG_2PI, -math.inf)
    if order == 0:
        return f, None, None
    # P = inv_l2 * (sK o D^2); we keep pd = sK o D^2 and carry the factor in the scalars.
    c.diagonal(dim1=-2, dim2=-1).sub_(v[:, None])
    pd = c.mul_(d2)
    ci = torch.cholesky_inverse(chol)
    if not ci.is_contiguous() and ci.mT.is_contiguous():
        ci = ci.mT  # LAPACK returns column-major; C^-1 is symmetric, so its transpose is a view
    tr_ci = ci.diagonal(dim1=-2, dim2=-1).sum(-1)
    tr_cip = inv_l2 * _fdot(ci, pd)
    p_alpha = inv_l2[:, None] * (pd @ alpha[..., None])[..., 0]
    a_p_a = (alpha * p_alpha).sum(-1)
    a_a = (alpha * alpha).sum(-1)
    g = _gradient(n, v, y_a, a_a, tr_ci, a_p_a, tr_cip)
    if order == 1:
        return f, g, None
    inv_l4 = inv_l2 * inv_l2
    prd = pd * d2  # P o R = inv_l2^2 * (sK o D^2 o D^2)
    tr_cipr = inv_l4 * _fdot(ci, prd)
    a_pr_a = inv_l4 * (alpha * (prd @ alpha[..., None])[..., 0]).sum(-1)
    del prd
    m = ci @ pd  # C^-1 P / inv_l2
    tr_ll = inv_l4 * _fdot(m, m.mT.contiguous())
    tr_l_ci = inv_l2 * _fdot(m, ci)
    tr_ci_ci = _fdot(ci, ci)
    w = torch.stack([p_alpha, y - v[:, None] * alpha, v[:, None] * alpha], dim=2)  # (b, n, 3)
    q = w.transpose(1, 2) @ torch.cholesky_solve(w, chol)
    h = _hessian(n, v, g, q, a_p_a, a_pr_a, tr_cip, tr_cipr, tr_ci, tr_ll, tr_l_ci, tr_ci_ci)
    return f, g, h


def _evaluate_spectral(lam, q, kr, krr, z, theta):
    """f, g, H of every (lengthscale, output) pair, from kernels ``K = Q diag(lam) Q^T`` shared by
    all outputs.

    Per lengthscale (leading dim B): ``lam`` (B, n), ``q`` (B, n, n), ``kr = Q^T (K o R) Q`` (B, n, n)
    in K's eigenbasis and ``krr = K o R o R`` (B, n, n) in the original basis (only its diagonal
    in the eigenbasis and one quadratic form are needed, which saves a matrix product); ``z = Q^T
    y`` (B, k, n); ``theta`` (k, 3) or (B, k, 3), whose lengthscale must be that of the basis for
    the pairs the caller keeps. In K's eigenbasis C^-1 is diagonal, so each pair costs O(n^2) (the
    trace ``tr(C^-1 P C^-1 P)``) instead of a factorisation. Returns (B, k), (B, k, 3), (B, k, 3, 3).
    """
    n = lam.shape[-1]
    s = theta[..., 1].exp()
    v = theta[..., 2].exp()
    w = (s[..., None] * lam[:, None, :] + v[..., None]).reciprocal()  # eigenvalues of C^-1
    at = z * w  # alpha in the eigenbasis
    y_a = (z * at).sum(-1)
    f = -0.5 * y_a + 0.5 * w.log().sum(-1) - 0.5 * n * _LOG_2PI
    a_a = (at * at).sum(-1)
    tr_ci = w.sum(-1)
    dkr = kr.diagonal(dim1=-2, dim2=-1)[:, None, :]
    dkrr = (q * (krr @ q)).sum(-2)[:, None, :]  # diag(Q^T (K o R o R) Q)
    kr_at = at @ kr  # (K o R) alpha in the eigenbasis (kr is symmetric)
    alpha = at @ q.mT  # alpha in the original basis
    # The five O(n) contractions of each pair, as one product and one sum.
    terms = torch.stack(
        [at * kr_at, alpha * (alpha @ krr), w * dkr, w * dkrr, w * w * dkr], dim=-2
    ).sum(-1)
    s_terms = s[..., None] * terms
    a_p_a, a_pr_a, tr_cip, tr_cipr, tr_l_ci = s_terms.unbind(-1)
    g = _gradient(n, v, y_a, a_a, tr_ci, a_p_a, tr_cip)
    tr_ll = s * s * (w * (w @ (kr * kr))).sum(-1)
    tr_ci_ci = (w * w).sum(-1)
    vec = torch.stack([s[..., None] * kr_at, z - v[..., None] * at, v[..., None] * at], dim=-2)
    qf = (vec * w[..., None, :]) @ vec.mT
    h = _hessian(n, v, g, qf, a_p_a, a_pr_a, tr_cip, tr_cipr, tr_ci, tr_ll, tr_l_ci, tr_ci_ci)
    return f, g, h


# --------------------------------------------------------------------------------------------
# Stage 1: shared-eigendecomposition grid


def _search_box(d2: torch.Tensor, y: torch.Tensor, noise_floor: float):
    """Lower and upper bounds (k, 3) on (log l, log s, log v)."""
    n, k = d2.shape[0], y.shape[0]
    opts = {"dtype": torch.float64, "device": d2.device}
    iu = torch.triu_indices(n, n, offset=1, device=d2.device)
    dist = d2[iu[0], iu[1]].sqrt()
    dist = dist[dist > 0]
    if dist.numel() == 0:  # fewer than two distinct inputs: every lengthscale is the same model
        dist = torch.ones(1, **opts)
    log_low = math.log(LENGTHSCALE_LOW_FACTOR * float(torch.quantile(dist, 0.01)))
    log_high = math.log(LENGTHSCALE_HIGH_FACTOR * float(dist.max()))
    scale = (y * y).mean(1).clamp_min(1e-30).log()
    log_floor = math.log(noise_floor)
    lo = torch.stack(
        [
            torch.full((k,), log_low, **opts),
            scale - LOG_OUTPUTSCALE_SPAN,
            torch.full((k,), log_floor, **opts),
        ],
        1,
    )
    hi = torch.stack(
        [
            torch.full((k,), log_high, **opts),
            scale + LOG_OUTPUTSCALE_SPAN,
            (scale + LOG_OUTPUTSCALE_SPAN).clamp_min(log_floor + 1.0),
        ],
        1,
    )
    return lo, hi


def _profile(lam, z2, noise_floor):
    """Best (s, v) for every output at each of B lengthscales, from K's eigenvalues ``lam`` (B, n)
    and the squared rotated targets ``z2`` (B, k, n). Returns exact log p, log s, log v (B, k)."""
    n = lam.shape[-1]
    start, stop, step = LOG_ETA_GRID
    log_eta = torch.arange(start, stop + step / 2, step, dtype=lam.dtype, device=lam.device)
    eta = log_eta.exp()
    last = len(log_eta) - 1
    shifted = lam[..., None] + eta  # (B, n, T)
    s1 = z2 @ shifted.reciprocal()  # (B, k, T)
    tau = torch.maximum(s1 / n, noise_floor / eta)
    val = (
        -0.5 * s1 / tau
        - 0.5 * (n * tau.log() + shifted.log().sum(-2, keepdim=True))
        - 0.5 * n * _LOG_2PI
    )
    j = val.argmax(-1, keepdim=True)
    # Parabola through the best eta and its neighbours; its vertex is evaluated exactly.
    fm, f0, fp = val.gather(-1, torch.cat([j - 1, j, j + 1], -1).clamp(0, last)).unbind(-1)
    j = j[..., 0]
    curv = fm - 2.0 * f0 + fp
    inner = (j > 0) & (j < last) & (curv < 0)
    offset = torch.where(inner, 0.5 * (fm - fp) / torch.where(inner, curv, -1.0), 0.0)
    log_eta_j = log_eta[j]
    log_eta_v = log_eta_j + step * offset.clamp(-1.0, 1.0)
    eta_v = log_eta_v.exp()
    shifted_v = lam[:, None, :] + eta_v[..., None]  # (B, k, n)
    s1_v = (z2 / shifted_v).sum(-1)
    tau_v = torch.maximum(s1_v / n, noise_floor / eta_v)
    val_v = (
        -0.5 * s1_v / tau_v - 0.5 * (n * tau_v.log() + shifted_v.log().sum(-1)) - 0.5 * n * _LOG_2PI
    )
    use_v = val_v > f0
    log_tau = torch.where(use_v, tau_v, tau.gather(-1, j[..., None])[..., 0]).log()
    log_eta_c = torch.where(use_v, log_eta_v, log_eta_j)
    return torch.where(use_v, val_v, f0), log_tau, log_tau + log_eta_c


def _cell_chunks(cells: int, n: int) -> list[slice]:
    """Consecutive batches of lengthscales whose (B, n, n) float64 work fits ``_STAGE1_BYTES``
    (about eight n x n matrices per lengthscale are alive at once in ``_spectral_cells``)."""
    size = max(1, _STAGE1_BYTES // (8 * 8 * n * n))
    return [slice(i, min(i + size, cells)) for i in range(0, cells, size)]


def _eigenbases(d2, log_ls):
    """Eigendecompositions of the RBF kernels at the lengthscales ``log_ls`` (a list of B floats),
    as one batched call: eigenvalues (B, n), eigenvectors (B, n, n)."""
    scale = torch.tensor(
        [-0.5 * math.exp(-2.0 * log_l) for log_l in log_ls], dtype=d2.dtype, device=d2.device
    )
    lam, q = torch.linalg.eigh(torch.exp(d2 * scale[:, None, None]))
    return lam.clamp_min(0.0), q  # K is PSD; eigh's round-off can give -1e-16


def _spectral_cells(d2, log_ls, lam, q, y, theta):
    """Exact f, g, H (spectral route) of every output ``y`` (k, n) with ``theta`` (k, 3) at each of
    the shared lengthscales ``log_ls`` (B floats) with bases ``lam``, ``q``: (B, k), (B, k, 3),
    (B, k, 3, 3). Only the pairs whose ``theta`` carries that lengthscale are meaningful; computing
    all pairs costs O(B k n^2), small next to the O(B n^3) of the bases, and keeps it batched."""
    scale = torch.tensor(
        [math.exp(-2.0 * log_l) for log_l in log_ls], dtype=d2.dtype, device=d2.device
    )
    r = d2 * scale[:, None, None]
    kr = torch.exp(-0.5 * r).mul_(r)
    krr = kr * r
    del r
    kr_q = q.mT @ kr @ q
    return _evaluate_spectral(lam, q, kr_q, krr, y @ q, theta)


def _grid_start(d2, y, lo, hi, noise_floor, pmap):
    """Starting point and exact (f, g, H) there for every output, from shared eigenbases.

    A coarse log-lengthscale grid (global search; at each lengthscale (s, v) are profiled out
    exactly) picks each output's basin. One Newton step from its best grid point predicts its
    optimal lengthscale; those predictions are rounded to a fine lattice (spacing
    ``LATTICE_STEP``), and at each distinct lattice value, shared by the outputs rounded to it,
    (s, v) are profiled again. Each output keeps whichever point has the larger exact objective.
    Lengthscales are handled in batches (``_cell_chunks``): one batched eigendecomposition and
    one set of batched products per batch, not per lengthscale.
    """
    k, n = y.shape
    opts = {"dtype": torch.float64, "device": d2.device}
    log_low, log_high = float(lo[0, 0]), float(hi[0, 0])
    n_grid = max(2, math.ceil((log_high - log_low) / LOG_LENGTHSCALE_STEP) + 1)
    grid = torch.linspace(log_low, log_high, n_grid, dtype=torch.float64, device="cpu").tolist()

    def coarse(sl):
        lam, q = _eigenbases(d2, grid[sl])
        return (lam, q, *_profile(lam, (y @ q).square(), noise_floor))

    parts = pmap(coarse, _cell_chunks(n_grid, n))
    lam_g, q_g, val, log_s, log_v = (torch.cat(col) for col in zip(*parts, strict=True))
    del parts
    # Each output's best grid point (the first, on ties; NaN never wins).
    where = torch.nan_to_num(val, nan=-math.inf).argmax(0)
    ar = torch.arange(k, device=d2.device)
    grid_t = torch.tensor(grid, **opts)
    theta = torch.stack([grid_t[where], log_s[where, ar], log_v[where, ar]], 1)
    # The noise may land a hair below its floor after exp/log round-off: project into the box.
    theta = torch.maximum(torch.minimum(theta, hi), lo)
    used, which = where.unique(return_inverse=True)
    used_l = used.tolist()
    f, g, h = _pairs(d2, [grid[i] for i in used_l], lam_g[used], q_g[used], y, theta, which, pmap)
    del lam_g, q_g
    # Newton's prediction of each output's optimal lengthscale, within one grid step.
    d = _ascent_direction(g, h, theta, lo, hi)[0]
    target = theta[:, 0] + d[:, 0].clamp(-LOG_LENGTHSCALE_STEP, LOG_LENGTHSCALE_STEP)
    target = target.clamp(log_low, log_high)
    cell = torch.round((target - log_low) / LATTICE_STEP).to(torch.long)
    moved = (cell * LATTICE_STEP + log_low - theta[:, 0]).abs() > 0.5 * LATTICE_STEP
    idx = moved.nonzero()[:, 0]
    if idx.numel() == 0:
        return theta, f, g, h
    cells, which = cell[idx].unique(return_inverse=True)
    log_ls = [min(log_low + c * LATTICE_STEP, log_high) for c in cells.tolist()]
    y_m = y[idx]

    def refine(sl):
        lam, q = _eigenbases(d2, log_ls[sl])
        mine = ((which >= sl.start) & (which < sl.stop)).nonzero()[:, 0]
        local = which[mine] - sl.start
        # Each output profiled in its own cell's basis only.
        z = (y_m[mine] @ q)[local, torch.arange(mine.numel(), device=d2.device)]
        _, log_s, log_v = _profile(lam[local], z.square()[:, None, :], noise_floor)
        l_c = torch.tensor(log_ls[sl], **opts)[local]
        cand = torch.stack([l_c, log_s[:, 0], log_v[:, 0]], 1)
        cand = torch.maximum(torch.minimum(cand, hi[idx[mine]]), lo[idx[mine]])
        fc, gc, hc = (
            t[local, torch.arange(mine.numel(), device=d2.device)]
            for t in _spectral_cells(d2, log_ls[sl], lam, q, y_m[mine], cand)
        )
        return mine, cand, fc, gc, hc

    parts = pmap(refine, _cell_chunks(len(log_ls), n))
    mine, cand, fc, gc, hc = (torch.cat(col) for col in zip(*parts, strict=True))
    sel = idx[mine]
    better = fc > f[sel]  # exact values at the (projected) candidates
    sel = sel[better]
    theta[sel], f[sel], g[sel], h[sel] = cand[better], fc[better], gc[better], hc[better]
    return theta, f, g, h


def _pairs(d2, log_ls, lam, q, y, theta, which, pmap):
    """f, g, H of each output ``y[i]`` at the lengthscale ``log_ls[which[i]]`` (bases ``lam``,
    ``q``), lengthscales in batches."""
    k = y.shape[0]
    ar = torch.arange(k, device=y.device)
    f = torch.empty(k, dtype=y.dtype, device=y.device)
    g = torch.empty(k, 3, dtype=y.dtype, device=y.device)
    h = torch.empty(k, 3, 3, dtype=y.dtype, device=y.device)

    def part(sl):
        return _spectral_cells(d2, log_ls[sl], lam[sl], q[sl], y, theta)

    chunks = _cell_chunks(len(log_ls), d2.shape[0])
    for sl, (fb, gb, hb) in zip(chunks, pmap(part, chunks), strict=True):
        mine = ((which >= sl.start) & (which < sl.stop)).nonzero()[:, 0]
        local = which[mine] - sl.start
        f[mine], g[mine], h[mine] = fb[local, ar[mine]], gb[local, ar[mine]], hb[local, ar[mine]]
    return f, g, h


# --------------------------------------------------------------------------------------------
# Parallelism


@contextmanager
def worker_map(device: torch.device, parallel: bool = True):
    """A ``pmap(fn, items)`` running independent work items on ``torch.get_num_threads()``
    Python threads, each with ONE BLAS/OpenMP thread, restoring the thread count afterwards.

    Why: LAPACK's symmetric eigensolver synchronises its OpenMP threads thousands of times; on a
    shared 2-core machine a descheduled thread makes each ``eigh`` of a 645 x 645 kernel take
    seconds instead of ~40 ms (measured). One thread per task, two tasks at a time, is immune to
    that and uses both cores for independent work. Results do not depend on the schedule: every
    item is computed alone and the items are combined in order. On CUDA items run in sequence.
    """
    if device.type != "cpu":
        yield lambda fn, items: [fn(item) for item in items]
        return
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        if threads <= 1 or not parallel:
            yield lambda fn, items: [fn(item) for item in items]
            return
        with ThreadPoolExecutor(
            max_workers=threads, initializer=torch.set_num_threads, initargs=(1,)
        ) as pool:
            yield lambda fn, items: list(pool.map(fn, items))
    finally:
        torch.set_num_threads(threads)


# --------------------------------------------------------------------------------------------
# Stage 2: projected Newton with exact derivatives


def _chunks(k: int, n: int) -> list[slice]:
    size = max(1, _STAGE2_BYTES // (8 * n * n))
    return [slice(i, min(i + size, k)) for i in range(0, k, size)]


def _ascent_direction(g, h, theta, lo, hi):
    """Projected Newton direction and its predicted gain.

    Variables on a bound with the gradient pointing out of the box are held fixed; ``-H`` is made
    positive definite by taking absolute eigenvalues with a relative floor, so the direction always
    ascends (and is the exact Newton step where ``H`` is negative definite, i.e. near a maximum).
    """
    fixed = ((theta <= lo) & (g < 0)) | ((theta >= hi) & (g > 0))
    free = ~fixed
    g_free = torch.where(free, g, 0.0)
    neg_h = torch.where(free[:, :, None] & free[:, None, :], -h, 0.0)
    neg_h = neg_h + torch.diag_embed(fixed.to(h.dtype))
    evals, evecs = torch.linalg.eigh(neg_h)
    scale = evals.abs().amax(1, keepdim=True)
    evals = evals.abs().clamp_min(1e-12 * scale + 1e-300)
    d = evecs @ ((evecs.transpose(1, 2) @ g_free[..., None])[..., 0] / evals)[..., None]
    d = torch.where(free, d[..., 0], 0.0)
    return d, g_free, 0.5 * (g_free * d).sum(1)


def _bfgs(h, step, dg):
    """BFGS update of the Hessian ``h`` of a maximisation (``-h`` is the positive definite model),
    skipped where the curvature condition fails."""
    b_mat = -h
    bs = (b_mat @ step[..., None])[..., 0]
    sbs = (step * bs).sum(1)
    yv = -dg
    ys = (yv * step).sum(1)
    good = (ys > 1e-12 * (yv.norm(dim=1) * step.norm(dim=1))) & (sbs > 0)
    upd = (
        b_mat
        - bs[:, :, None] * bs[:, None, :] / torch.where(good, sbs, 1.0)[:, None, None]
        + yv[:, :, None] * yv[:, None, :] / torch.where(good, ys, 1.0)[:, None, None]
    )
    return torch.where(good[:, None, None], -upd, h)


def _newton(d2, y, theta, first, lo, hi, tol, max_iter):
    """Projected Newton ascent with Armijo backtracking for one chunk of outputs.

    ``first`` = exact (f, g, H) at the starting ``theta``.
    """
    b = y.shape[0]
    opts = {"dtype": torch.float64, "device": y.device}
    steps = torch.zeros(b, dtype=torch.long, device=y.device)
    converged = torch.zeros(b, dtype=torch.bool, device=y.device)
    theta = theta.clone()
    f, g, h = (t.clone() for t in first)
    active = torch.arange(b, device=y.device)
    for _ in range(max_iter):
        d, g_free, gain = _ascent_direction(
            g[active], h[active], theta[active], lo[active], hi[active]
        )
        done = (gain <= tol) | ~torch.isfinite(f[active])
        converged[active[done]] = torch.isfinite(f[active[done]])
        keep = ~done
        active, d, g_free = active[keep], d[keep], g_free[keep]
        if active.numel() == 0:
            break
        # Trust region in log space: no parameter moves by more than a factor e^2 per step.
        d = d * (2.0 / d.abs().amax(1).clamp_min(2.0))[:, None]
        th, fa, ga = theta[active], f[active], g[active]
        # The full step is tried with derivatives (it is usually accepted): the exact Hessian
        # for large steps, else the gradient and a BFGS update of the last Hessian (superlinear
        # convergence at half the cost). Shortened steps get the exact Hessian afterwards.
        big = d.abs().amax(1) > _FRESH_HESSIAN_STEP
        t = torch.ones(active.numel(), **opts)
        pending = torch.ones(active.numel(), dtype=torch.bool, device=y.device)
        for ls in range(40):
            idx = pending.nonzero()[:, 0]
            if idx.numel() == 0:
                break
            trial = torch.maximum(
                torch.minimum(th[idx] + t[idx, None] * d[idx], hi[active[idx]]), lo[active[idx]]
            )
            groups = (
                [(0, torch.ones_like(idx, dtype=torch.bool))]
                if ls
                else [(2, big[idx]), (1, ~big[idx])]
            )
            for order, sel in groups:
                if not sel.any():
                    continue
                sub = idx[sel]
                ft, gt, ht = _evaluate(d2, y[active[sub]], trial[sel], order=order)
                ok = ft >= fa[sub] + 1e-4 * (g_free[sub] * (trial[sel] - th[sub])).sum(1)
                acc = sub[ok]
                theta[active[acc]] = trial[sel][ok]
                f[active[acc]] = ft[ok]
                if order == 2:
                    g[active[acc]], h[active[acc]] = gt[ok], ht[ok]
                elif order == 1:
                    g[active[acc]] = gt[ok]
                    h[active[acc]] = _bfgs(
                        h[active[acc]], trial[sel][ok] - th[acc], gt[ok] - ga[acc]
                    )
                pending[acc] = False
                # Backtrack to the maximiser of the parabola through f(0), f'(0) and f(t),
                # safeguarded to [t/10, t/2].
                rej = sub[~ok]
                slope = (g_free[rej] * d[rej]).sum(1)
                drop = fa[rej] + slope * t[rej] - ft[~ok]
                t_q = torch.where(
                    drop > 0, 0.5 * slope * t[rej] ** 2 / drop.clamp_min(1e-300), 0.1 * t[rej]
                )
                t[rej] = torch.minimum(torch.maximum(t_q, 0.1 * t[rej]), 0.5 * t[rej])
        moved = active[~pending]
        steps[moved] += 1
        shortened = moved[t[~pending] < 1.0]
        if shortened.numel():
            f[shortened], g[shortened], h[shortened] = _evaluate(
                d2, y[shortened], theta[shortened], order=2
            )
        # A line search that cannot ascend means the predicted gain is round-off: stop there,
        # leaving ``converged`` False so that callers can see it.
        active = moved
    return theta, f, steps, converged
