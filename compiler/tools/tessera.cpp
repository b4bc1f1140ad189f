// The `tessera` command-line tool: dispatches to the subcommands in
// cmd_compile.cpp, cmd_run.cpp, cmd_autotune.cpp and cmd_cache.cpp (shared
// helpers: cli.h).
//
// Exit codes (stable, for scripts):
//   0  success
//   1  the input has errors (diagnostics on stderr), a tool or a run failed
//   2  bad command line (usage on stderr)
//   3  an output file could not be written
#include "cli.h"

#include "tessera/Compiler.h"

#include <iostream>
#include <string>

namespace {

const char *kMainHelp = R"(usage: tessera <command> [options]

Tessera compiles .tile kernels to tile IR, LLVM IR, PTX and cubins, and runs them
on the GPU or in its CPU interpreter.

commands:
  compile    compile the kernels of a .tile file (tile IR, GPU IR, LLVM IR, PTX, cubin)
  run        run a kernel on made-up inputs (GPU or interpreter; --check compares
             them)
  autotune   tune a kernel's configs for problem shapes (GPU or interpreter);
             show, export, import or prune the tuning cache
  cache      list or clear the compiled-kernel cache
  version    print the compiler version

Run 'tessera <command> --help' for a command's options; docs/cli.md has examples.

exit codes: 0 ok, 1 errors in the input or a failed tool, run or check,
2 bad command line, 3 cannot write output
)";

} // namespace

int main(int argc, char **argv) {
  using namespace tessera::cli;
  if (argc < 2)
    return usageError("no command given", kMainHelp);
  std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    std::cout << kMainHelp;
    return kOk;
  }
  if (cmd == "--version" || cmd == "version") {
    std::cout << tessera::compilerVersion() << "\n";
    return kOk;
  }
  if (cmd == "compile")
    return cmdCompile(argc - 2, argv + 2);
  if (cmd == "run")
    return cmdRun(argc - 2, argv + 2);
  if (cmd == "autotune")
    return cmdAutotune(argc - 2, argv + 2);
  if (cmd == "cache")
    return cmdCache(argc - 2, argv + 2);
  return usageError("unknown command '" + cmd + "'", kMainHelp);
}
