#include "tessera/Backend.h"
#include "tessera/Error.h"

#include <cctype>
#include <cstdlib>
#include <mutex>

namespace tessera {

Backend::~Backend() = default;

namespace {
std::mutex &factoryMutex() {
  static std::mutex m;
  return m;
}
BackendFactory &interpreterFactory() {
  static BackendFactory f;
  return f;
}
} // namespace

void setInterpreterBackendFactory(BackendFactory factory) {
  std::lock_guard<std::mutex> lock(factoryMutex());
  interpreterFactory() = std::move(factory);
}

bool interpreterRequested() {
  const char *v = std::getenv("TESSERA_INTERPRET");
  if (!v)
    return false;
  std::string s = v;
  for (char &c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return !(s.empty() || s == "0" || s == "false" || s == "off" || s == "no");
}

std::shared_ptr<Backend> createBackend(int ordinal) {
  if (interpreterRequested()) {
    BackendFactory factory;
    {
      std::lock_guard<std::mutex> lock(factoryMutex());
      factory = interpreterFactory();
    }
    return factory ? factory(ordinal) : createInterpreterBackend(ordinal);
  }
  return createCudaBackend(ordinal);
}

} // namespace tessera
