//===- Model.cpp - the compiled model as the driver sees it --------------===//

#include "Model.h"

#include "BlockedLayout.h"
#include "Memory.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace soaprt {

int64_t TensorSpec::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

size_t TensorSpec::elementBytes() const {
  if (dtype == "f64" || dtype == "i64")
    return 8;
  if (dtype == "f32" || dtype == "i32")
    return 4;
  if (dtype == "f16" || dtype == "bf16" || dtype == "i16")
    return 2;
  return 1; // i1, i8
}

std::string TensorSpec::shapeString() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

static bool parseSpec(const nlohmann::json &j, TensorSpec &spec,
                      std::string &error) {
  if (!j.is_object() || !j.contains("shape") || !j.contains("dtype")) {
    error = "an argument or result without shape or dtype";
    return false;
  }
  spec.role = j.value("role", "");
  spec.name = j.value("name", "");
  spec.dtype = j.at("dtype").get<std::string>();
  spec.shape = j.at("shape").get<std::vector<int64_t>>();
  spec.init = j.value("init", "");
  if (j.contains("range") && j.at("range").is_number_integer())
    spec.range = j.at("range").get<int64_t>();
  spec.block = j.value("block", int64_t{0});
  spec.inPlace = j.value("in_place", false);
  if (spec.block != 0 &&
      (spec.block < 0 || spec.dtype != "f32" || spec.shape.size() != 4 ||
       !blockable({spec.shape[0], spec.shape[1], spec.shape[2], spec.shape[3]},
                  spec.block))) {
    error = "'" + spec.name + "' (" + spec.dtype + spec.shapeString() +
            ") cannot be stored in blocks of " + std::to_string(spec.block) +
            " (f32 weights [O][I][KH][KW] with O and I multiples of it)";
    return false;
  }
  if (j.contains("global_shape")) {
    spec.globalShape = j.at("global_shape").get<std::vector<int64_t>>();
    spec.shardOffsets = j.value("shard_offsets", std::vector<int64_t>{});
    spec.shardHolders = j.value("shard_holders", std::vector<int64_t>{});
    size_t rank = spec.shape.size();
    bool fits = spec.globalShape.size() == rank && rank > 0 &&
                !spec.shardOffsets.empty() &&
                spec.shardOffsets.size() % rank == 0;
    for (size_t i = 0; fits && i < spec.shardOffsets.size(); ++i)
      fits = spec.shardOffsets[i] >= 0 &&
             spec.shardOffsets[i] + spec.shape[i % rank] <=
                 spec.globalShape[i % rank];
    if (!fits) {
      error =
          "'" + spec.name + "' has a shard that does not fit its global shape";
      return false;
    }
  }
  static const char *known[] = {"f32", "f64", "f16", "bf16", "i1",
                                "i8",  "i16", "i32", "i64"};
  bool knownType = false;
  for (const char *k : known)
    knownType |= spec.dtype == k;
  if (!knownType) {
    error = "'" + spec.name + "' has unsupported element type " + spec.dtype;
    return false;
  }
  // Its byte count must be a number: 2^62 elements would overflow it.
  int64_t bytes = static_cast<int64_t>(spec.elementBytes());
  for (int64_t size : spec.shape)
    if (size < 0 || __builtin_mul_overflow(bytes, size, &bytes) ||
        bytes > (int64_t(1) << 50)) {
      error = "'" + spec.name + "' (" + spec.dtype + spec.shapeString() +
              ") has more than 2^50 bytes; it cannot be allocated";
      return false;
    }
  return true;
}

bool ModelInfo::parse(const char *text, std::string &error) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    error = "the model description (soap_model_info) is not valid JSON";
    return false;
  }
  entry = j.value("entry", "");
  for (const char *key : {"args", "results"}) {
    auto &list = std::string(key) == "args" ? args : results;
    if (!j.contains(key) || !j.at(key).is_array()) {
      error = std::string("the model description has no '") + key + "' list";
      return false;
    }
    for (const auto &item : j.at(key)) {
      TensorSpec spec;
      if (!parseSpec(item, spec, error))
        return false;
      list.push_back(std::move(spec));
    }
  }
  if (j.contains("ops"))
    for (const auto &op : j.at("ops"))
      opNames.push_back(op.is_string() ? op.get<std::string>()
                                       : op.value("name", std::string("op")));
  if (j.contains("target")) {
    const auto &value = j.at("target");
    if (!value.is_string() ||
        (value.get<std::string>() != "cpu" && value.get<std::string>() != "gpu")) {
      error = "the model description's 'target' is " + value.dump() +
              ", not \"cpu\" or \"gpu\"";
      return false;
    }
    target = value.get<std::string>();
  }
  if (j.contains("num_devices")) {
    if (!j.at("num_devices").is_number_integer() ||
        j.at("num_devices").get<int64_t>() < 1) {
      error = "the model description's 'num_devices' is not a positive "
              "integer";
      return false;
    }
    numDevices = j.at("num_devices").get<int64_t>();
  }
  for (const auto *list : {&args, &results})
    for (const TensorSpec &spec : *list) {
      if (spec.sharded() &&
          spec.shardOffsets.size() != spec.shape.size() * numDevices) {
        error = "'" + spec.name + "' has shard offsets for " +
                std::to_string(spec.shardOffsets.size() / spec.shape.size()) +
                " devices but the model runs on " + std::to_string(numDevices);
        return false;
      }
      for (int64_t holder : spec.shardHolders)
        if (holder < 0 || holder >= numDevices) {
          error = "'" + spec.name + "' names holder device " +
                  std::to_string(holder) + " but the model runs on " +
                  std::to_string(numDevices);
          return false;
        }
    }
  return true;
}

bool TensorSpec::holds(int rank) const {
  return shardHolders.empty() ||
         std::find(shardHolders.begin(), shardHolders.end(), rank) !=
             shardHolders.end();
}

TensorSpec TensorSpec::whole() const {
  TensorSpec spec = *this;
  if (sharded()) {
    spec.shape = globalShape;
    spec.globalShape.clear();
    spec.shardOffsets.clear();
    spec.shardHolders.clear();
  }
  return spec;
}

/// Calls `row(offset in the whole tensor, offset in the part, bytes)` for
/// each row (innermost dimension) of `rank`'s part, offsets in bytes.
template <typename RowFn>
static void forEachShardRow(const TensorSpec &spec, int rank, RowFn row) {
  size_t dims = spec.shape.size();
  size_t elem = spec.elementBytes();
  const int64_t *offsets = spec.shardOffsets.data() + rank * dims;
  // Row-major strides of the whole tensor, in elements.
  std::vector<int64_t> strides(dims, 1);
  for (size_t d = dims - 1; d > 0; --d)
    strides[d - 1] = strides[d] * spec.globalShape[d];
  int64_t rows = spec.numElements() / spec.shape[dims - 1];
  size_t rowBytes = spec.shape[dims - 1] * elem;
  std::vector<int64_t> index(dims, 0); // of the row's first element
  for (int64_t r = 0; r < rows; ++r) {
    int64_t at = 0;
    for (size_t d = 0; d < dims; ++d)
      at += (index[d] + offsets[d]) * strides[d];
    row(at * elem, r * rowBytes, rowBytes);
    for (size_t d = dims - 1; d-- > 0;) {
      if (++index[d] < spec.shape[d])
        break;
      index[d] = 0;
    }
  }
}

static void convert(const TensorSpec &spec, const void *from, void *to,
                    bool toBlocked) {
  if (spec.block <= 0) {
    std::memcpy(to, from, spec.bytes());
    return;
  }
  convertBlocked<float>(
      {spec.shape[0], spec.shape[1], spec.shape[2], spec.shape[3]}, spec.block,
      static_cast<const float *>(from), static_cast<float *>(to), toBlocked);
}

void toBlocked(const TensorSpec &spec, const void *plain, void *blocked) {
  convert(spec, plain, blocked, /*toBlocked=*/true);
}

void fromBlocked(const TensorSpec &spec, const void *blocked, void *plain) {
  convert(spec, blocked, plain, /*toBlocked=*/false);
}

void extractShard(const TensorSpec &spec, int rank, const void *whole,
                  void *part) {
  forEachShardRow(spec, rank, [&](size_t w, size_t p, size_t bytes) {
    std::memcpy(static_cast<char *>(part) + p,
                static_cast<const char *>(whole) + w, bytes);
  });
}

void insertShard(const TensorSpec &spec, int rank, const void *part,
                 void *whole) {
  forEachShardRow(spec, rank, [&](size_t w, size_t p, size_t bytes) {
    std::memcpy(static_cast<char *>(whole) + w,
                static_cast<const char *>(part) + p, bytes);
  });
}

void Buffer::Free::operator()(void *p) const {
  noteTensorBytes(-heapBlockBytes(p));
  std::free(p);
}

Buffer::Buffer(size_t size) : bytes(size) {
  size_t rounded = (std::max<size_t>(size, 1) + 63) / 64 * 64;
  storage.reset(std::aligned_alloc(64, rounded));
  if (!storage) {
    std::fprintf(stderr, "error: cannot allocate %zu bytes\n", size);
    std::exit(1);
  }
  noteTensorBytes(heapBlockBytes(storage.get()));
  std::memset(storage.get(), 0, rounded);
}

namespace {

/// SplitMix64: a tiny generator whose streams differ for any two seeds.
struct Random {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

/// The stream for `name` under `seed`: FNV-1a of the name mixed with the
/// seed, so each tensor's values depend on nothing else.
Random streamFor(uint64_t seed, const std::string &name) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : name)
    h = (h ^ c) * 0x100000001B3ull;
  Random r{h ^ (seed * 0xD6E8FEB86659FD93ull)};
  r.next();
  return r;
}

void store(void *data, const std::string &dtype, int64_t i, double v) {
  if (dtype == "f32")
    static_cast<float *>(data)[i] = static_cast<float>(v);
  else if (dtype == "f64")
    static_cast<double *>(data)[i] = v;
  else if (dtype == "i64")
    static_cast<int64_t *>(data)[i] = static_cast<int64_t>(v);
  else if (dtype == "i32")
    static_cast<int32_t *>(data)[i] = static_cast<int32_t>(v);
  else if (dtype == "i16")
    static_cast<int16_t *>(data)[i] = static_cast<int16_t>(v);
  else if (dtype == "i8" || dtype == "i1")
    static_cast<int8_t *>(data)[i] = static_cast<int8_t>(v);
  else if (dtype == "f16" || dtype == "bf16") {
    // Round-to-nearest-ish truncation of the f32 bits is enough for
    // synthetic values; f16 goes through the compiler's conversion.
    float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    uint16_t half;
    if (dtype == "bf16") {
      half = static_cast<uint16_t>((bits + 0x8000u) >> 16);
    } else {
      _Float16 h = static_cast<_Float16>(f);
      std::memcpy(&half, &h, 2);
    }
    static_cast<uint16_t *>(data)[i] = half;
  }
}

} // namespace

double elementAsDouble(const void *data, const std::string &dtype, int64_t i) {
  if (dtype == "f32")
    return static_cast<const float *>(data)[i];
  if (dtype == "f64")
    return static_cast<const double *>(data)[i];
  if (dtype == "i64")
    return static_cast<double>(static_cast<const int64_t *>(data)[i]);
  if (dtype == "i32")
    return static_cast<const int32_t *>(data)[i];
  if (dtype == "i16")
    return static_cast<const int16_t *>(data)[i];
  if (dtype == "f16") {
    _Float16 h;
    std::memcpy(&h, static_cast<const char *>(data) + 2 * i, 2);
    return static_cast<double>(h);
  }
  if (dtype == "bf16") {
    uint32_t bits =
        static_cast<uint32_t>(static_cast<const uint16_t *>(data)[i]) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  return static_cast<const int8_t *>(data)[i];
}

void initialize(const TensorSpec &spec, Buffer &buffer, uint64_t seed,
                const void *data) {
  int64_t n = spec.numElements();
  if (data) {
    std::memcpy(buffer.data(), data, spec.bytes());
    return;
  }
  bool isFloat = spec.dtype[0] == 'f' || spec.dtype == "bf16";
  if (spec.role == "opt_state" || spec.init == "zeros") {
    std::memset(buffer.data(), 0, buffer.size());
    return;
  }
  if (spec.init == "ones") {
    for (int64_t i = 0; i < n; ++i)
      store(buffer.data(), spec.dtype, i, 1.0);
    return;
  }
  Random random = streamFor(seed, spec.name);
  if (spec.role == "param") {
    // fan-in: uniform in +-1/sqrt(fan_in), fan_in = the product of all
    // dimensions but the first (a vector of length n: n).
    // "fan-in:N" gives fan_in explicitly (e.g. a weight stored transposed).
    int64_t fanIn = 1;
    if (spec.shape.size() == 1)
      fanIn = spec.shape[0];
    for (size_t d = 1; d < spec.shape.size(); ++d)
      fanIn *= spec.shape[d];
    if (spec.init.rfind("fan-in:", 0) == 0)
      fanIn = std::strtoll(spec.init.c_str() + 7, nullptr, 10);
    double bound =
        1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(fanIn, 1)));
    for (int64_t i = 0; i < n; ++i)
      store(buffer.data(), spec.dtype, i,
            (2.0 * random.uniform() - 1.0) * bound);
    return;
  }
  // Inputs and labels: integers in [0, range) (0 without a range), floats
  // in [-1, 1).
  for (int64_t i = 0; i < n; ++i) {
    double u = random.uniform();
    double v = isFloat ? 2.0 * u - 1.0
                       : (spec.range ? std::floor(u * *spec.range) : 0.0);
    store(buffer.data(), spec.dtype, i, v);
  }
}

} // namespace soaprt
