//===- TestMachines.h - machine files for unit tests ------------*- C++ -*-===//

#ifndef SOAP_TEST_UNIT_TESTMACHINES_H
#define SOAP_TEST_UNIT_TESTMACHINES_H

#include "soap/machine/Machine.h"

#include <gtest/gtest.h>

namespace soap::test {

/// machines/NAME.json from the source tree, restricted to `devices`.
inline Machine loadMachine(const std::string &name, int devices) {
  std::string error;
  std::optional<Machine> machine = Machine::load(
      std::string(SOAP_SOURCE_DIR) + "/machines/" + name + ".json", error);
  EXPECT_TRUE(machine) << error;
  if (machine && devices != machine->numDevices())
    machine = machine->withDevices(devices, error);
  EXPECT_TRUE(machine) << error;
  return *machine;
}

} // namespace soap::test

#endif // SOAP_TEST_UNIT_TESTMACHINES_H
