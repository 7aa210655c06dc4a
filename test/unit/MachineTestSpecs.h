//===- MachineTestSpecs.h - small machines with round numbers ------------===//
//
// Links of 10 GB/s and 1 us inside a node, NICs of 5 GB/s and 4 us (one
// way) between nodes, so every expected time in MachineTest.cpp can be
// checked by hand against the formulas of docs/machines.md.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_TEST_UNIT_MACHINETESTSPECS_H
#define SOAP_TEST_UNIT_MACHINETESTSPECS_H

#include "soap/machine/Machine.h"

namespace soap::testing {

inline constexpr double kIntraBandwidth = 10e9;
inline constexpr double kIntraLatency = 1e-6;
inline constexpr double kNicBandwidth = 5e9;
inline constexpr double kNicLatency = 4e-6;

inline MachineSpec clusterSpec(IntraNodeTopology topology, int nodes,
                               int devicesPerNode, int nicsPerNode = 1) {
  MachineSpec spec;
  spec.name = "test";
  DeviceType gpu;
  gpu.name = "G";
  gpu.peakFlops = {{"f32", 1e12}, {"f16", 4e12}};
  gpu.memoryBandwidth = 1e11;
  gpu.memoryBytes = int64_t(1) << 30;
  gpu.launchOverhead = 5e-6;
  gpu.efficiency = {{"matmul", 0.5}};
  spec.deviceTypes["G"] = gpu;
  spec.deviceType = "G";
  spec.nodes = nodes;
  spec.devicesPerNode = devicesPerNode;
  spec.intraNode = IntraNodeSpec{topology, kIntraBandwidth, kIntraLatency};
  if (nodes > 1)
    spec.interNode = InterNodeSpec{nicsPerNode, kNicBandwidth, kNicLatency};
  return spec;
}

} // namespace soap::testing

#endif // SOAP_TEST_UNIT_MACHINETESTSPECS_H
