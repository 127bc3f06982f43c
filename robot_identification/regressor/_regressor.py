"""Rigid and elastic-joint regressors (observation-matrix rows) of a RobotModel."""
from __future__ import annotations

import functools
import math
import sys
import threading
import weakref

import numpy as np
import pinocchio as pin

from robot_identification._threads import blas_single_threaded
from robot_identification.errors import DataError
from robot_identification.model import spin_inertia_parameters
from robot_identification.regressor import _kernel

#: Default number of samples processed per block by :func:`iter_regressor_blocks`.
CHUNK = 2048


def _as_samples(name, x, n, N=None):
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[None, :]
    if x.ndim != 2 or x.shape[1] != n:
        raise DataError(f"{name}: expected shape (n_samples, {n}), got {np.shape(x)}")
    if N is not None and x.shape[0] != N:
        raise DataError(f"{name}: {x.shape[0]} samples, expected {N} like q")
    if not np.all(np.isfinite(x)):
        bad = np.argwhere(~np.isfinite(x))[0]
        raise DataError(f"{name}: non-finite value (NaN/inf) at sample {bad[0]}, "
                        f"joint {bad[1]}")
    return x


def _as_motion(q, dq, ddq, n):
    """(q, dq, ddq) as float arrays (N, n) of the same N (:func:`_as_samples` each)."""
    q = _as_samples("q", q, n)
    return q, _as_samples("dq", dq, n, q.shape[0]), _as_samples("ddq", ddq, n, q.shape[0])


def coulomb_sign(velocity, deadband=0.0):
    """sign(v) outside a deadband, the linear ramp v / deadband inside it.

    At rest the friction torque is undetermined (stiction balances the load) and the
    measured velocity flickers at its noise level (e.g. +-1e-4 rad/s on a UR10e), so
    sign(v) would switch the full Coulomb torque on noise. Inside |v| < ``deadband`` the
    Coulomb column ramps linearly through 0 (used identically in identification and
    prediction).

    Parameters
    ----------
    velocity : ndarray (N, n) [rad/s]
    deadband : float or ndarray (n,)
        Half-width [rad/s] per joint; 0: plain sign(v).
    """
    v = np.asarray(velocity, dtype=float)
    d = np.broadcast_to(np.asarray(deadband, dtype=float), v.shape[-1:])
    if not np.any(d > 0):
        return np.sign(v)
    safe = np.where(d > 0, d, 1.0)
    return np.where(d > 0, np.clip(v / safe, -1.0, 1.0), np.sign(v))


def friction_columns(model, velocity, deadband=0.0):
    """Friction and offset columns of the configured friction model.

    Parameters
    ----------
    model : RobotModel
    velocity : ndarray, shape (N, n)
        Joint velocity (rigid) or link-referred motor velocity theta_dot (elastic) [rad/s].
    deadband : float or ndarray (n,)
        Coulomb sign deadband [rad/s] (:func:`coulomb_sign`); 0: sign(v).

    Joints whose own ``friction_model`` lacks a term get a zero column for it (the base
    parameters then leave it out).

    Returns
    -------
    dict
        Drive key -> ndarray (N, n): ``viscous``: v; ``coulomb``: sign(v); ``stiction``:
        (2/pi) atan(K_v v) (the static model, or ``friction.stiction``); ``stribeck``:
        (2/pi) atan(delta v) (Szabó & Gincsainé 2021,
        eq. 7-9); ``offset``: 1; ``coulomb_load``: sign(v) as well - :func:`rigid_regressor`
        multiplies it by |tau_0| (:func:`nominal_load`).
    """
    fr = model.config.friction
    v = velocity
    cols = {"viscous": v, "coulomb": coulomb_sign(v, deadband), "offset": np.ones_like(v)}
    cols["coulomb_load"] = cols["coulomb"]
    models = model.joint_friction_models()
    smooth = fr.stiction and "coulomb_viscous" in models
    if "static" in models or smooth:
        cols["stiction"] = (2.0 / np.pi) * np.arctan(fr.stiction_sharpness * v)
    if "static" in models:
        cols["stribeck"] = (2.0 / np.pi) * np.arctan(fr.stribeck_sharpness * v)
    if len(set(models)) > 1:        # per-joint models: a term a joint's model lacks is 0
        uses = {"viscous": ("viscous", "coulomb_viscous", "static"),
                "coulomb": ("coulomb_viscous",), "coulomb_load": ("coulomb_viscous",),
                "stiction": ("static", "coulomb_viscous") if smooth else ("static",),
                "stribeck": ("static",)}
        for key, owners in uses.items():
            if key in cols:
                cols[key] = cols[key] * np.array([m in owners for m in models], dtype=float)
    return cols


class _RegressorPlan:
    """Index maps of one model, built once: how pinocchio's torque regressor blocks become
    the columns of :func:`rigid_regressor` / :func:`elastic_regressor`.

    Every entry of Y is either (a) a pinocchio regressor entry of a link row and a link
    body in the joint frame, changed to the body's parameter frame by the sparse 10x10
    block A_k (``model.frame_changes``: most columns are copies, only a few need a
    product), (b) a sparse linear combination of pinocchio entries (rotor columns of the
    elastic model, Zollo et al. 2014 eq. 22-28 and A.14), or (c) a drive column computed
    from the states (rotor inertia, stiffness, damping, friction). Each kind is written
    with one gather / product / scatter per block of samples, never per sample.
    """

    def __init__(self, model):
        n = model.n
        elastic = model.config.elastic
        pm = model.rotor_model if elastic else model.pin_model
        self.pin_model = pm
        self.n_cols = 10 * (pm.njoints - 1)
        self.rows = model.rows_per_sample
        self.P = model.n_parameters
        self.link_rows = np.asarray(model.velocity_indices)
        self.link_cols = np.concatenate([np.arange(10 * (j - 1), 10 * j) for j in model.joint_ids])
        basic = (np.array_equal(self.link_rows, np.arange(n))
                 and np.array_equal(self.link_cols, np.arange(10 * n)))
        self.basic = basic
        self._frame_change_maps(model)
        self._drive_maps(model)
        self.linear = self._rotor_maps(model) if elastic else None
        self._kernels = {}
        self._remapped = {}        # (flat indices, columns) -> remap(), see there

    @property
    def kernel(self):
        """The compiled kernel of this plan (built on first use), or None."""
        return self.kernel_for(None)

    def kernel_for(self, columns):
        """The compiled kernel writing only ``columns`` (tuple of column indices, None: all),
        built on first use; or None."""
        if not _kernel.ENABLED:
            return None
        k = self._kernels.get(columns)
        if k is None:
            k = self._kernels[columns] = _kernel.Kernel.create(
                self.pin_model, *self._kernel_map(columns)) or False
        return k or None

    def remap(self, flat, columns):
        """Flat indices r P + c of one sample's Y -> r p' + (position of c in ``columns``),
        -1 where c is not among them (p' = len(columns)); unchanged for columns None."""
        flat = np.asarray(flat, dtype=int)
        if columns is None:
            return flat
        key = (flat.shape, flat.tobytes(), columns)
        out = self._remapped.get(key)
        if out is None:
            new = np.full(self.P, -1)
            new[list(columns)] = np.arange(len(columns))
            r, c = np.divmod(flat, self.P)
            out = np.where(new[c] >= 0, r * len(columns) + new[c], -1)
            out.flags.writeable = False           # shared by the calls with these columns
            self._remapped[key] = out
        return out

    def _kernel_map(self, columns=None):
        """The compiled kernel's maps: parameter frames, blocks and triplets.

        The kernel evaluates each link body's regressor entries about its parameter frame
        (``frames``: the placement (R, t) of A_k, ``model.frame_changes``), so the inertial
        columns are blocks of 10 copied per (link row, link body) pair the row's joint
        supports; the rotor columns stay triplets Y[dst] += w R[src], their weights on a
        parent body moved to its parameter frame (R_J w = R_P A_k^-1 w)."""
        pm, C, P = self.pin_model, self.n_cols, self.P
        nj = pm.njoints - 1
        frames = np.tile(np.eye(4), (nj, 1, 1))
        inverse = {}
        for k, A in enumerate(self.frame_changes):
            if A is not None:      # A_k's column of m holds t, those of m c hold R
                body = self.link_cols[10 * k] // 10
                frames[body, :3, :3] = A[1:4, 1:4]
                frames[body, :3, 3] = A[1:4, 0]
                inverse[body] = np.linalg.inv(A)
        rows, bodies, bdst = [], [], []
        row_joint = {pm.joints[j].idx_v: j for j in range(1, pm.njoints)}
        for r, row in enumerate(self.link_rows):
            supported = set(pm.subtrees[row_joint[row]])
            for k in range(len(self.link_cols) // 10):
                body = self.link_cols[10 * k] // 10
                if body + 1 in supported:
                    rows.append(row)
                    bodies.append(body)
                    bdst.append(r * P + 10 * k)
        dst, src, weight = np.zeros(0, dtype=int), np.zeros(0, dtype=int), np.zeros(0)
        if self.linear is not None:
            lsrc, lweights, starts, ldst = self.linear
            ldst = np.repeat(ldst, np.diff(np.r_[starts, len(lsrc)]))
            terms = {}
            for d, s, w in zip(ldst, lsrc, lweights):
                row, col = divmod(int(s), C)
                body = col // 10
                if body in inverse:        # R_J w over the body's block = R_P (A^-1 w)
                    for c, a in enumerate(inverse[body][:, col % 10] * w):
                        if a != 0.0:
                            key = (int(d), row * C + 10 * body + c)
                            terms[key] = terms.get(key, 0.0) + a
                else:
                    terms[(int(d), int(s))] = terms.get((int(d), int(s)), 0.0) + w
            items = sorted(terms.items())
            dst = np.array([d for (d, _), _ in items], dtype=int)
            src = np.array([s for (_, s), _ in items], dtype=int)
            weight = np.array([w for _, w in items])
        bdst = self.remap(np.asarray(bdst, dtype=int)[:, None] + np.arange(10), columns)
        dst = self.remap(dst, columns)
        kept = dst >= 0
        return frames, (rows, bodies, bdst), dst[kept], src[kept], weight[kept]

    def _frame_change_maps(self, model):
        n = model.n
        M = np.zeros((10 * n, 10 * n))
        self.frame_changes = model.frame_changes
        for k, A in enumerate(model.frame_changes):
            M[10 * k: 10 * k + 10, 10 * k: 10 * k + 10] = np.eye(10) if A is None else A
        # entries like cos(pi/2) = 6e-17 of axis-aligned frame rotations are exact zeros
        M[np.abs(M) < 1e-14 * np.abs(M).max(axis=0)] = 0.0
        self.frame_change = M
        nz = [np.flatnonzero(M[:, j]) for j in range(10 * n)]
        copy = [j for j in range(10 * n) if list(nz[j]) == [j] and M[j, j] == 1.0]
        single = [j for j in range(10 * n) if len(nz[j]) == 1 and j not in copy]
        dense = [j for j in range(10 * n) if len(nz[j]) > 1]
        self.perm_dst = np.array(single, dtype=int)
        self.perm_src = np.array([nz[j][0] for j in single], dtype=int)
        self.perm_scale = np.array([M[nz[j][0], j] for j in single])
        self.dense_dst = np.array(dense, dtype=int)
        self.dense_src = (np.unique(np.concatenate([nz[j] for j in dense]))
                          if dense else np.zeros(0, dtype=int))
        self.dense_map = M[np.ix_(self.dense_src, self.dense_dst)]

    def _drive_maps(self, model):
        """Flat destinations (row * P + column) of the drive columns, per value source."""
        n, P = model.n, self.P
        keys = model.drive_parameter_keys()
        col = {(k, key): 10 * n + k * len(keys) + i
               for k in range(n) for i, key in enumerate(keys)}
        self.keys = keys
        joints = np.arange(n)
        self.flat = {}
        for key in keys:
            cols = np.array([col[(k, key)] for k in joints])
            self.flat[key] = (joints * P + cols, (n + joints) * P + cols)
        self.column = col

    def _rotor_maps(self, model):
        """Rotor-inertia columns of the complete elastic model as a sparse linear map of
        the augmented model's regressor entries (Zollo et al. 2014 eq. 22-28): the rotor
        body's spin inertia (a a^T about the joint axis) minus the transverse share that
        belongs to the parent body's standard parameters (eq. A.14)."""
        if model.config.coupling != "complete":
            return None
        n, C, P = model.n, self.n_cols, self.P
        am, pmodel = self.pin_model, model.pin_model
        entries = {}   # (flat destination in Y, flat source in R) -> weight

        def add(dst, row, cols, weights):
            for c, w in zip(cols, weights):
                if w != 0.0:
                    key = (dst, row * C + c)
                    entries[key] = entries.get(key, 0.0) + w

        for k in range(n):
            c = self.column[(k, "rotor_inertia")]
            rid = model.rotor_joint_ids[k]
            rotor_cols = np.arange(10 * (rid - 1), 10 * rid)
            spin = model.rotor_spin_parameters[k]
            add((n + k) * P + c, model.rotor_velocity_indices[k], rotor_cols,
                model.gear_ratios[k] * spin)
            parent = pmodel.parents[model.joint_ids[k]]
            supports = set(am.supports[rid])
            for r in range(n):
                if model.joint_ids[r] not in supports:
                    continue      # joint r does not carry rotor k: structurally zero
                add(r * P + c, self.link_rows[r], rotor_cols, spin)
                if parent > 0:
                    rot = pmodel.jointPlacements[model.joint_ids[k]].rotation
                    spin_parent = _spin_about(rot @ model.joint_axes[k])
                    add(r * P + c, self.link_rows[r],
                        np.arange(10 * (parent - 1), 10 * parent), -spin_parent)
        items = sorted(entries.items())
        dst = np.array([d for (d, _), _ in items])
        src = np.array([s for (_, s), _ in items])
        weights = np.array([w for _, w in items])
        starts = np.flatnonzero(np.r_[True, dst[1:] != dst[:-1]])
        return src, weights, starts, dst[starts]


_PLANS = weakref.WeakKeyDictionary()
_SCRATCH = threading.local()


def _plan(model):
    plan = _PLANS.get(model)
    if plan is None:
        plan = _PLANS[model] = _RegressorPlan(model)
    return plan


def _scratch(name, shape):
    """Per-thread reusable buffer ``name`` of ``shape`` (at most SUB samples, or a
    ``temporary`` of :func:`_fill` up to :data:`TEMPORARY_BYTES`).

    Every temporary of :func:`_fill` lives here: fresh memory costs a page fault per 4 KiB
    on first touch, which on a shared/virtualised machine was the largest single cost of
    the regressor (more than the frame-change arithmetic itself).
    """
    size = math.prod(shape)
    buffers = _SCRATCH.__dict__
    buf = buffers.get(name)
    if buf is None or buf.size < size:
        buf = buffers[name] = np.empty(size)
    return buf[:size].reshape(shape)


class _ResultMemory:
    """Memory of the kernel's large results (:func:`_fill`), reused once no array refers to it.

    glibc maps a block above its largest mmap threshold (32 MiB on 64-bit) afresh for every
    allocation and returns it to the operating system on free, so every such result's pages
    are zeroed by the operating system on first touch: 0.47 of the elastic PUMA's 2.4-2.7 us
    per sample at 5000 samples (40 MB; docs/performance.md). Here such a result's memory (a
    uint8 block) stays listed after its array dies and serves the next result that fits:
    every numpy view keeps a reference to that block, so a block whose only reference is
    this list is free (nothing can see it any more). Results from :data:`SMALLEST` to
    :data:`LIMIT` bytes; at most :data:`LIMIT` bytes listed (the oldest dropped: its array,
    if alive, keeps it), and a result that no free block fits drops the free blocks (the
    memory kept follows the sizes in use). A caller that keeps every result gets fresh memory
    each time, as before; smaller results come from numpy's allocator (the C library's heap
    reuses them)."""

    #: Smallest result served: glibc's largest mmap threshold (DEFAULT_MMAP_THRESHOLD_MAX).
    SMALLEST = 32 << 20
    #: Most memory listed (kept when no result uses it): two results of 48 MB.
    LIMIT = 96 << 20

    def __init__(self):
        self._lock = threading.Lock()
        self._blocks = []           # uint8 arrays, least recently served first

    def empty(self, shape):
        """An uninitialised float64 array of ``shape`` (the caller writes every entry)."""
        nbytes = 8 * math.prod(shape)
        if not self.SMALLEST <= nbytes <= self.LIMIT:
            return np.empty(shape)
        with self._lock:
            blocks = self._blocks
            for i in range(len(blocks)):
                # 2 references: the list's and getrefcount's argument (a live view: 3+)
                if nbytes <= blocks[i].nbytes <= 2 * nbytes and sys.getrefcount(blocks[i]) == 2:
                    block = blocks.pop(i)
                    break
            else:
                # none fits: the free blocks (of other sizes) are dropped, the memory kept
                # is that of the current calls' sizes only
                blocks[:] = [b for b in blocks if sys.getrefcount(b) > 3]
                block = np.empty(nbytes, dtype=np.uint8)
                while blocks and sum(b.nbytes for b in blocks) + nbytes > self.LIMIT:
                    blocks.pop(0)
            blocks.append(block)
            return block[:nbytes].view(np.float64).reshape(shape)


_RESULTS = _ResultMemory()


#: Samples per block inside one regressor call (bounds the scratch buffers).
SUB = 256


#: Largest temporary regressor [bytes] that :func:`_fill` writes into a per-thread buffer
#: (``temporary``): the full matrix of a block of :data:`CHUNK` samples (ur10e: 8.8 MB).
TEMPORARY_BYTES = 16 << 20


def _fill(plan, N, qa, va, aa, drive_values, columns=None, load=None, temporary=False):
    """Y (N, rows, P): pinocchio loop, frame change, linear rotor columns and drive
    columns, block by block of SUB samples (the scratch buffers stay in the core's cache);
    or the compiled kernel, which writes every entry of each row once. ``columns`` (tuple):
    only these columns of Y (the kernel writes no other; the Python path takes them).
    ``load``: :meth:`Kernel.fill`'s (the kernel only). ``temporary``: the caller drops Y
    before its next regressor call in this thread: the kernel writes it into a reused
    per-thread buffer (up to :data:`TEMPORARY_BYTES`) instead of fresh memory, whose pages
    fault on first touch (issue #29: the full matrix of the load-dependent Coulomb
    columns, of which the equations keep the base columns)."""
    rows, P = plan.rows, plan.P
    kernel = plan.kernel_for(columns)
    if kernel is not None:      # the same matrix, per-sample loop in C++
        p = P if columns is None else len(columns)
        if temporary and 8 * N * rows * p <= TEMPORARY_BYTES:
            Y = _scratch("temporary", (N, rows, p))     # the kernel writes every entry
        else:
            Y = _RESULTS.empty((N, rows, p))        # the kernel writes every entry
        dsts, vals = [], []
        for flat, values in drive_values:
            dst = plan.remap(flat, columns)
            kept = dst >= 0
            dsts.append(dst[kept])
            vals.append(np.broadcast_to(values, (N, len(flat)))[:, kept])
        drive_dst = np.concatenate(dsts) if dsts else np.zeros(0, dtype=int)
        drive = np.concatenate(vals, axis=1) if vals else np.zeros((N, 0))
        kernel.fill(Y.reshape(N, rows * p), qa, va, aa, drive_dst, drive, load)
        return Y
    if columns is not None:
        return np.take(_fill(plan, N, qa, va, aa, drive_values), columns, axis=-1)
    Y = np.zeros((N, rows, P))
    Yflat = Y.reshape(N, rows * P)
    pm = plan.pin_model
    torque_regressor = functools.partial(pin.computeJointTorqueRegressor, pm, pm.createData())
    n_link = len(plan.link_rows)
    for s in range(0, N, SUB):
        e = min(s + SUB, N)
        m = e - s
        Yi = Y[s:e, :n_link, : 10 * n_link]
        out = _scratch("regressor", (m, pm.nv, plan.n_cols))   # contiguous: cheapest stores
        for i, args in enumerate(zip(qa[s:e], va[s:e], aa[s:e])):
            out[i] = torque_regressor(*args)
        if plan.basic:
            joint_frame = out[:, :n_link, : 10 * n_link]
            Yi[...] = joint_frame
        else:
            Yi[...] = joint_frame = out[:, plan.link_rows[:, None], plan.link_cols]
        # joint frame -> parameter frame (A_k blocks): columns moved or combined
        if len(plan.dense_dst):
            sources = np.take(joint_frame, plan.dense_src, axis=2, mode="clip",
                              out=_scratch("sources", (m, n_link, len(plan.dense_src))))
            dense = np.matmul(sources.reshape(m * n_link, -1), plan.dense_map,   # one gemm
                              out=_scratch("dense", (m * n_link, len(plan.dense_dst))))
            Yi[..., plan.dense_dst] = dense.reshape(m, n_link, -1)
        if len(plan.perm_dst):
            moved = np.take(joint_frame, plan.perm_src, axis=2, mode="clip",
                            out=_scratch("moved", (m, n_link, len(plan.perm_src))))
            Yi[..., plan.perm_dst] = np.multiply(moved, plan.perm_scale, out=moved)
        if plan.linear is not None:
            src, weights, starts, dst = plan.linear
            terms = np.take(out.reshape(m, -1), src, axis=1, mode="clip",
                            out=_scratch("terms", (m, len(src))))
            np.multiply(terms, weights, out=terms)
            Yflat[s:e, dst] = np.add.reduceat(terms, starts, axis=1,
                                              out=_scratch("sums", (m, len(dst))))
    for flat, values in drive_values:
        Yflat[:, flat] = values
    return Y


@blas_single_threaded
def rigid_regressor(model, q, dq, ddq, friction_deadband=0.0, columns=None, fast_load=False,
                    return_load=False):
    """Regressor of a rigid arm with rotor inertia and friction.

    tau = Y(q, dq, ddq) @ pi for the standard parameters pi of ``model``
    (``model.parameter_names``): the pinocchio joint torque regressor (inertial part,
    De Luca slides 5-6), plus per joint k a rotor-inertia column k_m^2 ddq_k (the
    link-referred rotor inertia, pinocchio's ``armature``) and the friction columns
    of :func:`friction_columns` evaluated on dq_k.

    Parameters
    ----------
    model : RobotModel
        A rigid model (``config.model == 'rigid'``).
    q, dq, ddq : array_like, shape (N, n)
        Joint positions [rad|m], velocities [rad/s|m/s], accelerations [rad/s^2|m/s^2],
        config joint order.
    friction_deadband : float or ndarray (n,)
        Coulomb sign deadband [rad/s] (:func:`coulomb_sign`); 0: sign(dq).
    columns : sequence of int, optional
        Only these columns (see :func:`regressor`).
    fast_load : bool
        With load-dependent Coulomb columns among ``columns``: their factor |tau_0| (the
        URDF's torque, :func:`nominal_load`) by Newton-Euler in the kernel's own pass, the
        other columns not evaluated (the same numbers to rounding, not to the bit; the
        nominal check's free refit, issue #29). Off (the regressor's product, every column
        evaluated) where the kernel lacks it or rotor inertias enter the URDF's torque.
    return_load : bool
        Also return the URDF's torque tau_0 (N, n) [N*m] that scaled the load-dependent
        Coulomb columns (:func:`nominal_load` of the full matrix), None where none of them
        is computed (or ``fast_load`` computed them): what a prediction's Coulomb level
        f_c + f_l |tau_0| needs without a second product (issue #29).

    Returns
    -------
    ndarray, shape (N, n, P)
        Regressor rows per sample; P = ``model.n_parameters``. With ``return_load``: (Y,
        tau_0 or None).

    Raises
    ------
    DataError
        Wrong shapes or non-finite values.
    """
    n = model.n
    q, dq, ddq = _as_motion(q, dq, ddq, n)
    N = q.shape[0]
    plan = _plan(model)
    fric = friction_columns(model, dq, friction_deadband)
    rotor = np.array([j.rotor for j in model.config.joints], dtype=float)  # 0: no rotor
    drive = [(plan.flat[key][0],
              rotor * model.gear_ratios ** 2 * ddq if key == "rotor_inertia" else fric[key])
             for key in plan.keys]
    columns = _columns(columns)
    load = "coulomb_load" in plan.keys         # needs every column (the URDF's torque)
    if load and columns is not None:           # ... where a load column is asked for
        load = not set(plan.column[(k, "coulomb_load")] for k in range(n)).isdisjoint(columns)
    qa, va, aa = model.pin_configuration(q), model.to_pin_v(dq), model.to_pin_v(ddq)
    if load and fast_load and columns is not None:
        kernel = plan.kernel_for(columns)
        pi0 = nominal_rigid_parameters(model)
        if kernel is not None and kernel.has_load and not np.any(pi0[10 * n:]):
            dst = plan.remap(plan.flat["coulomb_load"][0], columns)
            kept = dst >= 0
            Y = _fill(plan, N, qa, va, aa, drive, columns,
                      (_joint_frame_bodies(plan, pi0), dst[kept], plan.link_rows[kept]))
            return (Y, None) if return_load else Y
    # with load columns and ``columns``, Y is the full matrix only until its columns are
    # taken (a temporary)
    Y = _fill(plan, N, qa, va, aa, drive, None if load else columns,
              temporary=load and columns is not None)
    tau0 = None
    if load:
        cols = [plan.column[(k, "coulomb_load")] for k in range(n)]
        tau0 = nominal_load(model, Y)
        Y[:, np.arange(n), cols] *= np.abs(tau0)
        if columns is not None:
            Y = np.take(Y, columns, axis=-1)
    return (Y, tau0) if return_load else Y


def _joint_frame_bodies(plan, params):
    """(njoints - 1, 10): the link bodies' inertial parameters of the standard parameters
    ``params`` (P,) about their joint frames (pi_J = A_k pi_P), for the kernel's Newton-Euler
    (:meth:`Kernel.torque`)."""
    bodies = np.zeros((plan.pin_model.njoints - 1, 10))
    for k, A in enumerate(plan.frame_changes):
        p = params[10 * k: 10 * k + 10]
        bodies[plan.link_cols[10 * k] // 10] = p if A is None else A @ p
    return bodies


def rigid_torque(model, q, dq, ddq, params):
    """Joint torques tau = Y(q, dq, ddq) @ params of a rigid arm (Y: :func:`rigid_regressor`)
    for standard parameters ``params`` that are non-zero in inertial and rotor-inertia
    columns only (e.g. the URDF's inertials and the config's rotor inertia: the nominal
    torque of :mod:`robot_identification.diagnostics._nominal`).

    With the compiled kernel, by the recursive Newton-Euler algorithm (Featherstone, "Rigid
    Body Dynamics Algorithms", 2008, table 5.1; each body's spatial force from pinocchio's
    body regressor about its parameter frame) plus k_m^2 ddq_k times the rotor inertia: the
    same torque up to rounding at a fraction of the cost of the regressor's entries (issue
    #29; test/test_regressor_kernel.py compares both); otherwise, or where other columns are
    non-zero, the regressor of the non-zero columns times their values.

    Parameters
    ----------
    model : RobotModel
        A rigid model.
    q, dq, ddq : array_like, shape (N, n)
        Joint positions [rad|m], velocities [rad/s|m/s], accelerations [rad/s^2|m/s^2].
    params : array_like, shape (P,)
        Standard parameters (``model.parameter_names``).

    Returns
    -------
    ndarray, shape (N, n) [N*m|N]

    Raises
    ------
    DataError
        Wrong shapes or non-finite values.
    """
    n = model.n
    q, dq, ddq = _as_motion(q, dq, ddq, n)
    params = np.asarray(params, dtype=float)
    cols = np.flatnonzero(params)
    plan = _plan(model)
    kernel = plan.kernel if not model.config.elastic else None
    rotor = {plan.column[(k, "rotor_inertia")]: k for k in range(n)
             if "rotor_inertia" in plan.keys}
    if (kernel is not None and params.shape == (plan.P,)
            and all(c < 10 * n or c in rotor for c in cols)):
        tau = kernel.torque(model.pin_configuration(q), model.to_pin_v(dq),
                            model.to_pin_v(ddq), _joint_frame_bodies(plan, params))
        if tau is not None:
            tau = tau[:, plan.link_rows]
            gains = np.array([j.rotor for j in model.config.joints]) * model.gear_ratios ** 2
            for c, k in rotor.items():
                if params[c] != 0.0:
                    tau[:, k] += params[c] * (gains[k] * ddq[:, k])
            return tau
    return rigid_regressor(model, q, dq, ddq, columns=cols) @ params[cols]


def regressor_structure(model, columns=None):
    """Which entries of :func:`regressor`'s rows can be non-zero, shape (rows, P) or (rows,
    len(columns)) bool: a link row and a body's inertial columns where the row's joint
    supports the body, the rotor columns of the complete elastic model where the row carries
    the rotor, the drive columns on their joint's row(s). Every other entry is 0 for every
    sample (e.g. a motor row of the elastic PUMA has 5 non-zero base columns of 60), so sums
    over rows may skip those columns (:class:`~robot_identification.estimation.
    NormalEquations`)."""
    plan = _plan(model)
    cols = _columns(columns)
    p = plan.P if cols is None else len(cols)
    S = np.zeros(plan.rows * p, dtype=bool)
    _, (_, _, bdst), dst, _, _ = plan._kernel_map(cols)
    S[bdst[bdst >= 0]] = True
    S[dst] = True
    elastic = model.config.elastic
    for key in plan.keys:
        link, motor = plan.flat[key] if elastic else (plan.flat[key][0], None)
        used = [link] if not elastic else (
            [motor] if key == "rotor_inertia" and plan.linear is None else
            [] if key == "rotor_inertia" else
            [link, motor] if key in ("stiffness", "damping") else [motor])
        for flat in used:
            f = plan.remap(flat, cols)
            S[f[f >= 0]] = True
    return S.reshape(plan.rows, p)


def _columns(columns):
    """``columns`` as a hashable tuple of column indices (the kernel is cached by it)."""
    if columns is None:
        return None
    a = np.asarray(columns).ravel()
    if a.dtype.kind in "iu":        # the same ints, converted in one call
        return tuple(a.tolist())
    return tuple(int(c) for c in a)


def nominal_rigid_parameters(model):
    """The standard parameters (P,) of the URDF's rigid-body model: the URDF's inertials
    (mass [kg], first moments [kg*m], inertia [kg*m^2] per link, De Luca's standard
    parameters) and the config's rotor inertia [kg*m^2]; 0 in the friction, offset and
    other drive columns and where the URDF gives no value. ``Y @`` this vector is the torque
    :func:`nominal_load` and the nominal check (:mod:`robot_identification.diagnostics`)
    use. Computed once per model; the array is read-only."""
    pi0 = getattr(model, "_nominal_rigid_pi", None)
    if pi0 is None:
        pi0 = np.nan_to_num(np.asarray(model.nominal_parameters(), dtype=float))
        pi0[[k not in ("inertial", "rotor_inertia") for k in model.layout.kinds]] = 0.0
        pi0.flags.writeable = False
        model._nominal_rigid_pi = pi0
    return pi0


def nominal_load(model, Y):
    """Joint torque tau_0 (N, n) [N*m] the URDF's rigid-body model (inertials and the config's
    rotor inertia, no friction) predicts at the samples of the rigid regressor ``Y``
    (N, n, P): the load of the load-dependent Coulomb term f_l |tau_0| sign(v)
    (``friction.load_dependent``; Hamon, Gautier & Garrec, "New dry friction model with
    load- and velocity-dependence and dynamic identification of multi-DOF robots", ICRA
    2011, with the URDF's torque as the load so that the term stays linear in the
    parameters and is the same function in identification and prediction).
    """
    return np.asarray(Y) @ nominal_rigid_parameters(model)


@blas_single_threaded
def elastic_regressor(model, q, dq, ddq, theta, dtheta, ddtheta, friction_deadband=0.0,
                      columns=None):
    """Regressor of an arm with elastic joints (Zollo et al. 2014, eq. 13-34).

    With q the link positions and theta the link-referred motor positions
    (motor angle / k_m), the 2n equations per sample are

    - link rows 1..n:  B_L(q) ddq + B_d(q) ddtheta + c_L + g(q) + K (q - theta)
      [+ D (dq - dtheta)] = 0 (free space: zero left-hand side);
    - motor rows n+1..2n: B_d^T ddq + Upsilon k_m^2 ddtheta + c_M + friction(dtheta)
      - K (q - theta) [- D (dq - dtheta)] = u.

    The rotor of joint k spins about joint k's axis and its stator is fixed to the
    parent body (Zollo Sec. 3, assumptions 2-3). With ``coupling: complete`` the
    rotor-link inertial coupling B_d of eq. 8 and its Coriolis terms (eq. 22-28) are
    included: they are computed by pinocchio's torque regressor on a model augmented
    with one rotor joint per joint (coordinate k_m theta_k), minus the rotor's
    transverse share, which belongs to the parent body's standard parameters (eq.
    A.14). ``coupling: reduced`` is Spong's model (B_d = 0). Friction acts on the
    motor rows as a function of dtheta (eq. 5).

    Parameters
    ----------
    model : RobotModel
        An elastic model.
    q, dq, ddq : array_like, shape (N, n)
        Link positions [rad], velocities [rad/s], accelerations [rad/s^2].
    theta, dtheta, ddtheta : array_like, shape (N, n)
        Link-referred motor positions, velocities, accelerations.
    friction_deadband : float or ndarray (n,)
        Coulomb sign deadband [rad/s] (:func:`coulomb_sign`) of the motor velocity.
    columns : sequence of int, optional
        Only these columns (see :func:`regressor`).

    Returns
    -------
    ndarray, shape (N, 2n, P)
        Rows 0..n-1 link equations, n..2n-1 motor equations (config joint order).

    Raises
    ------
    DataError
        Wrong shapes or non-finite values.
    """
    n = model.n
    q = _as_samples("q", q, n)
    N = q.shape[0]
    dq, ddq = _as_samples("dq", dq, n, N), _as_samples("ddq", ddq, n, N)
    theta = _as_samples("theta", theta, n, N)
    dtheta = _as_samples("dtheta", dtheta, n, N)
    ddtheta = _as_samples("ddtheta", ddtheta, n, N)
    gear = model.gear_ratios
    plan = _plan(model)
    am = plan.pin_model
    nq, nv = model.pin_model.nq, model.pin_model.nv
    qa = np.empty((N, am.nq))
    qa[:, :nq] = model.pin_configuration(q)
    va, aa = np.empty((N, am.nv)), np.empty((N, am.nv))
    va[:, :nv], aa[:, :nv] = model.to_pin_v(dq), model.to_pin_v(ddq)
    qa[:, [am.joints[r].idx_q for r in model.rotor_joint_ids]] = gear * theta
    va[:, model.rotor_velocity_indices] = gear * dtheta
    aa[:, model.rotor_velocity_indices] = gear * ddtheta
    fric = friction_columns(model, dtheta, friction_deadband)
    drive = []
    for key in plan.keys:
        link, motor = plan.flat[key]
        if key == "rotor_inertia":
            if plan.linear is None:       # reduced coupling (Spong): B_d = 0
                drive.append((motor, gear ** 2 * ddtheta))
        elif key in ("stiffness", "damping"):
            deflection = q - theta if key == "stiffness" else dq - dtheta
            drive += [(link, deflection), (motor, -deflection)]
        else:
            drive.append((motor, fric[key]))
    return _fill(plan, N, qa, va, aa, drive, _columns(columns))


def _spin_about(axis):
    return spin_inertia_parameters(axis)


def regressor(model, q, dq, ddq, theta=None, dtheta=None, ddtheta=None, friction_deadband=0.0,
              columns=None):
    """Regressor of ``model``: :func:`elastic_regressor` or :func:`rigid_regressor`.

    Parameters
    ----------
    columns : sequence of int, optional
        Only these columns (e.g. ``BaseParameters.independent``: the base columns, the same
        as ``BaseParameters.project`` of the full matrix); the compiled kernel then writes
        no other column.

    Returns
    -------
    ndarray, shape (N, rows, P) or (N, rows, len(columns))
        ``rows = model.rows_per_sample``.

    Raises
    ------
    DataError
        Elastic model without motor-side states, bad shapes or non-finite values.
    """
    if model.config.elastic:
        if theta is None or dtheta is None or ddtheta is None:
            raise DataError(f"robot '{model.config.name}' has elastic joints: the regressor "
                            f"needs motor positions, velocities and accelerations (theta)")
        return elastic_regressor(model, q, dq, ddq, theta, dtheta, ddtheta, friction_deadband,
                                 columns)
    return rigid_regressor(model, q, dq, ddq, friction_deadband, columns)


def torque_vector(model, tau, tau_joint=None):
    """Left-hand side rows matching :func:`regressor`.

    Parameters
    ----------
    tau : array_like, shape (N, n)
        Joint torques (rigid) or motor torques u (elastic), link-referred [N*m].
    tau_joint : array_like, shape (N, n), optional
        Elastic arms with joint torque sensors: the torque each elastic joint transmits,
        tau_J = K (theta - q) + D (dtheta - dq) [N*m]. The spring terms of both row groups
        are then measured: moved to the left-hand side, the equations hold without the
        stiffness and damping columns (docs/elastic.md; Zollo et al. 2014, eq. 2, 6).

    Returns
    -------
    ndarray, shape (N, rows)
        Rigid: tau. Elastic: [0 (link rows, free space), u] (Zollo eq. 2, 35-37); with
        ``tau_joint``: [tau_J, u - tau_J].
    """
    tau = np.atleast_2d(np.asarray(tau, dtype=float))
    if not model.config.elastic:
        return tau
    if tau_joint is not None:
        tj = np.atleast_2d(np.asarray(tau_joint, dtype=float))
        return np.concatenate([tj, tau - tj], axis=1)
    return np.concatenate([np.zeros_like(tau), tau], axis=1)


def iter_regressor_blocks(model, states, chunk=CHUNK, friction_deadband=0.0):
    """Yield ``(start, Y, y)`` blocks of the stacked observation system in chunks.

    Parameters
    ----------
    model : RobotModel
    states : mapping
        ``q, dq, ddq, tau`` and, for elastic models, ``theta, dtheta, ddtheta``;
        arrays (N, n).
    chunk : int
        Samples per block (bounds memory: chunk * rows * P doubles).
    friction_deadband : float or ndarray (n,)
        Coulomb sign deadband [rad/s] (:func:`coulomb_sign`).
    """
    N = np.asarray(states["q"]).shape[0]
    for s in range(0, N, chunk):
        sl = slice(s, min(s + chunk, N))
        extra = {}
        if model.config.elastic:
            extra = {k: states[k][sl] for k in ("theta", "dtheta", "ddtheta")}
        Y = regressor(model, states["q"][sl], states["dq"][sl], states["ddq"][sl], **extra,
                      friction_deadband=friction_deadband)
        yield s, Y, torque_vector(model, states["tau"][sl])
