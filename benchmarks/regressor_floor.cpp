// The C++ floor of benchmarks/regressor_throughput.py: pinocchio's computeJointTorqueRegressor
// called from a C++ loop over the samples (no Python per sample, result discarded), on the
// kinematic tree the compiled kernel gets (regressor/_kernel.py: kinematic_tree). Compiled
// in the benchmark run by `scripts/build_kernel.sh VENV benchmarks/regressor_floor.cpp OUT`
// against the same pinocchio headers and flags as the kernel; loaded with ctypes.
#include <algorithm>
#include <ctime>
#include <exception>
#include <string>

#include "pinocchio/multibody.hpp"
#include "pinocchio/algorithm/regressor.hpp"

static volatile double ri_floor_sink;   // read of the results: the loop is not optimised away

extern "C" {

// Joint codes, placements, axes and gravity as ri_kernel_create (regressor/_kernel.cpp);
// q, v, a: n x njoints, row-major. Returns the best of `repeat` process CPU times [s] of
// the loop over the n samples, or -1 on an unknown joint type or error.
__attribute__((visibility("default"))) double ri_floor(
    int njoints, const int* types, const int* parents, const double* placements,
    const double* axes, const double* gravity, long n, const double* q, const double* v,
    const double* a, int repeat) {
  try {
    pinocchio::Model m;
    for (int j = 0; j < njoints; ++j) {
      const double* p = placements + 12 * j;
      Eigen::Matrix3d R;
      R << p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8];
      const pinocchio::SE3 placement(R, Eigen::Vector3d(p[9], p[10], p[11]));
      const Eigen::Vector3d axis(axes[3 * j], axes[3 * j + 1], axes[3 * j + 2]);
      const auto parent = static_cast<pinocchio::JointIndex>(parents[j]);
      const std::string name = "j" + std::to_string(j);
      pinocchio::JointIndex id;
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
        default: return -1.0;
      }
      m.appendBodyToJoint(id, pinocchio::Inertia::Identity(), pinocchio::SE3::Identity());
    }
    m.gravity.linear(Eigen::Vector3d(gravity[0], gravity[1], gravity[2]));
    pinocchio::Data data(m);
    Eigen::VectorXd qi(m.nq), vi(m.nv), ai(m.nv);
    double best = 1e300, sink = 0.0;
    for (int r = 0; r < repeat; ++r) {
      const std::clock_t start = std::clock();
      for (long i = 0; i < n; ++i) {
        qi = Eigen::Map<const Eigen::VectorXd>(q + i * m.nq, m.nq);
        vi = Eigen::Map<const Eigen::VectorXd>(v + i * m.nv, m.nv);
        ai = Eigen::Map<const Eigen::VectorXd>(a + i * m.nv, m.nv);
        sink += pinocchio::computeJointTorqueRegressor(m, data, qi, vi, ai)(m.nv - 1, 9);
      }
      best = std::min(best, double(std::clock() - start) / CLOCKS_PER_SEC);
    }
    ri_floor_sink = sink;
    return best;
  } catch (const std::exception&) {
    return -1.0;
  }
}

}  // extern "C"
