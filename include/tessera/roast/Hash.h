// The ROAST hashes (docs/kernels/roast.md), their parameters and their host
// evaluation. The kernels (kernels_dsl/lib/hash.tile) compute the same maps
// on the device; these host copies serve to validate parameters, to build
// the deterministic dM schedule (TileWaves.h) and to export a layer's index map.
#ifndef TESSERA_ROAST_HASH_H
#define TESSERA_ROAST_HASH_H

#include <array>
#include <cstdint>
#include <string>

namespace tessera::roast {

/// RzLinear's modulus for the ROAST-MM tile hash.
constexpr int64_t kTileP = 45007;
/// Mapping::Aligned's tile offsets are multiples of this many elements
/// (kernels_dsl/lib/hash.tile's ROAST_ALIGN).
constexpr int64_t kAlignedOffsetMultiple = 32;
/// The paper's modulus for the lookup hash (embeddings).
constexpr int64_t kLookupP = 2038074743;

/// Which tile mapping a layer uses. They are different formats: a memory
/// array trained with one cannot be read with the other.
enum class Mapping {
  RzLinear, ///< the paper's published kernel: loc as computed
  Aligned,  ///< Tessera's: loc rounded down to a multiple of 32 elements (a 128-byte line in f32)
};
const char *mappingName(Mapping m);

/// The hash tile HK x HN: the granularity of the mapping, a property of the
/// layer (fixed when the memory array is trained), not of the kernels' tiles.
/// Both sides are powers of two of at least 16 (RzLinear's default 32 x 64).
struct HashTile {
  int64_t k = 32;
  int64_t n = 64;
  int64_t elements() const { return k * n; }
};

/// The ROAST-MM tile hash: R = [P, r1, ..., r7] laid out as RzLinear's R
/// tensor (R[0] = 45007; r6 is unused). Each r in [0, P).
struct TileHash {
  std::array<int32_t, 8> R{};

  /// Explicit values, e.g. RzLinear's for a torch seed. Throws tessera::Error
  /// when R[0] is not 45007 or an r is outside [0, 45007).
  static TileHash fromValues(const std::array<int32_t, 8> &R);
  /// Tessera's own draw (not torch's): r_i = std::mt19937_64(seed)() mod P,
  /// for i = 1..7 in order. Deterministic across platforms.
  static TileHash fromSeed(uint64_t seed);
  /// RzLinear's R for its default torch seed 1024 (read from torch).
  static TileHash rzlinearSeed1024();
};

/// The start in M of hash tile (kb, nb) of a layer whose memory array has
/// `memSize` elements (> tile.elements()):
///   loc = ((((kb*r3 + nb*r2 + r1) mod P)*P) + ((kb*r7 + nb*r5 + r4) mod P)) mod (H - HK*HN)
/// rounded down to a multiple of kAlignedOffsetMultiple for Mapping::Aligned.
int64_t tileOffset(const TileHash &h, Mapping m, HashTile tile, int64_t memSize, int64_t kb,
                   int64_t nb);

/// The lookup hash and sign hash: RL = [h0, h1, h2, g0, g1, g2], each in
/// [1, kLookupP), h0..h2 odd (the paper draws odd random values).
struct LookupHash {
  std::array<int32_t, 6> RL{};

  /// Throws tessera::Error when a value is out of range or an h is even.
  static LookupHash fromValues(const std::array<int32_t, 6> &RL);
  /// h_i odd, g_i any, in [1, P): drawn from std::mt19937_64(seed) in order
  /// (h_i = 1 + 2*(draw mod ((P-1)/2)), g_i = 1 + draw mod (P-1)).
  static LookupHash fromSeed(uint64_t seed);
};

/// The offset in M of chunk `chunk` of row `row` (both >= 0):
///   h(r, b) = ((r*h0 + b*h1 + h2) mod P) mod (H - Z + 1), exact integer arithmetic.
int64_t chunkOffset(const LookupHash &h, int64_t memSize, int64_t chunkLen, int64_t row,
                    int64_t chunk);
/// The sign of chunk number x = row * cdiv(dim, Z) + chunk:
///   g(x) = 2*(((x*g0 + x^2*g1 + g2) mod P) mod 2) - 1, exact integer arithmetic.
int chunkSign(const LookupHash &h, int64_t x);

} // namespace tessera::roast

#endif
