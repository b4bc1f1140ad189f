// Source files and error reporting for the front end.
//
// Every diagnostic carries a file:line:col location and is rendered with the
// source line and a caret under the column, like a compiler users already know.
#ifndef TESSERA_FRONTEND_DIAGNOSTICS_H
#define TESSERA_FRONTEND_DIAGNOSTICS_H

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::fe {

/// A position in a source file: 1-based line and column, `file` indexes SourceManager.
struct Loc {
  uint32_t file = 0;
  uint32_t line = 0;
  uint32_t col = 0;
  bool valid() const { return line != 0; }
};

struct SourceFile {
  std::string path;   // as given by the user or resolved from an import
  std::string text;
  std::vector<size_t> lineStarts; // offsets of the first character of each line
};

/// Owns the text of every file the compiler reads (the main file and its imports).
class SourceManager {
public:
  /// Adds a buffer and returns its file index.
  uint32_t addBuffer(std::string path, std::string text);
  /// Reads a file from disk; returns false (and leaves `id` untouched) when unreadable.
  bool addFile(const std::string &path, uint32_t &id);
  const SourceFile &file(uint32_t id) const { return files_[id]; }
  size_t numFiles() const { return files_.size(); }
  /// The text of `loc`'s line, without its newline.
  std::string lineText(Loc loc) const;
  /// "path:line:col"
  std::string describe(Loc loc) const;

private:
  std::vector<SourceFile> files_;
};

struct Diagnostic {
  Loc loc;
  std::string message;
  std::vector<std::pair<Loc, std::string>> notes; // e.g. "called from here"
};

/// Collects diagnostics. The front end stops at the first error, so in practice
/// there is one error (plus its notes) per failed compilation.
class DiagnosticEngine {
public:
  explicit DiagnosticEngine(const SourceManager &sm) : sm_(sm) {}
  void error(Loc loc, std::string message);
  void note(Loc loc, std::string message);
  bool hasErrors() const { return !diags_.empty(); }
  const std::vector<Diagnostic> &diagnostics() const { return diags_; }
  /// Renders every diagnostic:
  ///   path:3:14: error: message
  ///       x = foo(1)
  ///           ^
  std::string render() const;
  /// One diagnostic rendered the same way.
  std::string render(const Diagnostic &d) const;
  const SourceManager &sources() const { return sm_; }

private:
  const SourceManager &sm_;
  std::vector<Diagnostic> diags_;
};

} // namespace tessera::fe

#endif
