#include "FileUtil.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>

namespace tessera::fileutil {

std::string errnoText() { return std::strerror(errno); }

bool makeDirectories(const std::string &path, std::string &error) {
  if (path.empty()) {
    error = "empty path";
    return false;
  }
  std::string prefix;
  size_t pos = 0;
  while (pos != std::string::npos) {
    size_t next = path.find('/', pos + 1);
    prefix = path.substr(0, next);
    pos = next;
    if (prefix.empty() || prefix == "/")
      continue;
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      error = "cannot create " + prefix + ": " + errnoText();
      return false;
    }
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    error = path + " is not a directory";
    return false;
  }
  return true;
}

bool writeAll(int fd, const std::string &data) {
  const char *p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return true;
}

// Reads the whole of `fd` (of size `size` per fstat). False on read errors.
bool readAll(int fd, uint64_t size, std::string &out) {
  out.resize(static_cast<size_t>(size));
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = ::read(fd, &out[got], out.size() - got);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    if (n == 0)
      break;
    got += static_cast<size_t>(n);
  }
  out.resize(got); // the file shrank: parse() will find it truncated
  return true;
}

std::string randomSuffix() {
  static thread_local std::mt19937_64 rng([] {
    std::random_device rd;
    return (uint64_t(rd()) << 32) ^ rd() ^
           uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  }());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return buf;
}

} // namespace tessera::fileutil
