// tessera-translate: runs the PTX back end on an MLIR file of per-thread
// scalar kernels (the output of the tile lowering). For tests and debugging.
//
// Exit codes: 0 ok, 1 the input failed to compile (or ptxas rejected it),
// 2 bad command line, 3 cannot read input / write output, 4 ptxas not found.
#include "tessera/CodeGen.h"

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

namespace {

const char *kHelp = R"(usage: tessera-translate [options] FILE.mlir   ('-' reads stdin)

options:
  --emit=KIND         llvm (optimized LLVM IR), ptx (default), cubin (ptxas;
                      writes the cubin to -o, prints the resource report), or
                      ptxas-report (ptxas; prints only the report)
  --arch=SM           sm_80, sm_90 (default), sm_90a, ...
  --num-warps=N       block size 32*N unless the module says (default 4)
  --ptx-version=V     PTX ISA version times ten, e.g. 85 (default: per arch)
  -O0 .. -O3          LLVM optimization level (default 3)
  --ftz               flush f32 denormals to zero
  --no-fma            do not contract mul+add into fma
  --libdevice=PATH    libdevice.10.bc to link (default $TESSERA_LIBDEVICE or CUDA's)
  -o PATH             write the output to PATH instead of stdout
  -h, --help          show this help
)";

int usage(const std::string &msg) {
  std::cerr << "tessera-translate: error: " << msg << "\n\n" << kHelp;
  return 2;
}

bool startsWith(const std::string &s, const char *prefix, std::string &rest) {
  size_t n = std::char_traits<char>::length(prefix);
  if (s.compare(0, n, prefix) != 0)
    return false;
  rest = s.substr(n);
  return true;
}

bool parseInt(const std::string &s, int &v) {
  if (s.empty())
    return false;
  char *end = nullptr;
  long x = std::strtol(s.c_str(), &end, 10);
  if (*end != '\0')
    return false;
  v = static_cast<int>(x);
  return true;
}

void printReport(std::ostream &os, const std::string &log) {
  for (const tessera::PtxasKernelInfo &k : tessera::parsePtxasLog(log))
    os << "kernel " << k.name << ": registers=" << k.registers
       << " spill_stores=" << k.spillStores << " spill_loads=" << k.spillLoads
       << " shared=" << k.sharedBytes << " stack=" << k.stackBytes << "\n";
}

} // namespace

int main(int argc, char **argv) {
  tessera::TargetOptions opts;
  std::string emit = "ptx", input, output;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], v;
    if (a == "-h" || a == "--help") {
      std::cout << kHelp;
      return 0;
    } else if (startsWith(a, "--emit=", v)) {
      emit = v;
    } else if (startsWith(a, "--arch=", v)) {
      opts.arch = v;
    } else if (startsWith(a, "--num-warps=", v)) {
      if (!parseInt(v, opts.numWarps))
        return usage("--num-warps needs an integer");
    } else if (startsWith(a, "--ptx-version=", v)) {
      if (!parseInt(v, opts.ptxVersion) || opts.ptxVersion < 60)
        return usage("--ptx-version needs e.g. 85 for PTX 8.5");
    } else if (a.size() == 3 && a[0] == '-' && a[1] == 'O' && a[2] >= '0' && a[2] <= '3') {
      opts.optLevel = a[2] - '0';
    } else if (a == "--ftz") {
      opts.flushDenormals = true;
    } else if (a == "--no-fma") {
      opts.fpContract = false;
    } else if (startsWith(a, "--libdevice=", v)) {
      opts.libdevicePath = v;
    } else if (a == "-o") {
      if (i + 1 >= argc)
        return usage("-o needs a path");
      output = argv[++i];
    } else if (a.size() > 1 && a[0] == '-' && a != "-") {
      return usage("unknown option '" + a + "'");
    } else if (input.empty()) {
      input = a;
    } else {
      return usage("more than one input file");
    }
  }
  if (input.empty())
    return usage("no input file");
  if (emit != "llvm" && emit != "ptx" && emit != "cubin" && emit != "ptxas-report")
    return usage("--emit must be llvm, ptx, cubin or ptxas-report");
  if (emit == "cubin" && output.empty())
    return usage("--emit=cubin needs -o PATH");

  std::stringstream text;
  if (input == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in(input, std::ios::binary);
    if (!in) {
      std::cerr << "tessera-translate: error: cannot read '" << input << "'\n";
      return 3;
    }
    text << in.rdbuf();
  }

  std::string result, error, name = input == "-" ? std::string("<stdin>") : input;
  bool ok = emit == "llvm" ? tessera::emitLLVMIR(text.str(), opts, result, error, name)
                           : tessera::emitPTX(text.str(), opts, result, error, name);
  if (!ok) {
    std::cerr << error << "\n";
    return 1;
  }
  if (emit == "cubin" || emit == "ptxas-report") {
    if (tessera::findPtxas().empty()) {
      std::cerr << "tessera-translate: error: ptxas not found (set TESSERA_PTXAS)\n";
      return 4;
    }
    std::string cubin, log;
    bool assembled = tessera::assembleCubin(result, opts.arch, cubin, log);
    if (!assembled) {
      std::cerr << "tessera-translate: ptxas rejected the PTX:\n" << log << "\n";
      return 1;
    }
    std::ostringstream report;
    printReport(report, log);
    if (emit == "ptxas-report") {
      result = report.str();
    } else {
      std::cout << report.str();
      result = cubin;
    }
  }
  if (output.empty() || output == "-") {
    std::cout << result;
    return 0;
  }
  std::ofstream out(output, std::ios::binary);
  out << result;
  if (!out) {
    std::cerr << "tessera-translate: error: cannot write '" << output << "'\n";
    return 3;
  }
  return 0;
}
