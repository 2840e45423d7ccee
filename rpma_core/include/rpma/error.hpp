// rpma::Error and rpma::Result<T>: the C API's return codes as values.
//
// An Error keeps the RPMA_E_* code and a message naming the call, what it was
// called on, rpma_err_2str() and, for RPMA_E_PROVIDER, strerror(errno) as it
// was right after the failing call, e.g.
//   "rpma_ep_listen(127.0.0.1:7301): Provider error occurred: Address already in use".
// Nothing here throws; value() on an error is a programming error and aborts.
#ifndef RPMA_CORE_INCLUDE_RPMA_ERROR_HPP
#define RPMA_CORE_INCLUDE_RPMA_ERROR_HPP

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "librpma.h"

namespace rpma {

class Error {
  public:
    Error(int code, std::string message) : code_(code), message_(std::move(message)) {}

    // RPMA_E_*.
    int code() const { return code_; }
    const std::string &message() const { return message_; }

  private:
    int code_;
    std::string message_;
};

namespace detail {

// What a C call returned, with errno read before anything else can touch it.
struct Returned {
    int code;
    int saved_errno;
};

inline Returned Check(int code) {
    return {code, errno};
}

// The Error of a failed call: "call(context): words[: strerror]".
inline Error Failure(Returned returned, std::string_view call, std::string_view context = {}) {
    std::string message(call);
    if (!context.empty())
        message.append("(").append(context).append(")");
    message.append(": ").append(rpma_err_2str(returned.code));
    if (returned.code == RPMA_E_PROVIDER && returned.saved_errno != 0)
        message.append(": ").append(strerror(returned.saved_errno));
    return Error(returned.code, std::move(message));
}

[[noreturn]] inline void DieOnError(const Error &error) {
    fprintf(stderr, "rpma::Result: value() of an error: %s\n", error.message().c_str());
    abort();
}

}  // namespace detail

template <class T>
class [[nodiscard]] Result {
  public:
    Result(T value) : state_(std::move(value)) {}
    Result(Error error) : state_(std::move(error)) {}

    bool ok() const { return std::holds_alternative<T>(state_); }
    T &value() & { return *Checked(); }
    const T &value() const & { return *Checked(); }
    T &&value() && { return std::move(*Checked()); }
    T &operator*() & { return value(); }
    const T &operator*() const & { return value(); }
    T &&operator*() && { return std::move(*Checked()); }
    T *operator->() { return Checked(); }
    const T *operator->() const { return Checked(); }
    // Only when !ok().
    const Error &error() const { return std::get<Error>(state_); }

  private:
    T *Checked() {
        if (T *value = std::get_if<T>(&state_))
            return value;
        detail::DieOnError(std::get<Error>(state_));
    }
    const T *Checked() const { return const_cast<Result *>(this)->Checked(); }

    std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
  public:
    Result() = default;
    Result(Error error) : error_(std::move(error)) {}

    bool ok() const { return !error_.has_value(); }
    // Only when !ok().
    const Error &error() const { return *error_; }

  private:
    std::optional<Error> error_;
};

namespace detail {

// Result<void> of a C call returning 0 or RPMA_E_*.
inline Result<void> Status(Returned returned, std::string_view call,
                           std::string_view context = {}) {
    if (returned.code != 0)
        return Failure(returned, call, context);
    return {};
}

}  // namespace detail

}  // namespace rpma

#endif  // RPMA_CORE_INCLUDE_RPMA_ERROR_HPP
