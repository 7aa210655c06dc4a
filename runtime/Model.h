//===- Model.h - the compiled model as the driver sees it -----*- C++ -*-===//
//
// The entry's arguments and results as soap_model_info describes them, the
// buffers that hold them, and their initial values: parameters from the
// seed (fan-in uniform, zeros, ones) or from the values the compiler
// embedded, optimizer state at zero, synthetic inputs and labels. Values
// drawn from the seed depend only on the seed and the tensor's name.
//
//===----------------------------------------------------------------------===//

#ifndef SOAP_RUNTIME_MODEL_H
#define SOAP_RUNTIME_MODEL_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace soaprt {

/// One argument or result of the entry function.
struct TensorSpec {
  std::string role; // param, opt_state, input, label, loss (or other)
  std::string name;
  std::vector<int64_t> shape;
  std::string dtype; // f32, f64, f16, bf16, i1, i8, i16, i32, i64
  std::string init;  // params: fan-in, zeros, ones, data; else empty
  std::optional<int64_t> range;
  /// Sharded training state (soap.shard): `shape` is this rank's part of a
  /// tensor of `globalShape`, at shardOffsets[rank * rank(shape) ...]
  /// (device-major); both empty when the tensor is whole on every rank.
  std::vector<int64_t> globalShape, shardOffsets;
  /// The ranks that hold a part (the others carry a value nothing reads);
  /// empty: every rank.
  std::vector<int64_t> shardHolders;
  /// > 0: f32 convolution weights [O][I][KH][KW] (this rank's part when
  /// sharded) that the step keeps in oneDNN's blocked layout with this
  /// block (BlockedLayout.h); the driver converts them from and to the
  /// plain layout at its boundaries (toBlocked, fromBlocked).
  int64_t block = 0;
  /// A result that the step may write into its argument's own buffer (the
  /// lowering found that the step reads the argument no more once it
  /// starts writing the result, and copies nothing when the two are one
  /// buffer): the driver passes the argument's buffer for it in training
  /// steps. False for arguments.
  bool inPlace = false;
  bool holds(int rank) const;

  bool sharded() const { return !globalShape.empty(); }
  /// The spec of the whole tensor (itself when not sharded).
  TensorSpec whole() const;
  int64_t numElements() const;
  size_t elementBytes() const;
  size_t bytes() const { return numElements() * elementBytes(); }
  std::string shapeString() const;
};

/// What soap_model_info says.
struct ModelInfo {
  std::string entry;
  std::vector<TensorSpec> args, results;
  std::vector<std::string> opNames; // "linalg.matmul (model.mlir:12:5)"
  int64_t numDevices = 1;           // ranks the SPMD program runs on
  /// Where the step runs: "cpu" (host buffers), or "gpu" (the step takes
  /// device buffers; the driver needs libsoaprt_gpu). Absent means cpu.
  std::string target = "cpu";

  /// Parses soap_model_info; false with `error` when it is malformed.
  bool parse(const char *json, std::string &error);
};

/// A dense, 64-byte aligned buffer.
class Buffer {
public:
  Buffer() = default;
  explicit Buffer(size_t bytes);
  void *data() const { return storage.get(); }
  size_t size() const { return bytes; }
  void swap(Buffer &other) {
    std::swap(storage, other.storage);
    std::swap(bytes, other.bytes);
  }

private:
  struct Free {
    void operator()(void *p) const;
  };
  std::unique_ptr<void, Free> storage;
  size_t bytes = 0;
};

/// Fills `buffer` with the initial value of `spec` (an argument): embedded
/// `data` when given, else from `seed` and the spec's name.
void initialize(const TensorSpec &spec, Buffer &buffer, uint64_t seed,
                const void *data);

/// `rank`'s part of a sharded tensor, copied out of the whole tensor into
/// the rank's buffer.
void extractShard(const TensorSpec &spec, int rank, const void *whole,
                  void *part);
/// The reverse: `rank`'s part copied into its place in the whole tensor.
void insertShard(const TensorSpec &spec, int rank, const void *part,
                 void *whole);

/// A blocked tensor's buffer (`spec.block` > 0) from the plain layout of
/// `plain`, and back; both copy the bytes when the spec is not blocked.
void toBlocked(const TensorSpec &spec, const void *plain, void *blocked);
void fromBlocked(const TensorSpec &spec, const void *blocked, void *plain);

/// Element `i` of a buffer of `dtype` as a double.
double elementAsDouble(const void *data, const std::string &dtype, int64_t i);

} // namespace soaprt

#endif // SOAP_RUNTIME_MODEL_H
