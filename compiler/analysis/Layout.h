// Register layouts of tiles: how a tile's elements are spread over the
// threads of a block (blocked), and the tensor-core accumulator layouts
// (mma.sync m16n8, wgmma, and wgmma of the transposed product). The layout
// planner decides with them; the lowering emits code for them.
#ifndef TESSERA_ANALYSIS_LAYOUT_H
#define TESSERA_ANALYSIS_LAYOUT_H

#include "tile/TileDialect.h"
#include "tilegpu/TileGPUDialect.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

namespace tessera::analysis {
using namespace mlir;

/// Canonical distribution of a tile shape over the block's threads.
struct Layout {
  SmallVector<int64_t, 4> shape;
  int64_t total = 1;
  int64_t vec = 1;
  int64_t chunks = 1;
  bool replicated = false; // fewer elements than threads: thread t holds element t % total
  // Tensor-core accumulator layout (mma.sync m16n8): a wm x wn grid of warps,
  // each owning tm x tn tiles of 16x8, four elements per thread per tile
  // (two pairs of adjacent columns: vec = 2).
  bool mma = false;
  int64_t wm = 1, wn = 1, tm = 1, tn = 1;
  // wgmma with tm > 1 (wn = 1): warpgroup g owns rows [g*64*tm, (g+1)*64*tm) as
  // tm blocks of 64 rows, warp w%4 rows 16*(w%4).. of each block; otherwise a
  // warp's tm tiles are consecutive rows.
  bool wgRows = false;
  // The mma fields describe the transposed tile (shape[1] x shape[0]): a dot
  // computed as C^T = B^T A^T (tf32 wgmma with B from registers). Slot
  // coordinates are swapped, and within each warp's 16 rows fragment row r is
  // row 2 * (r % 8) + r / 8, so that the two rows a thread holds (r, r + 8)
  // are adjacent: its B^T fragments load as pairs. Adjacent slots are
  // adjacent rows of the tile, so vec = 1.
  bool transposed = false;
  // The row vector of a wgmma accumulator layout (tgpu.slice; wm, tm and
  // wgRows are the parent's): slot 2i + h is the thread's row g + 8h of its
  // i-th block of 16 rows, held alike by the four lanes of a quad.
  bool rows = false;
  // The column vector (tgpu.slice dim 0) of a wgmma accumulator layout: slot
  // 2j + q is column 8j + 2 (lane % 4) + q, held alike by every row's threads.
  bool cols = false;
  int64_t slots() const {
    return rows ? tm * 2 : cols ? tn * 2 : mma ? tm * tn * 4 : replicated ? 1 : chunks * vec;
  }
  bool operator==(const Layout &o) const {
    return shape == o.shape && mma == o.mma && vec == o.vec && replicated == o.replicated &&
           wm == o.wm && wn == o.wn && wgRows == o.wgRows && transposed == o.transposed &&
           rows == o.rows && cols == o.cols;
  }
  bool operator!=(const Layout &o) const { return !(*this == o); }
};

/// The mma.sync accumulator layout for an M x N tile, or nothing when the
/// shape does not split into 16x8 tiles over the warps.
inline std::optional<Layout> mmaLayoutFor(int64_t M, int64_t N, int64_t numWarps) {
  std::optional<Layout> best;
  for (int64_t wm = 1; wm <= numWarps; wm *= 2) {
    int64_t wn = numWarps / wm;
    if (M % (16 * wm) || N % (8 * wn))
      continue;
    Layout l;
    l.shape = {M, N};
    l.total = M * N;
    l.mma = true;
    l.vec = 2; // a thread's q = 0, 1 (and 2, 3) elements are adjacent columns
    l.wm = wm;
    l.wn = wn;
    l.tm = M / (16 * wm);
    l.tn = N / (8 * wn);
    // Prefer square warp tiles: fewest fragment loads per mma.
    auto skew = [](const Layout &x) { return std::abs(x.tm * 16 - x.tn * 8); };
    if (!best || skew(l) < skew(*best))
      best = l;
  }
  return best;
}

/// The accumulator: wgmma's register order is the mma.sync m16n8 fragment
/// order repeated along N, warp w owning rows 16w..16w+15.
inline Layout wgmmaAccLayout(int64_t BM, int64_t BN, int64_t numWarps) {
  Layout accLay;
  accLay.shape = {BM, BN};
  accLay.total = BM * BN;
  accLay.mma = true;
  accLay.vec = 2;
  accLay.wm = numWarps;
  accLay.wn = 1;
  accLay.tm = BM / (64 * (numWarps / 4)); // 64-row blocks per warpgroup
  accLay.wgRows = accLay.tm > 1;
  accLay.tn = BN / 8;
  return accLay;
}

/// The accumulator of C^T = B^T A^T: wgmma's layout of the BN x BM product,
/// read with rows and columns swapped.
inline Layout swappedAccLayout(int64_t BM, int64_t BN, int64_t numWarps) {
  Layout accLay = wgmmaAccLayout(BN, BM, numWarps);
  accLay.shape = {BM, BN};
  accLay.transposed = true;
  accLay.vec = 1;
  return accLay;
}

/// The row vector of wgmmaAccLayout(M, *, numWarps) (tgpu.slice), or nothing
/// when M does not fill the warpgroups' 64-row blocks.
inline std::optional<Layout> rowsLayoutFor(int64_t M, int64_t numWarps) {
  if (numWarps % 4 || M % (64 * (numWarps / 4)))
    return std::nullopt;
  Layout l = wgmmaAccLayout(M, 8, numWarps);
  l.shape = {M};
  l.total = M;
  l.mma = false;
  l.rows = true;
  l.vec = 1;
  l.tn = 1;
  return l;
}

/// The column vector of wgmmaAccLayout(*, N, *) (tgpu.slice dim 0), or
/// nothing when N is not a whole number of n8 tiles up to 256.
inline std::optional<Layout> colsLayoutFor(int64_t N) {
  if (N % 8 || N > 256)
    return std::nullopt;
  Layout l;
  l.shape = {N};
  l.total = N;
  l.cols = true;
  l.tn = N / 8;
  return l;
}

/// The registers of a tile in the mma layout `enc` (tgpu encoding), or
/// nothing when the tile's shape does not have that layout.
inline std::optional<Layout> accLayoutFor(ArrayRef<int64_t> shape, tgpu::MmaEncodingAttr enc) {
  if (shape.size() != 2)
    return std::nullopt;
  int64_t M = shape[0], N = shape[1], warps = enc.getWarps();
  if (enc.getVersion() == 2)
    return mmaLayoutFor(M, N, warps);
  int64_t rows = enc.getTransposed() ? N : M, cols = enc.getTransposed() ? M : N;
  if (rows % (64 * (warps / 4)) || cols % 8 || cols > 256)
    return std::nullopt;
  return enc.getTransposed() ? swappedAccLayout(M, N, warps) : wgmmaAccLayout(M, N, warps);
}

/// The mma.sync layout of a dot that is not pipelined (16-bit operands, f32
/// accumulator, K a multiple of 16), or nothing: FMA in the blocked layout.
inline std::optional<Layout> unpipelinedMmaLayout(tile::DotOp op, int64_t numWarps) {
  auto at = op.getA().getType(), ct = op.getAcc().getType();
  Type ea = at.getElementType();
  if (!(ea.isF16() || ea.isBF16()) || !ct.getElementType().isF32() || at.getDimSize(1) % 16)
    return std::nullopt;
  return mmaLayoutFor(ct.getDimSize(0), ct.getDimSize(1), numWarps);
}

/// The wgmma accumulator layout for a dot that is not pipelined (16-bit
/// operands, f32 accumulator, K a multiple of 16), computed with mma.sync on
/// any target: whole warpgroups, 64-row blocks, at most 256 columns.
inline std::optional<Layout> unpipelinedRowsLayout(tile::DotOp op, int64_t numWarps) {
  auto ct = op.getAcc().getType();
  int64_t M = ct.getDimSize(0), N = ct.getDimSize(1);
  if (!unpipelinedMmaLayout(op, numWarps) || numWarps % 4 || M % (64 * (numWarps / 4)) ||
      N % 8 || N > 256)
    return std::nullopt;
  return wgmmaAccLayout(M, N, numWarps);
}

/// The kernel's blocked vector width: how many consecutive elements of a tile
/// a thread owns along its last axis, so that each global access is up to 16
/// bytes. Shape-only, so that every tile of a kernel shares it (an f16 tile
/// and its f32 conversion stay in one layout): 16 bytes of the widest element
/// that a tile load, store or atomic moves, at least 4 and at most 8 elements
/// (kernels of 16-bit data load 8 halves per vector, not 4).
inline int64_t blockedVectorWidth(func::FuncOp kernel) {
  int64_t widest = 0;
  kernel.walk([&](Operation *op) {
    if (!isa<tile::LoadOp, tile::StoreOp, tile::AtomicRMWOp, tile::AtomicCASOp>(op))
      return;
    // The data tiles it moves (values, results; block pointers included),
    // not its pointers or its i1 mask.
    auto consider = [&](Type t) {
      auto rt = dyn_cast<RankedTensorType>(t);
      Type e = rt ? rt.getElementType() : Type();
      if (e && e.isIntOrFloat() && !e.isInteger(1))
        widest = std::max<int64_t>(widest, (e.getIntOrFloatBitWidth() + 7) / 8);
    };
    for (Type t : op->getOperandTypes())
      consider(t);
    for (Type t : op->getResultTypes())
      consider(t);
  });
  if (widest == 0)
    return 4;
  return std::clamp<int64_t>(16 / widest, 4, 8);
}

/// The blocked layout of a tile of `shape` over `threads`: consecutive threads
/// own consecutive vectors of up to `maxVec` elements along the last axis (the
/// kernel's blocked vector width, blockedVectorWidth).
inline Layout layoutFor(ArrayRef<int64_t> shape, int64_t threads, int64_t maxVec = 4) {
  Layout l;
  l.shape.assign(shape.begin(), shape.end());
  for (int64_t d : shape)
    l.total *= d;
  if (l.total < threads) {
    l.replicated = true;
    return l;
  }
  int64_t last = shape.empty() ? 1 : shape.back();
  l.vec = std::min<int64_t>(maxVec, last);
  while (l.vec > 1 && l.total < threads * l.vec)
    l.vec /= 2;
  l.chunks = l.total / (threads * l.vec);
  return l;
}

/// The layout a tile of type `t` is in: its mma encoding's or row vector's
/// (tgpu.slice), else blocked over `threads` (no encoding, or a dot operand:
/// those registers stay blocked).
inline Layout layoutOfType(RankedTensorType t, int64_t threads, int64_t maxVec = 4) {
  if (auto enc = tgpu::mmaEncodingOf(t))
    if (std::optional<Layout> l = accLayoutFor(t.getShape(), enc))
      return *l;
  if (auto enc = tgpu::sliceEncodingOf(t))
    if (std::optional<Layout> l = enc.getDim() == 1
                                      ? rowsLayoutFor(t.getDimSize(0), enc.getParent().getWarps())
                                      : colsLayoutFor(t.getDimSize(0)))
      return *l;
  return layoutFor(t.getShape(), threads, maxVec);
}

} // namespace tessera::analysis

#endif
