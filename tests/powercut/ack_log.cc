#include "tests/powercut/ack_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
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

template <class T>
bool ParseNumber(const std::string &text, T *out) {
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *out);
    return error == std::errc() && end == text.data() + text.size();
}

// One line's fields as an event of `contents`; false when it is none.
bool ParseLine(const std::vector<std::string> &f, AckLogContents *contents) {
    if (f.size() == 3 && f[0] == "R") {
        AckedRecord r;
        if (!ParseNumber(f[1], &r.seq) || !ParseNumber(f[2], &r.cycle))
            return false;
        contents->records.push_back(r);
        return true;
    }
    RegionChange c;
    if (f.size() == 3 && (f[0] == "C+" || f[0] == "C")) {
        c.kind = f[0] == "C" ? RegionChange::kCreated : RegionChange::kCreateSent;
        if (!ParseNumber(f[2], &c.size))
            return false;
    } else if (f.size() == 2 && (f[0] == "D+" || f[0] == "D")) {
        c.kind = f[0] == "D" ? RegionChange::kDeleted : RegionChange::kDeleteSent;
    } else {
        return false;
    }
    c.name = f[1];
    contents->changes.push_back(std::move(c));
    return true;
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

Status AckLog::Append(const AckedRecord &record) {
    return AppendLine("R " + std::to_string(record.seq) + " " + std::to_string(record.cycle));
}

Status AckLog::Append(const RegionChange &change) {
    switch (change.kind) {
        case RegionChange::kCreateSent:
            return AppendLine("C+ " + change.name + " " + std::to_string(change.size));
        case RegionChange::kCreated:
            return AppendLine("C " + change.name + " " + std::to_string(change.size));
        case RegionChange::kDeleteSent:
            return AppendLine("D+ " + change.name);
        case RegionChange::kDeleted:
            return AppendLine("D " + change.name);
    }
    return Status(StatusCode::kInvalidArgument, "unknown region change");
}

Status AckLog::AppendLine(const std::string &line) {
    std::string bytes = line + "\n";
    // O_APPEND: one write is one line, even with two threads logging.
    ssize_t n = write(fd_, bytes.data(), bytes.size());
    if (n != static_cast<ssize_t>(bytes.size()))
        return Errno("cannot append to " + path_);
    if (fdatasync(fd_) != 0)
        return Errno("cannot fdatasync " + path_);
    return Status::Ok();
}

Result<AckLogContents> ReadAckLog(const std::string &path) {
    AckLogContents contents;
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return contents;
    std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (in.bad())
        return Status(StatusCode::kInternal, "cannot read " + path);
    size_t start = 0;
    for (size_t end, number = 1; (end = all.find('\n', start)) != std::string::npos;
         start = end + 1, number++) {
        std::istringstream fields(all.substr(start, end - start));
        std::vector<std::string> line;
        for (std::string field; fields >> field;)
            line.push_back(field);
        if (!ParseLine(line, &contents))
            return Status(StatusCode::kInternal, path + ":" + std::to_string(number) +
                                                     ": not an ack log line: \"" +
                                                     all.substr(start, end - start) + "\"");
    }
    return contents;
}

}  // namespace powercut
