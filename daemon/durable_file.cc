#include "daemon/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace rpmad {

namespace {

// Closes a descriptor when the scope ends, whatever path leaves it.
class FdCloser {
  public:
    explicit FdCloser(int fd) : fd_(fd) {}
    ~FdCloser() {
        if (fd_ >= 0) {
            close(fd_);
        }
    }
    FdCloser(const FdCloser &) = delete;
    FdCloser &operator=(const FdCloser &) = delete;

  private:
    int fd_;
};

std::string DirectoryOf(const std::string &path) {
    size_t slash = path.rfind('/');
    if (slash == std::string::npos) {
        return ".";
    }
    return slash == 0 ? "/" : path.substr(0, slash);
}

// Writes all of `contents` and syncs it; the caller owns `fd`.
Status WriteAndSync(int fd, std::string_view contents, const std::string &path) {
    while (!contents.empty()) {
        ssize_t n = write(fd, contents.data(), contents.size());
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return ErrnoStatus(errno, "cannot write " + path);
        }
        contents.remove_prefix(static_cast<size_t>(n));
    }
    if (fsync(fd) != 0) {
        return ErrnoStatus(errno, "cannot sync " + path);
    }
    return Status();
}

}  // namespace

Status ErrnoStatus(int err, std::string_view what) {
    StatusCode code = StatusCode::kInternal;
    switch (err) {
        case ENOSPC:
        case EDQUOT:
            code = StatusCode::kResourceExhausted;
            break;
        case EACCES:
        case EPERM:
        case EROFS:
            code = StatusCode::kPermissionDenied;
            break;
        default:
            break;
    }
    return Status(code, std::string(what) + ": " + std::strerror(err));
}

Status SyncDirectory(const std::string &dir) {
    int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return ErrnoStatus(errno, "cannot open directory " + dir + " to sync it");
    }
    FdCloser closer(fd);
    if (fsync(fd) != 0) {
        return ErrnoStatus(errno, "cannot sync directory " + dir);
    }
    return Status();
}

StatusOr<std::string> ReadWholeFile(const std::string &path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) {
            return Status(StatusCode::kNotFound, path + " does not exist");
        }
        return ErrnoStatus(errno, "cannot open " + path);
    }
    FdCloser closer(fd);
    std::string contents;
    char buffer[64 * 1024];
    for (;;) {
        ssize_t n = read(fd, buffer, sizeof(buffer));
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return ErrnoStatus(errno, "cannot read " + path);
        }
        if (n == 0) {
            return contents;
        }
        contents.append(buffer, static_cast<size_t>(n));
    }
}

Status ReplaceFileDurably(const std::string &path, std::string_view contents,
                          const std::string &previous_path) {
    const std::string tmp_path = path + ".tmp";
    int fd = open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        return ErrnoStatus(errno, "cannot create " + tmp_path);
    }
    Status status = WriteAndSync(fd, contents, tmp_path);
    close(fd);
    if (status.ok() && !previous_path.empty()) {
        // Unlink, then link: a crash in between loses only the older
        // generation, never `path` itself.
        if (unlink(previous_path.c_str()) != 0 && errno != ENOENT) {
            status = ErrnoStatus(errno, "cannot remove " + previous_path);
        } else if (link(path.c_str(), previous_path.c_str()) != 0 && errno != ENOENT) {
            status = ErrnoStatus(errno, "cannot keep " + path + " as " + previous_path);
        }
    }
    if (status.ok() && rename(tmp_path.c_str(), path.c_str()) != 0) {
        status = ErrnoStatus(errno, "cannot rename " + tmp_path + " to " + path);
    }
    if (!status.ok()) {
        unlink(tmp_path.c_str());
        return status;
    }
    return SyncDirectory(DirectoryOf(path));
}

}  // namespace rpmad
