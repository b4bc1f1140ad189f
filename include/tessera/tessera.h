// The one header a Tessera program includes: the runtime (Context, buffers,
// Kernel, Error, ...), the JIT (tessera::compile, tessera::compileString) and
// the compiler's entry points (tessera::compileFile, ...). See docs/api.md.
//
//   #include <tessera/tessera.h>
//
// The interpreter's direct API (prepareInterpreter, runInterpreter) is in
// "tessera/Interpreter.h"; most programs need only its runtime backend,
// tessera::createInterpreterBackend(), which this header declares.
#ifndef TESSERA_TESSERA_H
#define TESSERA_TESSERA_H

#include "tessera/Benchmark.h"
#include "tessera/Compiler.h"
#include "tessera/Occupancy.h"
#include "tessera/JIT.h"
#include "tessera/Runtime.h"

#endif
