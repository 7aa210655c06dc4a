//===- FileIO.h - whole-file reads and crash-safe writes ------*- C++ -*-===//

#ifndef SOAP_RUNTIME_FILEIO_H
#define SOAP_RUNTIME_FILEIO_H

#include <string>

namespace soaprt {

/// Writes `bytes` to a temporary file beside `path`, flushes it to disk
/// (fsync), renames it over `path` and syncs the folder: a crash at any
/// point leaves either the old file or the new one, never a mix. Returns
/// false with `error` naming the file and the cause.
bool writeFileAtomically(const std::string &path, const std::string &bytes,
                         std::string &error);

/// Reads all of `path` into `bytes`, or returns false with `error`.
bool readFile(const std::string &path, std::string &bytes, std::string &error);

} // namespace soaprt

#endif // SOAP_RUNTIME_FILEIO_H
