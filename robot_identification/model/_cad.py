"""CAD-error draws: a URDF whose inertials differ from the nominal one as a real arm differs
from its CAD model (for studies of diagnostics against the URDF on data of another arm)."""
from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

_INERTIA_KEYS = (("ixx", 0, 0), ("ixy", 0, 1), ("ixz", 0, 2), ("iyy", 1, 1), ("iyz", 1, 2),
                 ("izz", 2, 2))


def cad_error_urdf(urdf_xml: str, rng, mass_sd: float = 0.2, com_sd: float = 0.02,
                   inertia_sd: float = 0.3) -> str:
    """The URDF with every link's inertial perturbed like a CAD model's error.

    Each link with a positive mass: mass x exp(mass_sd N(0,1)); centre of mass moved by
    com_sd N(0,1) [m] per axis; inertia tensor x the mass factor and scaled by
    sqrt(s_a s_b) with s = exp(inertia_sd N(0,1)) per axis (kept x the mass factor alone where
    that breaks positive definiteness or the triangle inequality). The sizes are those of
    the study in docs/diagnostics.md (20 % masses, 2 cm centres of mass, 30 % inertias).

    Parameters
    ----------
    urdf_xml : str
        The nominal URDF.
    rng : numpy.random.Generator
    mass_sd, com_sd, inertia_sd : float
        Log-normal spread of masses [-], normal spread of centres of mass [m], log-normal
        spread of the principal inertias [-].

    Returns
    -------
    str
        The perturbed URDF (XML; comments dropped).

    Raises
    ------
    xml.etree.ElementTree.ParseError
        ``urdf_xml`` is not XML.
    """
    root = ET.fromstring(urdf_xml)
    for inertial in root.iter("inertial"):
        mass = inertial.find("mass")
        if mass is None or float(mass.get("value", 0.0)) <= 0:
            continue
        f = float(np.exp(mass_sd * rng.normal()))
        mass.set("value", f"{float(mass.get('value')) * f:.9g}")
        origin = inertial.find("origin")
        step = com_sd * rng.normal(size=3)
        if origin is not None:
            xyz = np.array([float(v) for v in origin.get("xyz", "0 0 0").split()]) + step
            origin.set("xyz", " ".join(f"{v:.9g}" for v in xyz))
        node = inertial.find("inertia")
        if node is None:
            continue
        inertia = np.zeros((3, 3))
        for key, a, b in _INERTIA_KEYS:
            inertia[a, b] = inertia[b, a] = float(node.get(key, 0.0))
        s = np.exp(inertia_sd * rng.normal(size=3))
        new = f * inertia * np.sqrt(np.outer(s, s))
        ev = np.linalg.eigvalsh(new)
        if ev[0] <= 0 or ev[2] > ev[0] + ev[1]:
            new = f * inertia
        for key, a, b in _INERTIA_KEYS:
            node.set(key, f"{new[a, b]:.9g}")
    return ET.tostring(root, encoding="unicode")
