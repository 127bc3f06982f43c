// Compiled batch kernel of the regressor (issues #9, #29): the per-sample joint torque
// regressor of a tree of one-dof joints and its map to the observation rows (link rows,
// rotor columns of the complete elastic model, drive columns), for all samples of a block in
// one call. Loaded with ctypes by _kernel.py; built by scripts/build_kernel.sh (Eigen from
// `cmeel-eigen`, header-only pinocchio from the `pin` wheel for the body regressor). The
// Python path in _regressor.py computes the same matrix with pinocchio's
// computeJointTorqueRegressor; test/test_regressor_kernel.py checks both against each other
// and against pinocchio's rnea.
//
// The entries are those of pinocchio's computeJointTorqueRegressor (regressor.hxx):
//   R[j, 10 (b - 1) + c] = S_j^T jX_b^* Y_b(v_b, a_b - g)_c   for joint j supporting body b,
// Y_b = pinocchio::bodyRegressor (6 x 10, Featherstone spatial algebra [linear; angular]).
// Evaluated differently, per sample:
//  - one forward pass over the one-dof joints (placement * joint rotation or translation,
//    velocity and acceleration with gravity, written out for revolute / prismatic joints);
//  - S_j moved into each supported body's frame along the chain (kS_j = kX_parent pS_j,
//    one 6-vector transform per pair) instead of pinocchio's 6 x 10 force-set action per
//    pair; then each entry block is the 1 x 6 by 6 x 10 product on Y_b's non-zero blocks;
//  - each body's regressor is evaluated about its parameter frame P (the URDF/config body
//    frame, placement F_b in the joint frame): Y_P(v_P, a_P) with S_j moved into P, so the
//    frame change pi_J = A_b pi_P of the parameters needs no product afterwards;
//  - the blocks (link row, link body) are written into the observation row directly; the
//    rotor columns are triplets Y[dst] += w R[src]; the drive columns are copied from a
//    (samples x D) array. Every entry of an observation row is written once, in cache.
//
// The model is passed as its kinematic tree only (the torque regressor does not depend on
// the inertias): per joint a type code, parent, placement in the parent frame and axis.
#include <cmath>
#include <cstring>
#include <exception>
#include <vector>

#include <Eigen/Core>
#include <Eigen/StdVector>

#include "pinocchio/multibody.hpp"
#include "pinocchio/algorithm/regressor.hpp"

namespace {

typedef Eigen::Vector3d V3;
typedef Eigen::Matrix3d M3;
typedef Eigen::Matrix<double, 6, 10> BodyRegressor;
typedef Eigen::Matrix<double, 1, 10> Row10;

struct Motion {     // spatial motion vector [linear; angular]
  V3 lin, ang;
};

struct Joint {
  int parent;       // 0: the world
  bool revolute;
  int axis;         // 0, 1, 2: along x, y, z; 3: `u`
  V3 u;             // unit axis in the joint frame
  M3 R;             // placement in the parent frame (rotation, translation)
  V3 p;
  bool moved;       // the parameter frame is not the joint frame
  M3 RF;            // placement of the parameter frame in the joint frame
  V3 pF;
  int depth;        // number of joints supporting this one's body (itself included)
  long offset;      // first of its `depth` S_j in this body's parameter frame
  bool spin_only;   // revolute about x, y or z, no child, joint frame = parameter frame, and
                    // only the body's inertia about that axis is read (a rotor): its entries
                    // do not depend on the joint angle (s_a . (I dw + w x I w) with I = e e^T
                    // is invariant under rotations about e), so the rotation is skipped
};

struct Block {      // (row joint, body) entry block: entry c written to Y_i[dst[c]]
  int body, ancestor;   // ancestor: position of the row joint in the body's support chain
  long dst[10];     // -1: not written (a column left out of Y)
  bool contiguous;  // dst[c] = dst[0] + c for every c: one 10-entry copy
  bool written;     // some dst[c] >= 0
  long stored;      // -1: not read by the triplets, else offset in R
  int groups;       // entries computed: 1 = m, 2 = m c, 4 = inertia (columns 0, 1-3, 4-9)
};

struct Kernel {
  std::vector<Joint, Eigen::aligned_allocator<Joint>> joints;   // joints[0]: unused (world)
  int nv;
  V3 gravity;
  std::vector<std::vector<Block>> blocks;    // per body
  std::vector<long> dst, src;                // triplets, src in R
  std::vector<double> weight;
};

// M^-1 m for M = (R, p): ang = R^T w, lin = R^T (v - p x w)
inline void act_inv(const M3& R, const V3& p, const Motion& m, Motion& out) {
  out.ang.noalias() = R.transpose() * m.ang;
  out.lin.noalias() = R.transpose() * (m.lin - p.cross(m.ang));
}

// rotation about a unit axis u by angle q (Rodrigues); axis 0, 1, 2: u = +-x, +-y, +-z
inline M3 axis_rotation(int axis, const V3& u, double q) {
  if (axis < 3) q *= u[axis];
  const double c = std::cos(q), s = std::sin(q);
  M3 r;
  switch (axis) {
    case 0: r << 1, 0, 0, 0, c, -s, 0, s, c; break;
    case 1: r << c, 0, s, 0, 1, 0, -s, 0, c; break;
    case 2: r << c, -s, 0, s, c, 0, 0, 0, 1; break;
    default: {
      M3 k;
      k << 0, -u[2], u[1], u[2], 0, -u[0], -u[1], u[0], 0;
      r = M3::Identity() + s * k + (1.0 - c) * (k * k);
    }
  }
  return r;
}

}  // namespace

#define RI_EXPORT __attribute__((visibility("default")))

extern "C" {

// Joint type codes: 0, 1, 2 = revolute about x, y, z; 3 = revolute about `axis`;
// 4, 5, 6 = prismatic along x, y, z; 7 = prismatic along `axis`. Joints in topological
// order (parents[j] < j + 1), one velocity each (joint j + 1 has velocity index j).
// placements: (njoints, 12) rotation (row-major 3x3) then translation [m]; frames: the
// same for the parameter frame of each body in its joint frame (the entries of body b are
// those of its standard parameters about that frame: R_J A_b for pi_J = A_b pi_P);
// axes: (njoints, 3) unit axes in the joint frames; gravity: (3,) [m/s^2].
// Blocks: n_block (row, body, dst (10,)): Y_i[dst[c]] = R[row, 10 body + c], c = 0..9 (row:
// a velocity index, body: joint index - 1; row's joint must support body; dst[c] = -1: the
// entry is not written, e.g. a column outside the base parameters). Triplets: n_map
// (dst, src, weight), Y_i[dst] += weight R[src], dst indexing one sample's Y (rows * P,
// row-major) and src one sample's R (nv x 10 njoints, row-major, parameter frames).
// Returns nullptr on an unknown joint type or inconsistent input.
RI_EXPORT void* ri_kernel_create(int njoints, const int* types, const int* parents,
                       const double* placements, const double* frames, const double* axes,
                       const double* gravity, long n_block, const int* block_row,
                       const int* block_body, const long* block_dst, long n_map,
                       const long* dst, const long* src, const double* weight) {
  try {
    auto* k = new Kernel();
    k->nv = njoints;
    k->gravity = V3(gravity[0], gravity[1], gravity[2]);
    k->joints.resize(njoints + 1);
    long offset = 0;
    for (int j = 1; j <= njoints; ++j) {
      Joint& J = k->joints[j];
      const int type = types[j - 1];
      const double* p = placements + 12 * (j - 1);
      const double* f = frames + 12 * (j - 1);
      J.parent = parents[j - 1];
      if (type < 0 || type > 7 || J.parent < 0 || J.parent >= j) { delete k; return nullptr; }
      J.revolute = type < 4;
      J.axis = type % 4;
      J.u = V3(axes[3 * (j - 1)], axes[3 * (j - 1) + 1], axes[3 * (j - 1) + 2]);
      if (J.axis < 3) J.u = V3::Unit(J.axis);
      J.u.normalize();
      for (int c = 0; c < 3 && J.axis == 3; ++c)     // an "unaligned" axis +-x, +-y or +-z
        if (J.u[(c + 1) % 3] == 0.0 && J.u[(c + 2) % 3] == 0.0) J.axis = c;
      J.R << p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8];
      J.p = V3(p[9], p[10], p[11]);
      J.RF << f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8];
      J.pF = V3(f[9], f[10], f[11]);
      J.moved = !(J.RF == M3::Identity() && J.pF == V3::Zero());
      J.depth = (J.parent ? k->joints[J.parent].depth : 0) + 1;
      J.offset = offset;
      offset += J.depth;
    }
    // R entries the triplets read: stored at 10 (row * njoints + body) + c
    const long n_cols = 10L * njoints;
    std::vector<char> stored(static_cast<size_t>(njoints) * njoints, 0);  // entry groups
    for (int j = 1; j <= njoints; ++j) {
      Joint& J = k->joints[j];
      J.spin_only = J.revolute && J.axis < 3 && !J.moved;
      if (J.parent) k->joints[J.parent].spin_only = false;
    }
    const int spin_column[3] = {4, 6, 9};     // Ixx, Iyy, Izz
    for (long t = 0; t < n_map; ++t) {
      if (src[t] < 0 || src[t] >= njoints * n_cols) { delete k; return nullptr; }
      const long c = src[t] % 10;
      stored[src[t] / 10] |= c == 0 ? 1 : c < 4 ? 2 : 4;
      Joint& J = k->joints[(src[t] % n_cols) / 10 + 1];
      if (J.axis > 2 || c != spin_column[J.axis]) J.spin_only = false;
    }
    std::vector<long> block(static_cast<size_t>(njoints) * njoints, -1);   // index t
    for (long t = 0; t < n_block; ++t) {
      if (block_row[t] < 0 || block_row[t] >= njoints || block_body[t] < 0
          || block_body[t] >= njoints) { delete k; return nullptr; }
      block[block_row[t] * njoints + block_body[t]] = t;
      k->joints[block_body[t] + 1].spin_only = false;
    }
    k->blocks.resize(njoints + 1);
    for (int row = 0; row < njoints; ++row) {
      for (int b = 0; b < njoints; ++b) {
        const long i = row * njoints + b;
        Block blk{b + 1, -1, {}, true, false, stored[i] ? 10 * i : -1, stored[i]};
        for (int c = 0; c < 10; ++c) {
          blk.dst[c] = block[i] >= 0 ? block_dst[10 * block[i] + c] : -1;
          if (blk.dst[c] >= 0) {
            blk.written = true;
            blk.groups |= c == 0 ? 1 : c < 4 ? 2 : 4;
          }
          blk.contiguous = blk.contiguous && blk.dst[c] == blk.dst[0] + c;
        }
        blk.contiguous = blk.contiguous && blk.dst[0] >= 0;
        if (!blk.written && !stored[i]) continue;
        // position of joint row + 1 in body b + 1's support chain (-1: structurally zero)
        int pos = -1;
        for (int a = b + 1, d = k->joints[b + 1].depth - 1; a > 0; a = k->joints[a].parent, --d)
          if (a == row + 1) pos = d;
        if (pos < 0) {
          if (blk.written) { delete k; return nullptr; }   // a block the tree cannot fill
          continue;
        }
        blk.ancestor = pos;
        k->blocks[b + 1].push_back(blk);
      }
    }
    k->dst.assign(dst, dst + n_map);
    k->src.assign(src, src + n_map);
    k->weight.assign(weight, weight + n_map);
    return k;
  } catch (const std::exception&) {
    return nullptr;
  }
}

// Interface version: _kernel.py refuses a library built from another version of this file.
RI_EXPORT int ri_kernel_version() { return 5; }

RI_EXPORT void ri_kernel_free(void* kernel) { delete static_cast<Kernel*>(kernel); }

RI_EXPORT int ri_kernel_nv(void* kernel) { return static_cast<Kernel*>(kernel)->nv; }

}  // extern "C"

namespace {

// Joint j's frame in its parent's (rot, pos; `rotate`: false skips the rotation of a
// spin-only joint), its body's velocity V and acceleration A (gravity included) from the
// parent's.
inline void forward_joint(const Joint& J, double qj, double vj, double aj, bool rotate,
                          M3& rot, V3& pos, const Motion& Vp, const Motion& Ap, Motion& V,
                          Motion& A) {
  if (!rotate) {
    rot = J.R;
    pos = J.p;
  } else if (J.revolute) {
    rot.noalias() = J.R * axis_rotation(J.axis, J.u, qj);
    pos = J.p;
  } else {
    rot = J.R;
    pos.noalias() = J.p + qj * (J.R * J.u);
  }
  act_inv(rot, pos, Vp, V);
  act_inv(rot, pos, Ap, A);
  // + S vj, + S aj + V x (S vj)  (S = [0; u] revolute, [u; 0] prismatic)
  const V3 su = vj * J.u;
  if (J.revolute) {
    V.ang += su;
    A.lin += V.lin.cross(su);
    A.ang += aj * J.u + V.ang.cross(su);
  } else {
    V.lin += su;
    A.lin += aj * J.u + V.ang.cross(su);
  }
}

// Inertial parameters of the bodies about their joint frames, for Newton-Euler.
struct Bodies {
  std::vector<double> mass;
  std::vector<V3, Eigen::aligned_allocator<V3>> first;      // h = m c
  std::vector<M3, Eigen::aligned_allocator<M3>> inertia;    // about the joint frame's origin
  std::vector<char> has;
  Bodies(int nj, const double* params)     // params (nj, 10): m, m c, Ixx Ixy Iyy Ixz Iyz Izz
      : mass(nj + 1, 0.0), first(nj + 1), inertia(nj + 1), has(nj + 1, 0) {
    for (int j = 1; j <= nj; ++j) {
      const double* p = params + 10 * (j - 1);
      for (int c = 0; c < 10; ++c) has[j] = has[j] || p[c] != 0.0;
      mass[j] = p[0];
      first[j] = V3(p[1], p[2], p[3]);
      inertia[j] << p[4], p[5], p[7], p[5], p[6], p[8], p[7], p[8], p[9];
    }
  }
  // spatial force f = I a + v x* I v of body j (Featherstone 2008, table 5.1): momentum
  // p = m v - h x w, L = I w + h x v; f = [m a - h x dw + w x p; I dw + h x a + w x L + v x p]
  void force(int j, const Motion& V, const Motion& A, Motion& f) const {
    if (!has[j]) {
      f.lin.setZero();
      f.ang.setZero();
      return;
    }
    const V3& h = first[j];
    const V3 p = mass[j] * V.lin - h.cross(V.ang);
    const V3 L = inertia[j] * V.ang + h.cross(V.lin);
    f.lin = mass[j] * A.lin - h.cross(A.ang) + V.ang.cross(p);
    f.ang = inertia[j] * A.ang + h.cross(A.lin) + V.ang.cross(L) + V.lin.cross(p);
  }
};

// Newton-Euler's backward pass: tau_j = S_j^T F_j, F_parent += X^* F_j (F: the bodies'
// forces on entry, the subtrees' on return).
inline void backward(const Kernel& k, const M3* rot, const V3* pos, Motion* F, double* tau) {
  for (int j = k.nv; j >= 1; --j) {
    const Joint& J = k.joints[j];
    const Motion& f = F[j];
    tau[j - 1] = J.revolute ? J.u.dot(f.ang) : J.u.dot(f.lin);
    if (J.parent) {
      Motion& fp = F[J.parent];
      const V3 lin = rot[j] * f.lin;
      fp.lin += lin;
      fp.ang += rot[j] * f.ang + pos[j].cross(lin);
    }
  }
}

// ri_kernel_regressor, and with `bodies` the URDF torque tau_0 of each sample by
// Newton-Euler from the same forward pass: y[load_dst[t]] *= |tau_0[load_row[t]]|.
int regressor(const Kernel& k, long n, const double* q, const double* v, const double* a,
              long n_drive, const long* drive_dst, const double* drive, long y_stride,
              double* Y, const Bodies* bodies, long n_load, const long* load_dst,
              const long* load_row) {
  const int nj = k.nv;
  const long n_map = static_cast<long>(k.dst.size());
  const long* dst = k.dst.data();
  const long* src = k.src.data();
  const double* w = k.weight.data();
  std::vector<double> R(static_cast<size_t>(nj) * nj * 10, 0.0), tau0(nj);
  std::vector<Motion, Eigen::aligned_allocator<Motion>> vel(nj + 1), acc(nj + 1), F(nj + 1);
  std::vector<M3, Eigen::aligned_allocator<M3>> rot(nj + 1);   // joint frame in parent
  std::vector<V3, Eigen::aligned_allocator<V3>> pos(nj + 1);
  const long n_S = k.joints[nj].offset + k.joints[nj].depth;
  std::vector<Motion, Eigen::aligned_allocator<Motion>> S(n_S), SP(nj);
  BodyRegressor Yb;
  vel[0].lin.setZero();
  vel[0].ang.setZero();
  acc[0].lin = -k.gravity;     // gravity as an upward acceleration of the world
  acc[0].ang.setZero();
  for (long i = 0; i < n; ++i) {
    const double* qi = q + i * nj;
    const double* vi = v + i * nj;
    const double* ai = a + i * nj;
    double* y = Y + i * y_stride;
    std::memset(y, 0, sizeof(double) * y_stride);
    for (int j = 1; j <= nj; ++j) {
      const Joint& J = k.joints[j];
      Motion& V = vel[j];
      Motion& A = acc[j];
      // joint frame in the parent frame: placement * joint motion (a spin-only body's
      // rotation is skipped, except where its force is needed)
      forward_joint(J, qi[j - 1], vi[j - 1], ai[j - 1], !J.spin_only || bodies, rot[j],
                    pos[j], vel[J.parent], acc[J.parent], V, A);
      if (bodies) bodies->force(j, V, A, F[j]);
      // S of the supporting joints in this body's frame: the parent's, moved; then S_j
      Motion* Sj = S.data() + J.offset;
      if (J.parent) {
        const Motion* Sp = S.data() + k.joints[J.parent].offset;
        for (int d = 0; d < J.depth - 1; ++d) act_inv(rot[j], pos[j], Sp[d], Sj[d]);
      }
      Motion& own = Sj[J.depth - 1];
      if (J.revolute) { own.lin.setZero(); own.ang = J.u; }
      else { own.lin = J.u; own.ang.setZero(); }
      if (k.blocks[j].empty()) continue;
      // the body regressor about the parameter frame, and S_j moved into it
      const Motion* Sb = Sj;
      if (J.moved) {
        Motion VP, AP;
        act_inv(J.RF, J.pF, V, VP);
        act_inv(J.RF, J.pF, A, AP);
        pinocchio::bodyRegressor(pinocchio::Motion(VP.lin, VP.ang),
                                 pinocchio::Motion(AP.lin, AP.ang), Yb);
        for (int d = 0; d < J.depth; ++d) act_inv(J.RF, J.pF, Sj[d], SP[d]);
        Sb = SP.data();
      } else {
        pinocchio::bodyRegressor(pinocchio::Motion(V.lin, V.ang),
                                 pinocchio::Motion(A.lin, A.ang), Yb);
      }
      for (const Block& blk : k.blocks[j]) {
        // s^T Y_b on its non-zero blocks: column 0 linear rows, columns 4-9 angular rows
        const Motion& s = Sb[blk.ancestor];
        Row10 e = Row10::Zero();
        if (blk.groups & 1) e[0] = s.lin.dot(Yb.block<3, 1>(0, 0));
        if (blk.groups & 2)
          e.segment<3>(1).noalias() = s.lin.transpose() * Yb.block<3, 3>(0, 1)
                                      + s.ang.transpose() * Yb.block<3, 3>(3, 1);
        if (blk.groups & 4)
          e.segment<6>(4).noalias() = s.ang.transpose() * Yb.block<3, 6>(3, 4);
        if (blk.contiguous) {
          Eigen::Map<Row10>(y + blk.dst[0]) = e;
        } else if (blk.written) {
          for (int c = 0; c < 10; ++c) if (blk.dst[c] >= 0) y[blk.dst[c]] = e[c];
        }
        if (blk.stored >= 0) Eigen::Map<Row10>(R.data() + blk.stored) = e;
      }
    }
    const double* r = R.data();
    for (long t = 0; t < n_map; ++t) y[dst[t]] += w[t] * r[src[t]];
    const double* di = drive + i * n_drive;
    for (long d = 0; d < n_drive; ++d) y[drive_dst[d]] = di[d];
    if (bodies) {
      backward(k, rot.data(), pos.data(), F.data(), tau0.data());
      for (long t = 0; t < n_load; ++t) y[load_dst[t]] *= std::abs(tau0[load_row[t]]);
    }
  }
  return 0;
}

}  // namespace

extern "C" {

// For each of n samples (q, v, a: n x nv, row-major): the observation row Y_i (y_stride
// doubles, row-major) is set to zero, then the blocks and triplets of the regressor entries,
// then Y_i[drive_dst[d]] = drive[i, d] (drive: n x n_drive, row-major).
// Returns 0, or 1 on error.
RI_EXPORT int ri_kernel_regressor(void* kernel, long n, const double* q, const double* v,
                        const double* a, long n_drive, const long* drive_dst,
                        const double* drive, long y_stride, double* Y) {
  try {
    return regressor(*static_cast<Kernel*>(kernel), n, q, v, a, n_drive, drive_dst, drive,
                     y_stride, Y, nullptr, 0, nullptr, nullptr);
  } catch (const std::exception&) {
    return 1;
  }
}

// ri_kernel_regressor, then the load-dependent Coulomb entries scaled by the URDF's torque
// (issue #29: the nominal check's free refit asks few columns, among them these): per sample
// tau_0 of the bodies' parameters `params` (as ri_kernel_torque) by Newton-Euler from the
// regressor's own forward pass, y[load_dst[t]] *= |tau_0[load_row[t]]| (load_row: velocity
// indices). Added after version 5, like ri_kernel_torque. Returns 0, or 1 on error.
RI_EXPORT int ri_kernel_regressor_load(void* kernel, long n, const double* q, const double* v,
                                       const double* a, long n_drive, const long* drive_dst,
                                       const double* drive, long y_stride, double* Y,
                                       const double* params, long n_load,
                                       const long* load_dst, const long* load_row) {
  try {
    const Kernel& k = *static_cast<Kernel*>(kernel);
    const Bodies bodies(k.nv, params);
    return regressor(k, n, q, v, a, n_drive, drive_dst, drive, y_stride, Y, &bodies, n_load,
                     load_dst, load_row);
  } catch (const std::exception&) {
    return 1;
  }
}

// The joint torques tau = Y(q, v, a) pi of the inertial parameters alone (issue #29: the URDF's
// torque of many readings of a recording in the nominal check), by the recursive Newton-Euler
// algorithm instead of the regressor's entries: per sample the same forward pass, each body's
// spatial force f = I a + v x* I v, then one backward pass F_parent += X^* F_j and tau_j =
// S_j^T F_j. params: (njoints, 10) standard parameters of each body about its JOINT frame (m,
// m c, Ixx, Ixy, Iyy, Ixz, Iyz, Izz about the frame's origin: the column order of
// bodyRegressor; the caller moves those of a parameter frame, pi_J = A pi_P); tau: n x nv,
// row-major. Added after version 5 (a library without this symbol is still loaded: the
// caller then uses the regressor). Returns 0, or 1 on error.
RI_EXPORT int ri_kernel_torque(void* kernel, long n, const double* q, const double* v,
                               const double* a, const double* params, double* tau) {
  try {
    const Kernel& k = *static_cast<Kernel*>(kernel);
    const int nj = k.nv;
    const Bodies bodies(nj, params);
    std::vector<Motion, Eigen::aligned_allocator<Motion>> vel(nj + 1), acc(nj + 1), F(nj + 1);
    std::vector<M3, Eigen::aligned_allocator<M3>> rot(nj + 1);
    std::vector<V3, Eigen::aligned_allocator<V3>> pos(nj + 1);
    vel[0].lin.setZero();
    vel[0].ang.setZero();
    acc[0].lin = -k.gravity;
    acc[0].ang.setZero();
    for (long i = 0; i < n; ++i) {
      const double* qi = q + i * nj;
      const double* vi = v + i * nj;
      const double* ai = a + i * nj;
      for (int j = 1; j <= nj; ++j) {
        const Joint& J = k.joints[j];
        forward_joint(J, qi[j - 1], vi[j - 1], ai[j - 1], true, rot[j], pos[j],
                      vel[J.parent], acc[J.parent], vel[j], acc[j]);
        bodies.force(j, vel[j], acc[j], F[j]);
      }
      backward(k, rot.data(), pos.data(), F.data(), tau + i * nj);
    }
    return 0;
  } catch (const std::exception&) {
    return 1;
  }
}

}  // extern "C"
