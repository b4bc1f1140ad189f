// A tuning's candidates as JSON, for the benchmarks that pick their configs
// through the autotuner (matmul_bench, roast_bench, autotune_bench).
#ifndef TESSERA_BENCH_TUNINGREPORT_H
#define TESSERA_BENCH_TUNINGREPORT_H

#include "tessera/Autotune.h"

#include <nlohmann/json.hpp>

namespace tessera::bench {

/// [{"config": "BK=32,...", "ms": 0.18, "spread_ms": 0.01, "repeats": 10},
///  {"config": "...", "skip": "pruned: ..."}, ...] in the space's order.
inline nlohmann::json candidatesJson(const TuningRecord &r) {
  nlohmann::json out = nlohmann::json::array();
  for (const CandidateResult &c : r.candidates) {
    nlohmann::json j = {{"config", c.config.str()}};
    if (c.skipped())
      j["skip"] = c.skipReason;
    else
      j["ms"] = *c.timeMs, j["spread_ms"] = c.spreadMs, j["repeats"] = c.repeats;
    out.push_back(j);
  }
  return out;
}

} // namespace tessera::bench

#endif
