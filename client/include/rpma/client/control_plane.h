// rpma::client::ControlPlane: a gRPC channel to one rpmad's control plane
// (proto/rpmad/v1/rpmad.proto), with its TLS settings and admin token.
//
//   ConnectOptions options;
//   options.admin_token = "...";
//   auto control = ControlPlane::Connect("127.0.0.1:7000", options);
//   rpmad::v1::Region region;
//   grpc::Status got = (*control)->regions().GetRegion(
//       (*control)->Context().get(), request, &region);
//   Status status = FromGrpc(got, (*control)->address());
//
// Thread-safe: the stubs and the channel may be used from any thread.
#ifndef CLIENT_INCLUDE_RPMA_CLIENT_CONTROL_PLANE_H
#define CLIENT_INCLUDE_RPMA_CLIENT_CONTROL_PLANE_H

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "proto/rpmad/v1/rpmad.grpc.pb.h"
#include "rpma/client/connect_options.h"
#include "rpma/client/status.h"

namespace rpma::client {

class ControlPlane {
  public:
    // A channel to `address` ("host:port"), connected before it returns
    // when the daemon answers within a second (or options.timeout, if
    // shorter); a connection attempt that fails at once is made again, up
    // to three times, so that a spurious local failure (gRPC 1.51 can
    // report a connect still in progress as failed) does not fail the
    // first call. An unreachable daemon is not an error here: it shows up
    // as kUnavailable on the first call, with the reason. Each channel has
    // its own connection (subchannel), so a new ControlPlane to a daemon
    // restarted on a dead one's address connects at once instead of
    // waiting out the dead one's reconnect backoff. Errors: kInvalidArgument
    // for an empty address, a TLS file that cannot be read, or a
    // certificate without its key (or the reverse).
    static Result<std::unique_ptr<ControlPlane>> Connect(const std::string &address,
                                                         const ConnectOptions &options);

    const std::string &address() const { return address_; }
    const ConnectOptions &options() const { return options_; }

    // A context for one call: the deadline options().timeout from now and
    // the admin token.
    std::unique_ptr<grpc::ClientContext> Context() const;
    // The same for OpenSession: with the client token when options() has
    // one, else the admin token.
    std::unique_ptr<grpc::ClientContext> SessionContext() const;

    rpmad::v1::RegionService::Stub &regions() { return *regions_; }
    rpmad::v1::SessionService::Stub &sessions() { return *sessions_; }
    rpmad::v1::DaemonService::Stub &daemon() { return *daemon_; }
    std::shared_ptr<grpc::Channel> channel() const { return channel_; }

  private:
    ControlPlane() = default;

    std::string address_;
    ConnectOptions options_;
    std::shared_ptr<grpc::Channel> channel_;
    std::unique_ptr<rpmad::v1::RegionService::Stub> regions_;
    std::unique_ptr<rpmad::v1::SessionService::Stub> sessions_;
    std::unique_ptr<rpmad::v1::DaemonService::Stub> daemon_;
};

}  // namespace rpma::client

#endif  // CLIENT_INCLUDE_RPMA_CLIENT_CONTROL_PLANE_H
