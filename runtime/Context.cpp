#include "tessera/Context.h"
#include "tessera/Error.h"

#include <cerrno>
#include <cstdlib>

namespace tessera {

namespace {
int deviceFromEnvironment() {
  const char *v = std::getenv("TESSERA_DEVICE");
  if (!v || !*v)
    return 0;
  errno = 0;
  char *end = nullptr;
  long n = std::strtol(v, &end, 10);
  if (errno != 0 || *end != '\0' || n < 0 || n > 1 << 20)
    throw Error(std::string("TESSERA_DEVICE='") + v + "' is not a device number");
  return static_cast<int>(n);
}

std::shared_ptr<Backend> requireBackend(std::shared_ptr<Backend> b) {
  if (!b)
    throw Error("Context: null backend");
  return b;
}
} // namespace

Context::Context() : Context(deviceFromEnvironment()) {}

Context::Context(int ordinal) : Context(createBackend(ordinal)) {}

Context::Context(std::shared_ptr<Backend> backend)
    : backend_(requireBackend(std::move(backend))), defaultStream_(backend_, nullptr, false) {}

Context Context::fromEnvironment() { return Context(deviceFromEnvironment()); }

Context Context::gpuOrInterpreter(std::string *reason) {
  try {
    return Context();
  } catch (const Error &e) {
    // Only a missing driver or GPU falls back (messages from CudaDriver.cpp).
    std::string what = e.what();
    bool absent = what.rfind("no CUDA driver found", 0) == 0 ||
                  what.rfind("no CUDA-capable GPU found", 0) == 0;
    if (!absent)
      throw;
    if (reason)
      *reason = what;
    return Context(createInterpreterBackend());
  }
}

} // namespace tessera
