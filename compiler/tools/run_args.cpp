// The ARG syntax shared by `tessera run` and `tessera autotune`, and the
// kernel arguments made from it (run_args.h).
#include "run_args.h"

#include "cli.h"

#include "tessera/Float8.h"
#include "tessera/Half.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>

namespace tessera::cli {

namespace {

/// Parses `text` as a value of type `t` into an ArgValue (a scalar argument).
bool parseScalar(const std::string &text, ScalarType t, ArgValue &out) {
  if (t == ScalarType::i1) {
    if (text == "true" || text == "True" || text == "1")
      out = ArgValue::scalar(true);
    else if (text == "false" || text == "False" || text == "0")
      out = ArgValue::scalar(false);
    else
      return false;
    return true;
  }
  char *end = nullptr;
  if (isFloat(t)) {
    errno = 0;
    double d = std::strtod(text.c_str(), &end);
    if (text.empty() || *end)
      return false;
    switch (t) {
    case ScalarType::f16: out = ArgValue::scalar(f16(float(d))); break;
    case ScalarType::bf16: out = ArgValue::scalar(bf16(float(d))); break;
    case ScalarType::f8e4m3: out = ArgValue::scalar(f8e4m3(float(d))); break; // buffer fills
    case ScalarType::f8e5m2: out = ArgValue::scalar(f8e5m2(float(d))); break;
    case ScalarType::f32: out = ArgValue::scalar(float(d)); break;
    default: out = ArgValue::scalar(d); break;
    }
    return true;
  }
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || errno == ERANGE)
    return false;
  switch (t) {
  case ScalarType::i8:
    if (v < -128 || v > 127) return false;
    out = ArgValue::scalar(int8_t(v));
    return true;
  case ScalarType::u8:
    if (v < 0 || v > 255) return false;
    out = ArgValue::scalar(uint8_t(v));
    return true;
  case ScalarType::i16:
    if (v < -32768 || v > 32767) return false;
    out = ArgValue::scalar(int16_t(v));
    return true;
  case ScalarType::i32:
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      return false;
    out = ArgValue::scalar(int32_t(v));
    return true;
  case ScalarType::u16:
    if (v < 0 || v > 65535) return false;
    out = ArgValue::scalar(uint16_t(v));
    return true;
  case ScalarType::u32:
    if (v < 0 || v > int64_t(std::numeric_limits<uint32_t>::max())) return false;
    out = ArgValue::scalar(uint32_t(v));
    return true;
  case ScalarType::u64:
    if (v < 0) return false;
    out = ArgValue::scalar(uint64_t(v));
    return true;
  default:
    out = ArgValue::scalar(int64_t(v));
    return true;
  }
}

} // namespace

bool parseArgSpec(const std::string &text, ArgSpec &spec, std::string &error) {
  spec = ArgSpec{};
  spec.text = text;
  auto bufferCount = [&](const std::string &rest) -> bool {
    unsigned long long n = 0;
    if (!parseUnsigned(rest, n) || n > (1ull << 40)) {
      error = "cannot parse '" + text + "': expected buf:N, buf:N=VALUE or out:N with N an element count";
      return false;
    }
    spec.count = size_t(n);
    return true;
  };
  if (text.rfind("buf:", 0) == 0) {
    std::string rest = text.substr(4);
    auto eq = rest.find('=');
    if (eq != std::string::npos) {
      spec.kind = ArgSpec::Fill;
      spec.value = rest.substr(eq + 1);
      rest = rest.substr(0, eq);
    } else {
      spec.kind = ArgSpec::Random;
    }
    return bufferCount(rest);
  }
  if (text.rfind("out:", 0) == 0) {
    spec.kind = ArgSpec::Output;
    return bufferCount(text.substr(4));
  }
  if (text.empty()) {
    error = "empty kernel argument";
    return false;
  }
  spec.kind = ArgSpec::Scalar;
  spec.value = text;
  return true;
}

bool looksLikeNumber(const std::string &s) {
  if (s.empty())
    return false;
  char *end = nullptr;
  std::strtod(s.c_str(), &end);
  return end && *end == '\0';
}

size_t elementBytes(ScalarType t) {
  switch (t) {
  case ScalarType::i1:
  case ScalarType::i8:
  case ScalarType::u8:
  case ScalarType::f8e4m3:
  case ScalarType::f8e5m2:
    return 1;
  case ScalarType::i16:
  case ScalarType::u16:
  case ScalarType::f16:
  case ScalarType::bf16:
    return 2;
  case ScalarType::i32:
  case ScalarType::u32:
  case ScalarType::f32:
    return 4;
  case ScalarType::i64:
  case ScalarType::u64:
  case ScalarType::f64:
    return 8;
  }
  return 4;
}


/// One element of type `t` as a double.
double elementValue(const unsigned char *p, ScalarType t) {
  switch (t) {
  case ScalarType::i1: return *p ? 1 : 0;
  case ScalarType::i8: { int8_t v; std::memcpy(&v, p, 1); return v; }
  case ScalarType::u8: return *p;
  case ScalarType::i16: { int16_t v; std::memcpy(&v, p, 2); return v; }
  case ScalarType::u16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
  case ScalarType::u32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
  case ScalarType::u64: { uint64_t v; std::memcpy(&v, p, 8); return double(v); }
  case ScalarType::i32: { int32_t v; std::memcpy(&v, p, 4); return v; }
  case ScalarType::i64: { int64_t v; std::memcpy(&v, p, 8); return double(v); }
  case ScalarType::f16: { uint16_t b; std::memcpy(&b, p, 2); return f16::toFloat(b); }
  case ScalarType::bf16: { uint16_t b; std::memcpy(&b, p, 2); return bf16::toFloat(b); }
  case ScalarType::f32: { float v; std::memcpy(&v, p, 4); return v; }
  case ScalarType::f64: { double v; std::memcpy(&v, p, 8); return v; }
  case ScalarType::f8e4m3: return f8e4m3::toFloat(*p);
  case ScalarType::f8e5m2: return f8e5m2::toFloat(*p);
  }
  return 0;
}


std::string signatureText(const KernelSignature &sig) {
  std::string s;
  for (const KernelParam &p : sig.params)
    s += (s.empty() ? "" : ", ") + p.name + ": " + p.type.str();
  return s;
}

/// Builds the inputs, or prints why the specs do not fit and returns false.
bool makeInputs(const KernelSignature &sig, const std::vector<ArgSpec> &specs, uint64_t seed,
                Inputs &in) {
  const std::string kname = "kernel '" + sig.name + "'";
  if (specs.size() != sig.params.size()) {
    std::cerr << "tessera: error: " << kname << " expects " << sig.params.size()
              << (sig.params.size() == 1 ? " argument" : " arguments") << " ("
              << signatureText(sig) << "), got " << specs.size() << "\n";
    return false;
  }
  std::mt19937_64 rng(seed);
  in.scalars.assign(sig.params.size(), ArgValue{});
  in.bufferOf.assign(sig.params.size(), -1);
  for (size_t i = 0; i < specs.size(); ++i) {
    const KernelParam &p = sig.params[i];
    const ArgSpec &s = specs[i];
    std::string which = "argument " + std::to_string(i + 1) + " ('" + p.name + "') of " + kname;
    if (p.type.pointerDepth > 1) {
      std::cerr << "tessera: error: " << which << " has type " << p.type.str()
                << ": pointer-to-pointer parameters cannot be made from the command line\n";
      return false;
    }
    if (p.type.isPointer() != (s.kind != ArgSpec::Scalar)) {
      if (p.type.isPointer())
        std::cerr << "tessera: error: " << which << " is a pointer (" << p.type.str() << "), got '"
                  << s.text << "': pass buf:N, buf:N=VALUE or out:N\n";
      else
        std::cerr << "tessera: error: " << which << " is a scalar " << p.type.str() << ", got '"
                  << s.text << "': pass a literal\n";
      return false;
    }
    if (!p.type.isPointer()) {
      if (!parseScalar(s.value, p.type.scalar, in.scalars[i])) {
        std::cerr << "tessera: error: " << which << " must be a literal of type " << p.type.str()
                  << ", got '" << s.value << "'\n";
        return false;
      }
      continue;
    }
    HostBuffer b;
    b.param = i;
    b.name = p.name;
    b.type = p.type.scalar;
    b.count = s.count;
    b.output = s.kind == ArgSpec::Output;
    size_t eb = elementBytes(b.type);
    b.bytes.assign(b.count * eb, 0);
    unsigned char *d = b.bytes.data();
    if (s.kind == ArgSpec::Fill) {
      // VALUE fills every element; V1,V2,... gives each one (exactly N values):
      // hash parameters, an index list, a lookup table.
      std::vector<std::string> items = splitTopLevel(s.value);
      if (items.size() > 1 && items.size() != b.count) {
        std::cerr << "tessera: error: " << which << ": '" << s.text << "' gives " << items.size()
                  << " values for " << b.count << (b.count == 1 ? " element" : " elements")
                  << " (give one value to fill them all, or exactly " << b.count << ")\n";
        return false;
      }
      std::vector<ArgValue> values(items.size());
      for (size_t k = 0; k < items.size(); ++k)
        if (!parseScalar(items[k], b.type, values[k])) {
          std::cerr << "tessera: error: " << which << ": cannot fill a buffer of "
                    << scalarTypeName(b.type) << " with '" << items[k] << "'\n";
          return false;
        }
      for (size_t e = 0; e < b.count; ++e)
        std::memcpy(d + e * eb, values[values.size() == 1 ? 0 : e].storage, eb);
    } else if (s.kind == ArgSpec::Output) {
      for (size_t k = 0; k < b.count; ++k) {
        unsigned char *e = d + k * eb;
        switch (b.type) {
        case ScalarType::f16: { uint16_t n = 0x7e00; std::memcpy(e, &n, 2); break; }
        case ScalarType::bf16: { uint16_t n = 0x7fc0; std::memcpy(e, &n, 2); break; }
        case ScalarType::f32: { float n = std::numeric_limits<float>::quiet_NaN(); std::memcpy(e, &n, 4); break; }
        case ScalarType::f64: { double n = std::numeric_limits<double>::quiet_NaN(); std::memcpy(e, &n, 8); break; }
        case ScalarType::f8e4m3: case ScalarType::f8e5m2: e[0] = 0x7f; break; // NaN in both
        default: std::memset(e, 0xAA, eb); break;
        }
      }
    } else { // random
      for (size_t k = 0; k < b.count; ++k) {
        unsigned char *e = d + k * eb;
        uint64_t r = rng();
        // Uniform in [-1, 1) from the top bits: 24 for f32 and below, 53 for f64.
        double u24 = double(r >> 40) * 0x1p-24 * 2.0 - 1.0;
        double u53 = double(r >> 11) * 0x1p-53 * 2.0 - 1.0;
        int64_t iv = int64_t(r % 100);
        switch (b.type) {
        case ScalarType::i1: e[0] = uint8_t(r & 1); break;
        case ScalarType::i8: case ScalarType::u8: e[0] = uint8_t(iv); break;
        case ScalarType::i16: case ScalarType::u16: { int16_t v = int16_t(iv); std::memcpy(e, &v, 2); break; }
        case ScalarType::u32: { int32_t v = int32_t(iv); std::memcpy(e, &v, 4); break; }
        case ScalarType::u64: std::memcpy(e, &iv, 8); break;
        case ScalarType::i32: { int32_t v = int32_t(iv); std::memcpy(e, &v, 4); break; }
        case ScalarType::i64: std::memcpy(e, &iv, 8); break;
        case ScalarType::f16: { uint16_t h = f16::fromFloat(float(u24)); std::memcpy(e, &h, 2); break; }
        case ScalarType::bf16: { uint16_t h = bf16::fromFloat(float(u24)); std::memcpy(e, &h, 2); break; }
        case ScalarType::f32: { float v = float(u24); std::memcpy(e, &v, 4); break; }
        case ScalarType::f64: std::memcpy(e, &u53, 8); break;
        case ScalarType::f8e4m3: e[0] = f8e4m3::fromFloat(float(u24)); break;
        case ScalarType::f8e5m2: e[0] = f8e5m2::fromFloat(float(u24)); break;
        }
      }
    }
    in.totalBytes += b.bytes.size();
    in.bufferOf[i] = int(in.buffers.size());
    in.buffers.push_back(std::move(b));
  }
  return true;
}

bool ArgTemplate::parse(const std::string &text, std::string &error) {
  text_ = text;
  prefix_.clear();
  suffix_.clear();
  expr_.reset();
  std::string exprText;
  if (text.rfind("buf:", 0) == 0 || text.rfind("out:", 0) == 0) {
    prefix_ = text.substr(0, 4);
    exprText = text.substr(4);
    if (size_t eq = exprText.find('='); eq != std::string::npos && prefix_ == "buf:") {
      suffix_ = exprText.substr(eq);
      exprText.resize(eq);
    }
  } else if (text.empty() || looksLikeNumber(text) || text == "true" || text == "false" ||
             text == "True" || text == "False") {
    suffix_ = text; // a literal: parseArgSpec and the parameter's type judge it
    return true;
  } else {
    exprText = text;
  }
  std::string why;
  expr_ = IntExpr::parse(exprText, why);
  if (!expr_) {
    error = why + " in argument '" + text + "'";
    return false;
  }
  return true;
}

bool ArgTemplate::bind(const IntNames &names, ArgSpec &spec, std::string &error) const {
  std::string bound = suffix_;
  if (expr_) {
    std::string why;
    std::optional<int64_t> v = expr_->eval(names, why);
    if (!v) {
      error = why + " in argument '" + text_ + "'";
      return false;
    }
    if (!prefix_.empty() && *v < 0) {
      error = "argument '" + text_ + "' gives a negative element count (" + std::to_string(*v) + ")";
      return false;
    }
    bound = prefix_ + std::to_string(*v) + suffix_;
  }
  if (!parseArgSpec(bound, spec, error))
    return false;
  spec.text = text_ == bound ? bound : text_ + " (" + bound + ")";
  return true;
}

std::vector<DeviceMemory> uploadInputs(const Context &ctx, const Inputs &in) {
  std::vector<DeviceMemory> mem;
  mem.reserve(in.buffers.size());
  for (const HostBuffer &b : in.buffers) {
    mem.push_back(ctx.allocBytes(b.bytes.size()));
    if (!b.bytes.empty())
      mem.back().copyFromHost(b.bytes.data(), b.bytes.size());
  }
  return mem;
}

std::vector<ArgValue> launchArgs(const Inputs &in, const std::vector<DeviceMemory> &memory) {
  std::vector<ArgValue> args = in.scalars;
  for (size_t i = 0; i < args.size(); ++i)
    if (in.bufferOf[i] >= 0) {
      const HostBuffer &b = in.buffers[size_t(in.bufferOf[i])];
      args[i] = ArgValue::pointer(b.type, memory[size_t(in.bufferOf[i])].address());
    }
  return args;
}

} // namespace tessera::cli
