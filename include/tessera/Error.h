// tessera::Error: the one exception type the runtime throws.
#ifndef TESSERA_ERROR_H
#define TESSERA_ERROR_H

#include <stdexcept>
#include <string>

namespace tessera {

/// Thrown by every runtime API on failure. For CUDA driver failures it also
/// carries the CUresult (numeric and symbolic, e.g. "CUDA_ERROR_INVALID_PTX")
/// and, for module loads, the JIT log. `what()` contains all of it:
///
///   cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX (a PTX JIT compilation failed)
///   JIT error log:
///   ptxas application ptx input, line 3; fatal   : ...
class Error : public std::runtime_error {
public:
  explicit Error(const std::string &message);
  /// `message` is the description without the CUDA part; what() becomes
  /// "<message>: <cuResultName> (<cuResultString>)" followed by the JIT log.
  Error(const std::string &message, int cuResult, std::string cuResultName,
        const std::string &cuResultString = {}, std::string jitLog = {});

  /// The numeric CUresult, or 0 when the error did not come from the driver.
  int cuResult() const { return cuResult_; }
  /// "CUDA_ERROR_OUT_OF_MEMORY", or empty when the error did not come from the driver.
  const std::string &cuResultName() const { return cuResultName_; }
  /// The JIT error log of a failed module load (empty otherwise).
  const std::string &jitLog() const { return jitLog_; }

private:
  int cuResult_ = 0;
  std::string cuResultName_;
  std::string jitLog_;
};

} // namespace tessera

#endif
