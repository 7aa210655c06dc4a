//===- Checkpoint.h - named tensors in one binary file --------*- C++ -*-===//
//
// The format of --save/--load checkpoints and of --data files (all
// integers little-endian):
//
//   "SOAPCKPT"  u32 version (1)  u32 count  u64 step
//   count times:  u32 name length, name bytes,
//                 u32 dtype length, dtype bytes ("f32", "i64", ...),
//                 u32 rank, rank x i64 dimensions,
//                 u64 byte count, the elements (dense, row-major)
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_RUNTIME_CHECKPOINT_H
#define SOAP_RUNTIME_CHECKPOINT_H

#include <cstdint>
#include <string>
#include <vector>

namespace soaprt {

struct NamedTensor {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::string bytes;
};

struct Checkpoint {
  uint64_t step = 0;
  std::vector<NamedTensor> tensors;

  const NamedTensor *find(const std::string &name) const;
  /// The file's bytes.
  std::string serialize() const;
  /// Reads the checkpoint in `path`, only the bytes its header declares (a
  /// device such as /dev/zero is refused at its header); false with `error`
  /// naming the file and what is wrong with it.
  bool read(const std::string &path, std::string &error);
};

std::string shapeString(const std::vector<int64_t> &shape);

} // namespace soaprt

#endif // SOAP_RUNTIME_CHECKPOINT_H
