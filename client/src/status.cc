#include "rpma/client/status.h"

#include <grpcpp/grpcpp.h>

namespace rpma::client {

const char *StatusCodeName(StatusCode code) {
    switch (code) {
        case StatusCode::kOk:
            return "ok";
        case StatusCode::kInvalidArgument:
            return "invalid argument";
        case StatusCode::kNotFound:
            return "not found";
        case StatusCode::kAlreadyExists:
            return "already exists";
        case StatusCode::kFailedPrecondition:
            return "failed precondition";
        case StatusCode::kPermissionDenied:
            return "permission denied";
        case StatusCode::kUnavailable:
            return "unavailable";
        case StatusCode::kDeadlineExceeded:
            return "deadline exceeded";
        case StatusCode::kResourceExhausted:
            return "resource exhausted";
        case StatusCode::kDataPlane:
            return "data plane";
        case StatusCode::kQuorumLost:
            return "quorum lost";
        case StatusCode::kInternal:
            return "internal";
    }
    return "unknown";
}

std::string Status::ToString() const {
    if (ok())
        return "ok";
    std::string text = StatusCodeName(code_);
    text += ": ";
    if (replica_)
        text += "replica " + std::to_string(*replica_) + " (" + replica_address_ + "): ";
    return text + message_;
}

Status FromGrpc(const grpc::Status &status, const std::string &address) {
    if (status.ok())
        return Status();
    const std::string &detail = status.error_message();
    switch (status.error_code()) {
        case grpc::StatusCode::UNAVAILABLE:
            return Status(StatusCode::kUnavailable, "unreachable: " + address + ": " + detail);
        case grpc::StatusCode::DEADLINE_EXCEEDED:
            return Status(StatusCode::kDeadlineExceeded,
                          address +
                              ": no answer in time (is the daemon overloaded or the network "
                              "cut?): " +
                              detail);
        case grpc::StatusCode::INVALID_ARGUMENT:
        case grpc::StatusCode::OUT_OF_RANGE:
            return Status(StatusCode::kInvalidArgument, address + ": " + detail);
        case grpc::StatusCode::NOT_FOUND:
            return Status(StatusCode::kNotFound, address + ": " + detail);
        case grpc::StatusCode::ALREADY_EXISTS:
            return Status(StatusCode::kAlreadyExists, address + ": " + detail);
        case grpc::StatusCode::FAILED_PRECONDITION:
            return Status(StatusCode::kFailedPrecondition, address + ": " + detail);
        case grpc::StatusCode::PERMISSION_DENIED:
        case grpc::StatusCode::UNAUTHENTICATED:
            return Status(StatusCode::kPermissionDenied, address + ": " + detail);
        case grpc::StatusCode::RESOURCE_EXHAUSTED:
            return Status(StatusCode::kResourceExhausted, address + ": " + detail);
        default:
            return Status(StatusCode::kInternal, address + ": " + detail);
    }
}

}  // namespace rpma::client
