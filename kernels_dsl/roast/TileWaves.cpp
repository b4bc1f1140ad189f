// The deterministic dM schedule (include/tessera/roast/TileWaves.h).
#include "tessera/roast/TileWaves.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <tuple>

namespace tessera::roast {

TileWaves TileWaves::build(int64_t tilesK, int64_t tilesN, int64_t span,
                           const std::function<int64_t(int64_t, int64_t)> &offset) {
  struct Run {
    int64_t start;
    int32_t id;
  };
  std::vector<Run> runs;
  runs.reserve(size_t(tilesK * tilesN));
  for (int64_t kb = 0; kb < tilesK; ++kb)
    for (int64_t nb = 0; nb < tilesN; ++nb)
      runs.push_back({offset(kb, nb), int32_t(kb * tilesN + nb)});
  std::sort(runs.begin(), runs.end(), [](const Run &a, const Run &b) {
    return std::tie(a.start, a.id) < std::tie(b.start, b.id);
  });
  // (end of the wave's last run, wave): the wave that frees up first, lowest index on ties.
  using Free = std::pair<int64_t, size_t>;
  std::priority_queue<Free, std::vector<Free>, std::greater<Free>> free;
  std::vector<std::vector<int32_t>> waves;
  for (const Run &r : runs) {
    size_t w;
    if (!free.empty() && free.top().first <= r.start) {
      w = free.top().second;
      free.pop();
    } else {
      w = waves.size();
      waves.emplace_back();
    }
    waves[w].push_back(r.id);
    free.push({r.start + span, w});
  }
  TileWaves out;
  out.starts.push_back(0);
  for (const auto &w : waves) {
    out.tiles.insert(out.tiles.end(), w.begin(), w.end());
    out.starts.push_back(out.tiles.size());
  }
  return out;
}

} // namespace tessera::roast
