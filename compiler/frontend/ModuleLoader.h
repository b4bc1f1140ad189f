// Loads a .tile file and, transitively, the files it imports, and indexes the
// names each file defines.
#ifndef TESSERA_FRONTEND_MODULELOADER_H
#define TESSERA_FRONTEND_MODULELOADER_H

#include "AST.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessera::fe {

struct ModuleInfo;

/// A name brought in by `from "file" import name as alias`.
struct ImportedName {
  const ModuleInfo *module = nullptr;
  std::string name; // name in the imported module
  Loc loc;          // where it was imported
};

struct ModuleInfo {
  std::string path;
  std::unique_ptr<Module> ast;
  std::map<std::string, const FunctionDef *> functions;
  std::map<std::string, const GlobalConst *> globals;
  std::map<std::string, ImportedName> imports;
};

class ModuleLoader {
public:
  ModuleLoader(SourceManager &sm, DiagnosticEngine &diags, std::vector<std::string> searchPaths)
      : sm_(sm), diags_(diags), searchPaths_(std::move(searchPaths)) {}

  /// Loads the main file from disk (or from `text` when given); null on error.
  const ModuleInfo *loadMain(const std::string &path, const std::string *text = nullptr);
  /// Every file loaded so far, the main file first (their texts feed cache keys).
  const std::vector<std::unique_ptr<ModuleInfo>> &modules() const { return modules_; }

private:
  const ModuleInfo *load(uint32_t file, const std::string &path, int depth);
  /// Reports the first misuse of a decorator on `fn`; false if there is one.
  bool checkDecorators(const FunctionDef &fn);
  bool checkKernelArguments(const Decorator &d);
  bool resolveImport(const std::string &fromPath, const std::string &spec, std::string &out);

  SourceManager &sm_;
  DiagnosticEngine &diags_;
  std::vector<std::string> searchPaths_;
  std::vector<std::unique_ptr<ModuleInfo>> modules_;
  std::map<std::string, ModuleInfo *> byPath_;
};

} // namespace tessera::fe

#endif
