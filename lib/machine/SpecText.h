//===- SpecText.h - how machine-file messages name fields and numbers -----===//
//
// Shared by checking (MachineSpec.cpp) and reading and writing
// (MachineSpecJson.cpp) machine files.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_LIB_MACHINE_SPECTEXT_H
#define SOAP_LIB_MACHINE_SPECTEXT_H

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

/// Internal to lib/machine: generic names kept out of namespace soap.
namespace soap::spec_text {

/// Shortest decimal form that reads back as the same double.
inline std::string formatNumber(double value) {
  char buffer[64];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  return buffer;
}

inline std::string joined(const std::vector<std::string> &names,
                          const char *separator) {
  std::string out;
  for (const std::string &name : names) {
    if (!out.empty())
      out += separator;
    out += name;
  }
  return out;
}

inline std::string fieldName(const std::string &path) {
  return "'" + path + "'";
}

inline std::string childPath(const std::string &parent,
                             const std::string &key) {
  return parent.empty() ? key : parent + "." + key;
}

} // namespace soap::spec_text

#endif // SOAP_LIB_MACHINE_SPECTEXT_H
