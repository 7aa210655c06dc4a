//===- CalibrationMath.cpp - statistics and formats of calibrations -------===//

#include "CalibrationMath.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <ctime>

namespace soap::profile {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  if (n == 0)
    return 0;
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::vector<int64_t> messageSizes(int64_t lo, int64_t hi, int factor) {
  std::vector<int64_t> sizes;
  for (int64_t s = lo; s < hi; s *= factor)
    sizes.push_back(s);
  sizes.push_back(hi);
  return sizes;
}

std::optional<AlphaBeta>
fitAlphaBeta(const std::vector<std::pair<int64_t, double>> &points) {
  double s0 = 0, s1 = 0, s2 = 0, t0 = 0, t1 = 0;
  for (auto [bytes, time] : points) {
    if (time <= 0)
      continue;
    double w = 1 / (time * time), b = static_cast<double>(bytes);
    s0 += w;
    s1 += w * b;
    s2 += w * b * b;
    t0 += w * time;
    t1 += w * b * time;
  }
  double det = s0 * s2 - s1 * s1;
  if (det <= 0)
    return std::nullopt;
  double alpha = (t0 * s2 - s1 * t1) / det;
  double gamma = (s0 * t1 - s1 * t0) / det;
  if (alpha < 0) { // no latency to speak of: fit the slope alone
    alpha = 0;
    gamma = t1 / s2;
  }
  if (gamma <= 0)
    return std::nullopt;
  AlphaBeta fit{alpha, 1 / gamma, 0};
  for (auto [bytes, time] : points)
    if (time > 0)
      fit.worstError = std::max(fit.worstError,
                                std::fabs(alpha + bytes * gamma - time) / time);
  return fit;
}

std::string formatBytes(int64_t bytes) {
  if (bytes >= (int64_t(1) << 20) && bytes % (int64_t(1) << 20) == 0)
    return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0)
    return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

std::string formatTime(double seconds) {
  if (seconds < 1e-6)
    return llvm::formatv("{0:F1} ns", seconds * 1e9).str();
  return seconds < 1e-3 ? llvm::formatv("{0:F2} us", seconds * 1e6).str()
                        : llvm::formatv("{0:F3} ms", seconds * 1e3).str();
}

std::string today() {
  std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d", std::localtime(&now));
  return text;
}

double roundToFourDigits(double x) {
  if (x <= 0)
    return x;
  double scale = std::pow(10.0, std::floor(std::log10(x)) - 3);
  return std::round(x / scale) * scale;
}

} // namespace soap::profile
