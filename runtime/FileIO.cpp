//===- FileIO.cpp - whole-file reads and crash-safe writes ---------------===//

#include "FileIO.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace soaprt {

static std::string cause() { return std::strerror(errno); }

bool writeFileAtomically(const std::string &path, const std::string &bytes,
                         std::string &error) {
  std::string temporary = path + ".tmp." + std::to_string(getpid());
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    error = "cannot write '" + path + "': " + cause();
    return false;
  }
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      error = "cannot write '" + path + "': " + cause();
      ::close(fd);
      std::remove(temporary.c_str());
      return false;
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    error = "cannot write '" + path + "' (flushing it failed): " + cause();
    std::remove(temporary.c_str());
    return false;
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    error = "cannot write '" + path + "' (renaming '" + temporary +
            "' failed): " + cause();
    std::remove(temporary.c_str());
    return false;
  }
  // The rename itself is durable once the folder is synced.
  std::string folder = ".";
  size_t slash = path.find_last_of('/');
  if (slash != std::string::npos)
    folder = slash == 0 ? "/" : path.substr(0, slash);
  int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return true;
}

bool readFile(const std::string &path, std::string &bytes,
              std::string &error) {
  FILE *file = std::fopen(path.c_str(), "rb");
  if (!file) {
    error = "cannot read '" + path + "': " + cause();
    return false;
  }
  bytes.clear();
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0)
    bytes.append(buffer, n);
  bool failed = std::ferror(file);
  std::fclose(file);
  if (failed) {
    error = "cannot read '" + path + "'";
    return false;
  }
  return true;
}

} // namespace soaprt
