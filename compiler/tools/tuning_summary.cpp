// The per-shape report of `tessera autotune` (tuning_summary.h).
#include "tuning_summary.h"

#include "cli.h"

#include "tessera/Compiler.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace tessera::cli {

namespace {

using ojson = nlohmann::ordered_json;

std::string ms(double v) { return formatDouble(v, "%.4g"); }

void printTable(std::ostream &out, const TuningRecord &r) {
  std::vector<std::vector<std::string>> rows = {{"config", "median ms", "spread ms", "repeats"}};
  std::vector<std::string> notes = {""};
  for (const CandidateResult &c : r.candidates) {
    if (c.skipped()) {
      rows.push_back({c.config.str(), "skipped: " + c.skipReason});
      notes.push_back("");
      continue;
    }
    rows.push_back({c.config.str(), ms(*c.timeMs), ms(c.spreadMs), std::to_string(c.repeats)});
    notes.push_back(c.config == r.best ? "  <- best" : "");
  }
  size_t width[4] = {0, 0, 0, 0};
  for (const auto &row : rows)
    for (size_t k = 0; k < row.size(); ++k)
      if (row.size() == 4 || k == 0) // a skip reason spans the other columns
        width[k] = std::max(width[k], row[k].size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto &row = rows[i];
    std::string line = "  " + row[0] + std::string(width[0] - row[0].size(), ' ');
    if (row.size() == 2) {
      line += "  " + row[1];
    } else {
      for (size_t k = 1; k < 4; ++k) // numbers right-aligned under their heading
        line += "  " + std::string(width[k] - row[k].size(), ' ') + row[k];
    }
    out << line << notes[i] << "\n";
  }
}

void printSpeedups(std::ostream &out, const TuningRecord &r) {
  Speedups s = speedupsOf(r);
  if (!s.bestMs)
    return;
  out << "  best " << ms(*s.bestMs) << " ms: ";
  if (s.overDefault)
    out << formatDouble(*s.overDefault, "%.2f") << "x faster than the default config (the first)";
  else
    out << "the default config (the first) was not timed";
  out << ", " << formatDouble(*s.overWorst, "%.2f") << "x faster than the worst\n";
}

ojson candidateJson(const CandidateResult &c) {
  ojson j = {{"config", c.config.str()}};
  if (c.skipped()) {
    j["skipped"] = c.skipReason;
  } else {
    j["time_ms"] = *c.timeMs;
    j["spread_ms"] = c.spreadMs;
    j["repeats"] = c.repeats;
  }
  return j;
}

ojson outcomeJson(const ShapeOutcome &o) {
  ojson shape = ojson::object();
  for (const auto &[name, value] : o.shape)
    shape[name] = value;
  ojson j = {{"shape", shape}};
  if (!o.record) {
    j["error"] = o.error;
    return j;
  }
  ojson key = ojson::object();
  for (const auto &[name, value] : o.key.keyValues)
    key[name] = value;
  const TuningRecord &r = *o.record;
  Speedups s = speedupsOf(r);
  j["key"] = key;
  j["source"] = o.source;
  j["seconds"] = o.seconds;
  j["date"] = r.date;
  j["best"] = {{"config", r.best.str()}, {"time_ms", s.bestMs ? ojson(*s.bestMs) : ojson()}};
  j["speedup_over_default"] = s.overDefault ? ojson(*s.overDefault) : ojson();
  j["speedup_over_worst"] = s.overWorst ? ojson(*s.overWorst) : ojson();
  ojson candidates = ojson::array();
  for (const CandidateResult &c : r.candidates)
    candidates.push_back(candidateJson(c));
  j["candidates"] = candidates;
  j["tuning_key"] = ojson::parse(o.key.toJson());
  return j;
}

} // namespace

Speedups speedupsOf(const TuningRecord &record) {
  Speedups s;
  const CandidateResult *best = record.bestCandidate();
  if (!best || best->skipped() || !(*best->timeMs > 0))
    return s;
  s.bestMs = *best->timeMs;
  double worst = *best->timeMs;
  for (const CandidateResult &c : record.candidates)
    if (!c.skipped())
      worst = std::max(worst, *c.timeMs);
  s.overWorst = worst / *s.bestMs;
  if (!record.candidates.empty() && !record.candidates.front().skipped())
    s.overDefault = *record.candidates.front().timeMs / *s.bestMs;
  return s;
}

std::string keyValuesText(const KeyValues &values) {
  std::string s;
  for (const auto &[name, value] : values)
    s += (s.empty() ? "" : ",") + name + "=" + std::to_string(value);
  return s.empty() ? "(no key)" : s;
}

void printShapeOutcome(std::ostream &out, const ShapeOutcome &o) {
  out << "shape " << keyValuesText(o.shape);
  if (!o.record) {
    out << ": FAILED (the error is on stderr)\n";
    return;
  }
  const TuningRecord &r = *o.record;
  size_t timed = 0;
  for (const CandidateResult &c : r.candidates)
    timed += !c.skipped();
  out << (o.key.keyValues.empty() ? " (no key)" : " (key " + keyValuesText(o.key.keyValues) + ")")
      << ": ";
  if (o.source == "cached")
    out << "cached, tuned " << r.date;
  else
    out << "tuned in " << formatDouble(o.seconds, "%.2f") << " s";
  out << ", " << r.candidates.size() << (r.candidates.size() == 1 ? " config, " : " configs, ")
      << timed << " timed\n";
  printTable(out, r);
  printSpeedups(out, r);
}

std::string outcomesJson(const std::string &kernel, const std::string &file,
                         const std::string &device, const std::vector<ShapeOutcome> &outcomes) {
  ojson shapes = ojson::array();
  for (const ShapeOutcome &o : outcomes)
    shapes.push_back(outcomeJson(o));
  ojson doc = {{"kernel", kernel},
               {"file", file},
               {"device", device},
               {"compiler", compilerVersion()},
               {"shapes", shapes}};
  return doc.dump(2, ' ', false, ojson::error_handler_t::replace) + "\n";
}

} // namespace tessera::cli
