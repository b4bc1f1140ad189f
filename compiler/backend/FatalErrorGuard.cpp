#include "FatalErrorGuard.h"

#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/ErrorHandling.h"

#include <mutex>
#include <unistd.h>

namespace tessera {
namespace detail {

namespace {

std::mutex gGuardMutex;
int gGuardUsers = 0;
thread_local std::string *tCurrentError = nullptr;

void onFatalError(void *, const char *reason, bool) {
  if (llvm::CrashRecoveryContext *crc = llvm::CrashRecoveryContext::GetCurrent()) {
    if (tCurrentError)
      *tCurrentError = std::string("LLVM error: ") + reason;
    crc->HandleExit(1); // unwinds to runGuarded; does not return
  }
  // A fatal error outside runGuarded (another thread's LLVM work): say what
  // LLVM would have said; report_fatal_error then exits.
  std::string msg = std::string("LLVM ERROR: ") + reason + "\n";
  ssize_t n = ::write(2, msg.data(), msg.size());
  (void)n;
}

// The fatal-error handler and crash recovery are process-wide: installed
// while at least one runGuarded is active.
void acquire() {
  std::lock_guard<std::mutex> lock(gGuardMutex);
  if (gGuardUsers++ == 0) {
    llvm::install_fatal_error_handler(onFatalError, nullptr);
    llvm::CrashRecoveryContext::Enable();
  }
}

void release() {
  std::lock_guard<std::mutex> lock(gGuardMutex);
  if (--gGuardUsers == 0) {
    llvm::CrashRecoveryContext::Disable();
    llvm::remove_fatal_error_handler();
  }
}

} // namespace

bool runGuarded(llvm::function_ref<void()> fn, std::string &error) {
  if (llvm::CrashRecoveryContext::GetCurrent()) {
    fn();
    return true;
  }
  std::string message;
  acquire();
  std::string *saved = tCurrentError;
  tCurrentError = &message;
  llvm::CrashRecoveryContext crc;
  bool ok = crc.RunSafely(fn);
  tCurrentError = saved;
  release();
  if (!ok)
    error = message.empty() ? "internal compiler error: LLVM crashed during code generation"
                            : message;
  return ok;
}

} // namespace detail
} // namespace tessera
