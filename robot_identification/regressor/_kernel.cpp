// Compiled batch kernel of the regressor (issue #9): the per-sample loop over pinocchio's
// joint torque regressor and the sparse linear map from its entries to the observation
// rows (frame change A_k, link row/column selection, rotor columns of the complete elastic
// model), for all samples in one call. Loaded with ctypes by _kernel.py; built by
// scripts/build_kernel.sh (header-only pinocchio from the `pin` wheel, Eigen from
// `cmeel-eigen`). The Python path in _regressor.py computes the same matrix.
//
// The model is passed as its kinematic tree only (the torque regressor does not depend on
// the inertias): per joint a type code, parent, placement in the parent frame and axis.
#include <exception>
#include <vector>

#include "pinocchio/multibody.hpp"
#include "pinocchio/algorithm/regressor.hpp"

namespace {

struct Kernel {
  pinocchio::Model model;
  std::vector<long> dst, src;    // flat destination in a Y row, flat source in R
  std::vector<double> weight;
};

}  // namespace

#define RI_EXPORT __attribute__((visibility("default")))

extern "C" {

// Joint type codes: 0, 1, 2 = revolute about x, y, z; 3 = revolute about `axis`;
// 4, 5, 6 = prismatic along x, y, z; 7 = prismatic along `axis`.
// placements: (njoints, 12) rotation (row-major 3x3) then translation [m];
// axes: (njoints, 3); gravity: (3,) [m/s^2]; map: n_map triplets (dst, src, weight) with
// dst indexing one sample's Y (rows * P, row-major) and src one sample's regressor R
// (nv x 10 * njoints, row-major). Returns nullptr on an unknown joint type or error.
RI_EXPORT void* ri_kernel_create(int njoints, const int* types, const int* parents,
                       const double* placements, const double* axes, const double* gravity,
                       long n_map, const long* dst, const long* src, const double* weight) {
  try {
    auto* k = new Kernel();
    pinocchio::Model& m = k->model;
    for (int j = 0; j < njoints; ++j) {
      const double* p = placements + 12 * j;
      Eigen::Matrix3d R;
      R << p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8];
      const pinocchio::SE3 placement(R, Eigen::Vector3d(p[9], p[10], p[11]));
      const Eigen::Vector3d axis(axes[3 * j], axes[3 * j + 1], axes[3 * j + 2]);
      pinocchio::JointIndex id;
      const auto parent = static_cast<pinocchio::JointIndex>(parents[j]);
      const std::string name = "j" + std::to_string(j);
      switch (types[j]) {
        case 0: id = m.addJoint(parent, pinocchio::JointModelRX(), placement, name); break;
        case 1: id = m.addJoint(parent, pinocchio::JointModelRY(), placement, name); break;
        case 2: id = m.addJoint(parent, pinocchio::JointModelRZ(), placement, name); break;
        case 3:
          id = m.addJoint(parent, pinocchio::JointModelRevoluteUnaligned(axis), placement, name);
          break;
        case 4: id = m.addJoint(parent, pinocchio::JointModelPX(), placement, name); break;
        case 5: id = m.addJoint(parent, pinocchio::JointModelPY(), placement, name); break;
        case 6: id = m.addJoint(parent, pinocchio::JointModelPZ(), placement, name); break;
        case 7:
          id = m.addJoint(parent, pinocchio::JointModelPrismaticUnaligned(axis), placement,
                          name);
          break;
        default: delete k; return nullptr;
      }
      // a body with any non-zero inertia: the regressor does not use it
      m.appendBodyToJoint(id, pinocchio::Inertia::Identity(), pinocchio::SE3::Identity());
    }
    m.gravity.linear(Eigen::Vector3d(gravity[0], gravity[1], gravity[2]));
    k->dst.assign(dst, dst + n_map);
    // src indexes R row-major (as numpy sees it); pinocchio's Data keeps R column-major
    const long n_cols = 10 * (m.njoints - 1);
    k->src.resize(n_map);
    for (long t = 0; t < n_map; ++t) k->src[t] = (src[t] % n_cols) * m.nv + src[t] / n_cols;
    k->weight.assign(weight, weight + n_map);
    return k;
  } catch (const std::exception&) {
    return nullptr;
  }
}

// Interface version: _kernel.py refuses a library built from another version of this file.
RI_EXPORT int ri_kernel_version() { return 2; }

RI_EXPORT void ri_kernel_free(void* kernel) { delete static_cast<Kernel*>(kernel); }

RI_EXPORT int ri_kernel_nv(void* kernel) { return static_cast<Kernel*>(kernel)->model.nv; }

// For each of n samples (q: n x nq, v, a: n x nv, row-major): R = computeJointTorqueRegressor
// and Y_i[dst] += weight * R[src] (Y: n x y_stride, row-major; usually zero on entry).
// Returns 0, or 1 on error.
RI_EXPORT int ri_kernel_regressor(void* kernel, long n, const double* q, const double* v,
                        const double* a, long y_stride, double* Y) {
  try {
    const Kernel& k = *static_cast<Kernel*>(kernel);
    const pinocchio::Model& m = k.model;
    pinocchio::Data data(m);
    const long n_map = static_cast<long>(k.dst.size());
    const long* dst = k.dst.data();
    const long* src = k.src.data();
    const double* w = k.weight.data();
    // plain vectors: the argument types of the instantiation compiled into libpinocchio
    Eigen::VectorXd qi(m.nq), vi(m.nv), ai(m.nv);
    for (long i = 0; i < n; ++i) {
      qi = Eigen::Map<const Eigen::VectorXd>(q + i * m.nq, m.nq);
      vi = Eigen::Map<const Eigen::VectorXd>(v + i * m.nv, m.nv);
      ai = Eigen::Map<const Eigen::VectorXd>(a + i * m.nv, m.nv);
      // read in place (column-major, no copy of the nv x 10 nb matrix)
      const double* r = pinocchio::computeJointTorqueRegressor(m, data, qi, vi, ai).data();
      double* y = Y + i * y_stride;
      for (long t = 0; t < n_map; ++t) y[dst[t]] += w[t] * r[src[t]];
    }
    return 0;
  } catch (const std::exception&) {
    return 1;
  }
}

}  // extern "C"
