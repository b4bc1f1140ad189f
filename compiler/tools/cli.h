// Shared pieces of the `tessera` command-line tool: exit codes, usage errors,
// option parsing and output files. Each subcommand lives in its own file
// (cmd_compile.cpp, cmd_cache.cpp, cmd_run.cpp, cmd_autotune.cpp); tessera.cpp
// dispatches.
#ifndef TESSERA_TOOLS_CLI_H
#define TESSERA_TOOLS_CLI_H

#include "report_format.h"
#include "tessera/Types.h"

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace tessera::cli {

/// Exit codes (stable, for scripts).
enum Exit {
  kOk = 0,
  kInputError = 1, // errors in the input, a failed tool (ptxas), a failed run or check
  kUsage = 2,      // bad command line (or, for `run`, arguments that do not fit the kernel)
  kIoError = 3,    // an output file could not be written
};

/// Prints "tessera: error: MSG", a blank line and `help` to stderr; returns kUsage.
int usageError(const std::string &msg, const char *help);

/// Walks argv of a subcommand. For each argument, `arg()` is the current one;
/// value("--flag", v) accepts "--flag V", "--flag=V" and, for two-character
/// flags, "-fV" ("-DX=1", "-Idir"), and advances past the value.
class ArgReader {
public:
  ArgReader(int argc, char **argv) : argc_(argc), argv_(argv) {}
  bool next() { return ++i_ < argc_; }
  const std::string &arg() {
    cur_ = argv_[i_];
    return cur_;
  }
  /// True when the current argument is `flag` with a value (stored in `dst`).
  /// Sets missingValue() when it is `flag` at the end of the command line.
  bool value(const std::string &flag, std::string &dst);
  bool missingValue() const { return missing_; }
  int index() const { return i_; }

private:
  int argc_;
  char **argv_;
  int i_ = -1;
  std::string cur_;
  bool missing_ = false;
};

/// Parses the text after -D ("NAME=VALUE") into `defines`; on failure returns
/// the message for usageError.
bool parseDefine(const std::string &text, std::map<std::string, ConstexprValue> &defines,
                 std::string &error);
/// The text after --assume ("NAME=1" or "NAME%16") into `facts`; two
/// different facts for one name are an error.
bool parseAssume(const std::string &text, std::map<std::string, ArgFact> &facts,
                 std::string &error);
/// --num-warps: a power of two from 1 to 32.
/// `v` as an int; else `error` names `flag`.
bool parseInt(const std::string &flag, const std::string &v, int &out, std::string &error);
/// --num-warps / --num-stages: an int that CompileOptions::validate() accepts.
bool parseNumWarps(const std::string &text, int &numWarps, std::string &error);
bool parseNumStages(const std::string &text, int &numStages, std::string &error);
/// --maxnreg: 16 to 255 (CompileOptions::maxRegisters).
bool parseMaxRegisters(const std::string &text, int &maxRegisters, std::string &error);
/// --cluster-size: 1, 2 or 4 (CompileOptions::clusterSize).
bool parseClusterSize(const std::string &text, int &clusterSize, std::string &error);
/// A non-negative decimal integer that fits in `long long`.
bool parseUnsigned(const std::string &text, unsigned long long &value);

/// Writes `data` to `path` ("-" or empty: stdout) through a temporary file
/// renamed into place. On failure prints "tessera: error: cannot write ..."
/// and returns false.
bool writeOutput(const std::string &path, const std::string &data);

/// Prints `rows` as left-aligned columns two spaces apart (the first row is
/// the heading), each line to `out`.
void printColumns(std::ostream &out, const std::vector<std::vector<std::string>> &rows);

/// "1.5 KiB", "12 B", "3.2 MiB".
std::string humanBytes(double bytes);

/// Fills an empty `kernel` with the only kernel of `file`. Returns kOk, or the
/// exit code after saying why not (no kernel: kInputError; several: a usage
/// error with `help`).
int chooseKernel(const std::string &file, std::string &kernel, const char *help);

int cmdCompile(int argc, char **argv);
int cmdCache(int argc, char **argv);
int cmdRun(int argc, char **argv);
int cmdAutotune(int argc, char **argv);
/// `tessera autotune show|export|import|prune` (cmd_autotune_cache.cpp);
/// `help` is autotune's.
int cmdAutotuneCache(const std::string &sub, int argc, char **argv, const char *help);

} // namespace tessera::cli

#endif
