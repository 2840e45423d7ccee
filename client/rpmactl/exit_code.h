// rpmactl's exit codes, documented in rpmactl(1): scripts tell a daemon that
// is down (3) from one that refused (1) and from a mistyped command (2).
#ifndef CLIENT_RPMACTL_EXIT_CODE_H
#define CLIENT_RPMACTL_EXIT_CODE_H

#include "rpma/client/status.h"

namespace rpmactl {

enum ExitCode : int {
    kExitOk = 0,
    kExitFailure = 1,      // a daemon refused or an operation failed
    kExitUsage = 2,        // bad command line or configuration file
    kExitUnreachable = 3,  // a daemon could not be reached
};

// kExitUnreachable for kUnavailable and kDeadlineExceeded, kExitUsage for
// kInvalidArgument raised before any daemon was asked (see Usage()), else
// kExitFailure.
inline ExitCode ExitCodeFor(const rpma::client::Status &status) {
    using rpma::client::StatusCode;
    switch (status.code()) {
        case StatusCode::kOk:
            return kExitOk;
        case StatusCode::kUnavailable:
        case StatusCode::kDeadlineExceeded:
            return kExitUnreachable;
        default:
            return kExitFailure;
    }
}

// The worse of two outcomes: unreachable beats failure beats ok, so that a
// script learns first that it has to fix connectivity.
inline ExitCode Worse(ExitCode a, ExitCode b) {
    auto rank = [](ExitCode c) { return c == kExitUnreachable ? 3 : c == kExitUsage ? 2 : c; };
    return rank(a) >= rank(b) ? a : b;
}

}  // namespace rpmactl

#endif  // CLIENT_RPMACTL_EXIT_CODE_H
