// tessera::roast::Linear (include/tessera/roast/Linear.h) over the ROAST-MM
// kernels: roast_mm.tile (forward), roast_mm_dx.tile, roast_mm_dm.tile.
#include "tessera/roast/Linear.h"

#include "Checks.h"
#include "LayerKernel.h"

#include "tessera/Error.h"
#include "tessera/JIT.h"
#include "tessera/KernelLibrary.h"
#include "tessera/roast/Options.h"

#include <cmath>
#include <optional>

namespace tessera::roast {
namespace {

bool isPow2AtLeast16(int64_t v) { return v >= 16 && (v & (v - 1)) == 0; }

int32_t i32(int64_t v) { return int32_t(v); }

// Programs of the fill that zeroes Y before a split-K forward, which
// overlaps it. On the multiprocessors that the forward leaves idle when
// there are at least 4: the fill then runs beside the forward's loop from
// the start. Else one per multiprocessor: the fill ends first, in a few
// microseconds. At 512 x 4096 on an H200 (128 programs of the forward, 132
// SMs) a forward took 55.0 us with 4 fill programs, 55.9 with 132, and 72.7
// with 8, when 4 of the forward's programs wait for the fill to end.
int64_t fillPrograms(Context &ctx, const Config &c, int64_t B, int64_t N) {
  const int64_t sms = std::max(1, ctx.smCount());
  const Grid g = forwardGrid(c, B, N);
  const int64_t programs = int64_t(g.x) * g.y;
  return sms - programs >= 4 ? sms - programs : sms;
}

} // namespace

Grid forwardGrid(const Config &c, int64_t batch, int64_t out) {
  const int64_t cs = c.clusterSize.value_or(1);
  return Grid::of(cdiv(batch, c.get("BM")) * cs * cdiv(cdiv(out, c.get("BN")), cs),
                  c.getOr("SPLIT_K", 1));
}

struct Linear::State {
  MemoryArray *mem;
  int64_t in, out;
  TileHash hash;
  Mapping mapping;
  HashTile tile;
  float lambda;
  bool reproducible = false; // the forward never splits K (no atomics into Y)
  TunedKernelOptions tuning;
  std::unique_ptr<TunedKernel> fwd, dx, dm, dmWave, transpose;
  std::optional<Kernel> fill; // zeroes Y before a split-K forward (basics/fill.tile)
  DeviceBuffer<float> ownXT; // X^T for backwardMemory's dM (an activation's size, grown on demand)
  std::optional<TileWaves> waves;
  DeviceBuffer<int32_t> waveTiles;

  // Hash parameter r_i, a kernel argument (the kernels take r1..r5 and r7).
  int32_t r(int i) const { return hash.R[size_t(i)]; }
  std::map<std::string, ConstexprValue> constexprs() const {
    return {{"HK", tile.k}, {"HN", tile.n}, {"ALIGNED", mapping == Mapping::Aligned}};
  }
  // Whether a config's (BK, BN) keeps every hashed block contiguous.
  // Whether a config's (BK, BN) keeps every hashed block contiguous, and
  // (`oneSplit`) whether it sums each output tile in one program.
  std::function<bool(const Config &)> fits(bool kDivides, bool nDivides, bool oneSplit) const {
    int64_t HK = tile.k, HN = tile.n;
    return [=](const Config &c) {
      int64_t bk = c.get("BK"), bn = c.get("BN");
      bool okK = HK % bk == 0 || (!kDivides && bk % HK == 0);
      bool okN = HN % bn == 0 || (!nDivides && bn % HN == 0);
      return okK && okN && (!oneSplit || c.getOr("SPLIT_K", 1) == 1);
    };
  }
  // Removing configs changes the space's hash, so a reproducible layer never
  // takes a split config from a tuning entry of another layer.
  TunedKernel &kernel(std::unique_ptr<TunedKernel> &k, const char *file, const char *name,
                      bool kDivides, bool nDivides, bool oneSplit = false) {
    if (!k)
      k = detail::layerKernel(mem->context(), file, name, constexprs(),
                              {{"BK", int64_t(16)}, {"BN", int64_t(16)}},
                              fits(kDivides, nDivides, oneSplit), tuning);
    return *k;
  }

  void checkBatch(const char *what, int64_t batch) const {
    std::string where = std::string("roast::Linear::") + what;
    detail::checkCount(where, "batch", batch);
    if (batch * std::max(in, out) >= (int64_t(1) << 31))
      throw Error(where + ": batch * max(in, out) = " + std::to_string(batch * std::max(in, out)) +
                  " must stay below 2^31 (the kernels index with i32)");
  }
  // dM += lambda * X^T dY at the hashed places. X^T goes to `scratch` when
  // given (backward() passes dX, which its own kernel overwrites afterwards),
  // else to the layer's own buffer (ownXT).
  void memoryGrad(const Stream &stream, const DeviceBuffer<float> &X, const DeviceBuffer<float> &dY,
                  int64_t batch, bool deterministic, DeviceBuffer<float> *scratch = nullptr);
  void buildWaves();
};

Linear::Linear(MemoryArray &memory, int64_t in, int64_t out, TileHash hash, LinearOptions options)
    : s_(std::make_unique<State>()) {
  const std::string where = "roast::Linear";
  detail::checkCount(where, "in", in);
  detail::checkCount(where, "out", out);
  HashTile t = options.tile;
  if (!isPow2AtLeast16(t.k) || !isPow2AtLeast16(t.n))
    throw Error(where + ": the hash tile's sides must be powers of two >= 16, got " +
                std::to_string(t.k) + " x " + std::to_string(t.n));
  if (memory.size() <= t.elements())
    throw Error(where + ": the memory array (" + std::to_string(memory.size()) +
                " elements) must be larger than one hash tile (" + std::to_string(t.k) + " x " +
                std::to_string(t.n) + " = " + std::to_string(t.elements()) + " elements)");
  TileHash checked = TileHash::fromValues(hash.R);
  float lambda = options.lambda ? *options.lambda : memory.C() / float(std::sqrt(double(in)));
  detail::checkLambda(where, lambda);
  State &s = *s_;
  s.mem = &memory;
  s.in = in;
  s.out = out;
  s.hash = checked;
  s.mapping = options.mapping;
  s.tile = t;
  s.lambda = lambda;
  s.reproducible = options.reproducible;
  s.tuning = tuningFor(memory.context(), options.tuning);
}

Linear::~Linear() = default;
Linear::Linear(Linear &&) noexcept = default;
Linear &Linear::operator=(Linear &&) noexcept = default;

void Linear::forward(const Stream &stream, const DeviceBuffer<float> &X, DeviceBuffer<float> &Y,
                     int64_t batch) {
  State &s = *s_;
  s.checkBatch("forward", batch);
  detail::checkBuffer("roast::Linear::forward", "X", X.size(), batch * s.in);
  detail::checkBuffer("roast::Linear::forward", "Y", Y.size(), batch * s.out);
  TunedKernel &k = s.kernel(s.fwd, "roast/roast_mm.tile", "roast_mm_fwd", true, false, s.reproducible);
  const int64_t B = batch, N = s.out;
  auto grid = [=](const Config &c) { return forwardGrid(c, B, N); };
  // The arguments once, for the config lookup and the launch.
  auto pack = [](const auto &...a) {
    return std::pair{makeArgs(a...), std::vector<const DeviceMemory *>{bufferOf(a)...}};
  };
  auto [args, buffers] = pack(X, s.mem->values(), Y, s.r(1), s.r(2), s.r(3), s.r(4), s.r(5), s.r(7),
                              i32(B), i32(s.in), i32(N), i32(s.mem->size()), s.lambda, i32(s.in),
                              int32_t(1), i32(N), int32_t(1));
  // A split-K config adds its partial sums into Y (roast_mm.tile), zeroed
  // by the fill kernel, which the forward overlaps: it waits for the fill
  // only before its adds. That saves a memset's launch gap and time (8 MB at
  // 512 x 4096). The fill writes only Y, which nothing before the wait reads.
  LaunchOptions launch;
  const Config config = k.configForArgs(grid, args, buffers);
  if (config.getOr("SPLIT_K", 1) > 1) {
    if (!s.fill) {
      JitOptions fill;
      fill.numWarps = 8;
      s.fill = compile(s.mem->context(), kernelLibraryPath("basics/fill.tile"), "fill", {}, fill);
    }
    s.fill->launch(stream, Grid::of(fillPrograms(s.mem->context(), config, B, N)), Y, 0.0f, i32(B * N));
    launch.overlapPrevious = true;
  }
  k.launchWithArgs(stream, grid, args, buffers, launch);
}

void Linear::backward(const Stream &stream, const DeviceBuffer<float> &X,
                      const DeviceBuffer<float> &dY, DeviceBuffer<float> &dX, int64_t batch,
                      bool deterministic) {
  State &s = *s_;
  s.checkBatch("backward", batch);
  detail::checkBuffer("roast::Linear::backward", "dX", dX.size(), batch * s.in);
  detail::checkBuffer("roast::Linear::backward", "dY", dY.size(), batch * s.out);
  detail::checkBuffer("roast::Linear::backward", "X", X.size(), batch * s.in);
  // dM first, with X^T in dX's buffer (batch x in floats, exactly X^T's size):
  // the layer then owns no activation-sized scratch. The dX kernel, next on
  // the same stream, overwrites it.
  s.memoryGrad(stream, X, dY, batch, deterministic, &dX);
  TunedKernel &k = s.kernel(s.dx, "roast/roast_mm_dx.tile", "roast_mm_dx", false, false);
  const int64_t B = batch, K = s.in;
  k.launch(stream, [=](const Config &c) { return Grid::of(cdiv(B, c.get("BM")) * cdiv(K, c.get("BK"))); },
           dY, s.mem->values(), dX, s.r(1), s.r(2), s.r(3), s.r(4), s.r(5), s.r(7), i32(B), i32(K),
           i32(s.out), i32(s.mem->size()), s.lambda, i32(s.out), int32_t(1), i32(K), int32_t(1));
}

void Linear::backwardMemory(const Stream &stream, const DeviceBuffer<float> &X,
                            const DeviceBuffer<float> &dY, int64_t batch, bool deterministic) {
  State &s = *s_;
  s.checkBatch("backward", batch);
  detail::checkBuffer("roast::Linear::backward", "X", X.size(), batch * s.in);
  detail::checkBuffer("roast::Linear::backward", "dY", dY.size(), batch * s.out);
  s.memoryGrad(stream, X, dY, batch, deterministic);
}

void Linear::State::memoryGrad(const Stream &stream, const DeviceBuffer<float> &X,
                               const DeviceBuffer<float> &dY, int64_t batch, bool deterministic,
                               DeviceBuffer<float> *scratch) {
  const int64_t B = batch, K = in, N = out;
  // X^T (K x B): the dM kernels' A operand, K-major for the tensor cores.
  if (!scratch && int64_t(ownXT.size()) < B * K)
    ownXT = mem->context().alloc<float>(size_t(B * K));
  DeviceBuffer<float> &xT = scratch ? *scratch : ownXT;
  if (!transpose)
    transpose = detail::layerKernel(mem->context(), "roast/roast_transpose.tile",
                                    "roast_transpose", {}, {}, [](const Config &) { return true; },
                                    tuning);
  transpose->launch(stream, [=](const Config &c) {
    return Grid::of(cdiv(B, c.get("BLOCK")) * cdiv(K, c.get("BLOCK")));
  }, X, xT, i32(B), i32(K));
  if (!deterministic) {
    TunedKernel &k = kernel(dm, "roast/roast_mm_dm.tile", "roast_mm_dm", false, false);
    k.launch(stream, [=](const Config &c) { return Grid::of(cdiv(K, c.get("BK")) * cdiv(N, c.get("BN"))); },
             xT, dY, mem->grad(), r(1), r(2), r(3), r(4), r(5), r(7), i32(B), i32(K), i32(N),
             i32(mem->size()), lambda, int32_t(1), i32(B), i32(N), int32_t(1));
    return;
  }
  buildWaves();
  TunedKernel &k = kernel(dmWave, "roast/roast_mm_dm.tile", "roast_mm_dm_wave", true, true);
  const int64_t HK = tile.k, HN = tile.n;
  for (size_t w = 0; w < waves->waves(); ++w) {
    const int64_t first = int64_t(waves->starts[w]), count = int64_t(waves->starts[w + 1]) - first;
    auto grid = [=](const Config &c) {
      return Grid::of(count * (HK / c.get("BK")) * (HN / c.get("BN")));
    };
    k.launch(stream, grid, xT, dY, mem->grad(), r(1), r(2), r(3), r(4), r(5), r(7), waveTiles,
             i32(first), i32(B), i32(K), i32(N), i32(mem->size()), lambda, int32_t(1), i32(B), i32(N),
             int32_t(1));
  }
}

void Linear::State::buildWaves() {
  if (waves)
    return;
  const int64_t tilesK = cdiv(in, tile.k), tilesN = cdiv(out, tile.n);
  if (tilesK * tilesN >= (int64_t(1) << 31))
    throw Error("roast::Linear: the deterministic backward numbers hash tiles with i32, but this "
                "layer has " + std::to_string(tilesK * tilesN));
  const TileHash h = hash;
  const Mapping m = mapping;
  const HashTile t = tile;
  const int64_t H = mem->size();
  waves = TileWaves::build(tilesK, tilesN, t.elements(),
                           [&](int64_t kb, int64_t nb) { return tileOffset(h, m, t, H, kb, nb); });
  waveTiles = mem->context().upload(waves->tiles);
}

int64_t Linear::in() const { return s_->in; }
int64_t Linear::out() const { return s_->out; }
float Linear::lambda() const { return s_->lambda; }
Mapping Linear::mapping() const { return s_->mapping; }
HashTile Linear::tile() const { return s_->tile; }
const TileHash &Linear::hash() const { return s_->hash; }
MemoryArray &Linear::memory() const { return *s_->mem; }

int64_t Linear::indexOf(int64_t k, int64_t n) const {
  const State &s = *s_;
  if (k < 0 || k >= s.in || n < 0 || n >= s.out)
    throw Error("roast::Linear::indexOf: (" + std::to_string(k) + ", " + std::to_string(n) +
                ") is outside the " + std::to_string(s.in) + " x " + std::to_string(s.out) +
                " weight");
  return tileOffset(s.hash, s.mapping, s.tile, s.mem->size(), k / s.tile.k, n / s.tile.n) +
         (k % s.tile.k) * s.tile.n + n % s.tile.n;
}

const TileWaves &Linear::waves() const {
  s_->buildWaves();
  return *s_->waves;
}

std::map<std::string, std::string> Linear::chosenConfigs() const {
  std::map<std::string, std::string> out;
  auto add = [&](const char *name, const std::unique_ptr<TunedKernel> &k) {
    if (k && k->stats().launches > 0)
      out[name] = k->lastDecision().config.str();
  };
  add("roast_mm_fwd", s_->fwd);
  add("roast_mm_dx", s_->dx);
  add("roast_mm_dm", s_->dm);
  add("roast_mm_dm_wave", s_->dmWave);
  return out;
}

size_t Linear::deviceBytes() const {
  return s_->waveTiles.bytes() + s_->ownXT.bytes();
}

} // namespace tessera::roast
