"""Elastic-joint regressor (Zollo et al. 2014) against independent references:
the paper's explicit planar regressor (notes A.4, sympy-verified) and a numerical
Lagrangian built from the energies of eq. 1 (with the 1/2 of the elastic energy)."""
import numpy as np
import pinocchio as pin
import pytest

from conftest import make_model
from robot_identification.model import load_robot
from robot_identification.regressor import elastic_regressor


def _planar_reference(names, q, dq, ddq, th, dth, ddth, a1=0.5, a2=0.5, g=9.81, km=0.1):
    """Explicit 2-dof planar regressor, seed-notes-elastic-and-lin.md A.4."""
    ix = names.index
    Y = np.zeros((4, len(names)))
    c1, s1 = np.cos(q[0]), np.sin(q[0])
    c2, s2 = np.cos(q[1]), np.sin(q[1])
    c12, s12 = np.cos(q[0] + q[1]), np.sin(q[0] + q[1])
    cor = 2 * dq[0] * dq[1] + dq[1] ** 2
    Y[0, ix("link1.m")] = a1 ** 2 * ddq[0] + g * a1 * c1
    Y[0, ix("link2.m")] = ((a1 ** 2 + a2 ** 2 + 2 * a1 * a2 * c2) * ddq[0]
                           + (a2 ** 2 + a1 * a2 * c2) * ddq[1] - a1 * a2 * s2 * cor
                           + g * (a1 * c1 + a2 * c12))
    Y[0, ix("link1.mx")] = 2 * a1 * ddq[0] + g * c1
    Y[0, ix("link1.my")] = -g * s1
    Y[0, ix("link2.mx")] = ((2 * a2 + 2 * a1 * c2) * ddq[0] + (2 * a2 + a1 * c2) * ddq[1]
                            - a1 * s2 * cor + g * c12)
    Y[0, ix("link2.my")] = -(2 * a1 * s2 * ddq[0] + a1 * s2 * ddq[1] + a1 * c2 * cor + g * s12)
    Y[0, ix("link1.Izz")] = ddq[0]
    Y[0, ix("link2.Izz")] = ddq[0] + ddq[1]
    Y[0, ix("joint2.rotor_inertia")] = km * ddth[1]
    Y[0, ix("joint1.stiffness")] = q[0] - th[0]
    Y[1, ix("link2.m")] = a2 * (a1 * dq[0] ** 2 * s2 + a1 * c2 * ddq[0] + a2 * (ddq[0] + ddq[1])
                                + g * c12)
    Y[1, ix("link2.mx")] = (a1 * dq[0] ** 2 * s2 + a1 * c2 * ddq[0] + 2 * a2 * (ddq[0] + ddq[1])
                            + g * c12)
    Y[1, ix("link2.my")] = a1 * dq[0] ** 2 * c2 - a1 * s2 * ddq[0] - g * s12
    Y[1, ix("link2.Izz")] = ddq[0] + ddq[1]
    Y[1, ix("joint2.stiffness")] = q[1] - th[1]
    for k in range(2):
        Y[2 + k, ix(f"joint{k + 1}.stiffness")] = -(q[k] - th[k])
        Y[2 + k, ix(f"joint{k + 1}.coulomb")] = np.sign(dth[k])
        Y[2 + k, ix(f"joint{k + 1}.viscous")] = dth[k]
    Y[2, ix("joint1.rotor_inertia")] = km ** 2 * ddth[0]
    Y[3, ix("joint2.rotor_inertia")] = km * (km * ddth[1] + ddq[0])
    return Y


def test_planar_matches_paper_regressor():
    model = load_robot("zollo_planar")
    rng = np.random.default_rng(0)
    st = [rng.normal(size=(20, 2)) for _ in range(6)]
    Y = elastic_regressor(model, *st)
    for i in range(20):
        ref = _planar_reference(model.parameter_names, *(s[i] for s in st))
        np.testing.assert_allclose(Y[i], ref, atol=1e-12, err_msg=f"sample {i}")


class _Lagrangian:
    """Energies of Zollo eq. 1 for a RobotModel; generalised forces by finite differences.

    T = sum_bodies 1/2 v^T M v  (spatial velocities from forward kinematics)
        + sum_k Upsilon_k k_m dtheta_k (a_k . omega_parent) + 1/2 Upsilon_k k_m^2 dtheta_k^2
    U = -sum_bodies m g . p_com + 1/2 sum_k K_k (q_k - theta_k)^2
    """

    def __init__(self, model, pi):
        self.model = model
        self.pm = model.pin_model.copy()
        pij = model.inertial_to_joint_frame(pi)
        for k, jid in enumerate(model._jids):
            p = pij[10 * k: 10 * k + 10]
            # pinocchio's Inertia from standard parameters about the joint origin
            self.pm.inertias[jid] = pin.Inertia.FromDynamicParameters(p)
        self.data = self.pm.createData()
        d = dict(zip(model.parameter_names, pi))
        self.ups = np.array([d[f"{j}.rotor_inertia"] for j in model.joint_names])
        self.K = np.array([d[f"{j}.stiffness"] for j in model.joint_names])
        self.fv = np.array([d[f"{j}.viscous"] for j in model.joint_names])
        self.fc = np.array([d[f"{j}.coulomb"] for j in model.joint_names])
        self.fo = np.array([d.get(f"{j}.offset", 0.0) for j in model.joint_names])
        self.km = model.gear_ratios
        self.axes = []
        for k, jid in enumerate(model._jids):
            self.axes.append((self.pm.parents[jid],
                              self.pm.jointPlacements[jid].rotation @ model.joint_axes[k]))

    def T(self, q, dq, dth):
        m, pm, d = self.model, self.pm, self.data
        pin.forwardKinematics(pm, d, m.pin_configuration(q), m.to_pin_v(dq))
        T = 0.0
        for jid in range(1, pm.njoints):
            v = d.v[jid].vector
            T += 0.5 * v @ pm.inertias[jid].matrix() @ v
        for k, (parent, axis) in enumerate(self.axes):
            w = d.v[parent].angular if parent > 0 else np.zeros(3)
            T += (self.ups[k] * self.km[k] * dth[k] * (axis @ w)
                  + 0.5 * self.ups[k] * (self.km[k] * dth[k]) ** 2)
        return T

    def U(self, q, th):
        m, pm, d = self.model, self.pm, self.data
        pin.forwardKinematics(pm, d, m.pin_configuration(q))
        g = pm.gravity.linear
        U = 0.0
        for jid in range(1, pm.njoints):
            I = pm.inertias[jid]
            U -= I.mass * g @ (d.oMi[jid].act(I.lever))
        return U + 0.5 * self.K @ (q - th) ** 2

    def forces(self, q, dq, ddq, th, dth, ddth, h=1e-5, s=1.0):
        n = len(q)

        def p(q, dq, dth):  # generalised momenta, exact for a quadratic T
            out = np.empty(2 * n)
            for i in range(n):
                e = np.zeros(n)
                e[i] = s
                out[i] = (self.T(q, dq + e, dth) - self.T(q, dq - e, dth)) / (2 * s)
                out[n + i] = (self.T(q, dq, dth + e) - self.T(q, dq, dth - e)) / (2 * s)
            return out

        def state(t):
            return q + dq * t + 0.5 * ddq * t * t, dq + ddq * t, dth + ddth * t

        dp = (p(*state(h)) - p(*state(-h))) / (2 * h)
        dT, dU = np.zeros(2 * n), np.zeros(2 * n)
        for i in range(n):
            e = np.zeros(n)
            e[i] = h
            dT[i] = (self.T(q + e, dq, dth) - self.T(q - e, dq, dth)) / (2 * h)
            dU[i] = (self.U(q + e, th) - self.U(q - e, th)) / (2 * h)
            dU[n + i] = (self.U(q, th + e) - self.U(q, th - e)) / (2 * h)
        tau = dp - dT + dU
        tau[n:] += self.fv * dth + self.fc * np.sign(dth) + self.fo
        return tau


@pytest.mark.parametrize("seed", [0, 1])
def test_spatial_elastic_matches_lagrangian(elastic_arm, seed):
    model = elastic_arm
    rng = np.random.default_rng(seed)
    pi = model.nominal_parameters()
    lag = _Lagrangian(model, pi)
    n = model.n
    for i in range(3):
        st = [rng.uniform(-1.5, 1.5, n), rng.normal(0, 1, n), rng.normal(0, 2, n)]
        st += [st[0] + rng.normal(0, 0.02, n), rng.normal(0, 1, n), rng.normal(0, 2, n)]
        Y = elastic_regressor(model, *(x[None] for x in st))[0]
        ref = lag.forces(*st)
        np.testing.assert_allclose(Y @ pi, ref, rtol=0, atol=1e-6 * np.abs(ref).max(),
                                   err_msg=f"seed {seed} sample {i}")


def test_reduced_coupling_drops_rotor_link_terms():
    model = make_model("elastic", prismatic=False, gear=[50.0, 80.0, 0.1, 30.0, 2.0],
                       coupling="reduced")
    rng = np.random.default_rng(3)
    st = [rng.normal(size=(4, model.n)) for _ in range(6)]
    Y = elastic_regressor(model, *st)
    cols = [model.parameter_names.index(f"{j}.rotor_inertia") for j in model.joint_names]
    assert np.all(Y[:, : model.n, cols] == 0)
    np.testing.assert_allclose(Y[:, model.n:, cols],
                               np.einsum("nk,kj->nkj", st[5] * model.gear_ratios ** 2,
                                         np.eye(model.n)))
