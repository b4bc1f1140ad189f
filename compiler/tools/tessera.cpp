// The `tessera` command-line tool.
//
// Exit codes (stable, for scripts):
//   0  success
//   1  the input has errors (diagnostics on stderr)
//   2  bad command line (usage on stderr)
//   3  an output file could not be written
#include "tessera/Compiler.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

enum Exit { kOk = 0, kInputError = 1, kUsage = 2, kIoError = 3 };

const char *kMainHelp = R"(usage: tessera <command> [options]

Tessera compiles .tile kernels to tile IR (and, as the back end lands, PTX).

commands:
  compile    compile the kernels of a .tile file
  version    print the compiler version

Run 'tessera <command> --help' for a command's options.
)";

const char *kCompileHelp = R"(usage: tessera compile FILE [options]

Compiles every @kernel in FILE (or only --kernel NAME) and prints the result.

options:
  --kernel NAME      compile only this kernel
  -D NAME=VALUE      set a constexpr parameter (int, float, True/False, or a type
                     such as f16); repeatable; overrides the kernel's default
  --emit=KIND        what to produce: tile (the verified tile IR) or gpu-ir (the
                     per-thread IR after layout lowering, before LLVM)
  --num-warps N      warps per program instance (power of two, default 4)
  -o PATH            write the output to PATH instead of stdout
  -I DIR             also search DIR for imported files; repeatable
  --no-opt           skip canonicalization and CSE of the tile IR
  -h, --help         show this help

exit codes: 0 ok, 1 errors in the input, 2 bad command line, 3 cannot write output
)";

int usageError(const std::string &msg, const char *help) {
  std::cerr << "tessera: error: " << msg << "\n\n" << help;
  return kUsage;
}

int cmdCompile(int argc, char **argv) {
  std::string file, kernel, emit = "tile", out;
  tessera::CompileOptions opts;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const std::string &flag, std::string &dst) -> bool {
      if (a == flag) {
        if (i + 1 >= argc)
          return false;
        dst = argv[++i];
        return true;
      }
      if (a.rfind(flag + "=", 0) == 0) {
        dst = a.substr(flag.size() + 1);
        return true;
      }
      if (flag.size() == 2 && a.rfind(flag, 0) == 0 && a.size() > 2) { // -DX=1, -Idir
        dst = a.substr(2);
        return true;
      }
      return false;
    };
    std::string v;
    if (a == "-h" || a == "--help") {
      std::cout << kCompileHelp;
      return kOk;
    } else if (value("--kernel", v)) {
      kernel = v;
    } else if (value("--emit", v)) {
      emit = v;
    } else if (value("-o", v)) {
      out = v;
    } else if (value("-I", v)) {
      opts.importPaths.push_back(v);
    } else if (value("-D", v)) {
      auto eq = v.find('=');
      if (eq == std::string::npos || eq == 0)
        return usageError("-D expects NAME=VALUE, got '" + v + "'", kCompileHelp);
      std::string name = v.substr(0, eq), text = v.substr(eq + 1);
      auto cv = tessera::parseConstexpr(text);
      if (!cv)
        return usageError("cannot parse the value of -D " + name + ": '" + text +
                              "' (expected an integer, a float, True/False or a type)",
                          kCompileHelp);
      opts.constexprs[name] = *cv;
    } else if (value("--num-warps", v)) {
      char *end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (!end || *end || n < 1 || n > 32 || (n & (n - 1)))
        return usageError("--num-warps must be a power of two from 1 to 32, got '" + v + "'",
                          kCompileHelp);
      opts.numWarps = int(n);
    } else if (a == "--no-opt") {
      opts.optimize = false;
    } else if (a == "--kernel" || a == "--emit" || a == "-o" || a == "-I" || a == "-D") {
      return usageError(a + " needs a value", kCompileHelp);
    } else if (!a.empty() && a[0] == '-') {
      return usageError("unknown option '" + a + "'", kCompileHelp);
    } else if (file.empty()) {
      file = a;
    } else {
      return usageError("more than one input file ('" + file + "' and '" + a + "')", kCompileHelp);
    }
  }
  if (file.empty())
    return usageError("no input file", kCompileHelp);
  if (emit != "tile" && emit != "gpu-ir")
    return usageError("unknown --emit kind '" + emit + "' (this build supports: tile, gpu-ir)",
                      kCompileHelp);
  opts.lowerToGPU = emit == "gpu-ir";

  tessera::CompileResult r = tessera::compileFile(file, kernel, opts);
  if (!r.ok) {
    std::cerr << r.diagnostics;
    return kInputError;
  }
  if (out.empty() || out == "-") {
    std::cout << (opts.lowerToGPU ? r.gpuIR : r.tileIR);
    return kOk;
  }
  std::string tmp = out + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f << (opts.lowerToGPU ? r.gpuIR : r.tileIR);
    if (!f.good()) {
      std::cerr << "tessera: error: cannot write '" << out << "'\n";
      return kIoError;
    }
  }
  if (std::rename(tmp.c_str(), out.c_str()) != 0) {
    std::remove(tmp.c_str());
    std::cerr << "tessera: error: cannot write '" << out << "': " << std::strerror(errno) << "\n";
    return kIoError;
  }
  return kOk;
}

} // namespace

int main(int argc, char **argv) {
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
  return usageError("unknown command '" + cmd + "'", kMainHelp);
}
