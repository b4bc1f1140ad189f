// Just-in-time compilation of .tile kernels into launchable Kernels, through
// the kernel cache. This is the entry point most programs need:
//
//   tessera::Context ctx;
//   auto k = tessera::compile(ctx, "kernels_dsl/basics/vector_add.tile", "vector_add",
//                             {{"BLOCK", int64_t(1024)}});
//   k.launch(ctx.stream(), tessera::Grid::of(tessera::cdiv(n, 1024)), x, y, z, n);
#ifndef TESSERA_JIT_H
#define TESSERA_JIT_H

#include "tessera/CompileOptions.h"
#include "tessera/Context.h"
#include "tessera/Kernel.h"
#include "tessera/Types.h"

#include <map>
#include <string>
#include <vector>

namespace tessera {

/// The compile options (CompileOptions: target, warps, stages, switches,
/// import paths, argument facts) plus what only the JIT has. compile() sets
/// the constexprs from its argument. `argFacts` are promises about every
/// launch's arguments: each variant is compiled with them, and with the facts
/// specialization finds in its launch's arguments on top (a launch that
/// breaks a promise gets wrong results, as with `--assume`).
struct JitOptions : CompileOptions {
  /// Use the in-memory and on-disk kernel cache ($TESSERA_CACHE_DIR).
  bool useCache = true;
  /// On a GPU: compile a variant per set of facts about the i32/i64 argument
  /// values (== 1, multiple of 16) at the first launch that needs it, so that
  /// e.g. a unit stride makes loads contiguous. false: one variant, compiled
  /// by compile(), for any values. The interpreter ignores this.
  bool specialize = true;
  /// In the interpreter: first lower the kernel for the target (`target`,
  /// else sm_90) as the GPU would, and throw the error the GPU would give
  /// (today: more shared memory than one block of the target may use, or a
  /// construct the GPU lowering rejects), so that a kernel that runs in the
  /// interpreter also launches on the GPU. Registers are not estimated. The
  /// GPU ignores this (it lowers anyway).
  bool checkTargetResources = true;
};

/// Compiles `kernel` of the file at `path` with the given constexpr values and
/// loads it into `ctx`. Throws tessera::Error with the rendered diagnostics
/// (file:line:col, source line, caret) when the source has errors. With
/// JitOptions::specialize on a GPU, only the front end runs here; lowering and
/// PTX generation happen per variant at launch (errors of those surface there).
Kernel compile(Context &ctx, const std::string &path, const std::string &kernel,
               const std::map<std::string, ConstexprValue> &constexprs = {},
               const JitOptions &options = {});

/// Same, for source text; `virtualPath` names it in diagnostics and anchors imports.
Kernel compileString(Context &ctx, const std::string &source, const std::string &virtualPath,
                     const std::string &kernel,
                     const std::map<std::string, ConstexprValue> &constexprs = {},
                     const JitOptions &options = {});

} // namespace tessera

#endif
