//===- AtomicFile.h - write a file so that readers never see half of it -===//

#ifndef SOAP_SUPPORT_ATOMICFILE_H
#define SOAP_SUPPORT_ATOMICFILE_H

#include <string>

namespace soap {

/// Writes `text` (and a final newline) to a temporary file beside `path`,
/// then renames it over `path`: a crash mid-write leaves the old file, never
/// a truncated one. Returns false with `error` naming the file on failure.
bool writeFileAtomically(const std::string &path, const std::string &text,
                         std::string &error);

} // namespace soap

#endif // SOAP_SUPPORT_ATOMICFILE_H
