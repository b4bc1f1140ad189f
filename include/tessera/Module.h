// Loaded code: Module (a PTX or cubin image loaded into a context) and
// Function (one kernel in it).
#ifndef TESSERA_MODULE_H
#define TESSERA_MODULE_H

#include "tessera/Backend.h"
#include "tessera/LaunchArgs.h"
#include "tessera/Stream.h"

#include <memory>
#include <string>
#include <vector>

namespace tessera {

class Context;
class Function;

namespace detail {
/// A loaded module, unloaded when the Module and all its Functions are gone.
struct LoadedModule {
  std::shared_ptr<Backend> backend;
  ModuleHandle handle = nullptr;
  std::string infoLog;
  ~LoadedModule();
};
} // namespace detail

/// A module loaded from memory (cuModuleLoadDataEx for CUDA). Move-only.
/// A failed load throws tessera::Error carrying the CUresult name and the
/// JIT error log.
class Module {
public:
  Module() = default;
  Module(const Context &ctx, ModuleImage image);
  Module(std::shared_ptr<Backend> backend, const ModuleImage &image);
  static Module fromPTX(const Context &ctx, std::string ptx);
  static Module fromCubin(const Context &ctx, std::string cubin);
  Module(Module &&) noexcept = default;
  Module &operator=(Module &&) noexcept = default;
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;

  bool valid() const { return state_ != nullptr; }
  ModuleHandle handle() const { return state_ ? state_->handle : nullptr; }
  /// The JIT info log of the load (ptxas register/spill report for PTX).
  const std::string &infoLog() const;
  /// Kernel `name`; throws tessera::Error if there is none.
  Function function(const std::string &name) const;

private:
  std::shared_ptr<detail::LoadedModule> state_;
};

/// A kernel in a loaded module. Copyable; keeps its module loaded.
class Function {
public:
  Function() = default;

  bool valid() const { return handle_ != nullptr; }
  const std::string &name() const { return name_; }
  FunctionHandle handle() const { return handle_; }
  Backend &backend() const;

  /// Registers, local (spill) bytes, shared memory, ... of the loaded kernel.
  FunctionAttributes attributes() const;
  /// Allows launches with up to `bytes` of dynamic shared memory. Launches
  /// above 48 KB do this themselves; calling it early surfaces the error
  /// (more than the device's opt-in limit) before the first launch.
  void setMaxDynamicSharedMemory(size_t bytes) const;

  /// Launches without a signature check (for hand-written PTX). The grid and
  /// block are checked against CUDA's limits.
  void launch(const Stream &stream, Grid grid, Block block, size_t dynamicSharedBytes,
              const std::vector<ArgValue> &args,
              const std::vector<TensorMapSpec> &tensorMaps = {},
              const LaunchOptions &options = {}) const;
  template <class... Args>
  void launchArgs(const Stream &stream, Grid grid, Block block, size_t dynamicSharedBytes,
                  const Args &...args) const {
    launch(stream, grid, block, dynamicSharedBytes, makeArgs(args...));
  }

private:
  friend class Module;
  std::shared_ptr<detail::LoadedModule> module_;
  FunctionHandle handle_ = nullptr;
  std::string name_;
};

/// Throws tessera::Error unless every grid and block dimension is >= 1 and
/// within CUDA's limits (grid.x < 2^31, grid.y/z <= 65535, block.x/y <= 1024,
/// block.z <= 64, block.x*y*z <= 1024).
void checkLaunchGeometry(const std::string &kernelName, Grid grid, Block block);

} // namespace tessera

#endif
