// A daemon's answer turned into an error a person can act on: what failed,
// where, and what to do next (start the daemon, fix TLS, give the admin
// token, list the regions).
#ifndef CLIENT_RPMACTL_EXPLAIN_H
#define CLIENT_RPMACTL_EXPLAIN_H

#include <grpcpp/grpcpp.h>

#include <string>

#include "rpma/client/control_plane.h"
#include "rpma/client/status.h"

namespace rpmactl {

// `status` of a call to `control` (ok stays ok). The message keeps the
// daemon's own words and adds a hint by kind:
//   unreachable   the address, gRPC's cause, and whether TLS may be the reason
//   unauthenticated / permission denied   how to give the admin token
//   not found     how to list what exists
rpma::client::Status Explain(const grpc::Status &status, const rpma::client::ControlPlane &control);

// The same hints for an error of the client library (a replica that could
// not be opened or that failed, put/get/verify/bench), which made the calls
// with `options`; its code and replica stay.
rpma::client::Status Advise(const rpma::client::Status &status,
                            const rpma::client::ConnectOptions &options);

}  // namespace rpmactl

#endif  // CLIENT_RPMACTL_EXPLAIN_H
