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
