// tessera::roast::Linear: a ROAST-MM layer, Y = lambda * X @ W, whose K x N
// weight W (K = in, N = out) is never stored, not even as a temporary: tile
// (kb, nb) of W, HK x HN, is a contiguous run of the shared MemoryArray at a
// hashed offset (docs/kernels/roast.md):
//   W[kb*HK + i, nb*HN + j] = lambda * M[loc(kb, nb) + i*HN + j]
// The layer's device memory is the memory array (shared) and, for the
// deterministic backward, its wave schedule (one i32 per hash tile); the hash
// parameters are kernel arguments, and activations belong to the caller. The dM kernels read X^T
// (batch x in floats, K-major): backward() builds it in dX's buffer before
// computing dX, so only backwardMemory() allocates it as a scratch buffer.
//
//   MemoryArray mem(ctx, 1 << 20);
//   Linear fc(mem, 784, 256, TileHash::fromSeed(1));          // lambda = C / sqrt(784)
//   fc.forward(ctx.stream(), x, y, batch);                     // y: batch x 256
//   fc.backward(ctx.stream(), x, dy, dx, batch);               // dx, and dM += ...
//
// Buffers are row-major f32: X is batch x in, Y and dY batch x out.
#ifndef TESSERA_ROAST_LINEAR_H
#define TESSERA_ROAST_LINEAR_H

#include "tessera/Memory.h"
#include "tessera/Stream.h"
#include "tessera/TunedKernel.h"
#include "tessera/roast/Hash.h"
#include "tessera/roast/MemoryArray.h"
#include "tessera/roast/TileWaves.h"

#include <cstdint>
#include <map>
#include <string>
#include <memory>
#include <optional>

namespace tessera::roast {

struct LinearOptions {
  Mapping mapping = Mapping::RzLinear;
  HashTile tile{};
  /// The layer's scale; default C / sqrt(in) with the memory array's C.
  std::optional<float> lambda;
  /// How the kernels pick their configs; default tuningFor(ctx, {}) (Options.h).
  std::optional<TunedKernelOptions> tuning;
  /// true: forward() only uses configs that sum each output tile in one
  /// program (no split K, no atomics into Y), so Y is bit-identical run to
  /// run at every batch size; small batches run slower (1.70x -> 1.37x dense
  /// at 32 x 20480 x 20480, aligned, on an H200). backward()'s dM has its own
  /// switch (`deterministic`).
  bool reproducible = false;
};

class Linear {
public:
  /// Throws tessera::Error on bad arguments: in or out not in [1, 2^31), a
  /// hash tile side that is not a power of two >= 16, a memory array no
  /// larger than one hash tile, a non-finite lambda.
  Linear(MemoryArray &memory, int64_t in, int64_t out, TileHash hash, LinearOptions options = {});
  ~Linear();
  Linear(Linear &&) noexcept;
  Linear &operator=(Linear &&) noexcept;

  /// Y = lambda * X @ W. Throws tessera::Error when a buffer is too small or
  /// batch is not in [1, 2^31 / max(in, out)). When the tuner picks a split-K
  /// config (small batches, wave quantization), Y is zeroed and partial sums
  /// are added into it with atomics: the last bits of Y may then differ run
  /// to run, unless LinearOptions::reproducible.
  void forward(const Stream &stream, const DeviceBuffer<float> &X, DeviceBuffer<float> &Y,
               int64_t batch);
  /// dX = lambda * dY @ W^T (overwritten), and the memory gradient added into
  /// the shared dM (memory().grad()):
  ///   dM[loc(kb, nb) + i*HN + j] += lambda * (X^T dY)[kb*HK + i, nb*HN + j]
  /// `deterministic`: the wave schedule (TileWaves.h) instead of atomics;
  /// bit-identical run to run for a given config of its kernel. dX's buffer
  /// holds X^T while dM is computed, so dX must not overlap X or dY.
  void backward(const Stream &stream, const DeviceBuffer<float> &X, const DeviceBuffer<float> &dY,
                DeviceBuffer<float> &dX, int64_t batch, bool deterministic = false);
  /// The memory gradient alone (a first layer needs no dX).
  void backwardMemory(const Stream &stream, const DeviceBuffer<float> &X,
                      const DeviceBuffer<float> &dY, int64_t batch, bool deterministic = false);

  int64_t in() const;
  int64_t out() const;
  float lambda() const;
  Mapping mapping() const;
  HashTile tile() const;
  const TileHash &hash() const;
  MemoryArray &memory() const;
  /// The position in M that W[k, n] is read from (the index map).
  int64_t indexOf(int64_t k, int64_t n) const;
  /// The deterministic schedule (built on first use).
  const TileWaves &waves() const;
  /// Kernel name -> the config its last launch used ("BK=32,BM=128,...").
  std::map<std::string, std::string> chosenConfigs() const;
  /// Device bytes this layer owns: none until the deterministic backward
  /// builds its wave schedule or backwardMemory() its X^T scratch (the hash
  /// parameters are kernel arguments); the shared memory array and the
  /// caller's activations are not included.
  size_t deviceBytes() const;

private:
  struct State;
  std::unique_ptr<State> s_;
};

/// The launch grid of kernels_dsl/roast/roast_mm.tile's roast_mm_fwd at
/// config `c` for `batch` rows and `out` columns: its tiles, the column
/// tiles rounded up to whole clusters (cluster_size), by SPLIT_K.
Grid forwardGrid(const Config &c, int64_t batch, int64_t out);

} // namespace tessera::roast

#endif
