// autotune_softmax: the autotuner as it exists today, end to end from C++.
// A config space over softmax's BLOCK and num_warps, keyed on the row length;
// tessera::tune compiles the configs on a thread pool, checks every candidate
// against the first, times them (tessera::benchmark) and returns the record;
// the tuning cache keeps it, and a second lookup of the same key finds it
// without tuning. Runs on the GPU, or in the CPU interpreter
// (TESSERA_INTERPRET=1; the times are then host times).
//
//   example_autotune_softmax [rows cols]
#include <tessera/Autotune.h>
#include <tessera/AutotuneRunner.h>
#include <tessera/tessera.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  const int32_t rows = argc > 2 ? std::atoi(argv[1]) : 64, cols = argc > 2 ? std::atoi(argv[2]) : 1000;
  const std::string file = std::string(TESSERA_SOURCE_DIR) + "/kernels_dsl/basics/softmax.tile";
  try {
    tessera::Context ctx = tessera::Context::gpuOrInterpreter();
    std::vector<float> hx(size_t(rows) * size_t(cols));
    for (size_t i = 0; i < hx.size(); ++i)
      hx[i] = float(i % 17) * 0.25f - 2.0f;
    auto x = ctx.upload(hx);
    auto y = ctx.alloc<float>(hx.size());

    // The space: BLOCK must cover a row; more warps for wider blocks.
    tessera::ConfigSpace space;
    for (int64_t block : {1024, 2048, 4096})
      for (int warps : {4, 8})
        space.add(tessera::Config{}.set("BLOCK", block).warps(warps));
    space.key("n_cols", tessera::Bucketing::pow2());
    space.prune = [&](const tessera::Config &c) {
      return std::get<int64_t>(c.constexprs.at("BLOCK")) >= cols;
    };

    tessera::TuneTask task;
    task.compile = [&](const tessera::Config &c) {
      tessera::JitOptions o;
      std::map<std::string, tessera::ConstexprValue> cx;
      c.applyTo(o, cx);
      return tessera::compile(ctx, file, "softmax", cx, o);
    };
    task.launch = [&](tessera::Kernel &k, const tessera::Config &) {
      k.launch(ctx.stream(), tessera::Grid::of(rows), x.ptr(), y.ptr(), cols, cols, cols);
    };
    task.outputs = {{&y.memory(), tessera::ScalarType::f32}};
    task.tolerance = 1e-5;

    // The key: this device, compiler, source, options and space, and the bucketed row length.
    tessera::CompileResult front = tessera::compileFile(file, "softmax");
    if (!front.ok) {
      std::cerr << front.diagnostics;
      return 1;
    }
    tessera::TuningKey key = tessera::TuningKey::make(ctx.device(), "softmax", front.sources, {},
                                                      space, {{"n_cols", cols}});
    // A private cache directory, so that the example tunes every time it runs.
    std::string dir = (std::filesystem::temp_directory_path() /
                       ("tessera-example-tuning-" + std::to_string(::getpid())))
                          .string();
    tessera::TuningCache cache(dir);

    tessera::TuneOptions options;
    options.timing.repeats = 5;
    tessera::TuningRecord record = tessera::tune(ctx, space, task, options);
    for (const tessera::CandidateResult &c : record.candidates)
      std::cout << "  " << c.config.str() << ": "
                << (c.skipped() ? c.skipReason : std::to_string(*c.timeMs) + " ms") << "\n";
    std::cout << "best for n_cols=" << cols << " on " << ctx.deviceName() << ": "
              << record.best.str() << "\n";
    cache.store(key, record);
    std::shared_ptr<const tessera::TuningRecord> again = cache.lookup(key);
    std::filesystem::remove_all(dir);

    // tune() leaves the buffers as they were: launch the winner, whose output
    // is softmax, so each row sums to 1.
    tessera::Kernel best = task.compile(record.best);
    task.launch(best, record.best);
    ctx.synchronize();
    std::vector<float> hy(hx.size());
    y.copyToHost(hy.data(), hy.size());
    double worst = 0;
    for (int32_t r = 0; r < rows; ++r) {
      double s = 0;
      for (int32_t c = 0; c < cols; ++c)
        s += hy[size_t(r) * size_t(cols) + size_t(c)];
      worst = std::max(worst, std::fabs(s - 1.0));
    }
    bool ok = again && again->best == record.best && worst < 1e-4 &&
              !record.bestCandidate()->skipped();
    std::cout << "cache lookup " << (again ? "found the tuning" : "MISSED")
              << ", worst row sum error " << worst << ": " << (ok ? "ok" : "FAILED") << "\n";
    return ok ? 0 : 1;
  } catch (const tessera::Error &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
