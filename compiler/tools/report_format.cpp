// Report text (report_format.h).
#include "report_format.h"

#include <cstdio>

namespace tessera::cli {

std::string formatDouble(double v, const char *format) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string humanTime(double ms) {
  if (ms < 1)
    return formatDouble(ms * 1000, "%.2f us");
  if (ms < 1000)
    return formatDouble(ms, "%.2f ms");
  return formatDouble(ms / 1000, "%.2f s");
}

std::string gridText(const Grid &g) {
  return std::to_string(g.x) + "x" + std::to_string(g.y) + "x" + std::to_string(g.z);
}

} // namespace tessera::cli
