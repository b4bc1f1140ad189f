# `cmake --install build --prefix PREFIX` puts the package a user's project needs
# (examples/consumer/, docs/api.md section 2):
#   PREFIX/lib/libtessera.so*        LLVM, MLIR and Tessera in one library
#   PREFIX/include/tessera/*.h       the public API, nothing else
#   PREFIX/bin/tessera, tessera-opt  the CLI and the pass driver
#   PREFIX/share/tessera/kernels_dsl the kernels the layer APIs compile (KernelLibrary.h)
#   PREFIX/lib/cmake/Tessera/        find_package(Tessera) -> Tessera::tessera
# LLVM and MLIR are linked into libtessera.so and hidden, so the package needs
# neither: the exported target carries only the library and its include root.
include(CMakePackageConfigHelpers)

set(TESSERA_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Tessera)

set_target_properties(tessera PROPERTIES EXPORT_NAME tessera)
install(TARGETS tessera EXPORT TesseraTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${TESSERA_SOURCE_DIR}/include/tessera
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
# The kernel sources the layer APIs compile at run time (KernelLibrary.h).
install(DIRECTORY ${TESSERA_SOURCE_DIR}/kernels_dsl DESTINATION ${CMAKE_INSTALL_DATADIR}/tessera
  FILES_MATCHING PATTERN "*.tile")
install(TARGETS tessera-cli tessera-opt RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(EXPORT TesseraTargets NAMESPACE Tessera::
  FILE TesseraTargets.cmake DESTINATION ${TESSERA_INSTALL_CMAKEDIR})
configure_package_config_file(${TESSERA_SOURCE_DIR}/cmake/TesseraConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/TesseraConfig.cmake
  INSTALL_DESTINATION ${TESSERA_INSTALL_CMAKEDIR})
# Before 1.0, only the same minor version is compatible (as the SONAME says).
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/TesseraConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/TesseraConfig.cmake
              ${CMAKE_BINARY_DIR}/cmake/TesseraConfigVersion.cmake
  DESTINATION ${TESSERA_INSTALL_CMAKEDIR})
