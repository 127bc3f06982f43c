"""Friction laws used by the simulator (not by the identification regressor)."""
from __future__ import annotations

import copy

import numpy as np

from robot_identification.errors import ConfigError

_FRICTION_KEYS = ("viscous", "coulomb", "stiction", "stribeck", "offset")


def zollo_stribeck(v, f1, f2, f3, f4, f5, f6, position=None):
    """Friction torque of Zollo et al. (2014), eq. 43 (after Bompos et al. 2007).

    F = f1 v + f2 sgn(v) - f3 sgn(v) exp(-|v| / f4) - f5 sgn(v) exp(-1 / (f6 |v|))

    The paper prints |theta| (a position) in the third term; the default reading uses
    the velocity (Stribeck decay, f4 in rad/s). With ``position`` given, the printed
    form exp(-|theta| / f4) is used instead. The last term is read as
    exp(-1 / (f6 |v|)) (it vanishes at v = 0 and tends to -f5 sgn(v) at high speed);
    see docs/simulation.md.

    Parameters
    ----------
    v : ndarray
        Velocity [rad/s] (link-referred motor velocity theta_dot).
    f1..f6 : float
        [N*m*s/rad], [N*m], [N*m], [rad/s], [N*m], [s/rad].
    position : ndarray, optional
        Link-referred motor position [rad] for the paper's literal third term.

    Returns
    -------
    ndarray, like v
        Friction torque [N*m] opposing the motion.
    """
    v = np.asarray(v, dtype=float)
    sg = np.sign(v)
    av = np.abs(v)
    decay = np.exp(-(av if position is None else np.abs(position)) / f4)
    with np.errstate(divide="ignore", over="ignore"):
        fade = np.exp(-1.0 / (f6 * av))
    return f1 * v + f2 * sg - f3 * sg * decay - f5 * sg * fade


def _zollo_stribeck_joints(v, z, position=None):
    """:func:`zollo_stribeck` of several joints at once: coefficient arrays ``z['f1']`` ..
    ``z['f6']``; ``position`` NaN where a joint uses the velocity reading."""
    sg = np.sign(v)
    av = np.abs(v)
    arg = av if position is None else np.where(np.isnan(position), av, np.abs(position))
    decay = np.exp(-arg / z["f4"])
    with np.errstate(divide="ignore", over="ignore"):
        fade = np.exp(-1.0 / (z["f6"] * av))
    return z["f1"] * v + z["f2"] * sg - z["f3"] * sg * decay - z["f5"] * sg * fade


class FrictionModel:
    """Per-joint friction torque of a model's drives, as the simulator applies it.

    Each joint uses its ``simulation_friction`` law from the config:
    ``zollo_stribeck`` (:func:`zollo_stribeck`) or ``regressor`` -- the
    identification friction model (:func:`robot_identification.regressor.friction_columns`)
    with the joint's drive values ``fv, fc, fs, fsc, fo``, so that simulated torques are
    exactly linear in the standard parameters. Joints without ``simulation_friction``
    use ``regressor``.

    Parameters
    ----------
    model : RobotModel
    law : {None, 'regressor', 'none'}
        Override the configured laws for all joints.

    Raises
    ------
    ConfigError
        A joint with a non-zero load-dependent Coulomb coefficient (``coulomb_load``):
        the simulator does not apply it (its load is the URDF's joint torque of the whole
        sample, not a per-joint friction law).
    """

    def __init__(self, model, law=None):
        self.model = model
        n = model.n
        loaded = [j.name for j in model.config.joints if j.drive.get("coulomb_load", 0.0)]
        if loaded and law != "none":
            raise ConfigError(f"drive.coulomb_load of {loaded}: the simulator does not apply "
                              f"load-dependent Coulomb friction; set it to 0 (or leave it "
                              f"out) to simulate this robot")
        keys = [k for k in model.drive_parameter_keys() if k in _FRICTION_KEYS]
        self._keys = keys
        self._coef = {k: np.array([j.drive.get(k, 0.0) for j in model.config.joints])
                      for k in keys}
        self.laws = []
        for j in model.config.joints:
            sf = j.simulation_friction
            if law is not None:
                self.laws.append({"model": law})
            elif sf is None:
                self.laws.append({"model": "regressor"})
            else:
                self.laws.append(dict(sf))
        self._kv = model.config.friction.stiction_sharpness
        self._delta = model.config.friction.stribeck_sharpness
        self._regressor_joints = np.array([lw["model"] == "regressor" for lw in self.laws])
        self._stribeck = [k for k in range(n) if self.laws[k]["model"] == "zollo_stribeck"]
        # hot path (called at every dynamics evaluation): per term the coefficients of the
        # joints using the regressor law (0 elsewhere), terms zero on every joint left out
        mask = self._regressor_joints.astype(float)
        self._terms = [(key, self._coef[key] * mask) for key in
                       ("viscous", "coulomb", "offset", "stiction", "stribeck")
                       if key in self._coef and np.any(self._coef[key] * mask != 0.0)]
        idx = np.array(self._stribeck, dtype=int)
        self._zs_idx = idx
        self._zs = {f: np.array([self.laws[k][f] for k in idx], dtype=float)
                    for f in ("f1", "f2", "f3", "f4", "f5", "f6")}
        self._zs_position = np.array([self.laws[k].get("variant") == "paper_position"
                                      for k in idx], dtype=bool)

    def __call__(self, v, position=None):
        """Friction torques (n,) [N*m] at velocities v (n,) [rad/s] (``position``: the
        link-referred motor positions, for the ``paper_position`` variant of
        :func:`zollo_stribeck`)."""
        v = np.asarray(v, dtype=float)
        out = None
        for key, c in self._terms:   # same terms as regressor.friction_columns
            if key == "viscous":
                term = c * v
            elif key == "coulomb":
                term = c * np.sign(v)
            elif key == "offset":
                term = c + 0.0 * v
            elif key == "stiction":
                term = c * (2 / np.pi) * np.arctan(self._kv * v)
            else:
                term = c * (2 / np.pi) * np.arctan(self._delta * v)
            if out is None:
                out = term
            else:
                out += term
        if out is None:
            out = np.zeros_like(v)
        if len(self._zs_idx):
            idx, z = self._zs_idx, self._zs
            pos = None
            if position is not None and self._zs_position.any():
                pos = np.where(self._zs_position, np.asarray(position, dtype=float)[idx],
                               np.nan)
            out[idx] = _zollo_stribeck_joints(v[idx], z, pos)
        return out

    def arctan_band(self):
        """Per joint the speed [rad/s] below which an arctan term (stiction, Stribeck: the
        regularised steps of Gincsaine 2021, eq. 7-8) is steep, 1 / its sharpness (0: no
        such term). The simulator's IMEX integrator leaves these terms explicit and
        integrates the steps that enter this band with RK4 steps."""
        band = np.zeros(self.model.n)
        for key, c in self._terms:
            if key in ("stiction", "stribeck"):
                sharp = self._kv if key == "stiction" else self._delta
                band = np.maximum(band, np.where(c != 0.0, 1.0 / sharp, 0.0))
        return band

    def coulomb_viscous_split(self):
        """The laws split as F(v) = f_v v + f_c sign(v) + R(v) with f_v, f_c >= 0 and R the
        rest, continuous at v = 0 where ``jump`` is False: the monotone part (viscous
        slope and Coulomb step) that the simulator's IMEX integrator treats implicitly
        (set-valued at v = 0: a stick state, Moreau's time-stepping of Coulomb friction).

        Regressor law: f_v = ``viscous``, f_c = ``coulomb`` (a negative coefficient stays in
        R). ``zollo_stribeck`` (eq. 43) read with velocities: f_v = f1, f_c = f2 - f3, its
        step at v = 0 (the f5 term vanishes there); the paper's position variant
        (a step that depends on theta) stays in R.

        Returns
        -------
        fv, fc : ndarray (n,)
            [N*m*s/rad], [N*m].
        jump : ndarray (n,) of bool
            Joints whose R still steps at v = 0 (integrated as before: steps over which
            their velocity changes sign are redone with RK4).
        """
        n = self.model.n
        fv, fc = np.zeros(n), np.zeros(n)
        jump = np.zeros(n, dtype=bool)
        for key, c in self._terms:
            if key == "viscous":
                fv += np.maximum(c, 0.0)
            elif key == "coulomb":
                fc += np.maximum(c, 0.0)
                jump |= c < 0.0
        for i, k in enumerate(self._zs_idx):
            z = {f: self._zs[f][i] for f in ("f1", "f2", "f3")}
            fv[k] = max(z["f1"], 0.0)
            if self._zs_position[i]:
                jump[k] = True
            else:
                fc[k] = max(z["f2"] - z["f3"], 0.0)
                jump[k] = z["f2"] - z["f3"] < 0.0
        return fv, fc, jump

    def viscous_only(self):
        """This model reduced to its viscous terms (linear in the velocity; the linearised
        arm of :func:`~robot_identification.simulation.tolerated_command_delay`)."""
        out = copy.copy(self)
        out._terms = [(key, c) for key, c in self._terms if key == "viscous"]
        out._zs_idx = np.zeros(0, dtype=int)
        return out

    def describe(self):
        """Short text of the laws, per joint (for dataset metadata)."""
        return [lw["model"] + (f"({lw.get('variant', 'velocity')})"
                               if lw["model"] == "zollo_stribeck" else "") for lw in self.laws]
