#include "daemon/daemon_id.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>

#include "daemon/durable_file.h"

namespace rpmad {
namespace {

constexpr size_t kIdDigits = 32;

StatusOr<std::string> NewDaemonId() {
    uint8_t bits[kIdDigits / 2];
    size_t filled = 0;
    while (filled < sizeof(bits)) {
        ssize_t n = getrandom(bits + filled, sizeof(bits) - filled, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return ErrnoStatus(errno, "cannot read random bits for the daemon's identity");
        }
        filled += static_cast<size_t>(n);
    }
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string id;
    for (uint8_t b : bits) {
        id.push_back(kDigits[b >> 4]);
        id.push_back(kDigits[b & 0xF]);
    }
    return id;
}

}  // namespace

bool IsDaemonId(std::string_view text) {
    if (text.size() != kIdDigits) {
        return false;
    }
    for (char c : text) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
            return false;
        }
    }
    return true;
}

StatusOr<std::string> LoadOrCreateDaemonId(const std::string &pool_dir) {
    const std::string path = pool_dir + "/" + kDaemonIdFileName;
    StatusOr<std::string> contents = ReadWholeFile(path);
    if (contents.ok()) {
        std::string_view id = *contents;
        if (id.ends_with('\n')) {
            id.remove_suffix(1);
        }
        if (!IsDaemonId(id)) {
            return Status(StatusCode::kFailedPrecondition,
                          "the daemon identity file " + path +
                              " is malformed: it must hold 32 lowercase hex digits (this "
                              "rpmad's identity in replica sets). Restore it from a backup of "
                              "the pool, or remove it to give this daemon a new identity (every "
                              "replica set that lists the old one then counts this daemon's "
                              "copies as stale until they are repaired)");
        }
        return std::string(id);
    }
    if (contents.status().code() != StatusCode::kNotFound) {
        return contents.status();
    }
    StatusOr<std::string> id = NewDaemonId();
    if (!id.ok()) {
        return id;
    }
    // Durable before it is used: a replica set that recorded this identity
    // must find it again after a power cut.
    Replacement written = ReplaceFileDurably(path, *id + "\n", "");
    if (!written.status.ok()) {
        return Status(written.status.code(),
                      "cannot create the daemon identity file: " + written.status.message());
    }
    return id;
}

}  // namespace rpmad
