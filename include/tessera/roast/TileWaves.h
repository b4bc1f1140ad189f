// The schedule of the deterministic ROAST-MM memory gradient: the layer's hash
// tiles, grouped into waves of tiles whose runs of M do not overlap. One
// kernel launch per wave adds each of its tiles' blocks of lambda * X^T dY
// with a plain read-add-write (no two programs of a launch touch the same
// element), and the waves run in a fixed order, so every element of dM
// receives its terms in the same order on every run. It depends only on the
// hash, so a layer builds it once.
#ifndef TESSERA_ROAST_TILEWAVES_H
#define TESSERA_ROAST_TILEWAVES_H

#include <cstdint>
#include <functional>
#include <vector>

namespace tessera::roast {

struct TileWaves {
  /// Tile ids (kb * tilesN + nb), wave after wave; within a wave by offset.
  std::vector<int32_t> tiles;
  /// Wave w is tiles[starts[w], starts[w + 1]); starts.size() = waves + 1.
  std::vector<size_t> starts;

  size_t waves() const { return starts.empty() ? 0 : starts.size() - 1; }

  /// Interval colouring of the runs [offset(kb, nb), offset(kb, nb) + span):
  /// the tiles sorted by offset (then id), each put into the wave that freed
  /// up first (ties: the lowest wave) when one has, else into a new wave.
  /// That is optimal: the number of waves equals the largest number of runs
  /// covering one element of M. Deterministic: a function of the offsets only.
  static TileWaves build(int64_t tilesK, int64_t tilesN, int64_t span,
                         const std::function<int64_t(int64_t kb, int64_t nb)> &offset);
};

} // namespace tessera::roast

#endif
