// The client's log of what rpmad acknowledged, one line per event, each
// line on the host's disk (fdatasync) before the client goes on: what the
// log names was acknowledged before the power was cut, so it must be there
// after it. Lines (fields separated by one space):
//
//   R <seq> <cycle>      record seq of cycle was persisted (WritePersist ok)
//   C+ <name> <size>     CreateRegion sent          C <name> <size>  it succeeded
//   D+ <name>            DeleteRegion sent          D <name>         it succeeded
#ifndef TESTS_POWERCUT_ACK_LOG_H
#define TESTS_POWERCUT_ACK_LOG_H

#include <cstdint>
#include <string>
#include <vector>

#include "rpma/client/status.h"

namespace powercut {

struct AckedRecord {
    uint64_t seq = 0;
    uint32_t cycle = 0;
};

struct RegionChange {
    enum Kind { kCreateSent, kCreated, kDeleteSent, kDeleted };
    Kind kind = kCreateSent;
    std::string name;
    uint64_t size = 0;  // creates only
};

struct AckLogContents {
    std::vector<AckedRecord> records;
    std::vector<RegionChange> changes;
};

class AckLog {
  public:
    // Appends to `path`, creating it.
    static rpma::client::Result<AckLog> Open(const std::string &path);
    AckLog(AckLog &&other) noexcept;
    AckLog &operator=(AckLog &&) = delete;
    ~AckLog();

    // Each writes its line and waits until it is on disk.
    rpma::client::Status Append(const AckedRecord &record);
    rpma::client::Status Append(const RegionChange &change);

  private:
    AckLog(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
    rpma::client::Status AppendLine(const std::string &line);

    int fd_;
    std::string path_;
};

// The events of `path` in order (a missing file has none). A last line
// without its newline was not complete and is left out; any other line
// that is not one of the above is an error naming it.
rpma::client::Result<AckLogContents> ReadAckLog(const std::string &path);

}  // namespace powercut

#endif  // TESTS_POWERCUT_ACK_LOG_H
