// Runs LLVM work so that its fatal errors (report_fatal_error, which would
// exit the process) and crashes inside it become an error string instead.
#ifndef TESSERA_BACKEND_FATALERRORGUARD_H
#define TESSERA_BACKEND_FATALERRORGUARD_H

#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>

namespace tessera {
namespace detail {

/// Runs `fn`. Returns false, with `error` set to LLVM's message, when `fn`
/// hit a fatal error or crashed; objects `fn` allocated are then leaked (their
/// state is unknown). Thread-safe; nested calls run `fn` directly.
bool runGuarded(llvm::function_ref<void()> fn, std::string &error);

} // namespace detail
} // namespace tessera

#endif
