// A kernel's @autotune decorator (docs/language.md, "Autotuning"): its
// arguments read into a tessera::ConfigSpace (include/tessera/Autotune.h) and
// checked against the kernel's parameters. Every problem is reported with a
// caret like the front end's other errors, inside the prune= string too.
//
// Two steps, because IR generation sits between them:
//   readAutotune    before IR generation, from the syntax alone: the shape of
//                   the arguments, the configs (names, values, switches, no
//                   repeats), the names in key=, reset= and restore=, the
//                   bucketing, and prune= parsed with the language's parser.
//                   Its first config then gives constexprs that have no value
//                   (fillFromFirstConfig), which IR generation needs.
//   finishAutotune  after IR generation, with the kernel's signature: the
//                   types of the key, reset and restore parameters, and prune=
//                   evaluated on every config with the constexprs as compiled.
//
// The decorator never changes the code generated for the kernel.
#ifndef TESSERA_FRONTEND_AUTOTUNEDECORATOR_H
#define TESSERA_FRONTEND_AUTOTUNEDECORATOR_H

#include "AST.h"

#include "tessera/Autotune.h"
#include "tessera/CompileOptions.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessera::fe {

/// A kernel's @autotune as readAutotune found it, with the locations the
/// checks of finishAutotune point at.
struct AutotuneDecl {
  struct NamedAt {
    std::string name;
    Loc loc;
  };
  const FunctionDef *kernel = nullptr;
  std::vector<Config> configs;
  std::vector<Loc> configLocs; // each config(...)
  std::vector<NamedAt> keys;   // key=, constexpr parameters included
  std::vector<NamedAt> reset;
  std::vector<NamedAt> restore;
  Bucketing bucketing; // key_round=, for every key
  /// prune=: the string's contents, and the expression parsed from them, its
  /// locations inside the string literal. Shared with the space's `prune`,
  /// which outlives the compile.
  std::string pruneText;
  std::shared_ptr<const Expr> prune;
};

/// Reads `fn`'s @autotune. True with `decl` null when there is none; false
/// when it is malformed (the error is reported to `diags`). `options` are the
/// compile's, against which the configs' switches are validated.
bool readAutotune(const FunctionDef &fn, const CompileOptions &options, DiagnosticEngine &diags,
                  std::unique_ptr<AutotuneDecl> &decl);

/// Gives each constexpr parameter that has neither a value in `constexprs`
/// nor a default the first config's value for it (when the config sets it),
/// so that an autotuned kernel compiles without -D.
void fillFromFirstConfig(const AutotuneDecl &decl,
                         std::map<std::string, ConstexprValue> &constexprs);

/// The config space of the kernel compiled as `signature` with `options`, or
/// null when a key, reset or restore parameter has the wrong type or prune=
/// fails on a config (the error is reported to `diags`).
std::shared_ptr<const ConfigSpace> finishAutotune(const AutotuneDecl &decl,
                                                  const KernelSignature &signature,
                                                  const CompileOptions &options,
                                                  DiagnosticEngine &diags);

} // namespace tessera::fe

#endif
