//===- MachineFiles.cpp - find machine descriptions by name ---------------===//

#include "MachineFiles.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace soap::profile {

std::string resolveMachinePath(const std::string &name, std::string &error) {
  if (name.empty()) {
    error = "no machine given";
    return "";
  }
  if (llvm::sys::fs::is_regular_file(name))
    return name;
  if (name.find('/') == std::string::npos)
    for (const char *dir : {SOAP_MACHINES_DIR, SOAP_INSTALLED_MACHINES_DIR})
      for (const std::string &file : {name, name + ".json"}) {
        llvm::SmallString<256> path(dir);
        llvm::sys::path::append(path, file);
        if (llvm::sys::fs::is_regular_file(path))
          return std::string(path);
      }
  error = "machine '" + name + "' not found (not a file, nor a name in " +
          SOAP_MACHINES_DIR + ")";
  return "";
}

} // namespace soap::profile
