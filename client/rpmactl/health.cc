#include "client/rpmactl/health.h"

#include "proto/grpc/health/v1/health.grpc.pb.h"

namespace rpmactl {

grpc::Status CheckHealth(rpma::client::ControlPlane &daemon, grpc::ClientContext *context,
                         const std::string &service, HealthAnswer *out) {
    namespace health = ::grpc::health::v1;
    health::HealthCheckRequest request;
    request.set_service(service);
    health::HealthCheckResponse response;
    auto stub = health::Health::NewStub(daemon.channel());
    grpc::Status status = stub->Check(context, request, &response);
    if (status.ok())
        out->status = health::HealthCheckResponse::ServingStatus_Name(response.status());
    return status;
}

}  // namespace rpmactl
