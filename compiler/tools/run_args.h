// The ARG syntax of `tessera run` and `tessera autotune` (buf:N, buf:N=VALUE,
// out:N, literals) and the kernel arguments made from it: host buffers
// filled from a seed, scalars parsed as the parameters' types, and their
// copies in a context's memory.
#ifndef TESSERA_TOOLS_RUN_ARGS_H
#define TESSERA_TOOLS_RUN_ARGS_H

#include "int_expr.h"

#include "tessera/Context.h"
#include "tessera/LaunchArgs.h"
#include "tessera/Memory.h"
#include "tessera/Types.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera::cli {

/// One ARG of the command line.
struct ArgSpec {
  enum Kind { Random, Fill, Output, Scalar } kind = Scalar;
  size_t count = 0;
  std::string text;   // the whole argument, for messages
  std::string value;  // Fill: VALUE; Scalar: the literal
};

/// Parses one ARG; on failure `error` says why.
bool parseArgSpec(const std::string &text, ArgSpec &spec, std::string &error);

/// An ARG whose counts and integer literals may be expressions over a shape's
/// names (`tessera autotune`): buf:M*K, out:M*N=0, N, 2*K. Literal numbers
/// (1e-5, -3) and booleans stay as they are.
class ArgTemplate {
public:
  /// Checks the syntax; on failure `error` says why.
  bool parse(const std::string &text, std::string &error);
  /// The ARG for one shape ("buf:M*K" -> "buf:4096"); false and `error`
  /// ("unknown name 'Q' in argument 'buf:M*Q'") when an expression fails.
  bool bind(const IntNames &names, ArgSpec &spec, std::string &error) const;
  const std::string &text() const { return text_; }

private:
  std::string text_;
  std::string prefix_;                 // "buf:", "out:" or "" (a scalar)
  std::optional<IntExpr> expr_;        // the count, or the scalar when not a literal
  std::string suffix_;                 // "=VALUE" of buf:N=VALUE, or the literal scalar
};

/// True for text that strtod reads whole ("-3", "1e-5"): a literal, not an option.
bool looksLikeNumber(const std::string &s);

size_t elementBytes(ScalarType t);
/// One element of type `t` at `p` as a double.
double elementValue(const unsigned char *p, ScalarType t);

/// A host buffer for one pointer argument.
struct HostBuffer {
  size_t param = 0; // index into the signature's params
  std::string name;
  ScalarType type = ScalarType::f32;
  size_t count = 0;
  bool output = false;
  std::vector<unsigned char> bytes;
};

/// The kernel's arguments, made from the specs against its signature.
struct Inputs {
  std::vector<HostBuffer> buffers;
  std::vector<ArgValue> scalars; // by parameter index; pointers are filled per backend
  std::vector<int> bufferOf;     // parameter index -> index into buffers, or -1
  size_t totalBytes = 0;
};

/// "X: *f32, Y: *f32, n: i32".
std::string signatureText(const KernelSignature &sig);

/// Builds the inputs (random buffers from `seed`), or prints why the specs do
/// not fit the signature and returns false.
bool makeInputs(const KernelSignature &sig, const std::vector<ArgSpec> &specs, uint64_t seed,
                Inputs &in);

/// Copies of the host buffers in `ctx`'s memory, in the order of in.buffers.
std::vector<DeviceMemory> uploadInputs(const Context &ctx, const Inputs &in);
/// The launch arguments: the scalars, and pointers into `memory` (uploadInputs).
std::vector<ArgValue> launchArgs(const Inputs &in, const std::vector<DeviceMemory> &memory);

} // namespace tessera::cli

#endif
