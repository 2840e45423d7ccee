// A small tmpfs mounted on a test's directory, which can be filled up or
// remounted read-only. Mounting needs root, as the build machines run the
// tests; without it the tests that need a tmpfs fail and say why.
#ifndef TESTS_UNIT_DAEMON_SCRATCH_TMPFS_H
#define TESTS_UNIT_DAEMON_SCRATCH_TMPFS_H

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/unit/daemon/test_files.h"

namespace rpmad::testing {

// A tmpfs of `bytes` on `dir`, unmounted when this goes away.
class ScratchTmpfs {
  public:
    ScratchTmpfs(const std::string &dir, size_t bytes) : dir_(dir) {
        std::filesystem::create_directories(dir_);
        std::string options = "size=" + std::to_string(bytes);
        if (mount("tmpfs", dir_.c_str(), "tmpfs", 0, options.c_str()) != 0) {
            error_ = "cannot mount a tmpfs on " + dir_ +
                     " (the test needs root): " + std::strerror(errno);
        }
    }
    ~ScratchTmpfs() {
        if (error_.empty()) {
            umount2(dir_.c_str(), MNT_DETACH);
        }
    }
    ScratchTmpfs(const ScratchTmpfs &) = delete;
    ScratchTmpfs &operator=(const ScratchTmpfs &) = delete;

    bool mounted() const { return error_.empty(); }
    const std::string &error() const { return error_; }
    const std::string &dir() const { return dir_; }

    // Empty on success, else why not.
    std::string RemountReadOnly() {
        if (mount("tmpfs", dir_.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, nullptr) != 0) {
            return std::string("cannot remount ") + dir_ + " read-only: " + std::strerror(errno);
        }
        return {};
    }

    uint64_t FreeBytes() const {
        struct statvfs st;
        if (statvfs(dir_.c_str(), &st) != 0) {
            return 0;
        }
        return uint64_t{st.f_bavail} * st.f_frsize;
    }

  private:
    std::string dir_;
    std::string error_;
};

}  // namespace rpmad::testing

#endif  // TESTS_UNIT_DAEMON_SCRATCH_TMPFS_H
