// Small helpers shared by the unit tests.
#ifndef TESSERA_TESTS_TESTSUPPORT_H
#define TESSERA_TESTS_TESTSUPPORT_H

#include "tessera/Error.h"

#include <cstdlib>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

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

/// A fresh random seed per test (print `seed` on failure); TESSERA_TEST_SEED=n replays one.
inline uint32_t freshSeed() {
  if (const char *env = std::getenv("TESSERA_TEST_SEED"))
    return uint32_t(std::strtoul(env, nullptr, 10));
  return uint32_t(std::random_device{}());
}

/// Random inputs from a fresh, reportable seed.
struct Seeded {
  uint32_t seed = freshSeed();
  std::mt19937 rng{seed};
  std::vector<float> uniform(size_t n, float lo = -1, float hi = 1) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (auto &x : v)
      x = d(rng);
    return v;
  }
  int range(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
};

} // namespace tessera::testing

#endif
