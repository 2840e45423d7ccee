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

#include <string>
#include <vector>

#include "rpma/client/status.h"

namespace powercut {

class AckLog {
  public:
    // Appends to `path`, creating it.
    static rpma::client::Result<AckLog> Open(const std::string &path);
    AckLog(AckLog &&other) noexcept;
    AckLog &operator=(AckLog &&) = delete;
    ~AckLog();

    // Writes `line` and a newline and waits until they are on disk.
    rpma::client::Status Append(const std::string &line);

  private:
    AckLog(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
    int fd_;
    std::string path_;
};

// The complete lines of `path` split into fields (a missing file has none;
// a last line without its newline is not complete and is left out).
rpma::client::Result<std::vector<std::vector<std::string>>> ReadAckLog(const std::string &path);

}  // namespace powercut

#endif  // TESTS_POWERCUT_ACK_LOG_H
