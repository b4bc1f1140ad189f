// What a kernel costs a GPU: compile one of Tessera's own kernels (found with
// tessera::kernelLibraryPath), assemble it with ptxas when the CUDA toolkit is
// there, and ask tessera::occupancy how many of its blocks fit on an SM.
// The same table comes from `tessera compile --emit=resources`.
#include "tessera/CodeGen.h"
#include "tessera/Compiler.h"
#include "tessera/KernelLibrary.h"
#include "tessera/Occupancy.h"

#include <cstdio>

int main() {
  tessera::CompileOptions opts;
  opts.target = tessera::Target::parse("sm_90a");
  opts.numWarps = 8;
  const std::string path = tessera::kernelLibraryPath("basics/softmax.tile");
  tessera::CompileResult r = tessera::compileFile(path, "softmax", opts, tessera::Stage::PTX);
  if (!r.ok) {
    std::fprintf(stderr, "%s", r.diagnostics.c_str());
    return 1;
  }
  int registers = 32; // a guess, used when ptxas is not installed
  std::string cubin, log;
  if (!tessera::findPtxas().empty() && tessera::assembleCubin(r.ptx, r.target.name(), cubin, log)) {
    for (const tessera::PtxasKernelInfo &k : tessera::parsePtxasLog(log))
      if (k.name == "softmax")
        registers = k.registers;
  } else {
    std::printf("ptxas not found: assuming %d registers a thread\n", registers);
  }
  const int64_t threads = 32 * r.blockWarps.at("softmax");
  const int64_t shared = r.sharedBytes.at("softmax");
  tessera::Occupancy o = tessera::occupancy(r.target, threads, registers, shared);
  std::printf("softmax on %s: %lld threads, %d registers, %lld B of shared memory -> %lld blocks "
              "(%lld of %lld warps) an SM, limited by %s\n",
              r.target.name().c_str(), (long long)threads, registers, (long long)shared,
              (long long)o.blocksPerSM, (long long)o.warpsPerSM, (long long)o.maxWarpsPerSM,
              o.limitedBy.c_str());
  return o.blocksPerSM > 0 ? 0 : 1;
}
