//===- SimulatorChecks.h - checks shared by the simulator tests -*- C++ -*-===//

#ifndef SOAP_TEST_UNIT_SIMULATORCHECKS_H
#define SOAP_TEST_UNIT_SIMULATORCHECKS_H

#include "soap/cost/CostModel.h"
#include "soap/graph/OpGraph.h"
#include "soap/machine/Machine.h"

#include <cstdint>

namespace soap::test {

/// `changes` random config changes of `g` on `machine` (from data
/// parallelism, seeded by `seed`), each simulated incrementally and from
/// scratch: the two reports are equal, and undoing a change restores the
/// strategy. With `profile`, the cost model prices from it.
void checkDeltaEqualsFull(const OpGraph &g, const Machine &machine, int changes,
                          uint64_t seed, bool training,
                          const ProfileDatabase *profile = nullptr);

} // namespace soap::test

#endif // SOAP_TEST_UNIT_SIMULATORCHECKS_H
