//===- HostProbe.cpp - wait until this host runs at its usual speed ------===//
//
// soap-host-probe: times a fixed piece of work on one core (an f32 GEMM
// through OpenBLAS and a STREAM triad) and compares it with the fastest
// time this host gave before (kept in a state file). A virtual machine's
// host may slow it down for seconds or minutes at a time (other tenants'
// work on the same cores and memory); the simulator models the machine as
// calibrated, so bench/validate.sh measures (and soap-profile --run times
// kernels, through --before-run) only once the probe finds the host within
// a tolerance of its fastest, waiting up to a limit. Each probe appends a
// line to a log for the report.
//
//   soap-host-probe --state FILE [--threads N] [--wait SECONDS]
//                   [--tolerance FRACTION] [--log FILE]
//
// With --threads N, each sample runs the work on N cores at once (the
// slowest's time): the state of the cores a run on N ranks takes. Keep one
// state file per N.
//
// Exits 0 when the host was quiet or the wait ran out (the log says
// which), 2 on a usage error.
//
//===----------------------------------------------------------------------===//

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

double seconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// The fixed work of one core: a 256^3 f32 GEMM, then a triad over 16 MB
/// arrays (compute and memory bandwidth, the two that other tenants take).
struct Work {
  static constexpr int n = 256;
  static constexpr size_t m = size_t(4) << 20;
  std::vector<float> a = std::vector<float>(n * n, 0.5f),
                     b = std::vector<float>(n * n, 0.25f),
                     c = std::vector<float>(n * n);
  std::vector<float> x = std::vector<float>(m, 1.0f),
                     y = std::vector<float>(m, 2.0f), z = std::vector<float>(m);

  double runMs() {
    double t0 = seconds();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
                a.data(), n, b.data(), n, 0.0f, c.data(), n);
    for (size_t i = 0; i < m; ++i)
      z[i] = x[i] + 3.0f * y[i];
    return (seconds() - t0) * 1e3;
  }
};

/// One probe: the median of several samples, each the work on `threads`
/// cores at once (the slowest's time), in milliseconds.
double probeMs(std::vector<std::unique_ptr<Work>> &work) {
  // A sample first, untimed: OpenBLAS's first call and the arrays' first
  // pass into the caches are no part of the host's speed.
  std::vector<double> samples;
  for (int s = -1; s < 7; ++s) {
    std::vector<double> ms(work.size());
    std::vector<std::thread> others;
    for (size_t t = 1; t < work.size(); ++t)
      others.emplace_back([&, t] { ms[t] = work[t]->runMs(); });
    ms[0] = work[0]->runMs();
    for (std::thread &other : others)
      other.join();
    if (s >= 0)
      samples.push_back(*std::max_element(ms.begin(), ms.end()));
  }
  std::sort(samples.begin(), samples.end());
  // Keep the work observable.
  if (work[0]->c[7] + work[0]->z[11] < 0)
    std::printf("%f\n", work[0]->c[7] + work[0]->z[11]);
  return samples[samples.size() / 2];
}

[[noreturn]] void usage(const char *message) {
  std::fprintf(stderr,
               "soap-host-probe: %s\nusage: soap-host-probe --state FILE "
               "[--threads N] [--wait SECONDS] [--tolerance FRACTION] [--log "
               "FILE]\n",
               message);
  std::exit(2);
}

double number(const char *flag, const char *text) {
  char *end = nullptr;
  double value = std::strtod(text, &end);
  if (!end || *end || value < 0)
    usage((std::string(flag) + " needs a number >= 0, got '" + text + "'")
              .c_str());
  return value;
}

} // namespace

int main(int argc, char **argv) {
  std::string state, log;
  double wait = 20, tolerance = 0.15, threads = 1;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc)
      usage(("missing value after " + arg).c_str());
    const char *value = argv[++i];
    if (arg == "--state")
      state = value;
    else if (arg == "--log")
      log = value;
    else if (arg == "--wait")
      wait = number("--wait", value);
    else if (arg == "--threads")
      threads = number("--threads", value);
    else if (arg == "--tolerance")
      tolerance = number("--tolerance", value);
    else
      usage(("unknown option " + arg).c_str());
  }
  if (state.empty())
    usage("--state FILE is required");
  if (threads < 1 || threads > 64 || threads != static_cast<int>(threads))
    usage("--threads needs a whole number from 1 to 64");
  std::vector<std::unique_ptr<Work>> work;
  for (int t = 0; t < static_cast<int>(threads); ++t)
    work.push_back(std::make_unique<Work>());

  double best = 0;
  if (std::ifstream in(state); in)
    in >> best;
  double start = seconds(), probe = 0;
  bool quiet = false;
  int probes = 0;
  for (;;) {
    probe = probeMs(work);
    ++probes;
    if (best <= 0 || probe < best)
      best = probe;
    quiet = probe <= best * (1 + tolerance);
    if (quiet || seconds() - start >= wait)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  if (std::ofstream out(state); out)
    out << best << "\n";
  char line[160];
  std::snprintf(line, sizeof line,
                "probe_ms=%.3f best_ms=%.3f waited_s=%.1f probes=%d quiet=%d "
                "threads=%d\n",
                probe, best, seconds() - start, probes, quiet ? 1 : 0,
                static_cast<int>(threads));
  if (!log.empty()) {
    if (std::ofstream out(log, std::ios::app); out)
      out << line;
  } else {
    std::fputs(line, stdout);
  }
  return 0;
}
