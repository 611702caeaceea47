"""The ``gp`` regressor: one independent Gaussian process per latent dimension (paper eq. 5-8).

Model (paper, section "Gaussian Process (GP) Regression Model"): for every output dimension ``i``
the prototypes are ``mu_i = f_i(s) + eps_i`` with ``f_i ~ GP(0, k_i)`` (zero mean, as the paper
takes ``m = 0``) and ``eps_i ~ N(0, sigma_i^2)``; each dimension has its own kernel
hyperparameters and noise, fitted by maximising its exact log marginal likelihood (eq. 6, with
the noise inside the log-determinant as in Rasmussen & Williams eq. 2.30), and unseen prototypes
are the posterior mean (eq. 7).

Kernel (our choice; the paper only says "any positive semi-definite kernel"): GPyTorch's
``ScaleKernel(RBFKernel())``, ``k_i(s, s') = outputscale_i * exp(-|s - s'|^2 / (2 l_i^2))``, one
isotropic lengthscale per output. It is the natural reading of a GPyTorch implementation
("PyTorch and GPyTorch", Implementation Detail) and the textbook GP kernel; an RBF without a
learned scale could not match prototypes whose spread differs across dimensions, and an ARD
lengthscale per attribute (85-312 of them, from 20-645 classes) would overfit the evidence.
Hyperparameters start from GPyTorch's defaults and obey its default constraints (positive
lengthscale and outputscale, noise >= 1e-4).

Implementation: all outputs form ONE batched GPyTorch ``ExactGP`` (``batch_shape=[k]``, GPyTorch's
"batch independent multioutput" pattern with a per-output ``GaussianLikelihood``, so that each
output has exactly its own noise), scored by ``ExactMarginalLogLikelihood``. Above
``MAX_BATCH_BYTES`` (32 MiB) of kernel matrix the outputs are split into consecutive sub-batches,
each one batched model: this bounds memory (at SUN shape one 64-output model's prediction peaks
at 1.4 GB). Outputs are independent, so sub-batching changes memory only, never a number (tested).

Predictions are the posterior mean computed directly (one Cholesky factor per output, float64;
:func:`zslbench_plugins.gp_fit.posterior_mean`), for both optimisers. It equals the GPyTorch
model's posterior mean to 1e-10 (tested), and at APY's, AWA2's, CUB's and SUN's shapes its
float32 prototypes were bit-identical. It takes 0.04 s at CUB's shape where GPyTorch took 0.3 s,
plus 0.4 s more the first time in a process. GPyTorch's prediction remains the fallback where a
kernel matrix is not numerically positive definite, since its Cholesky adds jitter.

Optimisers (``optimizer``):

* ``"adam"`` - the paper's schedule: Adam, ``lr=0.01``, ``n_iter=1000`` steps on the summed
  negative ``ExactMarginalLogLikelihood`` from GPyTorch's default initialisation. Adam is
  element-wise, so every output follows exactly the trajectory it would follow alone.
* ``"newton"`` (default, ours) - the same objective maximised to convergence by
  :mod:`zslbench_plugins.gp_fit`: a shared-eigendecomposition grid, then projected Newton with
  exact derivatives in float64. It reaches an objective at least as high as the Adam schedule's
  (which often stops short of the optimum) in a fraction of the time; see the tests and
  ``benchmarks/test_bench_gp.py``.

All computation is float64 (our choice; GPyTorch's default would be float32): the fitted noise
often sits at its 1e-4 floor, where float32 Cholesky factors of a 645 x 645 kernel lose most of
their digits.

The class defines no ``tune``: its hyperparameters come from the marginal likelihood, not from
the validation classes.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

import gpytorch
import numpy as np
import torch

from zslbench import hyperparams as hp
from zslbench.hookspecs import hookimpl
from zslbench_plugins.gp_fit import (
    NOISE_FLOOR,
    fit_rbf_marginal_likelihood,
    log_marginal_likelihood,
    posterior_mean,
    worker_map,
)
from zslbench_plugins.prototype_kinds import Regressor
from zslbench_plugins.regressor_inputs import (
    check_fit_inputs,
    check_predict_inputs,
)

OPTIMIZERS = ("newton", "adam")

#: Largest (outputs x classes x classes) float64 kernel batch held by one GPyTorch model, which
#: serves only the ``adam`` optimiser and the non-positive-definite fallback of prediction
#: (``posterior_mean`` chunks its own work). Every problem with up to 32 MiB of kernel (e.g. 64
#: outputs x 40 AWA2 classes, or 64 x 150 CUB classes at 11 MiB) is ONE batched model; SUN's 645
#: classes make 10 outputs per model. GPyTorch's prediction at SUN shape, k = 64 (one BLAS
#: thread): one 64-output model peaks at 1.4 GB and predicts in 1.7 s, sub-batches of 10 peak at
#: 0.66 GB and take 1.5 s; it holds several (outputs, n+m, n+m) tensors at once.
MAX_BATCH_BYTES = 32 * 2**20

#: Exact inference at every size: GPyTorch switches to conjugate gradients above 800 points by
#: default, which would make the objective approximate.
_CHOLESKY_ALWAYS = 10**9


class _BatchIndependentGP(gpytorch.models.ExactGP):
    """k independent zero-mean GPs with ScaleKernel(RBF), sharing the inputs (batch_shape=[k])."""

    def __init__(
        self,
        train_x: torch.Tensor,
        train_y: torch.Tensor,
        likelihood: gpytorch.likelihoods.GaussianLikelihood,
    ) -> None:
        super().__init__(train_x, train_y, likelihood)
        batch = torch.Size([train_y.shape[0]])
        self.mean_module = gpytorch.means.ZeroMean(batch_shape=batch)
        self.covar_module = gpytorch.kernels.ScaleKernel(
            gpytorch.kernels.RBFKernel(batch_shape=batch), batch_shape=batch
        )

    def forward(self, x: torch.Tensor) -> gpytorch.distributions.MultivariateNormal:
        return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))


def batched_model(
    train_x: torch.Tensor,
    train_y: torch.Tensor,
    lengthscale: torch.Tensor | None = None,
    outputscale: torch.Tensor | None = None,
    noise: torch.Tensor | None = None,
) -> tuple[_BatchIndependentGP, gpytorch.mlls.ExactMarginalLogLikelihood]:
    """One batched GPyTorch model over the rows of ``train_y`` (k, n), and its exact MLL.

    Without hyperparameters it starts from GPyTorch's defaults (the paper's starting point);
    with them (each (k,)) it is that fitted model. A noise on its floor is placed a hair
    (1e-12 relative) above it, since GPyTorch's constraint is open at the floor.
    """
    k = train_y.shape[0]
    # GPyTorch's constructors create their parameters and constraint bounds with no device named:
    # build them on the CPU, by name, then move the whole model to the data's device.
    with torch.device("cpu"):
        likelihood = gpytorch.likelihoods.GaussianLikelihood(batch_shape=torch.Size([k]))
        model = _BatchIndependentGP(train_x, train_y, likelihood)
    model = model.to(train_x)
    if lengthscale is not None:
        model.covar_module.base_kernel.lengthscale = lengthscale.to(train_x).view(k, 1, 1)
        model.covar_module.outputscale = outputscale.to(train_x).view(k)
        floor = torch.tensor(NOISE_FLOOR, dtype=train_x.dtype, device=train_x.device)
        likelihood.noise = torch.maximum(noise.to(train_x), floor * (1.0 + 1e-12)).view(k, 1)
    return model, gpytorch.mlls.ExactMarginalLogLikelihood(likelihood, model)


class GPRegressor(Regressor):
    """Independent zero-mean GP per prototype dimension, fitted by exact marginal likelihood.

    Hyperparameters (and where each default comes from):

    * ``optimizer="newton"`` (ours): exact second-order maximisation of the same objective as the
      paper's schedule (see the module docstring); ``"adam"`` runs the paper's schedule.
    * ``lr=0.01`` (paper): Adam's learning rate; used by ``optimizer="adam"`` only.
    * ``n_iter=1000`` (paper: "1000 epochs"): Adam steps; used by ``optimizer="adam"`` only.
    * ``tol=1e-9`` (ours): ``optimizer="newton"`` stops when one more Newton step is predicted
      to gain less than ``tol`` nats per class (GPyTorch's MLL scale) in every output, i.e. far
      below any difference that could change a prototype; the line search makes every step ascend.
    * ``device="cpu"`` (injected by the runner): where the tensors live (``"cuda"`` works).

    Fitted attributes: ``lengthscale_``, ``outputscale_``, ``noise_`` (k,) float64;
    ``log_marginal_likelihood_`` (k,) log p(y_i) in nats (not divided by n);
    ``fit_info_`` (optimizer, seconds, Newton steps, converged / at-bound counts);
    ``n_features_in_`` (attribute dimension); ``train_semantics_`` (c, a) and
    ``train_prototypes_`` (k, c), float64 tensors on ``device``.
    """

    name = "gp"

    def __init__(
        self,
        optimizer: str = "newton",
        lr: float = 0.01,
        n_iter: int = 1000,
        tol: float = 1e-9,
        device: str = "cpu",
    ) -> None:
        self.optimizer = optimizer
        self.lr = lr
        self.n_iter = n_iter
        self.tol = tol
        self.device = device

    def check_params(self) -> None:
        hp.choice("gp", "optimizer", self.optimizer, OPTIMIZERS)
        hp.real("gp", "lr", self.lr)
        hp.integer("gp", "n_iter", self.n_iter, 0)
        hp.real("gp", "tol", self.tol)
        hp.torch_device("gp", self.device)

    # ------------------------------------------------------------------------------------------
    def fit(self, class_semantics: np.ndarray, class_prototypes: np.ndarray) -> GPRegressor:
        """Fit one GP per column of ``class_prototypes`` (c, k) on ``class_semantics`` (c, a)."""
        self.check_params()
        n_iter, tol = int(self.n_iter), float(self.tol)
        lr = float(self.lr)
        device = hp.torch_device("gp", self.device)
        s, p = check_fit_inputs("gp", class_semantics, class_prototypes)
        x = torch.as_tensor(s, dtype=torch.float64, device=device)
        y = torch.as_tensor(np.ascontiguousarray(p.T), dtype=torch.float64, device=device)
        start = time.perf_counter()
        info: dict[str, Any] = {"optimizer": self.optimizer}
        if self.optimizer == "newton":
            res = fit_rbf_marginal_likelihood(x, y, tol=tol)
            hyper = (res.lengthscale, res.outputscale, res.noise)
            lml = res.log_marginal_likelihood
            info.update(
                newton_steps_max=int(res.n_newton.max()),
                newton_steps_mean=float(res.n_newton.double().mean()),
                n_unconverged=int((~res.converged).sum()),
                n_at_bound=int(res.at_bound.sum()),
            )
        else:
            hyper = _adam(x, y, lr, n_iter)
            with worker_map(x.device, parallel=False):
                lml = log_marginal_likelihood(x, y, *hyper)
            info.update(lr=lr, n_iter=n_iter)
        info["seconds"] = time.perf_counter() - start
        self.lengthscale_, self.outputscale_, self.noise_ = (t.cpu().numpy() for t in hyper)
        self.log_marginal_likelihood_ = lml.cpu().numpy()
        self.fit_info_ = info
        self.n_features_in_ = s.shape[1]
        self.train_semantics_, self.train_prototypes_ = x, y
        return self

    def predict(self, class_semantics: np.ndarray) -> np.ndarray:
        """Posterior mean (eq. 7) at ``class_semantics`` (m, a): (m, k) float32 prototypes."""
        if not hasattr(self, "lengthscale_"):
            raise RuntimeError("GPRegressor.predict called before fit")
        s = check_predict_inputs("gp", class_semantics, self.n_features_in_)
        x_train, y_train = self.train_semantics_, self.train_prototypes_
        x_new = torch.as_tensor(s, dtype=torch.float64, device=x_train.device)
        k = y_train.shape[0]
        if x_new.shape[0] == 0:
            return np.zeros((0, k), dtype=np.float32)
        hyper = [
            torch.as_tensor(a, device=x_train.device)
            for a in (self.lengthscale_, self.outputscale_, self.noise_)
        ]
        # Chunks of outputs on parallel threads, one BLAS thread each (no shared-CPU stalls:
        # worker_map); GPyTorch's fallback, which holds several (outputs, n+m, n+m) tensors
        # per chunk, runs one chunk at a time.
        with worker_map(x_new.device) as pmap:
            mean = posterior_mean(x_train, y_train, x_new, *hyper, pmap=pmap)
        if mean is None:  # not numerically positive definite: GPyTorch's jittered Cholesky
            with worker_map(x_new.device, parallel=False) as pmap:
                mean = torch.cat(
                    pmap(
                        partial(_gpytorch_mean, x_train, y_train, x_new, hyper),
                        _batches(k, x_train.shape[0]),
                    )
                )
        return mean.T.cpu().numpy().astype(np.float32)


def _gpytorch_mean(
    x_train: torch.Tensor,
    y_train: torch.Tensor,
    x_new: torch.Tensor,
    hyper: list[torch.Tensor],
    sl: slice,
) -> torch.Tensor:
    """GPyTorch's posterior mean of the outputs ``sl``: the fallback of ``posterior_mean`` (its
    Cholesky adds jitter where a kernel matrix is not numerically positive definite)."""
    model, _ = batched_model(x_train, y_train[sl], *(h[sl] for h in hyper))
    model.eval()
    with (
        torch.no_grad(),
        gpytorch.settings.skip_posterior_variances(),
        gpytorch.settings.max_cholesky_size(_CHOLESKY_ALWAYS),
    ):
        return model(x_new).mean


def _adam(x: torch.Tensor, y: torch.Tensor, lr: float, n_iter: int):
    """The paper's schedule on GPyTorch's own model and ``ExactMarginalLogLikelihood``.

    Sub-batches run on ``worker_map``'s threads (one BLAS thread each): Adam is element-wise, so
    each output's trajectory is the one it would follow alone, whatever the batching (tested).
    """

    def run(sl: slice) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        model, mll = batched_model(x, y[sl])
        model.train()
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        with gpytorch.settings.max_cholesky_size(_CHOLESKY_ALWAYS):
            for _ in range(n_iter):
                opt.zero_grad()
                loss = -mll(model(x), y[sl]).sum()
                loss.backward()
                opt.step()
        with torch.no_grad():
            return (
                model.covar_module.base_kernel.lengthscale.reshape(-1).clone(),
                model.covar_module.outputscale.reshape(-1).clone(),
                model.likelihood.noise.reshape(-1).clone(),
            )

    with worker_map(x.device) as pmap:
        parts = pmap(run, _batches(y.shape[0], x.shape[0]))
    return tuple(torch.cat(col) for col in zip(*parts, strict=True))


def _batches(k: int, n: int) -> list[slice]:
    """Consecutive sub-batches of outputs whose (outputs, n, n) kernel fits ``MAX_BATCH_BYTES``."""
    size = max(1, MAX_BATCH_BYTES // (8 * n * n))
    return [slice(i, min(i + size, k)) for i in range(0, k, size)]


@hookimpl
def zslbench_regressors() -> list[type[Regressor]]:
    return [GPRegressor]
