// Argument checks shared by the ROAST layers: each throws tessera::Error with
// a message that names the layer, the argument and the values.
#ifndef TESSERA_KERNELS_ROAST_CHECKS_H
#define TESSERA_KERNELS_ROAST_CHECKS_H

#include <cstdint>
#include <string>

namespace tessera::roast::detail {

/// 1 <= value < 2^31 (the kernels index with i32).
void checkCount(const std::string &where, const char *what, int64_t value);
/// A buffer of `have` elements holds `need`.
void checkBuffer(const std::string &where, const char *what, size_t have, int64_t need);
/// A finite scale.
void checkLambda(const std::string &where, float lambda);

} // namespace tessera::roast::detail

#endif
