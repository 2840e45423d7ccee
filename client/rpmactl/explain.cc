#include "client/rpmactl/explain.h"

#include <algorithm>
#include <cctype>

namespace rpmactl {
namespace {

using rpma::client::Status;
using rpma::client::StatusCode;

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

}  // namespace

Status Explain(const grpc::Status &status, const rpma::client::ControlPlane &control) {
    if (status.ok())
        return Status();
    const std::string &address = control.address();
    const std::string &detail = status.error_message();
    const bool tls = UsesTls(control.options());
    switch (status.error_code()) {
        case grpc::StatusCode::UNAVAILABLE: {
            std::string hint;
            if (Mentions(detail, "ssl") || Mentions(detail, "handshake") ||
                Mentions(detail, "certificate") || Mentions(detail, "tls")) {
                hint = tls ? "the TLS handshake failed: check that --ca names the CA that signed "
                             "the daemon's certificate, that the certificate covers this host "
                             "name, that the daemon serves TLS at all (else drop --tls), and "
                             "that --cert/--key are accepted if it requires client certificates"
                           : "the daemon seems to speak TLS: add --tls and --ca FILE";
            } else if (Mentions(detail, "connection refused")) {
                hint =
                    "nothing answers there: check that rpmad runs and that control.listen "
                    "(rpmad --listen) is this address";
            } else if (Mentions(detail, "socket closed") && !tls) {
                // A TLS port closes a plaintext client's connection.
                hint =
                    "the daemon closed the connection: if it serves TLS, add --tls and --ca "
                    "FILE";
            } else {
                hint = tls ? "check that rpmad runs there and serves TLS with a certificate "
                             "--ca trusts"
                           : "check that rpmad runs there; if it serves TLS, add --tls and "
                             "--ca FILE";
            }
            return Status(StatusCode::kUnavailable,
                          "cannot reach rpmad at " + address + ": " + detail + "; " + hint);
        }
        case grpc::StatusCode::DEADLINE_EXCEEDED:
            return Status(StatusCode::kDeadlineExceeded,
                          "rpmad at " + address + " did not answer within " +
                              std::to_string(control.options().timeout.count()) +
                              " ms: check that it runs and the network between; a plaintext "
                              "client talking to a TLS port (or the reverse) also hangs like "
                              "this" +
                              (tls ? "" : ": add --tls and --ca FILE if it serves TLS") +
                              " (--timeout to wait longer)");
        case grpc::StatusCode::UNAUTHENTICATED:
            return Status(StatusCode::kPermissionDenied,
                          address + ": " + detail +
                              "; pass the admin token with --admin-token-file FILE (or "
                              "admin_token_file in ~/.config/rpmactl/config.yaml)");
        case grpc::StatusCode::PERMISSION_DENIED:
            return Status(StatusCode::kPermissionDenied,
                          address + ": " + detail +
                              "; the admin token was refused: give the token of rpmad's "
                              "control.admin_token (or the file it names)");
        case grpc::StatusCode::NOT_FOUND:
            return Status(
                StatusCode::kNotFound,
                address + ": " + detail + " (rpmactl region list / session list show what exists)");
        default:
            return rpma::client::FromGrpc(status, address);
    }
}

}  // namespace rpmactl
