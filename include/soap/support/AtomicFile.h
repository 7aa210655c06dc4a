//===- AtomicFile.h - write a file so that readers never see half of it -===//

#ifndef SOAP_SUPPORT_ATOMICFILE_H
#define SOAP_SUPPORT_ATOMICFILE_H

#include <string>

namespace soap {

/// Writes `bytes` (exactly) to `path` so that no reader sees half of it and
/// no crash leaves half of it:
/// - a regular file (or a missing one) is written to `path.tmp.<pid>`,
///   flushed to disk, renamed over `path` (with `mode` when it is given,
///   else the old file's mode, 0644 for a new one), and the folder synced; temporaries of `path` whose writer died (`kill -9` mid-write)
///   are removed first;
/// - a symbolic link is followed: its target is replaced, the link stays;
/// - a device node, FIFO or socket (`/dev/null`, `/dev/stdout`) is written
///   in place, never replaced;
/// - every write, flush and close is checked (a full disk is an error).
/// Returns false with `error` naming the file and the cause.
bool writeFileAtomically(const std::string &path, const std::string &bytes,
                         std::string &error, int mode = -1);

/// Whether writeFileAtomically(path, ...) can be expected to succeed (the
/// device is writable, or the folder that gets the temporary is): a tool
/// that measures for minutes checks its output first. False with `error`.
bool checkWritable(const std::string &path, std::string &error);

} // namespace soap

#endif // SOAP_SUPPORT_ATOMICFILE_H
