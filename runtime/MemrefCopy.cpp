//===- MemrefCopy.cpp - memref.copy between strided buffers --------------===//
//
// convert-memref-to-llvm lowers a memref.copy whose operands are not both
// dense to a call of `memrefCopy` (MLIR's C runner utilities define it).
// Executables do not link those utilities, so libsoaprt provides the same
// function over MLIR's memref descriptor layout.
//
//===----------------------------------------------------------------------===//

#include "Trace.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace {

/// MLIR's unranked memref: the rank and a pointer to the ranked descriptor
/// {allocated, aligned, offset, sizes[rank], strides[rank]}.
struct UnrankedMemref {
  int64_t rank;
  void *descriptor;
};

struct StridedView {
  char *data;
  const int64_t *sizes;
  const int64_t *strides;
};

StridedView view(const UnrankedMemref &memref, int64_t elemSize) {
  auto *fields = static_cast<char **>(memref.descriptor);
  char *aligned = fields[1];
  auto *ints = reinterpret_cast<const int64_t *>(fields + 2);
  return {aligned + ints[0] * elemSize, ints + 1, ints + 1 + memref.rank};
}

/// `count` elements of type T, `fromStride` and `toStride` bytes apart.
template <typename T>
void copyElements(char *to, int64_t toStride, const char *from,
                  int64_t fromStride, int64_t count) {
  for (int64_t r = 0; r < count; ++r) {
    T value;
    std::memcpy(&value, from + r * fromStride, sizeof(T));
    std::memcpy(to + r * toStride, &value, sizeof(T));
  }
}

} // namespace

extern "C" void memrefCopy(int64_t elemSize, UnrankedMemref *src,
                           UnrankedMemref *dst) {
  int64_t rank = src->rank;
  StridedView from = view(*src, elemSize), to = view(*dst, elemSize);
  int64_t total = 1;
  for (int64_t d = 0; d < rank; ++d)
    total *= from.sizes[d];
  if (total == 0)
    return;
  soaprt::ScopedEvent event("memref.copy", "copy", total * elemSize);
  // The innermost dimensions that are contiguous in both buffers form one
  // run, copied by one memcpy (a padded or sliced image: whole rows).
  int64_t run = 1, outerRank = rank;
  while (outerRank > 0) {
    int64_t d = outerRank - 1;
    if (from.sizes[d] != 1 && (from.strides[d] != run || to.strides[d] != run))
      break;
    run *= from.sizes[d];
    --outerRank;
  }
  size_t runBytes = static_cast<size_t>(run * elemSize);
  if (outerRank == 0) {
    std::memcpy(to.data, from.data, runBytes);
    return;
  }
  // Rows: the innermost outer dimension in a tight loop; the dimensions
  // above it walked like an odometer.
  int64_t rows = from.sizes[outerRank - 1];
  int64_t fromRow = from.strides[outerRank - 1] * elemSize;
  int64_t toRow = to.strides[outerRank - 1] * elemSize;
  int64_t outer = outerRank - 1;
  std::vector<int64_t> index(static_cast<size_t>(outer), 0);
  int64_t fromOffset = 0, toOffset = 0;
  for (int64_t i = 0; i < total; i += run * rows) {
    const char *source = from.data + fromOffset * elemSize;
    char *target = to.data + toOffset * elemSize;
    // Single elements (a strided window, a transposed view) move as
    // values, not through a call of memcpy each.
    if (run == 1 && elemSize == 4)
      copyElements<uint32_t>(target, toRow, source, fromRow, rows);
    else if (run == 1 && elemSize == 8)
      copyElements<uint64_t>(target, toRow, source, fromRow, rows);
    else
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(target + r * toRow, source + r * fromRow, runBytes);
    for (int64_t d = outer - 1; d >= 0; --d) {
      ++index[d];
      fromOffset += from.strides[d];
      toOffset += to.strides[d];
      if (index[d] < from.sizes[d])
        break;
      fromOffset -= from.strides[d] * from.sizes[d];
      toOffset -= to.strides[d] * from.sizes[d];
      index[d] = 0;
    }
  }
}
