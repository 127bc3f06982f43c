"""Monte-Carlo studies of the least-squares estimators against the Cramér-Rao bound.

Model (Szabó & Gincsainé 2021, Sec. 3 and eq. 17-19): y = W beta + e on a fixed, exactly
known base regressor W (N, rows, p) with zero-mean white Gaussian equation noise e of
standard deviation sigma_j per row group j (joint torque). For this linear Gaussian model
the Cramér-Rao bound of any unbiased estimator is (W^T Sigma^-1 W)^-1, which WLS with the
true sigma attains. Each run draws its own noise from its own seed, so the numbers do not
depend on how the runs are spread over Dask workers.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from robot_identification._dask import dask_client, on_worker, start_method
from robot_identification._threads import one_blas_thread
from robot_identification.choices import MONTE_CARLO_ESTIMATORS
from robot_identification.errors import ConfigError, DataError
from robot_identification.estimation import FixedDesign, NormalEquations, ols, wls
from robot_identification.identifiability import base_parameters
from robot_identification.identification._engine import load_prior
from robot_identification.identification._estimators import ESTIMATORS, EstimationContext
from robot_identification.regressor import iter_regressor_blocks

#: Estimators of a run (:data:`robot_identification.choices.MONTE_CARLO_ESTIMATORS`): the
#: engine's estimators (:data:`~robot_identification.identification.ESTIMATORS`) that work on
#: summed normal equations, and ``wls_known`` (WLS with the true sigma, Szabó eq. 19).
RUN_ESTIMATORS = MONTE_CARLO_ESTIMATORS


#: Largest observation matrix [bytes] whose Gram matrices a study computes once
#: (:class:`FixedDesign`, which holds a copy of W's per-joint blocks: twice W's memory); a
#: larger W is added per run. The configured excitations: 10 001 samples, 5-40 MB.
FIXED_DESIGN_BYTES = 256 << 20


def _estimate(name, neq, sigma, context):
    """One estimate of a run: ``wls_known``, or the engine's estimator ``name`` on the run's
    normal equations (``context``: model, base, settings, prior of
    :class:`EstimationContext`)."""
    if name == "wls_known":
        return wls(neq, sigma=sigma)
    return ESTIMATORS[name](EstimationContext(neq=neq, **context))


def run_seeds(W, y, sigma, seeds, estimators=("ols", "wls"), context=None):
    """Estimates of Monte-Carlo runs, one per seed (the map step; runs on a worker).

    Parameters
    ----------
    W : ndarray, shape (N, rows, p), or FixedDesign
        Base regressor (exact states), or its :class:`FixedDesign` (W's Gram matrices
        computed once, not per run; the same estimates bit for bit: :func:`monte_carlo`
        passes it for W up to :data:`FIXED_DESIGN_BYTES`).
    y : ndarray, shape (N, rows)
        Noise-free left-hand side (torques).
    sigma : ndarray, shape (rows,)
        Noise standard deviation per row group [N m].
    seeds : sequence of int
        One run per seed: e = sigma * standard_normal(default_rng(seed)).
    estimators : sequence of str
        From :data:`RUN_ESTIMATORS`.
    context : dict, optional
        ``model``, ``base``, ``settings``, ``prior`` for the engine's estimators that need
        them (mrls, bounded, physical).

    Returns
    -------
    ndarray, shape (len(seeds), len(estimators), p)
    """
    context = dict({"model": None, "base": None, "settings": None, "prior": None},
                   **(context or {}))
    fixed = isinstance(W, FixedDesign)
    p, rows = W.shape[2], W.shape[1]
    out = np.empty((len(seeds), len(estimators), p))
    with one_blas_thread():
        for i, seed in enumerate(seeds):
            noise = sigma * np.random.default_rng(int(seed)).standard_normal(y.shape)
            if fixed:                       # the same sums as add(W, y + noise)
                neq = W.equations(y + noise)
            else:
                neq = NormalEquations(p, rows)
                neq.add(W, y + noise)
            for j, name in enumerate(estimators):
                out[i, j] = _estimate(name, neq, sigma, context).values
    return out


def cramer_rao_bound(W, sigma):
    """Cramér-Rao bound (W^T Sigma^-1 W)^-1, shape (p, p), of y = W beta + e with
    e ~ N(0, diag(sigma_j^2)) per row group (Szabó & Gincsainé 2021, Sec. 3).

    Raises
    ------
    DataError
        W^T Sigma^-1 W is singular (the trajectory does not excite every base parameter).
    """
    Ws = W / np.asarray(sigma, dtype=float)[None, :, None]
    fisher = np.einsum("nji,njk->ik", Ws, Ws)
    try:
        return np.linalg.inv(fisher)
    except np.linalg.LinAlgError:
        raise DataError("the Fisher information W^T Sigma^-1 W is singular: the trajectory "
                        "does not excite every base parameter") from None


@dataclass
class MonteCarloResult:
    """Estimates of every run and the Cramér-Rao bound.

    Attributes
    ----------
    names, expressions : list of str
        Base parameters (p).
    true : ndarray (p,)
        Exact base parameter values.
    sigma : ndarray (rows,)
        Noise standard deviation per row group.
    seeds : ndarray (runs,)
    estimates : dict
        Estimator name -> ndarray (runs, p).
    crlb : ndarray (p, p)
        Cramér-Rao bound of the covariance.
    """
    names: list
    expressions: list
    true: np.ndarray
    sigma: np.ndarray
    seeds: np.ndarray
    estimates: dict
    crlb: np.ndarray
    info: dict = field(default_factory=dict)
    #: Where the runs ran (text for the command's output; not in :meth:`to_dict`: the
    #: numbers do not depend on it).
    ran_on: str = ""

    @property
    def runs(self) -> int:
        return len(self.seeds)

    def summary(self, estimator):
        """Per base parameter: ``mean``, ``bias`` (mean - true), ``std`` (ddof 1),
        ``crlb_std`` (sqrt of the bound's diagonal), ``variance_ratio`` (var / CRLB) and
        ``bias_z`` (bias / standard error of the mean); arrays (p,)."""
        x = self.estimates[estimator]
        mean = x.mean(axis=0)
        var = x.var(axis=0, ddof=1) if self.runs > 1 else np.full(x.shape[1], np.nan)
        crlb = np.diag(self.crlb)
        return {"mean": mean, "bias": mean - self.true, "std": np.sqrt(var),
                "crlb_std": np.sqrt(crlb), "variance_ratio": var / crlb,
                "bias_z": (mean - self.true) / np.sqrt(var / self.runs)}

    def variance_ratio_band(self) -> float:
        """Two-sigma Monte-Carlo error of a variance ratio: 2 sqrt(2 / (runs - 1))."""
        return 2.0 * np.sqrt(2.0 / max(self.runs - 1, 1))

    def to_dict(self) -> dict:
        """Plain types for YAML: settings and one entry per base parameter."""
        params = []
        sums = {e: self.summary(e) for e in self.estimates}
        for i, name in enumerate(self.names):
            entry = {"name": name, "expression": self.expressions[i],
                     "true": float(self.true[i]),
                     "crlb_std": float(np.sqrt(self.crlb[i, i]))}
            for e, s in sums.items():
                entry[e] = {k: float(s[k][i]) for k in ("mean", "bias", "std", "variance_ratio",
                                                         "bias_z")}
            params.append(entry)
        return {"runs": int(self.runs), "first_seed": int(self.seeds[0]),
                "sigma": [float(s) for s in self.sigma], **self.info,
                "base_parameters": params}


#: CPU seconds a local cluster costs before its workers run a task, by how it starts them
#: (:func:`~robot_identification._dask.start_method`): measured with ``montecarlo --robot
#: szabo_3dof --runs 100`` (runs of ~3 ms) on the 2-core machine, quiet: 2 forked workers
#: 2.0-2.2 s wall against 1.6-1.8 s in one process (the cluster, the scatter of the design
#: and the gather: ~0.4-0.5 s); a spawned worker imports Dask and the engine first (~2.3 s
#: of wall time before the first task, docs/performance.md); a cluster of 2 threads, Dask
#: already imported: 0.04 s of wall time over the in-process runs (12 runs of a 150-sample
#: model, 3 repeats, quiet machine).
LOCAL_CLUSTER_START_S = {"fork": 0.5, "spawn": 2.5, "forkserver": 2.5, "threads": 0.05}


def monte_carlo(W, y, sigma, runs, *, seed=0, estimators=("ols", "wls"), true=None,
                names=None, expressions=None, workers=1, scheduler=None, processes=True,
                progress=None, model=None, base=None, prior="nominal", adaptive=True):
    """Monte-Carlo study: ``runs`` noise draws on (W, y), each estimated by ``estimators``.

    Parameters
    ----------
    W : ndarray, shape (N, rows, p)
        Base regressor of the exact states.
    y : ndarray, shape (N, rows)
        Noise-free torques (y = W true for an exact model).
    sigma : array_like, shape (rows,)
        Noise standard deviation per row group [N m] (> 0).
    runs : int
    seed : int
        Run i uses seed ``seed + i``.
    estimators : sequence of str
        From :data:`RUN_ESTIMATORS`.
    true : ndarray (p,), optional
        Exact base values (default: least squares on the noise-free y).
    names, expressions : list of str, optional
    workers : int
        Dask workers (1 without ``scheduler``: in this process).
    scheduler : str, optional
        Address of a running Dask scheduler.
    processes : bool
        Local cluster of processes (True) or threads.
    progress : tqdm-like, optional
        ``update(k)`` after every k finished runs.
    model, base, prior : optional
        The robot model, its base parameters (of ``W``) and the prior (``nominal`` | ``none``
        | standard parameters (P,)) for the engine's estimators that need them (mrls,
        bounded, physical).
    adaptive : bool
        With a local cluster (``workers`` > 1, no ``scheduler``): run the first runs here,
        one at a time, and start the cluster only once the remaining runs' CPU time (the
        runs so far extrapolated) would save more than starting it costs
        (:data:`LOCAL_CLUSTER_START_S`); a study too small to pay for workers runs here
        entirely (``ran_on`` says so). The estimates are the same either way (each run
        depends on its seed only).

    Returns
    -------
    MonteCarloResult

    Raises
    ------
    ConfigError
        runs < 2, unknown estimator (or one that needs ``model`` without it), sigma of the
        wrong length or not positive, bad workers/scheduler.
    DataError
        Singular Fisher information.
    """
    W = np.asarray(W, dtype=float)
    y = np.asarray(y, dtype=float)
    sigma = np.asarray(sigma, dtype=float).reshape(-1)
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 2:
        raise ConfigError(f"runs must be an integer >= 2, got {runs!r}")
    unknown = [e for e in estimators if e not in RUN_ESTIMATORS]
    if unknown or not estimators:
        raise ConfigError(f"unknown Monte-Carlo estimator(s) {unknown}; choose from "
                          f"{list(RUN_ESTIMATORS)}")
    if sigma.shape != (W.shape[1],) or not np.all(np.isfinite(sigma)) or np.any(sigma <= 0):
        raise ConfigError(f"sigma must hold {W.shape[1]} positive values (one per row group), "
                          f"got {sigma.tolist()}")
    if seed < 0:
        raise ConfigError(f"seed must be >= 0, got {seed}")
    needs_model = [e for e in estimators if e in ("mrls", "bounded", "physical")]
    if needs_model and (model is None or base is None):
        raise ConfigError(f"Monte-Carlo estimator(s) {needs_model} need the robot model and "
                          f"its base parameters (model=, base=)")
    context = {}
    if model is not None:
        context = {"model": model, "base": base, "settings": model.config.identification,
                   "prior": load_prior(model, prior)}
    crlb = cramer_rao_bound(W, sigma)
    # W's Gram matrices once, not per run (issue #29): the design keeps a copy of W's
    # per-joint blocks, so above FIXED_DESIGN_BYTES each run adds its own as before
    design = FixedDesign(W) if W.nbytes <= FIXED_DESIGN_BYTES else W
    if true is None:
        neq = NormalEquations(W.shape[2], W.shape[1])
        neq.add(W, y)
        true = ols(neq).values
    seeds = seed + np.arange(runs)
    estimators = tuple(estimators)
    parts = []
    here = 0                 # runs done in this process before any cluster starts
    ran_on = (f"scheduler {scheduler}" if scheduler else
              f"{workers} local workers" if workers > 1 else "this process")
    if adaptive and scheduler is None and workers > 1:
        start = None          # the cluster's start cost; Dask imported only to look it up
        spent = 0.0           # CPU of the runs alone (not of that lookup's imports)
        while here < runs:
            t0 = time.thread_time()
            parts.append(run_seeds(design, y, sigma, seeds[here:here + 1], estimators,
                                   context))
            spent += time.thread_time() - t0
            here += 1
            if progress is not None:
                progress.update(1)
            gain = spent / here * (runs - here) * (1.0 - 1.0 / workers)
            if gain > min(LOCAL_CLUSTER_START_S.values()):
                if start is None:
                    start = LOCAL_CLUSTER_START_S[start_method() if processes else "threads"]
                if gain > start:
                    break
        if here == runs:
            ran_on = (f"this process: the {runs} runs cost {spent:.2g} s "
                      f"of CPU, less than starting {workers} local workers "
                      f"(~{start or min(LOCAL_CLUSTER_START_S.values()):g} s) would save")
            workers = 1
    batches = np.array_split(seeds[here:], min(runs - here, max(10, 4 * workers))) \
        if here < runs else []
    with dask_client(workers, scheduler, processes) as client:
        if client is None:
            for b in batches:
                parts.append(run_seeds(design, y, sigma, b, estimators, context))
                if progress is not None:
                    progress.update(len(b))
        else:
            from distributed import as_completed   # optional dependency (dask)
            # each worker receives the design, the torques and the estimators' context
            # (the robot model) once, not with every task
            W_remote, y_remote = client.scatter([design, y], broadcast=True)
            context_remote = client.scatter([context], broadcast=True)[0] if context else None
            futures = [client.submit(on_worker, run_seeds, W_remote, y_remote, sigma, b,
                                     estimators, context_remote, pure=False) for b in batches]
            for fut in as_completed(futures):
                if progress is not None:
                    progress.update(len(batches[futures.index(fut)]))
            parts += client.gather(futures)
    x = np.concatenate(parts, axis=0)
    p = W.shape[2]
    return MonteCarloResult(
        names=list(names or [f"beta{i + 1}" for i in range(p)]),
        expressions=list(expressions or names or [f"beta{i + 1}" for i in range(p)]),
        true=np.asarray(true, dtype=float), sigma=sigma, seeds=seeds,
        estimates={e: x[:, j, :] for j, e in enumerate(estimators)}, crlb=crlb,
        ran_on=ran_on)


def torque_noise_sigma(y, snr_db):
    """sigma_j = rms(y_j) 10^(-snr_db / 20) per row group (torque signal-to-noise ratio).

    Raises
    ------
    ConfigError
        Non-finite or non-positive SNR, or a row group without signal.
    """
    if not (np.isfinite(snr_db) and snr_db > 0):
        raise ConfigError(f"SNR must be a finite positive number of dB, got {snr_db!r}")
    rms = np.sqrt(np.mean(np.asarray(y, dtype=float) ** 2, axis=0))
    if np.any(rms <= 0):
        raise ConfigError("a row group has no torque signal (rms 0): give --sigma instead")
    return rms * 10.0 ** (-float(snr_db) / 20.0)


def simulated_observations(model, *, trajectory=None, duration=None, base=None, log=None,
                           engine="builtin"):
    """Exact base regressor and noise-free torques of a simulated excitation.

    Runs :func:`~robot_identification.simulation.simulate` once without noise, with the
    identification model's friction laws (``friction='regressor'``), exact recorded
    derivatives and no encoder quantisation, so y = W beta holds exactly (on MuJoCo with
    Coulomb friction as an explicit sign(v) torque, not its frictionloss constraint, so that
    it holds there too).

    Parameters
    ----------
    model : RobotModel
        A rigid model (Monte-Carlo torque noise needs a measured torque in every row).
    trajectory, duration :
        See :func:`simulate` (default: the config's ``simulation.excitation``).
    base : BaseParameters, optional
        Default :func:`base_parameters` of the model.
    engine : {'builtin', 'mujoco'}
        Physics engine (:func:`~robot_identification.simulation.make_simulator`).

    Returns
    -------
    W : ndarray (N, n, p)
    y : ndarray (N, n)
    base : BaseParameters
    true : ndarray (p,)
        Base values of the model's nominal parameters.

    Raises
    ------
    ConfigError
        Elastic model (its link rows carry no measured torque to add noise to).
    """
    if model.config.elastic:
        raise ConfigError(f"robot '{model.config.name}' has elastic joints: Monte-Carlo torque "
                          f"noise needs a measured torque in every equation, and the link "
                          f"rows of the elastic model have none; use a rigid robot")
    base = base or base_parameters(model)
    from robot_identification.simulation import simulate  # start-up of identify: lazy
    ds = simulate(model, duration=duration, trajectory=trajectory, derivatives=True,
                  quantise=False, friction="regressor", torque="command", log=log,
                  engine=engine,
                  engine_options={"coulomb": "explicit"} if engine == "mujoco" else None)
    states = {"q": ds.q, "dq": ds.dq, "ddq": ds.ddq, "tau": ds.tau}
    W = np.empty((ds.n_samples, model.n, len(base)))
    y = np.empty((ds.n_samples, model.n))
    for s, Y, yy in iter_regressor_blocks(model, states):
        W[s: s + Y.shape[0]] = base.project(Y)
        y[s: s + Y.shape[0]] = yy
    return W, y, base, base.base_values(model.nominal_parameters())
