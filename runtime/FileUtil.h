// Private: the POSIX file helpers of the on-disk caches (the kernel cache,
// runtime/KernelCache.cpp, and the tuning cache, autotune/TuningCache.cpp):
// directories, whole writes and reads, and names for temporary files that
// are renamed into place (atomic writes).
#ifndef TESSERA_RUNTIME_FILEUTIL_H
#define TESSERA_RUNTIME_FILEUTIL_H

#include <cstdint>
#include <string>

namespace tessera::fileutil {

/// strerror(errno).
std::string errnoText();
/// mkdir -p; false (and `error`) when a part cannot be made or is not a directory.
bool makeDirectories(const std::string &path, std::string &error);
/// Writes all of `data` to `fd` (retrying on EINTR); false on an error.
bool writeAll(int fd, const std::string &data);
/// Reads up to `size` bytes from `fd` into `out` (fewer if the file shrank).
bool readAll(int fd, uint64_t size, std::string &out);
/// 16 random hex digits, for temporary file names that never collide.
std::string randomSuffix();

} // namespace tessera::fileutil

#endif
