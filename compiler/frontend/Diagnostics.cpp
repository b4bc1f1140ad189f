#include "Diagnostics.h"

#include <fstream>
#include <sstream>

namespace tessera::fe {

uint32_t SourceManager::addBuffer(std::string path, std::string text) {
  SourceFile f;
  f.path = std::move(path);
  f.text = std::move(text);
  f.lineStarts.push_back(0);
  for (size_t i = 0; i < f.text.size(); ++i)
    if (f.text[i] == '\n')
      f.lineStarts.push_back(i + 1);
  files_.push_back(std::move(f));
  return uint32_t(files_.size() - 1);
}

bool SourceManager::addFile(const std::string &path, uint32_t &id) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad())
    return false;
  id = addBuffer(path, ss.str());
  return true;
}

std::string SourceManager::lineText(Loc loc) const {
  if (!loc.valid() || loc.file >= files_.size())
    return {};
  const SourceFile &f = files_[loc.file];
  if (loc.line > f.lineStarts.size())
    return {};
  size_t begin = f.lineStarts[loc.line - 1];
  size_t end = f.text.find('\n', begin);
  if (end == std::string::npos)
    end = f.text.size();
  std::string line = f.text.substr(begin, end - begin);
  if (!line.empty() && line.back() == '\r')
    line.pop_back();
  return line;
}

std::string SourceManager::describe(Loc loc) const {
  std::string path = loc.file < files_.size() ? files_[loc.file].path : "<unknown>";
  if (!loc.valid())
    return path;
  return path + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
}

void DiagnosticEngine::error(Loc loc, std::string message) {
  diags_.push_back(Diagnostic{loc, std::move(message), {}});
}

void DiagnosticEngine::note(Loc loc, std::string message) {
  if (diags_.empty())
    return;
  diags_.back().notes.emplace_back(loc, std::move(message));
}

static void renderOne(const SourceManager &sm, std::ostringstream &os, Loc loc,
                      const char *kind, const std::string &msg) {
  os << sm.describe(loc) << ": " << kind << ": " << msg << "\n";
  if (!loc.valid())
    return;
  std::string line = sm.lineText(loc);
  os << "    " << line << "\n    ";
  // Keep tabs so the caret lines up with the source as the terminal shows it.
  // Columns count bytes; a UTF-8 continuation byte takes no extra screen column.
  for (uint32_t i = 1; i < loc.col && i - 1 < line.size(); ++i) {
    unsigned char ch = static_cast<unsigned char>(line[i - 1]);
    if ((ch & 0xC0) == 0x80)
      continue;
    os << (ch == '\t' ? '\t' : ' ');
  }
  os << "^\n";
}

std::string DiagnosticEngine::render(const Diagnostic &d) const {
  std::ostringstream os;
  renderOne(sm_, os, d.loc, "error", d.message);
  for (auto &[loc, msg] : d.notes)
    renderOne(sm_, os, loc, "note", msg);
  return os.str();
}

std::string DiagnosticEngine::render() const {
  std::string out;
  for (auto &d : diags_)
    out += render(d);
  return out;
}

} // namespace tessera::fe
