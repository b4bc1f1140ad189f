// The kernels that ship with Tessera (kernels_dsl/): where their .tile
// sources are, for the layer APIs (tessera::quant, tessera::optim,
// tessera::roast, ...) that compile them at run time.
//
//   tessera::TunedKernel q(ctx, tessera::kernelLibraryPath("quant/blockwise_quant.tile"),
//                          "quantize_blockwise");
//
// The directory is, in order: $TESSERA_KERNELS_DIR; the installed copy
// (PREFIX/share/tessera/kernels_dsl); the source tree the library was built from.
#ifndef TESSERA_KERNELLIBRARY_H
#define TESSERA_KERNELLIBRARY_H

#include <string>

namespace tessera {

/// The kernels_dsl/ directory in use. Throws tessera::Error naming every
/// place it looked when none holds the kernels.
std::string kernelLibraryDir();

/// `relative` (e.g. "quant/blockwise_quant.tile") inside kernelLibraryDir().
/// Throws tessera::Error when the file is not there.
std::string kernelLibraryPath(const std::string &relative);

} // namespace tessera

#endif
