//===- AtomicFile.cpp - write a file so that readers never see half of it -===//
//
// Plain POSIX, no LLVM: the runtime (libsoaprt) compiles this file too, so
// the compiler's reports and the executables' checkpoints and traces are
// written by one implementation.
//
//===----------------------------------------------------------------------===//

#include "soap/support/AtomicFile.h"

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace soap {

namespace {

std::string cause() { return std::strerror(errno); }

std::string folderOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string baseOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// Writes all of `bytes` to `fd`, retrying short writes and EINTR.
bool writeAll(int fd, const std::string &bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      if (n == 0)
        errno = EIO;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

/// Follows `path` through symbolic links (relative ones from their link's
/// folder) to the name that is not a link: the file to replace. A dangling
/// link resolves to its missing target, which is then created.
bool resolveLinks(std::string &path, std::string &error) {
  for (int hops = 0; hops < 40; ++hops) {
    struct stat info;
    if (::lstat(path.c_str(), &info) != 0 || !S_ISLNK(info.st_mode))
      return true;
    char target[PATH_MAX];
    ssize_t n = ::readlink(path.c_str(), target, sizeof(target) - 1);
    if (n < 0) {
      error = "cannot write '" + path + "': " + cause();
      return false;
    }
    target[n] = '\0';
    path = target[0] == '/' ? std::string(target)
                            : folderOf(path) + "/" + target;
  }
  error = "cannot write '" + path + "': too many levels of symbolic links";
  return false;
}

/// Removes `<base>.tmp.<pid>` files beside `path` whose process is gone:
/// what a writer killed between creating its temporary and renaming it
/// left behind.
void removeStaleTemporaries(const std::string &path) {
  std::string prefix = baseOf(path) + ".tmp.";
  std::string folder = folderOf(path);
  DIR *dir = ::opendir(folder.c_str());
  if (!dir)
    return;
  while (struct dirent *entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0)
      continue;
    std::string digits = name.substr(prefix.size());
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    pid_t pid = static_cast<pid_t>(std::atol(digits.c_str()));
    if (pid == ::getpid() || (::kill(pid, 0) != 0 && errno == ESRCH))
      ::unlink((folder + "/" + name).c_str());
  }
  ::closedir(dir);
}

} // namespace

bool writeFileAtomically(const std::string &requested, const std::string &bytes,
                         std::string &error, int mode) {
  std::string path = requested;
  if (!resolveLinks(path, error))
    return false;

  struct stat info;
  bool exists = ::stat(path.c_str(), &info) == 0;
  if (exists && S_ISDIR(info.st_mode)) {
    error = "cannot write '" + requested + "': it is a directory";
    return false;
  }
  if (exists && !S_ISREG(info.st_mode)) {
    // A device, a FIFO or a socket is written, never replaced: renaming a
    // file over /dev/null would replace the system's /dev/null.
    int fd = ::open(path.c_str(), O_WRONLY);
    if (fd < 0) {
      error = "cannot write '" + requested + "': " + cause();
      return false;
    }
    bool written = writeAll(fd, bytes);
    std::string why = written ? "" : cause();
    if (::close(fd) != 0 && written) {
      written = false;
      why = cause();
    }
    if (!written)
      error = "cannot write '" + requested + "': " + why;
    return written;
  }

  removeStaleTemporaries(path);
  std::string temporary = path + ".tmp." + std::to_string(::getpid());
  mode_t fileMode = mode >= 0 ? static_cast<mode_t>(mode)
                   : exists    ? (info.st_mode & 07777)
                               : 0644;
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC, fileMode);
  if (fd < 0) {
    error = "cannot write '" + requested + "': " + cause();
    return false;
  }
  if (exists || mode >= 0)
    (void)::fchmod(fd, fileMode); // The umask applied to the open.
  if (!writeAll(fd, bytes)) {
    error = "cannot write '" + requested + "': " + cause();
    ::close(fd);
    ::unlink(temporary.c_str());
    return false;
  }
  if (::fsync(fd) != 0) {
    error = "cannot write '" + requested + "' (flushing it failed): " + cause();
    ::close(fd);
    ::unlink(temporary.c_str());
    return false;
  }
  if (::close(fd) != 0) {
    error = "cannot write '" + requested + "' (closing it failed): " + cause();
    ::unlink(temporary.c_str());
    return false;
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    error = "cannot write '" + requested + "' (renaming '" + temporary +
            "' failed): " + cause();
    ::unlink(temporary.c_str());
    return false;
  }
  // The rename itself is durable once the folder is synced.
  int dir = ::open(folderOf(path).c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return true;
}

bool checkWritable(const std::string &requested, std::string &error) {
  std::string path = requested;
  if (!resolveLinks(path, error))
    return false;
  struct stat info;
  if (::stat(path.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode)) {
      error = "cannot write '" + requested + "': it is a directory";
      return false;
    }
    if (!S_ISREG(info.st_mode)) {
      if (::access(path.c_str(), W_OK) == 0)
        return true;
      error = "cannot write '" + requested + "': " + cause();
      return false;
    }
  }
  if (::access(folderOf(path).c_str(), W_OK | X_OK) == 0)
    return true;
  error = "cannot write '" + requested + "': " + cause();
  return false;
}

} // namespace soap
