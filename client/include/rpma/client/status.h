// rpma::client::Status and Result<T>: the client library's errors as values.
//
// A Status has a code, a message a person can act on, and — when the error
// concerns one replica of a replica set — that replica's index and control
// address. Nothing in the library throws; Result<T>::value() of an error is a
// programming error and aborts.
#ifndef CLIENT_INCLUDE_RPMA_CLIENT_STATUS_H
#define CLIENT_INCLUDE_RPMA_CLIENT_STATUS_H

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace grpc {
class Status;
}

namespace rpma::client {

enum class StatusCode {
    kOk = 0,
    kInvalidArgument,     // the caller's arguments are wrong (range, size, index)
    kNotFound,            // no such region (or session) on a daemon
    kAlreadyExists,       // the region exists (and differs from what was asked)
    kFailedPrecondition,  // the daemon refuses in its state (e.g. region has sessions)
    kPermissionDenied,    // missing or wrong admin token
    kUnavailable,         // a daemon is unreachable (control plane)
    kDeadlineExceeded,    // a call or an operation took too long
    kResourceExhausted,   // a daemon or the client ran out of something
    kDataPlane,           // an rpma connection, posting or completion failed
    kQuorumLost,          // fewer live replicas than the quorum
    kInternal,            // a bug or an unexpected answer
};

// "ok", "invalid argument", ... for messages.
const char *StatusCodeName(StatusCode code);

class Status {
  public:
    Status() = default;
    Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

    static Status Ok() { return Status(); }

    bool ok() const { return code_ == StatusCode::kOk; }
    StatusCode code() const { return code_; }
    const std::string &message() const { return message_; }

    // The replica the error concerns (its index in the ReplicaSet and its
    // control address), if any.
    std::optional<size_t> replica() const { return replica_; }
    const std::string &replica_address() const { return replica_address_; }
    Status &WithReplica(size_t index, std::string address) & {
        replica_ = index;
        replica_address_ = std::move(address);
        return *this;
    }
    Status &&WithReplica(size_t index, std::string address) && {
        return std::move(WithReplica(index, std::move(address)));
    }

    // "quorum lost: ..." / "data plane: replica 1 (127.0.0.1:7000): ...".
    std::string ToString() const;

  private:
    StatusCode code_ = StatusCode::kOk;
    std::string message_;
    std::optional<size_t> replica_;
    std::string replica_address_;
};

// A gRPC status from the daemon at `address`, its message kept: an
// unreachable daemon reads "unreachable: <address>: <grpc detail>".
Status FromGrpc(const grpc::Status &status, const std::string &address);

template <class T>
class [[nodiscard]] Result {
  public:
    Result(T value) : state_(std::move(value)) {}
    // status must not be ok.
    Result(Status status) : state_(std::move(status)) {}

    bool ok() const { return std::holds_alternative<T>(state_); }
    T &value() & { return *Checked(); }
    const T &value() const & { return *Checked(); }
    T &&value() && { return std::move(*Checked()); }
    T &operator*() & { return value(); }
    const T &operator*() const & { return value(); }
    T *operator->() { return Checked(); }
    const T *operator->() const { return Checked(); }
    // Ok when ok().
    Status status() const { return ok() ? Status() : std::get<Status>(state_); }

  private:
    T *Checked() {
        if (T *value = std::get_if<T>(&state_))
            return value;
        fprintf(stderr, "rpma::client::Result: value() of an error: %s\n",
                std::get<Status>(state_).ToString().c_str());
        abort();
    }
    const T *Checked() const { return const_cast<Result *>(this)->Checked(); }

    std::variant<T, Status> state_;
};

}  // namespace rpma::client

#endif  // CLIENT_INCLUDE_RPMA_CLIENT_STATUS_H
