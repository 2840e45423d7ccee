// rpma::client::ConnectOptions: how to reach rpmad control planes (TLS, the
// admin and client tokens, the deadline of each call). Apart from control_plane.h so
// that the data API (region.h, replica_set.h) needs no gRPC header: a
// program built against the installed library includes only these.
#ifndef CLIENT_INCLUDE_RPMA_CLIENT_CONNECT_OPTIONS_H
#define CLIENT_INCLUDE_RPMA_CLIENT_CONNECT_OPTIONS_H

#include <chrono>
#include <string>

namespace rpma::client {

struct ConnectOptions {
    // TLS; with ca_file empty, the system's roots are trusted.
    bool tls = false;
    // PEM CA bundle to trust (implies tls).
    std::string ca_file;
    // PEM client certificate and key, for daemons that require mutual TLS
    // (both or neither; imply tls).
    std::string cert_file;
    std::string key_file;
    // Sent as "authorization: Bearer <token>" on every call when not empty.
    std::string admin_token;
    // For daemons that require one to open sessions (rpmad's
    // sessions.client_tokens_file): sent as "authorization: Bearer <token>"
    // on OpenSession instead of admin_token when not empty.
    std::string client_token;
    // Deadline of each control call.
    std::chrono::milliseconds timeout{10000};
};

}  // namespace rpma::client

#endif  // CLIENT_INCLUDE_RPMA_CLIENT_CONNECT_OPTIONS_H
