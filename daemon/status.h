// Errors as values for the daemon: a Status is a code (the canonical gRPC
// codes the control plane answers with) and a message a person can act on;
// StatusOr<T> is a T or the Status that says why there is none. The control
// service maps a Status to grpc::Status one to one; nothing else in the
// daemon knows about gRPC.
#ifndef DAEMON_STATUS_H
#define DAEMON_STATUS_H

#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace rpmad {

enum class StatusCode {
    kOk,
    kInvalidArgument,
    kNotFound,
    kAlreadyExists,
    kFailedPrecondition,
    kResourceExhausted,
    kPermissionDenied,
    kUnauthenticated,
    kUnavailable,
    kInternal,
    kUnimplemented,
};

class [[nodiscard]] Status {
  public:
    Status() = default;
    Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

    bool ok() const { return code_ == StatusCode::kOk; }
    StatusCode code() const { return code_; }
    const std::string &message() const { return message_; }

  private:
    StatusCode code_ = StatusCode::kOk;
    std::string message_;
};

template <class T>
class [[nodiscard]] StatusOr {
  public:
    StatusOr(T value) : value_(std::move(value)) {}
    // `status` must not be ok: a StatusOr without a value says why.
    StatusOr(Status status) : value_(std::move(status)) {}

    bool ok() const { return std::holds_alternative<T>(value_); }
    Status status() const { return ok() ? Status() : std::get<Status>(value_); }
    T &value() { return std::get<T>(value_); }
    const T &value() const { return std::get<T>(value_); }
    T &operator*() { return value(); }
    const T &operator*() const { return value(); }
    T *operator->() { return &value(); }
    const T *operator->() const { return &value(); }

  private:
    std::variant<Status, T> value_;
};

// "<what>: <strerror(err)>" with the code a caller can act on: ENOENT and
// ENOTDIR are NOT_FOUND; EACCES, EPERM and EROFS PERMISSION_DENIED; ENOSPC
// and EDQUOT RESOURCE_EXHAUSTED; EISDIR, ELOOP and ENAMETOOLONG (a path
// that cannot work) FAILED_PRECONDITION; anything else (EIO above all)
// INTERNAL. The one place where an errno becomes a Status.
Status ErrnoStatus(int err, std::string_view what);

}  // namespace rpmad

#endif  // DAEMON_STATUS_H
