//===- Checkpoint.cpp - named tensors in one binary file -----------------===//

#include "Checkpoint.h"

#include <cstring>

namespace soaprt {

static const char kMagic[8] = {'S', 'O', 'A', 'P', 'C', 'K', 'P', 'T'};
static constexpr uint32_t kVersion = 1;

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

const NamedTensor *Checkpoint::find(const std::string &name) const {
  for (const NamedTensor &t : tensors)
    if (t.name == name)
      return &t;
  return nullptr;
}

template <typename T> static void put(std::string &out, T value) {
  out.append(reinterpret_cast<const char *>(&value), sizeof(T));
}
static void putString(std::string &out, const std::string &s) {
  put<uint32_t>(out, static_cast<uint32_t>(s.size()));
  out += s;
}

std::string Checkpoint::serialize() const {
  std::string out(kMagic, sizeof(kMagic));
  put<uint32_t>(out, kVersion);
  put<uint32_t>(out, static_cast<uint32_t>(tensors.size()));
  put<uint64_t>(out, step);
  for (const NamedTensor &t : tensors) {
    putString(out, t.name);
    putString(out, t.dtype);
    put<uint32_t>(out, static_cast<uint32_t>(t.shape.size()));
    for (int64_t d : t.shape)
      put<int64_t>(out, d);
    put<uint64_t>(out, t.bytes.size());
    out += t.bytes;
  }
  return out;
}

namespace {
/// Reads from a byte string, remembering whether it ran past the end.
struct Reader {
  const std::string &bytes;
  size_t at = 0;
  bool ok = true;
  template <typename T> T get() {
    T value{};
    if (at + sizeof(T) > bytes.size()) {
      ok = false;
      return value;
    }
    std::memcpy(&value, bytes.data() + at, sizeof(T));
    at += sizeof(T);
    return value;
  }
  std::string getBytes(uint64_t n) {
    if (n > bytes.size() - at) {
      ok = false;
      return {};
    }
    std::string s = bytes.substr(at, n);
    at += n;
    return s;
  }
};
} // namespace

bool Checkpoint::parse(const std::string &bytes, const std::string &path,
                       std::string &error) {
  if (bytes.size() < 24 || std::memcmp(bytes.data(), kMagic, 8) != 0) {
    error = "'" + path + "' is not a SOAP checkpoint (no SOAPCKPT header)";
    return false;
  }
  Reader r{bytes, 8};
  uint32_t version = r.get<uint32_t>();
  if (version != kVersion) {
    error = "'" + path + "' has checkpoint version " + std::to_string(version) +
            "; this runtime reads version " + std::to_string(kVersion);
    return false;
  }
  uint32_t count = r.get<uint32_t>();
  step = r.get<uint64_t>();
  tensors.clear();
  for (uint32_t i = 0; i < count && r.ok; ++i) {
    NamedTensor t;
    t.name = r.getBytes(r.get<uint32_t>());
    t.dtype = r.getBytes(r.get<uint32_t>());
    uint32_t rank = r.get<uint32_t>();
    if (rank > 64) {
      error = "'" + path + "' is corrupt: tensor '" + t.name + "' has rank " +
              std::to_string(rank);
      return false;
    }
    for (uint32_t d = 0; d < rank; ++d)
      t.shape.push_back(r.get<int64_t>());
    t.bytes = r.getBytes(r.get<uint64_t>());
    if (r.ok)
      tensors.push_back(std::move(t));
  }
  if (!r.ok) {
    error = "'" + path + "' is truncated (" + std::to_string(tensors.size()) +
            " of " + std::to_string(count) + " tensors readable)";
    return false;
  }
  if (r.at != bytes.size()) {
    error = "'" + path + "' has " + std::to_string(bytes.size() - r.at) +
            " unexpected bytes after its last tensor";
    return false;
  }
  return true;
}

} // namespace soaprt
