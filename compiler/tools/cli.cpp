// Shared helpers of the `tessera` command-line tool (see cli.h).
#include "cli.h"

#include "tessera/CompileOptions.h"
#include "tessera/Compiler.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <vector>

#include <unistd.h>

namespace tessera::cli {

int usageError(const std::string &msg, const char *help) {
  std::cerr << "tessera: error: " << msg << "\n\n" << help;
  return kUsage;
}

bool ArgReader::value(const std::string &flag, std::string &dst) {
  const std::string &a = arg();
  if (a == flag) {
    if (i_ + 1 >= argc_) {
      missing_ = true;
      return false;
    }
    dst = argv_[++i_];
    return true;
  }
  if (a.size() > flag.size() + 1 && a.compare(0, flag.size(), flag) == 0 && a[flag.size()] == '=') {
    dst = a.substr(flag.size() + 1);
    return true;
  }
  if (flag.size() == 2 && a.size() > 2 && a.compare(0, 2, flag) == 0 && a[2] != '=') {
    dst = a.substr(2); // -DX=1, -Idir
    return true;
  }
  return false;
}

bool parseDefine(const std::string &v, std::map<std::string, ConstexprValue> &defines,
                 std::string &error) {
  auto eq = v.find('=');
  if (eq == std::string::npos || eq == 0) {
    error = "-D expects NAME=VALUE, got '" + v + "'";
    return false;
  }
  std::string name = v.substr(0, eq), text = v.substr(eq + 1);
  auto cv = parseConstexpr(text);
  if (!cv && text.empty()) {
    error = "-D " + name + " has no value (write -D " + name + "=VALUE; an empty string is "
            "-D " + name + "='\"\"')";
    return false;
  }
  // Anything else that is not a number, a bool, a type or a quoted string is a string.
  defines[name] = cv ? *cv : ConstexprValue{text};
  return true;
}

bool parseAssume(const std::string &v, std::map<std::string, ArgFact> &facts,
                 std::string &error) {
  ArgFact fact = ArgFact::None;
  std::string name;
  if (v.size() > 2 && v.compare(v.size() - 2, 2, "=1") == 0) {
    fact = ArgFact::EqualsOne;
    name = v.substr(0, v.size() - 2);
  } else if (v.size() > 3 && v.compare(v.size() - 3, 3, "%16") == 0) {
    fact = ArgFact::DivisibleBy16;
    name = v.substr(0, v.size() - 3);
  }
  bool ident = !name.empty() && !std::isdigit((unsigned char)name[0]);
  for (char c : name)
    ident &= std::isalnum((unsigned char)c) || c == '_';
  if (fact == ArgFact::None || !ident) {
    error = "--assume expects NAME=1 or NAME%16, got '" + v + "'";
    return false;
  }
  auto [it, fresh] = facts.emplace(name, fact);
  if (!fresh && it->second != fact) {
    error = "--assume gives '" + name + "' two facts (" + name + argFactSuffix(it->second) +
            " and " + v + ")";
    return false;
  }
  return true;
}

bool parseInt(const std::string &flag, const std::string &v, int &out, std::string &error) {
  char *end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || !end || *end || n < INT32_MIN || n > INT32_MAX) {
    error = flag + " expects an integer, got '" + v + "'";
    return false;
  }
  out = int(n);
  return true;
}

// The range checks are CompileOptions::validate()'s, so that the CLI, the
// JIT and the driver reject the same values with the same words.
static bool parseValidated(const std::string &flag, const std::string &v, int CompileOptions::*field,
                           int &out, std::string &error) {
  CompileOptions o;
  if (!parseInt(flag, v, o.*field, error))
    return false;
  if (error = o.validate(); !error.empty())
    return false;
  out = o.*field;
  return true;
}

bool parseNumWarps(const std::string &v, int &numWarps, std::string &error) {
  return parseValidated("--num-warps", v, &CompileOptions::numWarps, numWarps, error);
}

bool parseNumStages(const std::string &v, int &numStages, std::string &error) {
  return parseValidated("--num-stages", v, &CompileOptions::numStages, numStages, error);
}

bool parseMaxRegisters(const std::string &v, int &maxRegisters, std::string &error) {
  return parseValidated("--maxnreg", v, &CompileOptions::maxRegisters, maxRegisters, error);
}

bool parseClusterSize(const std::string &v, int &clusterSize, std::string &error) {
  return parseValidated("--cluster-size", v, &CompileOptions::clusterSize, clusterSize, error);
}

bool parseUnsigned(const std::string &text, unsigned long long &value) {
  if (text.empty() || text.size() > 18)
    return false;
  unsigned long long v = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    v = v * 10 + unsigned(c - '0');
  }
  value = v;
  return true;
}

bool writeOutput(const std::string &out, const std::string &data) {
  if (out.empty() || out == "-") {
    std::cout << data;
    std::cout.flush();
    return true;
  }
  std::string tmp = out + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary);
    f << data;
    f.flush();
    if (!f.good()) {
      f.close();
      std::remove(tmp.c_str());
      std::cerr << "tessera: error: cannot write '" << out << "'\n";
      return false;
    }
  }
  if (std::rename(tmp.c_str(), out.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    std::cerr << "tessera: error: cannot write '" << out << "': " << std::strerror(err) << "\n";
    return false;
  }
  return true;
}

void printColumns(std::ostream &out, const std::vector<std::vector<std::string>> &rows) {
  std::vector<size_t> width;
  for (const auto &row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      width.resize(std::max(width.size(), row.size()), 0);
      width[c] = std::max(width[c], row[c].size());
    }
  for (const auto &row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size())
        line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    out << line << "\n";
  }
}

std::string humanBytes(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%.0f %s", bytes, units[u]);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", bytes, units[u]);
  return buf;
}

int chooseKernel(const std::string &file, std::string &kernel, const char *help) {
  if (!kernel.empty())
    return kOk;
  std::string diag;
  std::vector<std::string> names = listKernels(file, &diag);
  if (names.empty()) {
    std::cerr << (diag.empty() ? "tessera: error: no @kernel in '" + file + "'\n" : diag);
    return kInputError;
  }
  if (names.size() > 1) {
    std::string list;
    for (const std::string &n : names)
      list += (list.empty() ? "" : ", ") + n;
    return usageError("'" + file + "' holds several kernels (" + list +
                          "): choose one with --kernel",
                      help);
  }
  kernel = names[0];
  return kOk;
}

} // namespace tessera::cli
