#include "client/rpmactl/explain.h"

#include <algorithm>
#include <cctype>

namespace rpmactl {
namespace {

using rpma::client::Status;
using rpma::client::StatusCode;

constexpr char kListHint[] = "rpmactl region list / session list show what exists";
constexpr char kGiveTokenHint[] =
    "pass the admin token with --admin-token-file FILE (or admin_token_file in "
    "~/.config/rpmactl/config.yaml)";
constexpr char kWrongTokenHint[] =
    "the admin token was refused: give the token of rpmad's control.admin_token (or the file it "
    "names)";

constexpr char kClientTokenHint[] =
    "rpmad wants a client token to open sessions: pass one of the tokens of its "
    "sessions.client_tokens_file with --client-token-file FILE (or client_token_file in "
    "~/.config/rpmactl/config.yaml)";

bool Mentions(const std::string &text, const std::string &word) {
    auto lower = [](std::string s) {
        std::transform(s.begin(), s.end(), s.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        return s;
    };
    return lower(text).find(lower(word)) != std::string::npos;
}

bool UsesTls(const rpma::client::ConnectOptions &options) {
    return options.tls || !options.ca_file.empty() || !options.cert_file.empty();
}

// What to do about a daemon gRPC could not reach, from gRPC's `detail`.
std::string UnreachableHint(const std::string &detail, bool tls) {
    if (Mentions(detail, "ssl") || Mentions(detail, "handshake") ||
        Mentions(detail, "certificate") || Mentions(detail, "tls"))
        return tls ? "the TLS handshake failed: check that --ca names the CA that signed "
                     "the daemon's certificate, that the certificate covers this host "
                     "name, that the daemon serves TLS at all (else drop --tls), and "
                     "that --cert/--key are accepted if it requires client certificates"
                   : "the daemon seems to speak TLS: add --tls and --ca FILE";
    if (Mentions(detail, "connection refused"))
        return "nothing answers there: check that rpmad runs and that control.listen "
               "(rpmad --listen) is this address";
    // A TLS port closes a plaintext client's connection.
    if (Mentions(detail, "socket closed") && !tls)
        return "the daemon closed the connection: if it serves TLS, add --tls and --ca FILE";
    return tls ? "check that rpmad runs there and serves TLS with a certificate --ca trusts"
               : "check that rpmad runs there; if it serves TLS, add --tls and --ca FILE";
}

std::string DeadlineHint(bool tls) {
    return std::string(
               "check that it runs and the network between; a plaintext client talking to a "
               "TLS port (or the reverse) also hangs like this") +
           (tls ? "" : ": add --tls and --ca FILE if it serves TLS") +
           " (--timeout to wait longer)";
}

}  // namespace

Status Explain(const grpc::Status &status, const rpma::client::ControlPlane &control) {
    if (status.ok())
        return Status();
    const std::string &address = control.address();
    const std::string &detail = status.error_message();
    const bool tls = UsesTls(control.options());
    switch (status.error_code()) {
        case grpc::StatusCode::UNAVAILABLE:
            return Status(StatusCode::kUnavailable, "cannot reach rpmad at " + address + ": " +
                                                        detail + "; " +
                                                        UnreachableHint(detail, tls));
        case grpc::StatusCode::DEADLINE_EXCEEDED:
            return Status(StatusCode::kDeadlineExceeded,
                          "rpmad at " + address + " did not answer within " +
                              std::to_string(control.options().timeout.count()) +
                              " ms: " + DeadlineHint(tls));
        case grpc::StatusCode::UNAUTHENTICATED:
            return Status(StatusCode::kPermissionDenied,
                          address + ": " + detail + "; " + kGiveTokenHint);
        case grpc::StatusCode::PERMISSION_DENIED:
            return Status(StatusCode::kPermissionDenied,
                          address + ": " + detail + "; " + kWrongTokenHint);
        case grpc::StatusCode::NOT_FOUND:
            return Status(StatusCode::kNotFound, address + ": " + detail +
                                                     // rpmad's own words may give the hint already.
                                                     (Mentions(detail, "rpmactl region list")
                                                          ? ""
                                                          : std::string(" (") + kListHint + ")"));
        default:
            return rpma::client::FromGrpc(status, address);
    }
}

Status Advise(const Status &status, const rpma::client::ConnectOptions &options) {
    const std::string &message = status.message();
    const bool tls = UsesTls(options);
    std::string hint;
    switch (status.code()) {
        case StatusCode::kUnavailable:
            hint = UnreachableHint(message, tls);
            break;
        case StatusCode::kDeadlineExceeded:
            // A control call's deadline (FromGrpc's words), not a data-plane
            // operation's timeout, which says what it waited for itself.
            if (Mentions(message, "no answer in time"))
                hint = DeadlineHint(tls);
            break;
        case StatusCode::kPermissionDenied:
            if (Mentions(message, "client token"))
                hint = kClientTokenHint;
            else
                hint = options.admin_token.empty() ? kGiveTokenHint : kWrongTokenHint;
            break;
        case StatusCode::kNotFound:
            if (!Mentions(message, "rpmactl region list"))
                hint = kListHint;
            break;
        default:
            break;
    }
    if (hint.empty())
        return status;
    Status advised(status.code(), message + "; " + hint);
    if (status.replica())
        advised.WithReplica(*status.replica(), status.replica_address());
    return advised;
}

}  // namespace rpmactl
