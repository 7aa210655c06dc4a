//===- Checkpoint.cpp - named tensors in one binary file -----------------===//

#include "Checkpoint.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

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
/// Reads from a file, remembering whether it ran past the end. Reads only
/// what the header declares, in bounded chunks: a device that never ends
/// (/dev/zero) or a header that claims more than the file holds costs no
/// more memory than the bytes that are really there.
struct Reader {
  FILE *file;
  bool ok = true;
  template <typename T> T get() {
    T value{};
    if (ok && std::fread(&value, sizeof(T), 1, file) != 1)
      ok = false;
    return value;
  }
  std::string getBytes(uint64_t n) {
    std::string s;
    constexpr uint64_t kChunk = 1 << 20;
    while (ok && s.size() < n) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, n - s.size()));
      size_t old = s.size();
      s.resize(old + want);
      size_t got = std::fread(s.data() + old, 1, want, file);
      if (got != want) {
        s.resize(old + got);
        ok = false;
      }
    }
    return s;
  }
};

struct FileCloser {
  void operator()(FILE *file) const { std::fclose(file); }
};
} // namespace

bool Checkpoint::read(const std::string &path, std::string &error) {
  std::unique_ptr<FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file) {
    error = "cannot read '" + path + "': " + std::strerror(errno);
    return false;
  }
  Reader r{file.get()};
  std::string magic = r.getBytes(sizeof(kMagic));
  if (!r.ok || std::memcmp(magic.data(), kMagic, sizeof(kMagic)) != 0) {
    error = "'" + path + "' is not a SOAP checkpoint (no SOAPCKPT header)";
    return false;
  }
  uint32_t version = r.get<uint32_t>();
  if (r.ok && version != kVersion) {
    error = "'" + path + "' has checkpoint version " + std::to_string(version) +
            "; this runtime reads version " + std::to_string(kVersion);
    return false;
  }
  uint32_t count = r.get<uint32_t>();
  step = r.get<uint64_t>();
  tensors.clear();
  auto corrupt = [&](const std::string &name, const std::string &what) {
    error = "'" + path + "' is corrupt: tensor '" + name + "' " + what;
    return false;
  };
  for (uint32_t i = 0; i < count && r.ok; ++i) {
    NamedTensor t;
    uint32_t nameLength = r.get<uint32_t>();
    if (nameLength > (1u << 16))
      return corrupt("#" + std::to_string(i),
                     "has a name of " + std::to_string(nameLength) + " bytes");
    t.name = r.getBytes(nameLength);
    uint32_t dtypeLength = r.get<uint32_t>();
    if (dtypeLength > 64)
      return corrupt(t.name, "has a dtype of " + std::to_string(dtypeLength) +
                                 " bytes");
    t.dtype = r.getBytes(dtypeLength);
    uint32_t rank = r.get<uint32_t>();
    if (rank > 64)
      return corrupt(t.name, "has rank " + std::to_string(rank));
    for (uint32_t d = 0; d < rank && r.ok; ++d) {
      t.shape.push_back(r.get<int64_t>());
      if (t.shape.back() < 0)
        return corrupt(t.name, "has a negative dimension");
    }
    t.bytes = r.getBytes(r.get<uint64_t>());
    if (r.ok)
      tensors.push_back(std::move(t));
  }
  if (!r.ok) {
    error = "'" + path + "' is truncated (" + std::to_string(tensors.size()) +
            " of " + std::to_string(count) + " tensors readable)";
    return false;
  }
  if (std::fgetc(file.get()) != EOF) {
    error = "'" + path + "' has unexpected bytes after its last tensor";
    return false;
  }
  if (std::ferror(file.get())) {
    error = "cannot read '" + path + "': " + std::strerror(errno);
    return false;
  }
  return true;
}

} // namespace soaprt
