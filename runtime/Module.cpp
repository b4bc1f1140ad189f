#include "tessera/Context.h"
#include "tessera/Error.h"
#include "tessera/Module.h"

namespace tessera {

detail::LoadedModule::~LoadedModule() {
  if (backend && handle)
    backend->unloadModule(handle);
}

Module::Module(const Context &ctx, ModuleImage image) : Module(ctx.sharedBackend(), image) {}

Module::Module(std::shared_ptr<Backend> backend, const ModuleImage &image) {
  if (!backend)
    throw Error("Module: null backend");
  auto state = std::make_shared<detail::LoadedModule>();
  state->handle = backend->loadModule(image, &state->infoLog);
  state->backend = std::move(backend);
  state_ = std::move(state);
}

Module Module::fromPTX(const Context &ctx, std::string ptx) {
  return Module(ctx, ModuleImage{ModuleFormat::Ptx, std::move(ptx)});
}
Module Module::fromCubin(const Context &ctx, std::string cubin) {
  return Module(ctx, ModuleImage{ModuleFormat::Cubin, std::move(cubin)});
}

const std::string &Module::infoLog() const {
  static const std::string empty;
  return state_ ? state_->infoLog : empty;
}

Function Module::function(const std::string &name) const {
  if (!state_)
    throw Error("use of an empty (moved-from or default-constructed) Module");
  Function f;
  f.handle_ = state_->backend->getFunction(state_->handle, name);
  f.module_ = state_;
  f.name_ = name;
  return f;
}

Backend &Function::backend() const {
  if (!module_)
    throw Error("use of an empty Function");
  return *module_->backend;
}

FunctionAttributes Function::attributes() const { return backend().functionAttributes(handle_); }

void Function::setMaxDynamicSharedMemory(size_t bytes) const {
  backend().setMaxDynamicSharedMemory(handle_, bytes);
}

void checkLaunchGeometry(const std::string &name, Grid grid, Block block) {
  auto fail = [&](const std::string &what) {
    throw Error("cannot launch kernel '" + name + "': " + what);
  };
  auto dims = [](unsigned x, unsigned y, unsigned z) {
    return std::to_string(x) + "x" + std::to_string(y) + "x" + std::to_string(z);
  };
  if (grid.x == 0 || grid.y == 0 || grid.z == 0)
    fail("grid " + dims(grid.x, grid.y, grid.z) + " has a zero dimension");
  if (block.x == 0 || block.y == 0 || block.z == 0)
    fail("block " + dims(block.x, block.y, block.z) + " has a zero dimension");
  if (grid.x > 2147483647u)
    fail("grid.x = " + std::to_string(grid.x) + " exceeds the limit 2147483647");
  if (grid.y > 65535u)
    fail("grid.y = " + std::to_string(grid.y) + " exceeds the limit 65535");
  if (grid.z > 65535u)
    fail("grid.z = " + std::to_string(grid.z) + " exceeds the limit 65535");
  if (block.x > 1024u || block.y > 1024u || block.z > 64u ||
      uint64_t(block.x) * block.y * block.z > 1024u)
    fail("block " + dims(block.x, block.y, block.z) +
         " exceeds the limit of 1024 threads (x, y <= 1024, z <= 64)");
}

void Function::launch(const Stream &stream, Grid grid, Block block, size_t dynamicSharedBytes,
                      const std::vector<ArgValue> &args,
                      const std::vector<TensorMapSpec> &tensorMaps,
                      const LaunchOptions &options) const {
  Backend &b = backend();
  if (&stream.backend() != &b)
    throw Error("cannot launch kernel '" + name_ + "': the stream belongs to a different context");
  checkLaunchGeometry(name_, grid, block);
  b.launch(handle_, name_, grid, block, dynamicSharedBytes, stream.handle(), args, tensorMaps, options);
}

} // namespace tessera
