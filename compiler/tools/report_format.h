// Number, time and grid text for the reports of `tessera run`, `tessera
// autotune` and bench/basics_check (which links this file's library).
#ifndef TESSERA_TOOLS_REPORT_FORMAT_H
#define TESSERA_TOOLS_REPORT_FORMAT_H

#include "tessera/LaunchArgs.h"

#include <string>

namespace tessera::cli {

/// `v` printed with the printf `format` ("%.3g").
std::string formatDouble(double v, const char *format = "%.3g");
/// "128.97 us", "1.25 ms", "2.00 s".
std::string humanTime(double ms);
/// "4x1x1".
std::string gridText(const Grid &g);

} // namespace tessera::cli

#endif
