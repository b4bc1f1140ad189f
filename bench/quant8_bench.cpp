// quant8_bench: the 8-bit figures of issue 18 on one GPU, printed as one JSON
// line for bench/quant8_peers.py (which adds torch's fused AdamW and copy in
// the same run and writes bench/results/quant8.json):
//   device-to-device copy of n f32 (the bandwidth every target is against),
//   quantize_blockwise at block sizes 4096 and 256, dequantize_blockwise (4096),
//   an AdamW8bit step on one n-element f32 tensor, an AdamW8bit step over a
//   transformer-like list of ~200 tensors totalling n, and the state bytes.
// Kernels are tuned through TunedKernel first (the tuning cache keeps them).
//
//   quant8_bench [n]        (default 268435456 = 2^28)
//   QUANT8_PARTS=quant,adam,list   only those parts (default: all three)
#include <tessera/optim/AdamW8bit.h>
#include <tessera/quant/Blockwise.h>
#include <tessera/tessera.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace tessera;

namespace {

double timeMs(Context &ctx, const std::function<void()> &f) {
  BenchmarkOptions o;
  o.warmup = 2;
  o.repeats = 15;
  return benchmark(ctx, f, o).medianMs;
}

// A transformer's parameter list (d = 1024, 16 layers, an embedding that
// makes up the rest of n): 4 matrices, 4 biases and 2 layer norms (weight,
// bias) per layer, a final layer norm. Scaled down proportionally for small n.
std::vector<size_t> transformerSizes(size_t n) {
  const size_t d = n >= (size_t(1) << 28) ? 1024 : 64, layers = 16;
  std::vector<size_t> sizes;
  size_t used = 0;
  for (size_t l = 0; l < layers; ++l)
    for (size_t s : {3 * d * d, 3 * d, d * d, d, d, d, 4 * d * d, 4 * d, 4 * d * d, d, d, d}) {
      sizes.push_back(s);
      used += s;
    }
  sizes.push_back(d), sizes.push_back(d);
  used += 2 * d;
  if (used >= n)
    throw Error("quant8_bench: n is too small for the tensor list");
  sizes.insert(sizes.begin(), n - used);  // the embedding
  return sizes;
}

std::string json(const char *name, double v) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "\"%s\": %.6g", name, v);
  return buf;
}

} // namespace

int main(int argc, char **argv) {
  const size_t n = argc > 1 ? size_t(std::atoll(argv[1])) : size_t(1) << 28;
  const std::string parts = std::getenv("QUANT8_PARTS") ? std::getenv("QUANT8_PARTS") : "quant,adam,list";
  auto part = [&](const char *name) { return parts.find(name) != std::string::npos; };
  try {
    Context ctx = Context::gpuOrInterpreter();
    std::vector<std::string> out;
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> host(n);
    for (auto &v : host)
      v = nd(rng);
    auto x = ctx.upload(host);
    auto y = ctx.alloc<float>(n);

    const double copyMs = timeMs(ctx, [&] { y.memory().copyFrom(x.memory(), x.bytes(), 0, 0, ctx.stream()); });
    const double copyGBs = 2.0 * 4.0 * double(n) / copyMs / 1e6;
    out.push_back(json("n", double(n)));
    out.push_back(json("copy_ms", copyMs));
    out.push_back(json("copy_GBps", copyGBs));

    quant::BlockwiseQuantizer quantizer(ctx);
    auto code = ctx.upload(quant::create_dynamic_map());
    auto q = ctx.alloc<uint8_t>(n);
    for (int bs : {4096, 256}) {
      if (!part("quant"))
        break;
      auto absmax = ctx.alloc<float>((n + size_t(bs) - 1) / size_t(bs));
      auto run = [&] { quantizer.quantize(ctx.stream(), x, code, q, absmax, bs); };
      run();  // tunes
      const double ms = timeMs(ctx, run);
      const double bytes = 5.0 * double(n) + 4.0 * double(absmax.size());
      const std::string tag = "quantize_bs" + std::to_string(bs);
      out.push_back(json((tag + "_ms").c_str(), ms));
      out.push_back(json((tag + "_of_copy").c_str(), bytes / ms / 1e6 / copyGBs));
      if (bs == 4096) {
        auto deq = [&] { quantizer.dequantize(ctx.stream(), q, code, absmax, y, bs); };
        deq();
        const double dms = timeMs(ctx, deq);
        out.push_back(json("dequantize_bs4096_ms", dms));
        out.push_back(json("dequantize_of_copy", bytes / dms / 1e6 / copyGBs));
      }
    }
    q.reset(), y.reset();

    // One tensor: p = x, g of the same size.
    std::vector<float> hg(n);
    for (auto &v : hg)
      v = 0.01f * nd(rng);
    auto g = ctx.upload(hg);
    double singleMs = 0;
    if (part("adam")) {
      optim::AdamW8bit opt(ctx, {optim::ParamGrad::of(x, g)});
      opt.step(ctx.stream());  // tunes (on scratch copies)
      singleMs = timeMs(ctx, [&] { opt.step(ctx.stream()); });
      // Bytes moved: g, p read; p written; both codes read and written; absmax.
      const double bytes = 14.0 * double(n) + 16.0 * double(n / 256);
      out.push_back(json("adamw8bit_ms", singleMs));
      out.push_back(json("adamw8bit_floor_ms", bytes / (copyGBs * 1e6)));
      out.push_back(json("adamw8bit_over_floor", singleMs / (bytes / (copyGBs * 1e6))));
      out.push_back(json("state_bytes", double(opt.stateBytes())));
      out.push_back(json("state_bytes_per_param", double(opt.stateBytes()) / double(n)));
    }
    if (part("list")) {
      // The same n split into a transformer's list: views into x and g.
      std::vector<size_t> sizes = transformerSizes(n);
      std::vector<DeviceBuffer<float>> ps, gs;
      std::vector<optim::ParamGrad> list;
      for (size_t s : sizes) {
        ps.push_back(ctx.alloc<float>(s)), gs.push_back(ctx.alloc<float>(s));
        ps.back().copyFromHost(host.data(), s), gs.back().copyFromHost(hg.data(), s);
        list.push_back(optim::ParamGrad::of(ps.back(), gs.back()));
      }
      optim::AdamW8bit opt(ctx, list);
      opt.step(ctx.stream());
      const double ms = timeMs(ctx, [&] { opt.step(ctx.stream()); });
      out.push_back(json("adamw8bit_list_tensors", double(sizes.size())));
      out.push_back(json("adamw8bit_list_ms", ms));
      out.push_back(json("adamw8bit_list_over_single", ms / singleMs));
      out.push_back(json("list_state_bytes_per_param", double(opt.stateBytes()) / double(n)));
    }
    std::string line = "{\"device\": \"" + ctx.deviceName() + "\"";
    for (const std::string &s : out)
      line += ", " + s;
    std::printf("%s}\n", line.c_str());
    return 0;
  } catch (const Error &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
