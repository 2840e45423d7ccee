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

class Callers;

class ControlServer {
  public:
    // Listens on `listen` with effective.tls (plaintext when it names no
    // certificate) and serves `daemon`, which must outlive the server;
    // GetConfig reports `effective`. The listening socket has SO_REUSEPORT,
    // so that a reload can start a server with new TLS material on the
    // address of the running one before that one stops: no client is
    // refused in between.
    static StatusOr<std::unique_ptr<ControlServer>> Start(Daemon &daemon, const Config &effective,
                                                          const std::string &config_origin,
                                                          const std::string &listen);
    ~ControlServer();

    // The address it listens on, with the port the kernel picked for ":0".
    const std::string &address() const { return address_; }
    // A reload's configuration, for the settings served without a new
    // server: calls from now on are checked against its admin token and
    // client tokens (calls in flight finish with the ones they began with),
    // and GetConfig reports it.
    void Reconfigure(const Config &effective);
    // Health turns NOT_SERVING; calls are still served. A graceful stop
    // says so first, before it disconnects the clients.
    void StopServing();
    // Health turns NOT_SERVING, then in-flight calls finish (up to a
    // deadline) and the server stops.
    void Shutdown();

  private:
    ControlServer() = default;

    std::string address_;
    // Outlives the services, which check callers with it.
    std::unique_ptr<Callers> callers_;
    std::vector<std::unique_ptr<grpc::Service>> services_;
    grpc::Service *daemon_service_ = nullptr;  // one of services_
    std::unique_ptr<grpc::Server> server_;
};

// UNAVAILABLE when something listens on `listen` already. gRPC's own bind
// does not find out: it sets SO_REUSEPORT, which lets a second process of
// the same user listen on the port too and take part of its connections.
// Port 0 always passes.
Status CheckNobodyListensOn(const std::string &listen);

grpc::Status ToGrpc(const Status &status);

}  // namespace rpmad

#endif  // DAEMON_CONTROL_SERVICE_H
