#include "tests/powercut/ack_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace powercut {

using rpma::client::Result;
using rpma::client::Status;
using rpma::client::StatusCode;

namespace {

Status Errno(const std::string &what) {
    return Status(StatusCode::kInternal, what + ": " + std::strerror(errno));
}

}  // namespace

Result<AckLog> AckLog::Open(const std::string &path) {
    int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return Errno("cannot open the ack log " + path);
    return AckLog(fd, path);
}

AckLog::AckLog(AckLog &&other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) {
    other.fd_ = -1;
}

AckLog::~AckLog() {
    if (fd_ >= 0)
        close(fd_);
}

Status AckLog::Append(const std::string &line) {
    std::string bytes = line + "\n";
    // O_APPEND: one write is one line, even with two threads logging.
    ssize_t n = write(fd_, bytes.data(), bytes.size());
    if (n != static_cast<ssize_t>(bytes.size()))
        return Errno("cannot append to " + path_);
    if (fdatasync(fd_) != 0)
        return Errno("cannot fdatasync " + path_);
    return Status::Ok();
}

Result<std::vector<std::vector<std::string>>> ReadAckLog(const std::string &path) {
    std::vector<std::vector<std::string>> lines;
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return lines;
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad())
        return Status(StatusCode::kInternal, "cannot read " + path);
    size_t start = 0;
    for (size_t end; (end = all.find('\n', start)) != std::string::npos; start = end + 1) {
        std::istringstream fields(all.substr(start, end - start));
        std::vector<std::string> line;
        for (std::string field; fields >> field;)
            line.push_back(field);
        if (!line.empty())
            lines.push_back(std::move(line));
    }
    return lines;
}

}  // namespace powercut
