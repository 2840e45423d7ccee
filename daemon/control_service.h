// rpmad's control plane: the three gRPC services of rpmad.proto (regions,
// sessions, the daemon itself), the standard grpc.health.v1 service and
// server reflection, on one gRPC server. Handlers are thin: check the
// caller, call the Daemon, translate its Status.
#ifndef DAEMON_CONTROL_SERVICE_H
#define DAEMON_CONTROL_SERVICE_H

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "daemon/daemon.h"
#include "daemon/status.h"

namespace rpmad {

class ControlServer {
  public:
    // Listens on config.control_listen (TLS when configured) and serves
    // `daemon`, which must outlive the server.
    static StatusOr<std::unique_ptr<ControlServer>> Start(Daemon &daemon,
                                                          const std::string &config_origin);
    ~ControlServer();

    // The address it listens on, with the port the kernel picked for ":0".
    const std::string &address() const { return address_; }
    // Health turns NOT_SERVING, then in-flight calls finish (up to a
    // deadline) and the server stops.
    void Shutdown();

  private:
    ControlServer() = default;

    std::string address_;
    std::vector<std::unique_ptr<grpc::Service>> services_;
    std::unique_ptr<grpc::Server> server_;
};

grpc::Status ToGrpc(const Status &status);

}  // namespace rpmad

#endif  // DAEMON_CONTROL_SERVICE_H
