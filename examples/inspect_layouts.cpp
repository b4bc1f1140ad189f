// inspect_layouts: compiles kernels_dsl/basics/matmul.tile for sm_90a without
// a GPU (tessera::compileFile to Stage::GpuIR) and shows where the compiler
// placed each tile: CompileResult::layoutIR is the tile IR with GPU layouts
// (tgpu encodings, tgpu.convert_layout where a tile changes layout), and
// remarks say how the dot loop was lowered. For a fast matmul the only
// conversions feed the dot (#opA / #opB); the accumulator, its scaling and
// its store stay in the #mma layout. CompileResult::tensorMaps lists the TMA
// tensor maps the kernel takes after its arguments (one per operand here:
// rows 16-byte aligned, so both operands are boxes the copy engine loads;
// the runtime encodes them at launch). CompileResult::persistentKernels names
// the kernels lowered persistent: this one is a single output tile per
// program, so it walks program_id(0) from one block per SM and takes the
// grid's x size after its arguments (tessera::Kernel passes it). Exits
// non-zero if any of that does not hold.
//
//   example_inspect_layouts
#include <tessera/tessera.h>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

int main() {
  tessera::CompileOptions o;
  o.target = tessera::Target::parse("sm_90a");
  o.numWarps = 8;
  o.numStages = 4;
  o.constexprs = {{"BM", int64_t(128)}, {"BN", int64_t(256)}, {"BK", int64_t(32)},
                  {"DT", *tessera::parseDType("bf16")}, {"OUT", *tessera::parseDType("bf16")}};
  // Unit inner strides and row strides that are multiples of 16, as the JIT
  // specializes them at launch for row-major 4096 x 4096 operands.
  o.argFacts = {{"stride_ak", tessera::ArgFact::EqualsOne},
                {"stride_bn", tessera::ArgFact::EqualsOne},
                {"stride_am", tessera::ArgFact::DivisibleBy16},
                {"stride_bk", tessera::ArgFact::DivisibleBy16}};
  tessera::CompileResult r =
      tessera::compileFile(std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl/basics/matmul.tile",
                           "matmul", o, tessera::Stage::GpuIR);
  if (!r.ok) {
    std::cerr << r.diagnostics;
    return 1;
  }
  for (const std::string &line : r.remarks)
    std::cout << line << "\n";
  int conversions = 0, toOperands = 0;
  std::istringstream ir(r.layoutIR);
  for (std::string line; std::getline(ir, line);) {
    if (line.find("#tgpu.") != std::string::npos && line.rfind("#", 0) == 0)
      std::cout << line << "\n"; // the encodings' aliases
    if (line.find("tgpu.convert_layout") == std::string::npos)
      continue;
    ++conversions;
    bool toOperand = line.find("#opA>") != std::string::npos || line.find("#opB>") != std::string::npos;
    toOperands += toOperand;
    std::cout << (toOperand ? "  operand: " : "  other:   ") << line.substr(line.find_first_not_of(' '))
              << "\n";
  }
  std::cout << conversions << " conversions, " << toOperands << " into dot operands\n";
  // Each map: the pointer argument, element type, box, swizzle, and the
  // extents and row stride as linear forms over argument indices (a3 = M).
  const std::vector<tessera::TensorMapSpec> &maps = r.tensorMaps["matmul"];
  for (const tessera::TensorMapSpec &m : maps)
    std::cout << "  tensor map: " << tessera::formatTensorMapSpec(m) << "\n";
  bool persistent = r.persistentKernels.count("matmul") > 0;
  std::cout << "  launched persistent: " << (persistent ? "yes" : "no") << "\n";
  bool ok = conversions == 2 && toOperands == 2 && maps.size() == 2 && persistent;
  std::cout << (ok ? "ok"
                   : "FAILED: expected only the two operand conversions, two tensor maps and a "
                     "persistent launch")
            << "\n";
  return ok ? 0 : 1;
}
