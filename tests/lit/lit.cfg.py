# lit configuration for Tessera's FileCheck tests.
import os
import lit.formats

config.name = "Tessera"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".tile", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tessera_obj_root, "tests", "lit")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs"]

config.environment["PATH"] = os.pathsep.join(
    [config.tessera_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
config.environment["TESSERA_CACHE_DIR"] = os.path.join(config.test_exec_root, "cache")
config.substitutions.append(("%kernels", os.path.join(config.tessera_src_root, "kernels_dsl")))

# The PTX back end's tests that run ptxas need it ($TESSERA_PTXAS, CUDA's, or PATH).
import shutil
if (os.environ.get("TESSERA_PTXAS") or os.path.exists("/usr/local/cuda/bin/ptxas")
        or shutil.which("ptxas")):
    config.available_features.add("ptxas")
for var in ("TESSERA_PTXAS", "TESSERA_LIBDEVICE"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
