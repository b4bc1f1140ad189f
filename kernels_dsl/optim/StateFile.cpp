// The optimizer state file (docs/kernels/blockwise_quant.md, "State file").
// Little endian:
//   "TSRADAM8", u32 version, u32 tensor count, i64 step,
//   f32 lr, beta1, beta2, eps, weight decay,
//   per tensor: u64 count, u8 parameter type, u8 gradient type, u8 8-bit, u8 0,
//   per tensor: m8, v8 (count bytes each), absmax1, absmax2 (f32 per 256
//   elements) for an 8-bit tensor; m32, v32 (count f32 each) for a small one,
//   u32 CRC-32 of everything before it.
// Loading checks all of it before it changes anything, and a save is a
// temporary file renamed over the target, so a crash never leaves half a file.
#include "Crc32.h"
#include "OptimizerState.h"

#include "tessera/Error.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tessera::optim {

namespace {

constexpr char kMagic[8] = {'T', 'S', 'R', 'A', 'D', 'A', 'M', '8'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 8 + 5 * 4;
constexpr size_t kTensorEntryBytes = 12;

// Our own codes for the element types, independent of ScalarType's order.
uint8_t typeCode(ScalarType t) {
  return t == ScalarType::f32 ? 1 : t == ScalarType::f16 ? 2 : t == ScalarType::bf16 ? 3 : 0;
}
std::string typeName(uint8_t code) {
  return code == 1 ? "f32" : code == 2 ? "f16" : code == 3 ? "bf16" : "unknown";
}

template <class T> void put(std::string &out, const T &v) {
  out.append(reinterpret_cast<const char *>(&v), sizeof v);
}
void putBytes(std::string &out, const void *p, size_t n) {
  out.append(static_cast<const char *>(p), n);
}

size_t payloadBytes(size_t count, bool eightBit) {
  const size_t blocks = (count + kStateBlocksize - 1) / kStateBlocksize;
  return eightBit ? 2 * count + 2 * 4 * blocks : 2 * 4 * count;
}

// Reads the file's fields in order; every read is inside the buffer (the
// length is checked before the payload is read).
struct Reader {
  const std::string &bytes;
  size_t at = 0;
  template <class T> T get() {
    T v;
    std::memcpy(&v, bytes.data() + at, sizeof v);
    at += sizeof v;
    return v;
  }
  void getBytes(void *dst, size_t n) {
    std::memcpy(dst, bytes.data() + at, n);
    at += n;
  }
};

struct Entry {
  uint64_t count;
  uint8_t paramType, gradType, eightBit;
};

// Magic, version, tensor table and length: everything that says what the
// file claims to hold, checked before the checksum covers its bytes.
std::vector<Entry> readLayout(Reader &r, const std::string &where, int64_t &step,
                              AdamOptions &o) {
  const std::string &bytes = r.bytes;
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, 8) != 0)
    throw Error(where + "not an AdamW8bit state file (bad magic)");
  if (bytes.size() < kHeaderBytes)
    throw Error(where + "truncated: " + std::to_string(bytes.size()) +
                " bytes, shorter than the header");
  r.at = 8;
  const uint32_t version = r.get<uint32_t>();
  if (version != kVersion)
    throw Error(where + "state file version " + std::to_string(version) +
                ", this build reads version " + std::to_string(kVersion));
  const uint32_t n = r.get<uint32_t>();
  step = r.get<int64_t>();
  o.lr = r.get<float>(), o.beta1 = r.get<float>(), o.beta2 = r.get<float>();
  o.eps = r.get<float>(), o.weightDecay = r.get<float>();
  if (bytes.size() < kHeaderBytes + size_t(n) * kTensorEntryBytes)
    throw Error(where + "truncated: " + std::to_string(bytes.size()) +
                " bytes, shorter than its table of " + std::to_string(n) + " tensors");
  std::vector<Entry> entries(n);
  size_t expected = kHeaderBytes + size_t(n) * kTensorEntryBytes + 4;
  for (Entry &e : entries) {
    e.count = r.get<uint64_t>();
    e.paramType = r.get<uint8_t>(), e.gradType = r.get<uint8_t>(), e.eightBit = r.get<uint8_t>();
    r.get<uint8_t>();
    if (e.count > (uint64_t(1) << 40))
      throw Error(where + "corrupt: a tensor of " + std::to_string(e.count) + " elements");
    expected += payloadBytes(size_t(e.count), e.eightBit != 0);
  }
  if (bytes.size() < expected)
    throw Error(where + "truncated: " + std::to_string(bytes.size()) + " bytes, expected " +
                std::to_string(expected));
  if (bytes.size() > expected)
    throw Error(where + "corrupt: " + std::to_string(bytes.size() - expected) +
                " bytes past the end of the state");
  return entries;
}

void checkMatches(const AdamW8bit::State &s, const std::vector<Entry> &entries,
                  const std::string &where) {
  if (entries.size() != s.tensors.size())
    throw Error(where + "saved for " + std::to_string(entries.size()) +
                " tensors, this optimizer has " + std::to_string(s.tensors.size()));
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry &e = entries[i];
    const TensorSlot &t = s.tensors[i];
    const std::string which = where + "tensor " + std::to_string(i) + ": ";
    if (e.count != t.tensor.count)
      throw Error(which + "saved with " + std::to_string(e.count) +
                  " elements, this optimizer's has " + std::to_string(t.tensor.count));
    if (e.paramType != typeCode(t.tensor.paramType) || e.gradType != typeCode(t.tensor.gradType))
      throw Error(which + "saved for " + typeName(e.paramType) + " parameters and " +
                  typeName(e.gradType) + " gradients, this optimizer's are " +
                  DType{t.tensor.paramType, 0}.str() + " and " +
                  DType{t.tensor.gradType, 0}.str());
    if ((e.eightBit != 0) != t.eightBit)
      throw Error(which + "saved with " + (e.eightBit ? "8-bit" : "f32") + " states, expected " +
                  (t.eightBit ? "8-bit" : "f32"));
  }
}

} // namespace

std::string encodeStateFile(const AdamW8bit::State &s) {
  std::string out(kMagic, 8);
  put(out, kVersion);
  put(out, uint32_t(s.tensors.size()));
  put(out, s.step);
  const AdamOptions &o = s.options;
  for (float f : {o.lr, o.beta1, o.beta2, o.eps, o.weightDecay})
    put(out, f);
  for (const TensorSlot &t : s.tensors) {
    put(out, uint64_t(t.tensor.count));
    for (uint8_t b : {typeCode(t.tensor.paramType), typeCode(t.tensor.gradType),
                      uint8_t(t.eightBit ? 1 : 0), uint8_t(0)})
      put(out, b);
  }
  for (size_t i = 0; i < s.tensors.size(); ++i) {
    TensorState st = readTensorState(s, i);
    if (st.eightBit) {
      putBytes(out, st.m8.data(), st.m8.size());
      putBytes(out, st.v8.data(), st.v8.size());
      putBytes(out, st.absmax1.data(), 4 * st.absmax1.size());
      putBytes(out, st.absmax2.data(), 4 * st.absmax2.size());
    } else {
      putBytes(out, st.m32.data(), 4 * st.m32.size());
      putBytes(out, st.v32.data(), 4 * st.v32.size());
    }
  }
  put(out, crc32(out.data(), out.size()));
  return out;
}

DecodedState decodeStateFile(const AdamW8bit::State &s, const std::string &bytes,
                             const std::string &path) {
  const std::string where = "AdamW8bit::load('" + path + "'): ";
  DecodedState d;
  Reader r{bytes};
  std::vector<Entry> entries = readLayout(r, where, d.step, d.options);
  uint32_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 4, 4);
  if (crc32(bytes.data(), bytes.size() - 4) != stored)
    throw Error(where + "checksum mismatch: the file is corrupt");
  checkMatches(s, entries, where);
  if (d.step < 0)
    throw Error(where + "corrupt: negative step count");

  // New buffers, filled from the file; the optimizer's own stay untouched.
  d.buffers = allocateStates(*s.ctx, s.tensors);
  for (const TensorSlot &t : s.tensors) {
    const size_t n = t.tensor.count, nb = t.blocks();
    if (t.eightBit) {
      std::vector<uint8_t> m(n), v(n);
      std::vector<float> a1(nb), a2(nb);
      r.getBytes(m.data(), n), r.getBytes(v.data(), n);
      r.getBytes(a1.data(), 4 * nb), r.getBytes(a2.data(), 4 * nb);
      d.buffers.m8.copyFromHost(m.data(), n, t.offset);
      d.buffers.v8.copyFromHost(v.data(), n, t.offset);
      d.buffers.absmax1.copyFromHost(a1.data(), nb, t.offset / kStateBlocksize);
      d.buffers.absmax2.copyFromHost(a2.data(), nb, t.offset / kStateBlocksize);
    } else {
      std::vector<float> m(n), v(n);
      r.getBytes(m.data(), 4 * n), r.getBytes(v.data(), 4 * n);
      d.buffers.m32.copyFromHost(m.data(), n, t.offset);
      d.buffers.v32.copyFromHost(v.data(), n, t.offset);
    }
  }
  return d;
}

void AdamW8bit::save(const std::string &path) const {
  const std::string bytes = encodeStateFile(*state_);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), std::streamsize(bytes.size()));
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      throw Error("AdamW8bit::save('" + path + "'): cannot write " + tmp);
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw Error("AdamW8bit::save('" + path + "'): cannot rename the temporary file over it: " +
                ec.message());
  }
}

void AdamW8bit::load(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    throw Error("AdamW8bit::load('" + path + "'): cannot open the file");
  std::ostringstream ss;
  ss << f.rdbuf();
  DecodedState d = decodeStateFile(*state_, ss.str(), path);
  state_->ctx->synchronize();
  state_->buffers = std::move(d.buffers);
  state_->step = d.step;
  state_->options = d.options;
}

} // namespace tessera::optim
