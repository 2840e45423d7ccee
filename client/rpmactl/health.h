// The standard grpc.health.v1.Health/Check call (rpmad serves it).
#ifndef CLIENT_RPMACTL_HEALTH_H
#define CLIENT_RPMACTL_HEALTH_H

#include <grpcpp/grpcpp.h>

#include <string>

#include "rpma/client/control_plane.h"

namespace rpmactl {

struct HealthAnswer {
    // "SERVING", "NOT_SERVING", "UNKNOWN" or "SERVICE_UNKNOWN".
    std::string status;
};

// Check(`service`, "" for the server as a whole) on the daemon's channel.
grpc::Status CheckHealth(rpma::client::ControlPlane &daemon, grpc::ClientContext *context,
                         const std::string &service, HealthAnswer *out);

}  // namespace rpmactl

#endif  // CLIENT_RPMACTL_HEALTH_H
