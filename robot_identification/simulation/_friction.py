"""Friction laws used by the simulator (not by the identification regressor)."""
from __future__ import annotations

import numpy as np

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
        from robot_identification.errors import ConfigError
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

    def __call__(self, v, position=None):
        """Friction torques (n,) [N*m] at velocities v (n,) [rad/s]."""
        v = np.asarray(v, dtype=float)
        out = np.zeros_like(v)
        if self._regressor_joints.any() and self._keys:
            c = self._coef
            f = np.zeros_like(v)      # same terms as regressor.friction_columns (hot path)
            if "viscous" in c:
                f += c["viscous"] * v
            if "coulomb" in c:
                f += c["coulomb"] * np.sign(v)
            if "offset" in c:
                f += c["offset"]
            if "stiction" in c:
                f += c["stiction"] * (2 / np.pi) * np.arctan(self._kv * v)
            if "stribeck" in c:
                f += c["stribeck"] * (2 / np.pi) * np.arctan(self._delta * v)
            out = np.where(self._regressor_joints, f, out)
        for k in self._stribeck:
            lw = self.laws[k]
            pos = None
            if lw.get("variant") == "paper_position" and position is not None:
                pos = position[k]
            out[k] = zollo_stribeck(v[k], lw["f1"], lw["f2"], lw["f3"], lw["f4"], lw["f5"],
                                    lw["f6"], pos)
        return out

    def describe(self):
        """Short text of the laws, per joint (for dataset metadata)."""
        return [lw["model"] + (f"({lw.get('variant', 'velocity')})"
                               if lw["model"] == "zollo_stribeck" else "") for lw in self.laws]
