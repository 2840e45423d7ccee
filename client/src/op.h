// An operation of a Region, as its waits and failures name it.
#ifndef CLIENT_SRC_OP_H
#define CLIENT_SRC_OP_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace rpma::client {

inline std::string Describe(const char *what, uint64_t offset, uint64_t length) {
    return std::string(what) + " of " + std::to_string(length) + " bytes at " +
           std::to_string(offset);
}

// The operation a wait or a failure belongs to, for messages. Spelled out
// only when a message is made: an operation that goes well builds no string.
struct Op {
    enum class Kind {
        kWrite,
        kWritePersist,
        kPersist,
        kBatch,
        kRead,
        kCopy,
        kClosing,
        kUnregister,
        kOpen,
        kRepair,
    };
    Kind kind;
    uint64_t offset = 0;
    uint64_t length = 0;
    size_t count = 0;    // kBatch: how many writes
    size_t replica = 0;  // kRead: read from; kCopy: being readded

    std::string ToString() const {
        switch (kind) {
            case Kind::kWrite:
                return Describe("write", offset, length);
            case Kind::kWritePersist:
                return Describe("write+persist", offset, length);
            case Kind::kPersist:
                return Describe("persist", offset, length);
            case Kind::kBatch:
                return "batch of " + std::to_string(count) + " writes, " +
                       Describe("persist", offset, length);
            case Kind::kRead:
                return Describe("read", offset, length) + " from replica " +
                       std::to_string(replica);
            case Kind::kCopy:
                return "readd of replica " + std::to_string(replica) + ": " +
                       Describe("copy", offset, length);
            case Kind::kClosing:
                return "closing";
            case Kind::kUnregister:
                return "unregistering a buffer";
            case Kind::kOpen:
                return "open";
            case Kind::kRepair:
                return "repair of replica " + std::to_string(replica);
        }
        return "an operation";
    }
};

}  // namespace rpma::client

#endif  // CLIENT_SRC_OP_H
