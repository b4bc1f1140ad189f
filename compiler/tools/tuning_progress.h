// The progress of one tuning on stderr (TuneOptions::progress): a bar that
// redraws itself on a terminal, one line per finished phase otherwise (logs,
// CI, tests).
#ifndef TESSERA_TOOLS_TUNING_PROGRESS_H
#define TESSERA_TOOLS_TUNING_PROGRESS_H

#include <chrono>
#include <cstddef>
#include <string>

namespace tessera::cli {

class TuningProgress {
public:
  /// `label` names what is tuned ("vector_add n=1000"); `terminal`: whether
  /// stderr is a terminal (isatty), which decides bar or lines.
  TuningProgress(std::string label, bool terminal);
  ~TuningProgress() { finish(); }

  /// TuneOptions::progress: `phase` is "compile" or "time".
  void operator()(const char *phase, size_t done, size_t total);
  /// Clears the bar (a terminal); the lines stay.
  void finish();

private:
  std::string label_, phase_;
  size_t done_ = 0, total_ = 0;
  bool terminal_ = false, drawn_ = false, reported_ = false;
  std::chrono::steady_clock::time_point phaseBegin_, phaseEnd_;
};

} // namespace tessera::cli

#endif
