// Small helpers shared by the unit tests.
#ifndef TESSERA_TESTS_TESTSUPPORT_H
#define TESSERA_TESTS_TESTSUPPORT_H

#include "tessera/Error.h"

#include <cstdlib>
#include <functional>
#include <optional>
#include <string>

namespace tessera::testing {

/// Sets (or unsets, with nullptr) an environment variable for one scope.
class EnvGuard {
public:
  EnvGuard(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~EnvGuard() {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  EnvGuard(const EnvGuard &) = delete;
  EnvGuard &operator=(const EnvGuard &) = delete;

private:
  std::string name_;
  std::optional<std::string> old_;
};

/// The message of the tessera::Error that `f` throws.
inline std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "<no tessera::Error thrown>";
}

} // namespace tessera::testing

#endif
