// SHA-256 (FIPS 180-4), for cache keys and cache entry checksums.
#ifndef TESSERA_SHA256_H
#define TESSERA_SHA256_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessera {

class Sha256 {
public:
  using Digest = std::array<uint8_t, 32>;

  Sha256();
  Sha256 &update(const void *data, size_t size);
  Sha256 &update(std::string_view s) { return update(s.data(), s.size()); }
  /// Finishes and returns the digest; the object then starts over.
  Digest finish();

  static Digest hash(std::string_view data);
  /// Lower-case hex of the digest (64 characters).
  static std::string hex(const Digest &digest);
  static std::string hexHash(std::string_view data) { return hex(hash(data)); }

private:
  void reset();
  void block(const uint8_t *p);
  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t totalBytes_ = 0;
};

} // namespace tessera

#endif
