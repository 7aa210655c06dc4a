//===- CalibrationMath.h - statistics and formats of calibrations -*- C++ -*-===//
//
// What the CPU (--mpi) and GPU (--device gpu --calibrate) calibrations
// share: medians, message sizes, the alpha-beta fit of transfer times, and
// how numbers are printed and rounded into machine files.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_TOOLS_PROFILE_CALIBRATIONMATH_H
#define SOAP_TOOLS_PROFILE_CALIBRATIONMATH_H

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace soap::profile {

/// The median; 0 for no values.
double median(std::vector<double> values);

/// Message sizes from `lo` to `hi`, each `factor` times the previous one
/// (`hi` always included).
std::vector<int64_t> messageSizes(int64_t lo, int64_t hi, int factor);

/// t = alpha + bytes / beta, least squares on relative errors (so small
/// messages fit the latency and large ones the bandwidth).
struct AlphaBeta {
  double alpha = 0;      ///< seconds
  double beta = 0;       ///< bytes/s
  double worstError = 0; ///< largest |fit - measured| / measured
};
/// The fit of (bytes, seconds) points; nothing when they do not determine
/// a positive bandwidth.
std::optional<AlphaBeta>
fitAlphaBeta(const std::vector<std::pair<int64_t, double>> &points);

/// "64 MiB", "4 KiB", "12 B".
std::string formatBytes(int64_t bytes);
/// "12.5 ns", "3.21 us", "1.234 ms".
std::string formatTime(double seconds);
/// Today's date, YYYY-MM-DD.
std::string today();
/// `x` to four significant digits: what the measurements support, and
/// readable in a machine file.
double roundToFourDigits(double x);

} // namespace soap::profile

#endif // SOAP_TOOLS_PROFILE_CALIBRATIONMATH_H
