// Host evaluation of the ROAST hashes (include/tessera/roast/Hash.h); the
// device copies are in kernels_dsl/lib/hash.tile.
#include "tessera/roast/Hash.h"

#include "tessera/Error.h"

#include <random>

namespace tessera::roast {

const char *mappingName(Mapping m) { return m == Mapping::Aligned ? "aligned" : "rzlinear"; }

TileHash TileHash::fromValues(const std::array<int32_t, 8> &R) {
  if (R[0] != kTileP)
    throw Error("roast::TileHash: R[0] must be P = 45007 (RzLinear's layout), got " +
                std::to_string(R[0]));
  for (size_t i = 1; i < R.size(); ++i)
    if (R[i] < 0 || R[i] >= kTileP)
      throw Error("roast::TileHash: R[" + std::to_string(i) + "] must be in [0, 45007), got " +
                  std::to_string(R[i]));
  TileHash h;
  h.R = R;
  return h;
}

TileHash TileHash::fromSeed(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::array<int32_t, 8> R{};
  R[0] = int32_t(kTileP);
  for (size_t i = 1; i < R.size(); ++i)
    R[i] = int32_t(rng() % uint64_t(kTileP));
  return fromValues(R);
}

TileHash TileHash::rzlinearSeed1024() {
  return fromValues({45007, 20011, 38363, 15263, 24507, 36489, 12234, 43027});
}

int64_t tileOffset(const TileHash &h, Mapping m, HashTile tile, int64_t memSize, int64_t kb,
                   int64_t nb) {
  const auto &R = h.R;
  int64_t hi = (kb * R[3] + nb * R[2] + R[1]) % kTileP;
  int64_t lo = (kb * R[7] + nb * R[5] + R[4]) % kTileP;
  int64_t loc = (hi * kTileP + lo) % (memSize - tile.elements());
  return m == Mapping::Aligned ? loc - loc % kAlignedOffsetMultiple : loc;
}

LookupHash LookupHash::fromValues(const std::array<int32_t, 6> &RL) {
  for (size_t i = 0; i < RL.size(); ++i) {
    if (RL[i] < 1 || int64_t(RL[i]) >= kLookupP)
      throw Error("roast::LookupHash: RL[" + std::to_string(i) +
                  "] must be in [1, 2038074743), got " + std::to_string(RL[i]));
    if (i < 3 && RL[i] % 2 == 0)
      throw Error("roast::LookupHash: RL[" + std::to_string(i) +
                  "] (a chunk-hash multiplier) must be odd, got " + std::to_string(RL[i]));
  }
  LookupHash h;
  h.RL = RL;
  return h;
}

LookupHash LookupHash::fromSeed(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::array<int32_t, 6> RL{};
  for (size_t i = 0; i < 3; ++i)
    RL[i] = int32_t(1 + 2 * (rng() % uint64_t((kLookupP - 1) / 2)));
  for (size_t i = 3; i < 6; ++i)
    RL[i] = int32_t(1 + rng() % uint64_t(kLookupP - 1));
  return fromValues(RL);
}

int64_t chunkOffset(const LookupHash &h, int64_t memSize, int64_t chunkLen, int64_t row,
                    int64_t chunk) {
  const int64_t P = kLookupP;
  int64_t v = ((row % P) * h.RL[0] + (chunk % P) * h.RL[1] + h.RL[2]) % P;
  return v % (memSize - chunkLen + 1);
}

int chunkSign(const LookupHash &h, int64_t x) {
  const int64_t P = kLookupP;
  int64_t xm = x % P, sq = (xm * xm) % P;
  int64_t v = ((xm * h.RL[3]) % P + (sq * h.RL[4]) % P + h.RL[5]) % P;
  return int(2 * (v % 2) - 1);
}

} // namespace tessera::roast
