//===- AtomicFile.cpp - write a file so that readers never see half of it -===//

#include "soap/support/AtomicFile.h"

#include <cstdio>
#include <fstream>

namespace soap {

bool writeFileAtomically(const std::string &path, const std::string &text,
                         std::string &error) {
  std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text << '\n';
    out.flush();
    if (!out) {
      error = "cannot write '" + path + "'";
      std::remove(temporary.c_str());
      return false;
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    error = "cannot write '" + path + "' (renaming '" + temporary + "' failed)";
    std::remove(temporary.c_str());
    return false;
  }
  return true;
}

} // namespace soap
