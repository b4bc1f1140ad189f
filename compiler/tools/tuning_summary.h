// What `tessera autotune` reports for each shape it tuned: the table of
// candidates with the winner and its speed-ups (stdout), and the same as JSON
// (--json PATH).
#ifndef TESSERA_TOOLS_TUNING_SUMMARY_H
#define TESSERA_TOOLS_TUNING_SUMMARY_H

#include "tessera/Autotune.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace tessera::cli {

/// The result of one --shape.
struct ShapeOutcome {
  KeyValues shape; // the --shape names and values, in order
  TuningKey key;
  /// "tuned", or "cached" (the tuning cache held the key; not tuned again).
  std::string source;
  double seconds = 0; // wall time of the tuning
  std::shared_ptr<const TuningRecord> record;
  /// Why the shape has no result (no candidate ran correctly); record is null.
  std::string error;
};

/// The best time and how much faster it is than the default config (the
/// first candidate) and the slowest timed one; unset when not timed.
struct Speedups {
  std::optional<double> bestMs, overDefault, overWorst;
};
Speedups speedupsOf(const TuningRecord &record);

/// "M=512,N=8192" (or "(no key)" when empty): key values or a shape.
std::string keyValuesText(const KeyValues &values);

/// The header line, the table (the winner marked "<- best") and the speed-up line.
void printShapeOutcome(std::ostream &out, const ShapeOutcome &outcome);

/// {"kernel", "file", "device", "compiler", "shapes": [{"shape", "key",
/// "source", "seconds", "date", "best", "speedup_over_default",
/// "speedup_over_worst", "candidates", "tuning_key"} or {"shape", "error"}]}.
std::string outcomesJson(const std::string &kernel, const std::string &file,
                         const std::string &device, const std::vector<ShapeOutcome> &outcomes);

} // namespace tessera::cli

#endif
