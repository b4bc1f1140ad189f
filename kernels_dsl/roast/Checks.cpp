#include "Checks.h"

#include "tessera/Error.h"

#include <cmath>

namespace tessera::roast::detail {

void checkCount(const std::string &where, const char *what, int64_t value) {
  if (value < 1 || value >= (int64_t(1) << 31))
    throw Error(where + ": " + what + " must be in [1, 2^31), got " + std::to_string(value));
}

void checkBuffer(const std::string &where, const char *what, size_t have, int64_t need) {
  if (int64_t(have) < need)
    throw Error(where + ": " + what + " holds " + std::to_string(have) + " elements, needs " +
                std::to_string(need));
}

void checkLambda(const std::string &where, float lambda) {
  if (!std::isfinite(lambda))
    throw Error(where + ": lambda must be finite, got " + std::to_string(lambda));
}

} // namespace tessera::roast::detail
