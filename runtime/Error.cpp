#include "tessera/Error.h"

namespace tessera {

namespace {
std::string compose(const std::string &message, const std::string &name,
                    const std::string &description, const std::string &jitLog) {
  std::string s = message;
  if (!name.empty()) {
    s += ": " + name;
    if (!description.empty())
      s += " (" + description + ")";
  }
  if (!jitLog.empty()) {
    s += "\nJIT error log:\n" + jitLog;
    if (s.back() != '\n')
      s += '\n';
  }
  return s;
}
} // namespace

Error::Error(const std::string &message) : std::runtime_error(message) {}

Error::Error(const std::string &message, int cuResult, std::string cuResultName,
             const std::string &cuResultString, std::string jitLog)
    : std::runtime_error(compose(message, cuResultName, cuResultString, jitLog)),
      cuResult_(cuResult), cuResultName_(std::move(cuResultName)), jitLog_(std::move(jitLog)) {}

} // namespace tessera
