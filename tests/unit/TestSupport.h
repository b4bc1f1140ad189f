// Small helpers shared by the unit tests.
#ifndef TESSERA_TESTS_TESTSUPPORT_H
#define TESSERA_TESTS_TESTSUPPORT_H

#include "tessera/Error.h"

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <stdexcept>
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

/// A fresh, empty directory from mkdtemp under /tmp (named with `prefix`),
/// removed with its contents at the end.
struct TempDir {
  std::string path;
  explicit TempDir(const std::string &prefix = "tessera-test") {
    std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
    if (!::mkdtemp(tmpl.data()))
      throw std::runtime_error("mkdtemp failed");
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
};

/// Replaces the file at `path` with exactly `bytes`.
inline void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

} // namespace tessera::testing

#endif
