// tessera::roast::Embedding: a ROAST lookup layer (docs/kernels/roast.md). A
// rows x dim table whose rows are cut into chunks of Z elements; each chunk is
// a contiguous run of the shared MemoryArray at a hashed offset, optionally
// multiplied by a sign hash:
//   w[r, c] = lambda * g(r, c / Z) * M[h(r, c / Z) + c mod Z]
// The table is never stored. forward gathers rows for a list of indices;
// backward adds lambda * g * dOut into the shared dM (atomics).
//
//   Embedding emb(mem, 50000, 128, /*chunk=*/32, LookupHash::fromSeed(3));
//   emb.forward(stream, idx, out, count);       // out: count x 128
//   emb.backward(stream, idx, dOut, count);     // dM += ...
#ifndef TESSERA_ROAST_EMBEDDING_H
#define TESSERA_ROAST_EMBEDDING_H

#include "tessera/Memory.h"
#include "tessera/Stream.h"
#include "tessera/TunedKernel.h"
#include "tessera/roast/Hash.h"
#include "tessera/roast/MemoryArray.h"

#include <cstdint>
#include <memory>
#include <optional>

namespace tessera::roast {

struct EmbeddingOptions {
  /// The layer's scale; default C (a lookup has fan-in 1: lambda * M is then U(-1, 1)).
  std::optional<float> lambda;
  /// Multiply each chunk by the sign hash g.
  bool sign = false;
  std::optional<TunedKernelOptions> tuning;
};

class Embedding {
public:
  /// Throws tessera::Error unless 1 <= rows, dim < 2^31, 1 <= chunk <= the
  /// memory array's size, and lambda is finite.
  Embedding(MemoryArray &memory, int64_t rows, int64_t dim, int64_t chunk, LookupHash hash,
            EmbeddingOptions options = {});
  ~Embedding();
  Embedding(Embedding &&) noexcept;
  Embedding &operator=(Embedding &&) noexcept;

  /// out[t, :] = w[indices[t], :] for t < count. An index outside [0, rows)
  /// gives a row of zeros (the kernel masks it; the host cannot see device indices).
  void forward(const Stream &stream, const DeviceBuffer<int32_t> &indices,
               DeviceBuffer<float> &out, int64_t count);
  /// dM[h(r, c/Z) + c mod Z] += lambda * g * dOut[t, c], r = indices[t] (atomics);
  /// indices outside [0, rows) add nothing.
  void backward(const Stream &stream, const DeviceBuffer<int32_t> &indices,
                const DeviceBuffer<float> &dOut, int64_t count);

  int64_t rows() const;
  int64_t dim() const;
  int64_t chunk() const;
  float lambda() const;
  bool hasSign() const;
  const LookupHash &hash() const;
  /// The position in M that w[row, col] is read from, and its sign (+1 without the sign hash).
  int64_t indexOf(int64_t row, int64_t col) const;
  int signOf(int64_t row, int64_t col) const;

private:
  struct State;
  std::unique_ptr<State> s_;
};

} // namespace tessera::roast

#endif
