// Finds kernels_dsl/ (include/tessera/KernelLibrary.h).
#include "tessera/KernelLibrary.h"

#include "tessera/Error.h"

#include <cstdlib>
#include <sys/stat.h>
#include <vector>

namespace tessera {
namespace {

bool isDirectory(const std::string &p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool isFile(const std::string &p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

} // namespace

std::string kernelLibraryDir() {
  std::vector<std::string> tried;
  // An explicit directory must exist: silently falling back would run other kernels.
  if (const char *env = std::getenv("TESSERA_KERNELS_DIR"); env && *env) {
    if (isDirectory(env))
      return env;
    throw Error(std::string("TESSERA_KERNELS_DIR=") + env + " is not a directory");
  }
  for (const char *dir : {TESSERA_KERNELS_INSTALL_DIR, TESSERA_KERNELS_SOURCE_DIR}) {
    // The marker file tells a kernels_dsl/ from an unrelated directory.
    if (isFile(std::string(dir) + "/lib/hash.tile"))
      return dir;
    tried.push_back(dir);
  }
  std::string msg = "cannot find Tessera's kernel sources (kernels_dsl/); looked in";
  for (const auto &t : tried)
    msg += " " + t;
  throw Error(msg + " (set TESSERA_KERNELS_DIR)");
}

std::string kernelLibraryPath(const std::string &relative) {
  std::string path = kernelLibraryDir() + "/" + relative;
  if (!isFile(path))
    throw Error("kernel source " + path + " not found");
  return path;
}

} // namespace tessera
