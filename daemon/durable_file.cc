#include "daemon/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "util/files.h"

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

std::atomic<StepHook> step_hook{nullptr};

// The errno a test makes `step` fail with; 0 (run it) without a test hook.
int InjectedError(const std::string &step) {
    StepHook hook = step_hook.load();
    return hook != nullptr ? hook(step) : 0;
}

// Creates `path` (or truncates it) with all of `contents`, synced.
Status WriteNewFile(const std::string &path, std::string_view contents) {
    if (int err = InjectedError("write " + path)) {
        return ErrnoStatus(err, "cannot write " + path);
    }
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        return ErrnoStatus(errno, "cannot create " + path);
    }
    FdCloser closer(fd);
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

// Makes `previous_path` the file `path` is now. The link is made beside it
// and renamed over it, so that `previous_path` never goes missing: an older
// generation is never removed before the one replacing it is in place.
Status KeepAsPrevious(const std::string &path, const std::string &previous_path) {
    const std::string link_path = previous_path + ".tmp";
    Status status = RemoveFile(link_path);  // a crash may have left one
    if (!status.ok() && status.code() != StatusCode::kNotFound) {
        return status;
    }
    const std::string step = "link " + path + " as " + link_path;
    int err = InjectedError(step);
    if (err == 0 && link(path.c_str(), link_path.c_str()) != 0) {
        err = errno;
    }
    if (err == ENOENT) {
        return Status();  // nothing to keep: the previous generation stays
    }
    if (err != 0) {
        return ErrnoStatus(err, "cannot keep " + path + " as " + link_path);
    }
    status = RenameFile(link_path, previous_path);
    if (!status.ok()) {
        unlink(link_path.c_str());
    }
    return status;
}

}  // namespace

Status SyncDirectory(const std::string &dir) {
    if (int err = InjectedError("sync " + dir)) {
        return ErrnoStatus(err, "cannot sync directory " + dir);
    }
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

Status RenameFile(const std::string &from, const std::string &to) {
    int err = InjectedError("rename " + from + " to " + to);
    if (err == 0 && rename(from.c_str(), to.c_str()) != 0) {
        err = errno;
    }
    if (err == ENOENT) {
        return Status(StatusCode::kNotFound, "cannot rename " + from + ": it does not exist");
    }
    return err == 0 ? Status() : ErrnoStatus(err, "cannot rename " + from + " to " + to);
}

Status RemoveFile(const std::string &path) {
    int err = InjectedError("remove " + path);
    if (err == 0 && unlink(path.c_str()) != 0) {
        err = errno;
    }
    if (err == ENOENT) {
        return Status(StatusCode::kNotFound, "cannot remove " + path + ": it does not exist");
    }
    return err == 0 ? Status() : ErrnoStatus(err, "cannot remove " + path);
}

StatusOr<std::string> ReadWholeFile(const std::string &path) {
    int err = 0;
    std::optional<std::string> contents = rpma::util::ReadWholeFile(path, &err);
    if (contents)
        return *contents;
    if (err == ENOENT)
        return Status(StatusCode::kNotFound, path + " does not exist");
    return ErrnoStatus(err, "cannot read " + path);
}

Replacement ReplaceFileDurably(const std::string &path, std::string_view contents,
                               const std::string &previous_path) {
    const std::string tmp_path = path + ".tmp";
    Status status = WriteNewFile(tmp_path, contents);
    if (status.ok() && !previous_path.empty()) {
        status = KeepAsPrevious(path, previous_path);
    }
    if (status.ok()) {
        status = RenameFile(tmp_path, path);
    }
    if (!status.ok()) {
        unlink(tmp_path.c_str());
        return {status, false};
    }
    return {SyncDirectory(DirectoryOf(path)), true};
}

void SetStepHookForTesting(StepHook hook) {
    step_hook.store(hook);
}

}  // namespace rpmad
