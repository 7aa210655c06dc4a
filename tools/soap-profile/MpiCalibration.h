//===- MpiCalibration.h - calibrate cpu-local.json under mpirun -*- C++ -*-===//
//
// `mpirun -np N soap-profile --mpi`: measures point-to-point latency and
// bandwidth between the ranks (ping-pong, fitted as alpha + bytes / beta),
// MPI_Allreduce times (compared with the machine model's prediction), and on
// rank 0 the device numbers of one core (HostBenchmarks.h); writes them into
// a machine file of N devices on one node.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_TOOLS_PROFILE_MPICALIBRATION_H
#define SOAP_TOOLS_PROFILE_MPICALIBRATION_H

#include "HostBenchmarks.h"

#include <cstdint>
#include <string>

namespace soap::profile {

struct MpiCalibrationOptions {
  /// The machine file to start from (a path or a name in machines/).
  std::string base = "cpu-local";
  /// Where to write; empty: over the base file.
  std::string output;
  int64_t minMessageBytes = 8;
  int64_t maxMessageBytes = int64_t(64) << 20;
  HostBenchmarkOptions host;
  bool quiet = false; ///< no tables, only the summary
};

/// Runs the calibration on every rank (MPI_Init to MPI_Finalize) and
/// returns the process exit code. Every MPI call is checked: a failure
/// names the call and the rank and ends all ranks with a nonzero code.
/// Kernels compile in `context`.
int runMpiCalibration(int *argc, char ***argv, mlir::MLIRContext &context,
                      const MpiCalibrationOptions &options);

} // namespace soap::profile

#endif // SOAP_TOOLS_PROFILE_MPICALIBRATION_H
