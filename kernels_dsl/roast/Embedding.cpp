// tessera::roast::Embedding (include/tessera/roast/Embedding.h) over
// kernels_dsl/roast/roast_lookup.tile.
#include "tessera/roast/Embedding.h"

#include "Checks.h"
#include "LayerKernel.h"

#include "tessera/Error.h"
#include "tessera/roast/Options.h"

namespace tessera::roast {

struct Embedding::State {
  MemoryArray *mem = nullptr;
  int64_t rows = 0, dim = 0, chunk = 0;
  LookupHash hash;
  float lambda = 1;
  bool sign = false;
  TunedKernelOptions tuning;
  DeviceBuffer<int32_t> RL;
  std::unique_ptr<TunedKernel> fwd, bwd;

  TunedKernel &kernel(std::unique_ptr<TunedKernel> &k, const char *name) {
    if (!k)
      k = detail::layerKernel(mem->context(), "roast/roast_lookup.tile", name, {{"SIGN", sign}}, {},
                              [](const Config &) { return true; }, tuning);
    return *k;
  }
  void check(const char *what, const DeviceBuffer<int32_t> &indices, const DeviceBuffer<float> &rows,
             const char *rowsName, int64_t count) const {
    std::string where = std::string("roast::Embedding::") + what;
    detail::checkCount(where, "count", count);
    if (count * dim >= (int64_t(1) << 31))
      throw Error(where + ": count * dim = " + std::to_string(count * dim) +
                  " must stay below 2^31 (the kernels index with i32)");
    detail::checkBuffer(where, "indices", indices.size(), count);
    detail::checkBuffer(where, rowsName, rows.size(), count * dim);
  }
  template <class Out>
  void launch(TunedKernel &k, const Stream &stream, const DeviceBuffer<int32_t> &idx, Out &a,
              Out &b, int64_t count) {
    const int64_t T = count, D = dim;
    k.launch(stream, [=](const Config &c) { return Grid::of(cdiv(T, c.get("BT")) * cdiv(D, c.get("BD"))); },
             idx, a, b, RL, int32_t(T), int32_t(D), int32_t(rows), int32_t(mem->size()),
             int32_t(chunk), lambda, int32_t(D));
  }
};

Embedding::Embedding(MemoryArray &memory, int64_t rows, int64_t dim, int64_t chunk,
                     LookupHash hash, EmbeddingOptions options)
    : s_(std::make_unique<State>()) {
  const std::string where = "roast::Embedding";
  detail::checkCount(where, "rows", rows);
  detail::checkCount(where, "dim", dim);
  detail::checkCount(where, "chunk", chunk);
  if (chunk > memory.size())
    throw Error(where + ": the chunk (" + std::to_string(chunk) +
                " elements) must fit in the memory array (" + std::to_string(memory.size()) +
                " elements)");
  State &s = *s_;
  s.mem = &memory;
  s.rows = rows;
  s.dim = dim;
  s.chunk = chunk;
  s.hash = LookupHash::fromValues(hash.RL);
  s.lambda = options.lambda ? *options.lambda : memory.C();
  detail::checkLambda(where, s.lambda);
  s.sign = options.sign;
  s.tuning = tuningFor(memory.context(), options.tuning);
  s.RL = memory.context().upload(std::vector<int32_t>(s.hash.RL.begin(), s.hash.RL.end()));
}

Embedding::~Embedding() = default;
Embedding::Embedding(Embedding &&) noexcept = default;
Embedding &Embedding::operator=(Embedding &&) noexcept = default;

void Embedding::forward(const Stream &stream, const DeviceBuffer<int32_t> &indices,
                        DeviceBuffer<float> &out, int64_t count) {
  State &s = *s_;
  s.check("forward", indices, out, "out", count);
  TunedKernel &k = s.kernel(s.fwd, "roast_lookup_fwd");
  s.launch(k, stream, indices, s.mem->values(), out, count);
}

void Embedding::backward(const Stream &stream, const DeviceBuffer<int32_t> &indices,
                         const DeviceBuffer<float> &dOut, int64_t count) {
  State &s = *s_;
  s.check("backward", indices, dOut, "dOut", count);
  TunedKernel &k = s.kernel(s.bwd, "roast_lookup_bwd");
  const DeviceBuffer<float> &grad = s.mem->grad();
  s.launch(k, stream, indices, dOut, grad, count);
}

int64_t Embedding::rows() const { return s_->rows; }
int64_t Embedding::dim() const { return s_->dim; }
int64_t Embedding::chunk() const { return s_->chunk; }
float Embedding::lambda() const { return s_->lambda; }
bool Embedding::hasSign() const { return s_->sign; }
const LookupHash &Embedding::hash() const { return s_->hash; }

int64_t Embedding::indexOf(int64_t row, int64_t col) const {
  const State &s = *s_;
  if (row < 0 || row >= s.rows || col < 0 || col >= s.dim)
    throw Error("roast::Embedding::indexOf: (" + std::to_string(row) + ", " + std::to_string(col) +
                ") is outside the " + std::to_string(s.rows) + " x " + std::to_string(s.dim) +
                " table");
  return chunkOffset(s.hash, s.mem->size(), s.chunk, row, col / s.chunk) + col % s.chunk;
}

int Embedding::signOf(int64_t row, int64_t col) const {
  const State &s = *s_;
  (void)indexOf(row, col); // range check
  return s.sign ? chunkSign(s.hash, row * cdiv(s.dim, s.chunk) + col / s.chunk) : 1;
}

} // namespace tessera::roast
