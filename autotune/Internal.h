// Private helpers of autotune/: canonical text for hashes and the JSON forms
// of the public types (nlohmann::json stays out of the public header).
#ifndef TESSERA_AUTOTUNE_INTERNAL_H
#define TESSERA_AUTOTUNE_INTERNAL_H

#include "tessera/Autotune.h"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace tessera::autotune_detail {

/// Objects keep their insertion order, so files list fields in a fixed, readable order.
using json = nlohmann::ordered_json;

/// Appends "<size>:<bytes>\n": no two field lists serialize to the same text.
inline void field(std::string &out, std::string_view s) {
  out += std::to_string(s.size());
  out += ':';
  out.append(s.data(), s.size());
  out += '\n';
}

/// The current UTC time in strftime `format`.
std::string utcNow(const char *format);

/// SHA-256 hex digest (runtime/Sha256.h, the kernel cache's hash).
std::string sha256Hex(std::string_view text);

// The JSON forms. The *FromJson functions throw std::runtime_error (or a
// json::exception) naming the problem.
json constexprToJson(const ConstexprValue &v);
ConstexprValue constexprFromJson(const json &j);
json configToJson(const Config &c);
Config configFromJson(const json &j);
json keyToJson(const TuningKey &k);
TuningKey keyFromJson(const json &j);
json recordToJson(const TuningRecord &r);
TuningRecord recordFromJson(const json &j);

} // namespace tessera::autotune_detail

#endif
