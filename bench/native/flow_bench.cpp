// Native benchmark of the attnflow core's exact attention flow (issue 4 cases).
//
// Build (Release, -O3; links the core library):
//   cmake -S . -B build/flow && cmake --build build/flow --target flow_bench -j2
//   (the root CMakeLists.txt adds it with add_subdirectory(bench/native) for native builds), or
//   g++ -O3 -DNDEBUG -std=c++17 -Isrc -I/usr/include/eigen3 bench/native/flow_bench.cpp
//       src/attnflow/*.cpp -o flow_bench   (one line)
//
// Usage:
//   flow_bench [--json] [--only id,id] [--reference] [--verify K]
//       Runs the issue-4 cases on the synthetic inputs of bench/synthetic.mjs (spec version 1,
//       seed 1; generator in synthetic.hpp) with ids as in bench/run.mjs: row-L12-n128,
//       last-L12-n128, all-L12-n32, row-L24-n256, all-L12-n128, each also with -a1 (alpha = 1)
//       and -causal. One target row is row 0 for an encoder, row n-1 for a causal input.
//       Prints a table (or, with --json, one JSON line per case and implementation) with the
//       median seconds of the compute alone (fusion and input generation excluded).
//       --reference also times the plain Dinic reference on one-row cases.
//       --verify K (default 32) checks K random pairs per case against one plain Dinic each.
//   flow_bench --npy FILE [--alpha A] [--layers last|all|1,4] [--rows one|all|0,5] [--causal]
//       Reads an [L][H][n][n] float32 little-endian .npy (as bench/run.mjs writes), fuses heads by
//       mean, mixes the residual, times the flow computation and prints one JSON line
//       {"seconds": median, "runs": [...], "pairs": ...}. --causal only picks the default row.
//   flow_bench --npy FILE ... --serve
//       The same computation on request, for measurements paired with the WASM build's
//       (bench/run.mjs): prints {"ready": true}, then for each line K read from stdin runs it K
//       times and prints {"ms": median of the K}; ends at end of input.
//
// Timing: one warm-up run, then 3 runs if it took over 1 s, none over 10 s, else as many as fit
// in about half a second (5 to 51, odd); median. The same rule as bench/run.mjs.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "attnflow/attention_flow.hpp"
#include "synthetic.hpp"

namespace {

using attnflow::LayerStack;
using attnflow::Matrix;

struct Timing {
  double seconds;
  std::vector<double> runs;
};

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Timing timeRepeated(const std::function<void()>& body) {
  double start = now();
  body();
  const double warm = now() - start;
  if (warm > 10.0) return {warm, {warm}};
  const int repeats = warm > 1.0 ? 3 : 2 * static_cast<int>(std::clamp(0.25 / warm, 2.0, 25.0)) + 1;
  std::vector<double> runs;
  for (int k = 0; k < repeats; ++k) {
    start = now();
    body();
    runs.push_back(now() - start);
  }
  std::vector<double> sorted = runs;
  std::sort(sorted.begin(), sorted.end());
  return {sorted[sorted.size() / 2], runs};
}

// As the WASM binding computes for a session: the solver of the last layer solved is kept in
// `cache` between calls.
std::vector<Matrix> compute(const LayerStack& A, const std::vector<int>& layers,
                            const std::vector<int>& rows, attnflow::FlowSolverCache& cache) {
  return attnflow::attentionFlowLayers(A, layers, rows, {}, {}, {}, &cache);
}

std::string runsJson(const std::vector<double>& runs) {
  std::ostringstream out;
  out << "[";
  for (std::size_t k = 0; k < runs.size(); ++k) out << (k ? "," : "") << runs[k];
  out << "]";
  return out.str();
}

// Largest |fast - plain Dinic| over `count` random pairs (seeded, so repeatable).
double verify(const LayerStack& A, const std::vector<int>& layers, const std::vector<int>& rows,
              const std::vector<Matrix>& result, int count) {
  std::mt19937 gen(12345);
  const int n = static_cast<int>(A[0].rows());
  double worst = 0.0;
  for (int k = 0; k < count; ++k) {
    const auto li = static_cast<std::size_t>(gen() % layers.size());
    const auto ri = static_cast<std::size_t>(gen() % rows.size());
    const int token = static_cast<int>(gen() % static_cast<unsigned>(n));
    const double ref = attnflow::flowBottleneck(A, layers[li], rows[ri], token).value;
    worst = std::max(worst, std::abs(ref - result[li](static_cast<Eigen::Index>(ri), token)));
  }
  return worst;
}

struct Case {
  std::string id;
  std::string what;
  attnflow::synthetic::Shape shape;
  bool allLayers;
  bool allRows;
  double targetMs;  // WASM target of issue 4 (0 = none)
  double alpha;
};

std::vector<Case> cases() {
  struct Base {
    const char* id;
    const char* what;
    int layers, heads, tokens;
    bool allLayers, allRows;
    double targetMs;
  };
  const Base bases[] = {
      {"row-L12-n128", "one target row, L=12,H=12,n=128", 12, 12, 128, false, false, 10},
      {"last-L12-n128", "every row of the last layer, L=12,H=12,n=128", 12, 12, 128, false, true,
       100},
      {"all-L12-n32", "every row of every layer, L=12,H=12,n=32", 12, 12, 32, true, true, 100},
      {"row-L24-n256", "one target row, L=24,H=16,n=256", 24, 16, 256, false, false, 100},
      {"all-L12-n128", "every row of every layer, L=12,H=12,n=128", 12, 12, 128, true, true,
       3000},
  };
  std::vector<Case> out;
  for (const Base& b : bases) {
    const attnflow::synthetic::Shape shape{b.layers, b.heads, b.tokens, 1, false};
    attnflow::synthetic::Shape causal = shape;
    causal.causal = true;
    out.push_back({b.id, b.what, shape, b.allLayers, b.allRows, b.targetMs, 0.5});
    out.push_back({std::string(b.id) + "-a1", std::string(b.what) + ", alpha=1", shape,
                   b.allLayers, b.allRows, 0, 1.0});
    out.push_back({std::string(b.id) + "-causal", std::string(b.what) + ", causal", causal,
                   b.allLayers, b.allRows, 0, 0.5});
  }
  return out;
}

std::vector<int> parseList(const std::string& text, int n, int oneDefault, bool layers) {
  std::vector<int> out;
  if (text == "all") {
    for (int k = 0; k < n; ++k) out.push_back(layers ? k + 1 : k);
  } else if (text == "last") {
    out.push_back(n);
  } else if (text == "one") {
    out.push_back(oneDefault);
  } else {
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) out.push_back(std::atoi(item.c_str()));
  }
  return out;
}

// A little-endian float32 C-order .npy of shape [L][H][n][n] -> residual-mixed stack.
LayerStack readNpy(const std::string& path, double alpha) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw std::runtime_error("cannot open " + path);
  char magic[10];
  file.read(magic, 10);
  if (std::memcmp(magic, "\x93NUMPY", 6) != 0) throw std::runtime_error("not a .npy file");
  std::size_t headerLength = static_cast<unsigned char>(magic[8]) |
                             (static_cast<std::size_t>(static_cast<unsigned char>(magic[9])) << 8);
  if (magic[6] != 1) {  // version 2/3: 4-byte header length
    char more[2];
    file.read(more, 2);
    headerLength |= (static_cast<std::size_t>(static_cast<unsigned char>(more[0])) << 16) |
                    (static_cast<std::size_t>(static_cast<unsigned char>(more[1])) << 24);
  }
  std::string header(headerLength, '\0');
  file.read(&header[0], static_cast<std::streamsize>(headerLength));
  if (header.find("'<f4'") == std::string::npos || header.find("'fortran_order': False") ==
                                                        std::string::npos) {
    throw std::runtime_error("expected a little-endian float32 C-order array");
  }
  const std::size_t open = header.find('(', header.find("'shape'"));
  const std::size_t close = header.find(')', open);
  std::vector<int> shape;
  std::stringstream dims(header.substr(open + 1, close - open - 1));
  std::string item;
  while (std::getline(dims, item, ',')) {
    if (item.find_first_not_of(' ') != std::string::npos) shape.push_back(std::atoi(item.c_str()));
  }
  if (shape.size() != 4 || shape[2] != shape[3]) throw std::runtime_error("expected [L][H][n][n]");
  const int L = shape[0], H = shape[1], n = shape[2];
  std::vector<float> layer(static_cast<std::size_t>(H) * static_cast<std::size_t>(n) *
                           static_cast<std::size_t>(n));
  LayerStack stack;
  for (int l = 0; l < L; ++l) {
    file.read(reinterpret_cast<char*>(layer.data()),
              static_cast<std::streamsize>(layer.size() * sizeof(float)));
    if (!file) throw std::runtime_error("truncated .npy");
    Matrix sum = Matrix::Zero(n, n);
    for (int h = 0; h < H; ++h) {
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < n; ++j) {
          sum(i, j) += static_cast<double>(
              layer[(static_cast<std::size_t>(h) * static_cast<std::size_t>(n) +
                     static_cast<std::size_t>(i)) * static_cast<std::size_t>(n) +
                    static_cast<std::size_t>(j)]);
        }
      }
    }
    stack.push_back(attnflow::synthetic::mixLayer(sum, alpha));
  }
  return stack;
}

int runNpy(int argc, char** argv) {
  std::string path, layersArg = "last", rowsArg = "one";
  double alpha = 0.5;
  bool causal = false, serve = false;
  for (int k = 1; k < argc; ++k) {
    const std::string arg = argv[k];
    auto value = [&]() { return k + 1 < argc ? std::string(argv[++k]) : std::string(); };
    if (arg == "--npy") path = value();
    else if (arg == "--alpha") alpha = std::atof(value().c_str());
    else if (arg == "--layers") layersArg = value();
    else if (arg == "--rows") rowsArg = value();
    else if (arg == "--causal") causal = true;
    else if (arg == "--serve") serve = true;
  }
  const LayerStack A = readNpy(path, alpha);
  const int n = static_cast<int>(A[0].rows());
  const std::vector<int> layers =
      parseList(layersArg, static_cast<int>(A.size()), static_cast<int>(A.size()), true);
  const std::vector<int> rows = parseList(rowsArg, n, causal ? n - 1 : 0, false);
  attnflow::FlowSolverCache cache;
  if (serve) {
    compute(A, layers, rows, cache);  // warm, as the WASM side is before its pairs
    std::printf("{\"ready\": true}\n");
    std::fflush(stdout);
    std::string line;
    while (std::getline(std::cin, line)) {
      const int calls = std::max(1, std::atoi(line.c_str()));
      std::vector<double> ms;
      for (int k = 0; k < calls; ++k) {
        const double start = now();
        compute(A, layers, rows, cache);
        ms.push_back((now() - start) * 1000.0);
      }
      std::sort(ms.begin(), ms.end());
      std::printf("{\"ms\": %.6g}\n", ms[ms.size() / 2]);
      std::fflush(stdout);
    }
    return 0;
  }
  const Timing t = timeRepeated([&] { compute(A, layers, rows, cache); });
  std::printf("{\"seconds\": %.6g, \"runs\": %s, \"pairs\": %zu}\n", t.seconds,
              runsJson(t.runs).c_str(), layers.size() * rows.size() * static_cast<std::size_t>(n));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    bool json = false, reference = false;
    int verifyCount = 32;
    std::set<std::string> only;
    for (int k = 1; k < argc; ++k) {
      const std::string arg = argv[k];
      if (arg == "--npy") return runNpy(argc, argv);
      if (arg == "--json") json = true;
      if (arg == "--reference") reference = true;
      if (arg == "--verify" && k + 1 < argc) verifyCount = std::atoi(argv[++k]);
      if (arg == "--only" && k + 1 < argc) {
        std::stringstream in(argv[++k]);
        std::string id;
        while (std::getline(in, id, ',')) only.insert(id);
      }
    }
    if (!json) {
      std::printf("%-22s %10s %12s %10s %12s %s\n", "case", "pairs", "fast (s)", "target", "max|diff|",
                  "reference (s)");
    }
    for (const Case& c : cases()) {
      if (!only.empty() && !only.count(c.id)) continue;
      const LayerStack A = attnflow::synthetic::mixedStack(c.shape, c.alpha);
      const int n = c.shape.tokens;
      const std::vector<int> layers =
          c.allLayers ? parseList("all", c.shape.layers, 0, true) : std::vector<int>{c.shape.layers};
      const std::vector<int> rows =
          c.allRows ? parseList("all", n, 0, false) : std::vector<int>{c.shape.causal ? n - 1 : 0};
      const std::size_t pairs = layers.size() * rows.size() * static_cast<std::size_t>(n);
      std::vector<Matrix> result;
      attnflow::FlowSolverCache cache;
      const Timing fast = timeRepeated([&] { result = compute(A, layers, rows, cache); });
      const double diff = verifyCount > 0 ? verify(A, layers, rows, result, verifyCount) : -1.0;
      double refSeconds = -1.0;
      if (reference && !c.allRows && !c.allLayers) {
        const double start = now();
        const Matrix ref = attnflow::attentionFlowReference(A, layers[0], rows);
        refSeconds = now() - start;
      }
      if (json) {
        std::printf("{\"case\": \"%s\", \"what\": \"%s\", \"impl\": \"attnflow-native\", "
                    "\"seconds\": %.6g, \"runs\": %s, \"pairs_total\": %zu, "
                    "\"verified_pairs\": %d, \"max_abs_diff_vs_dinic\": %.3g",
                    c.id.c_str(), c.what.c_str(), fast.seconds, runsJson(fast.runs).c_str(), pairs,
                    verifyCount, diff);
        if (c.targetMs > 0) std::printf(", \"target_wasm_seconds\": %g", c.targetMs / 1000);
        std::printf("}\n");
        if (refSeconds >= 0) {
          std::printf("{\"case\": \"%s\", \"impl\": \"attnflow-native-reference-dinic\", "
                      "\"seconds\": %.6g, \"pairs_total\": %zu}\n",
                      c.id.c_str(), refSeconds, pairs);
        }
      } else {
        char target[32] = "";
        if (c.targetMs > 0) std::snprintf(target, sizeof target, "%.3g", c.targetMs / 1000);
        char ref[32] = "";
        if (refSeconds >= 0) std::snprintf(ref, sizeof ref, "%.3f", refSeconds);
        std::printf("%-22s %10zu %12.4f %10s %12.2g %s\n", c.id.c_str(), pairs, fast.seconds,
                    target, diff, ref);
      }
      std::fflush(stdout);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flow_bench: %s\n", e.what());
    return 2;
  }
}
