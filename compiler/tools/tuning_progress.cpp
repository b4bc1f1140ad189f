// Progress of a tuning on stderr (tuning_progress.h).
#include "tuning_progress.h"

#include "cli.h"

#include <iostream>

namespace tessera::cli {

TuningProgress::TuningProgress(std::string label, bool terminal)
    : label_(std::move(label)), terminal_(terminal), phaseEnd_(std::chrono::steady_clock::now()) {}

void TuningProgress::operator()(const char *phase, size_t done, size_t total) {
  // The runner polls the compile phase every few milliseconds with the same
  // counts; only a change is worth drawing.
  bool newPhase = phase_ != phase;
  if (!newPhase && done == done_ && total == total_)
    return;
  if (newPhase) {
    phase_ = phase;
    reported_ = false;
    phaseBegin_ = phaseEnd_; // a phase begins where the one before ended
  }
  done_ = done;
  total_ = total;
  if (done == total)
    phaseEnd_ = std::chrono::steady_clock::now();
  bool compiling = phase_ == "compile";
  if (terminal_) {
    const size_t width = 30;
    size_t filled = total ? done * width / total : width;
    std::cerr << "\r\033[K" << label_ << (compiling ? ": compiling " : ": timing    ") << "["
              << std::string(filled, '#') << std::string(width - filled, '.') << "] " << done
              << "/" << total << std::flush;
    drawn_ = true;
    return;
  }
  if (done < total || reported_)
    return;
  reported_ = true;
  double seconds =
      std::chrono::duration<double>(phaseEnd_ - phaseBegin_).count();
  std::cerr << "tessera autotune: " << label_
            << (compiling ? ": compile phase done: " : ": timing phase done: ") << total
            << (total == 1 ? " config" : " configs") << " in " << formatDouble(seconds, "%.2f")
            << " s\n";
}

void TuningProgress::finish() {
  if (drawn_)
    std::cerr << "\r\033[K" << std::flush;
  drawn_ = false;
}

} // namespace tessera::cli
