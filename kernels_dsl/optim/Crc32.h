// CRC-32 (the IEEE polynomial, reflected, as zlib and PNG use it): the state
// file's checksum.
#ifndef TESSERA_KERNELS_OPTIM_CRC32_H
#define TESSERA_KERNELS_OPTIM_CRC32_H

#include <cstddef>
#include <cstdint>

namespace tessera::optim {

/// The CRC-32 of `bytes` bytes at `data` ("123456789" gives 0xCBF43926).
uint32_t crc32(const void *data, size_t bytes);

} // namespace tessera::optim

#endif
