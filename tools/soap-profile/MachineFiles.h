//===- MachineFiles.h - find machine descriptions by name -------*- C++ -*-===//

#ifndef SOAP_TOOLS_PROFILE_MACHINEFILES_H
#define SOAP_TOOLS_PROFILE_MACHINEFILES_H

#include <string>

namespace soap::profile {

/// The path of machine `name`: a file, else a file of SOAP's machines/
/// folder (source tree or installed) with or without ".json". Empty, with
/// `error` naming the machine and where it was looked for, when none.
std::string resolveMachinePath(const std::string &name, std::string &error);

} // namespace soap::profile

#endif // SOAP_TOOLS_PROFILE_MACHINEFILES_H
