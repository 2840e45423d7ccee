#include "daemon/control_service.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

#include "daemon/checksum.h"
#include "daemon/log.h"
#include "daemon/peer_log_limit.h"
#include "proto/rpmad/v1/rpmad.grpc.pb.h"
#include "rpma_version.h"
#include "util/constant_time.h"

namespace rpmad {
namespace {

// How often the TLS files are checked for a change (a renewed certificate
// takes effect without a restart).
constexpr unsigned kTlsRefreshSeconds = 5;

int64_t UnixSeconds(std::chrono::system_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

v1::Persistence ToProto(Persistence persistence) {
    switch (persistence) {
        case Persistence::kApm:
            return v1::PERSISTENCE_APM;
        case Persistence::kGpspm:
            return v1::PERSISTENCE_GPSPM;
        case Persistence::kAuto:
            break;
    }
    return v1::PERSISTENCE_UNSPECIFIED;
}

void ToProto(const RegionView &view, const std::string &daemon_id, v1::Region *out) {
    out->set_name(view.info.name);
    out->set_size(view.info.size);
    out->set_id(view.info.id);
    out->set_created_unix_seconds(view.info.created_unix);
    out->set_granularity(view.info.granularity);
    out->set_persist_method(view.info.persist_method);
    out->set_backing(BackingName(view.info.backing));
    out->set_healthy(view.info.healthy);
    out->set_problem(view.info.problem);
    out->set_open_sessions(static_cast<uint32_t>(view.open_sessions));
    out->set_persistence(ToProto(view.persistence));
    out->set_bytes_written(view.traffic.bytes_written);
    out->set_bytes_read(view.traffic.bytes_read);
    out->set_remote_flushes(view.traffic.persistent_flushes);
    out->set_bytes_persisted(view.traffic.bytes_persisted);
    out->set_data_plane_counters_available(view.traffic_counted);
    *out->mutable_replica_set() = view.replica_set;
    out->set_daemon_id(daemon_id);
    if (view.repair_progress)
        *out->mutable_repair_progress() = *view.repair_progress;
}

std::string AsString(std::span<const std::byte> bytes) {
    return std::string(reinterpret_cast<const char *>(bytes.data()), bytes.size());
}

// One debug line per call that changes something, for operators tracing a
// client (rpmad --log-level debug).
void Trace(grpc::ServerContext *context, const char *call, const std::string &what) {
    Log().debug("control plane: {}({}) from {}", call, what, context->peer());
}

// The value of "authorization: Bearer <token>"; nullopt without the header,
// "" when it is not a bearer token.
std::optional<std::string_view> BearerOf(grpc::ServerContext *context) {
    const auto &metadata = context->client_metadata();
    auto it = metadata.find("authorization");
    if (it == metadata.end())
        return std::nullopt;
    const std::string_view value(it->second.data(), it->second.size());
    constexpr std::string_view kBearer = "Bearer ";
    return value.starts_with(kBearer) ? value.substr(kBearer.size()) : std::string_view();
}

// The identity of a verified TLS client certificate, if the caller sent one.
std::optional<std::string> CertificateIdentity(grpc::ServerContext *context) {
    const auto auth = context->auth_context();
    if (auth == nullptr || !auth->IsPeerAuthenticated())
        return std::nullopt;
    const auto identity = auth->GetPeerIdentity();
    if (identity.empty())
        return std::nullopt;
    return std::string(identity.front().data(), identity.front().size());
}

}  // namespace

// Who may call what: the admin token for the calls that change regions and
// end sessions, a client credential (when configured) for OpenSession. A
// caller provokes a refusal's log line at will, so those are rate-limited
// per peer.
class Callers {
  public:
    explicit Callers(const Config &config) { SetTokens(config); }

    // Takes the tokens of `config` (a reload's) for every later call.
    void SetTokens(const Config &config) {
        auto next =
            std::make_shared<const Tokens>(Tokens{config.admin_token, config.client_tokens});
        std::lock_guard lock(tokens_mutex_);
        tokens_ = std::move(next);
    }

    // The admin token, when the daemon has one, as "authorization: Bearer <token>".
    grpc::Status Admin(grpc::ServerContext *context, const char *call) {
        const auto tokens = Current();
        const std::string &expected = tokens->admin_token;
        if (expected.empty())
            return grpc::Status::OK;
        const auto bearer = BearerOf(context);
        if (!bearer)
            return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                std::string(call) +
                                    " needs the admin token: send it as the metadata "
                                    "'authorization: Bearer <token>' (rpmactl --admin-token)");
        if (!rpma::util::ConstantTimeEquals(*bearer, expected)) {
            Refused(context, std::string(call) + " refused: wrong admin token");
            return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                                std::string(call) + " refused: the admin token is wrong");
        }
        return grpc::Status::OK;
    }

    // Who opens a session: with sessions.client_tokens_file, the client
    // whose token it sends (or the admin); else the identity of its TLS
    // client certificate, else its address. The replica-set calls of a
    // region's writers (`call`) need the same.
    grpc::Status Opener(grpc::ServerContext *context, const char *call, Requester *who) {
        const auto config = Current();
        who->address = PeerHost(context->peer());
        if (!config->client_tokens.empty()) {
            const auto bearer = BearerOf(context);
            if (!bearer)
                return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                                    std::string(call) +
                                        " needs a client token (rpmad's "
                                        "sessions.client_tokens_file): send it as the metadata "
                                        "'authorization: Bearer <token>' (rpmactl "
                                        "--client-token-file)");
            // Every token is compared, so the time taken says nothing of which matched.
            const ClientToken *client = nullptr;
            for (const ClientToken &candidate : config->client_tokens)
                if (rpma::util::ConstantTimeEquals(*bearer, candidate.token))
                    client = &candidate;
            if (client != nullptr) {
                who->identity = "token:" + client->name;
            } else if (!config->admin_token.empty() &&
                       rpma::util::ConstantTimeEquals(*bearer, config->admin_token)) {
                who->identity = "admin";
            } else {
                Refused(context, std::string(call) + " refused: wrong client token");
                return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                                    std::string(call) + " refused: the client token is wrong");
            }
            return grpc::Status::OK;
        }
        if (auto subject = CertificateIdentity(context))
            who->identity = "cert:" + *subject;
        else
            who->identity = "address:" + who->address;
        return grpc::Status::OK;
    }

  private:
    // What a caller may present: swapped whole by a reload, while calls that
    // hold the previous set finish with it.
    struct Tokens {
        std::string admin_token;
        std::vector<ClientToken> client_tokens;
    };

    std::shared_ptr<const Tokens> Current() const {
        std::lock_guard lock(tokens_mutex_);
        return tokens_;
    }

    void Refused(grpc::ServerContext *context, const std::string &what) {
        refusals_log_.Write(context->peer(), what + " from " + context->peer());
    }

    mutable std::mutex tokens_mutex_;
    std::shared_ptr<const Tokens> tokens_;
    PeerLogLimit refusals_log_{
        [](const std::string &line) { Log().warn("control plane: {}", line); }};
};

namespace {

class RegionService final : public v1::RegionService::Service {
  public:
    RegionService(Daemon &daemon, Callers &callers) : daemon_(daemon), callers_(callers) {}

    grpc::Status CreateRegion(grpc::ServerContext *context, const v1::CreateRegionRequest *request,
                              v1::Region *response) override {
        Trace(context, "CreateRegion", request->name());
        if (auto allowed = callers_.Admin(context, "CreateRegion"); !allowed.ok())
            return allowed;
        auto view = daemon_.CreateRegion(request->name(), request->size());
        if (!view.ok())
            return ToGrpc(view.status());
        ToProto(*view, daemon_.daemon_id(), response);
        return grpc::Status::OK;
    }

    grpc::Status GetRegion(grpc::ServerContext *, const v1::GetRegionRequest *request,
                           v1::Region *response) override {
        auto view = daemon_.GetRegion(request->name());
        if (!view.ok())
            return ToGrpc(view.status());
        ToProto(*view, daemon_.daemon_id(), response);
        return grpc::Status::OK;
    }

    grpc::Status ListRegions(grpc::ServerContext *, const v1::ListRegionsRequest *,
                             v1::ListRegionsResponse *response) override {
        for (const auto &view : daemon_.ListRegions())
            ToProto(view, daemon_.daemon_id(), response->add_regions());
        return grpc::Status::OK;
    }

    grpc::Status DeleteRegion(grpc::ServerContext *context, const v1::DeleteRegionRequest *request,
                              v1::DeleteRegionResponse *response) override {
        Trace(context, "DeleteRegion", request->name());
        if (auto allowed = callers_.Admin(context, "DeleteRegion"); !allowed.ok())
            return allowed;
        auto closed = daemon_.DeleteRegion(request->name(), request->force());
        if (!closed.ok())
            return ToGrpc(closed.status());
        response->set_closed_sessions(static_cast<uint32_t>(*closed));
        return grpc::Status::OK;
    }

    // The replica-set calls are a writer's (and rpmactl's), so they need
    // what OpenSession needs.
    grpc::Status GetReplicaSet(grpc::ServerContext *context,
                               const v1::GetReplicaSetRequest *request,
                               v1::ReplicaSetView *response) override {
        Requester who;
        if (auto allowed = callers_.Opener(context, "GetReplicaSet", &who); !allowed.ok())
            return allowed;
        auto held = daemon_.GetReplicaSet(request->region());
        if (!held.ok())
            return ToGrpc(held.status());
        *response->mutable_record() = std::move(held->first);
        response->set_daemon_id(daemon_.daemon_id());
        response->set_region_id(held->second);
        return grpc::Status::OK;
    }

    grpc::Status SetReplicaSet(grpc::ServerContext *context,
                               const v1::SetReplicaSetRequest *request,
                               v1::SetReplicaSetResponse *response) override {
        Trace(context, "SetReplicaSet",
              request->region() + ", " + std::to_string(request->expected_generation()) + " -> " +
                  std::to_string(request->record().generation()));
        Requester who;
        if (auto allowed = callers_.Opener(context, "SetReplicaSet", &who); !allowed.ok())
            return allowed;
        const std::vector<std::string> keep(request->keep_session_ids().begin(),
                                            request->keep_session_ids().end());
        auto change = daemon_.SetReplicaSet(request->region(), request->expected_generation(),
                                            request->record(), keep);
        if (!change.ok())
            return ToGrpc(change.status());
        response->set_applied(change->applied);
        *response->mutable_current() = std::move(change->current);
        response->set_fenced_sessions(static_cast<uint32_t>(change->fenced_sessions));
        response->set_daemon_id(daemon_.daemon_id());
        return grpc::Status::OK;
    }

    grpc::Status ChecksumRegion(grpc::ServerContext *context,
                                const v1::ChecksumRegionRequest *request,
                                v1::ChecksumRegionResponse *response) override {
        Requester who;
        if (auto allowed = callers_.Opener(context, "ChecksumRegion", &who); !allowed.ok())
            return allowed;
        auto checksums = daemon_.ChecksumRegion(request->region(), request->offset(),
                                                request->length(), request->extent_size());
        if (!checksums.ok())
            return ToGrpc(checksums.status());
        response->set_offset(request->offset());
        response->set_extent_size(request->extent_size());
        response->set_checksums(std::move(*checksums));
        response->set_algorithm(kChecksumAlgorithm);
        return grpc::Status::OK;
    }

    grpc::Status ReportRepairProgress(grpc::ServerContext *context,
                                      const v1::RepairProgress *request,
                                      v1::RepairProgress *response) override {
        Requester who;
        if (auto allowed = callers_.Opener(context, "ReportRepairProgress", &who); !allowed.ok())
            return allowed;
        auto kept = daemon_.ReportRepairProgress(*request);
        if (!kept.ok())
            return ToGrpc(kept.status());
        *response = std::move(*kept);
        return grpc::Status::OK;
    }

  private:
    Daemon &daemon_;
    Callers &callers_;
};

class SessionService final : public v1::SessionService::Service {
  public:
    SessionService(Daemon &daemon, Callers &callers) : daemon_(daemon), callers_(callers) {}

    grpc::Status OpenSession(grpc::ServerContext *context, const v1::OpenSessionRequest *request,
                             v1::OpenSessionResponse *response) override {
        Trace(context, "OpenSession", request->region());
        Requester who;
        if (auto allowed = callers_.Opener(context, "OpenSession", &who); !allowed.ok())
            return allowed;
        auto offer = daemon_.OpenSession(request->region(), who, request->replica_set_generation());
        if (!offer.ok())
            return ToGrpc(offer.status());
        response->set_session_id(wire::SessionIdString(offer->grant.token.session_id));
        response->set_region(offer->grant.region);
        response->set_data_address(offer->data_address);
        response->set_data_port(offer->data_port);
        response->set_region_descriptor(AsString(offer->access.region_descriptor));
        response->set_peer_cfg_descriptor(AsString(offer->access.peer_cfg_descriptor));
        response->set_persistence(ToProto(offer->access.persistence));
        const auto token = wire::EncodeToken(offer->grant.token);
        response->set_token(std::string(token.begin(), token.end()));
        response->set_region_size(offer->region_size);
        response->set_token_expires_unix_seconds(UnixSeconds(offer->grant.token_expires));
        response->set_protocol_version(wire::kProtocolVersion);
        response->set_daemon_id(daemon_.daemon_id());
        return grpc::Status::OK;
    }

    grpc::Status CloseSession(grpc::ServerContext *context, const v1::CloseSessionRequest *request,
                              v1::CloseSessionResponse *) override {
        Trace(context, "CloseSession", request->session_id());
        if (auto allowed = callers_.Admin(context, "CloseSession"); !allowed.ok())
            return allowed;
        return ToGrpc(daemon_.CloseSession(request->session_id()));
    }

    grpc::Status ListSessions(grpc::ServerContext *, const v1::ListSessionsRequest *request,
                              v1::ListSessionsResponse *response) override {
        auto sessions = daemon_.ListSessions(request->region());
        if (!sessions.ok())
            return ToGrpc(sessions.status());
        for (const auto &info : *sessions) {
            auto *out = response->add_sessions();
            out->set_session_id(wire::SessionIdString(info.session_id));
            out->set_region(info.region);
            out->set_state(info.connected ? v1::Session::STATE_CONNECTED
                                          : v1::Session::STATE_PENDING);
            out->set_peer(info.peer);
            out->set_opened_unix_seconds(UnixSeconds(info.opened));
            out->set_token_expires_unix_seconds(UnixSeconds(info.token_expires));
            out->set_flushes(info.flushes);
            out->set_bytes_flushed(info.bytes_flushed);
            out->set_replica_set_generation(info.replica_set_generation);
        }
        return grpc::Status::OK;
    }

  private:
    Daemon &daemon_;
    Callers &callers_;
};

class DaemonService final : public v1::DaemonService::Service {
  public:
    DaemonService(Daemon &daemon, Config effective, std::string config_origin)
        : daemon_(daemon),
          effective_(std::move(effective)),
          config_origin_(std::move(config_origin)) {}

    grpc::Status GetStats(grpc::ServerContext *, const v1::GetStatsRequest *,
                          v1::Stats *response) override {
        const StatsView stats = daemon_.Stats();
        const Counters &counters = *stats.counters;
        response->set_version(RPMA_VERSION);
        response->set_provider(stats.provider);
        response->set_uptime_seconds(static_cast<uint64_t>(stats.uptime.count()));
        response->set_regions(static_cast<uint32_t>(stats.regions));
        response->set_unhealthy_regions(static_cast<uint32_t>(stats.unhealthy_regions));
        response->set_pool_used_bytes(stats.pool_used_bytes);
        response->set_pool_capacity_bytes(stats.pool_capacity_bytes);
        response->set_sessions(static_cast<uint32_t>(stats.sessions));
        response->set_connections(static_cast<uint32_t>(stats.connections));
        response->set_sessions_opened(counters.sessions_opened);
        response->set_connections_accepted(counters.connections_accepted);
        response->set_connections_rejected(counters.connections_rejected);
        response->set_flushes(counters.flushes);
        response->set_bytes_flushed(counters.bytes_flushed);
        response->set_flushes_rejected(counters.flushes_rejected);
        response->set_errors(counters.errors);
        response->set_bytes_written(stats.traffic.bytes_written);
        response->set_bytes_read(stats.traffic.bytes_read);
        response->set_remote_flushes(stats.traffic.persistent_flushes);
        response->set_bytes_persisted(stats.traffic.bytes_persisted);
        response->set_data_plane_counters_available(stats.traffic_counted);
        response->set_daemon_id(stats.daemon_id);
        if (stats.cluster) {
            v1::ClusterStatus *cluster = response->mutable_cluster();
            cluster->set_registered(stats.cluster->registered);
            cluster->set_node_id(stats.cluster->node_id);
            cluster->set_etcd_endpoints(stats.cluster->endpoints);
            cluster->set_problem(stats.cluster->problem);
            cluster->set_problem_since_unix_seconds(stats.cluster->problem_since_unix);
        }
        return grpc::Status::OK;
    }

    grpc::Status GetConfig(grpc::ServerContext *, const v1::GetConfigRequest *,
                           v1::EffectiveConfig *response) override {
        std::unique_lock lock(effective_mutex_);
        const Config effective = effective_;
        lock.unlock();
        response->set_yaml(RedactedYaml(effective));
        response->set_origin(config_origin_);
        return grpc::Status::OK;
    }

    void SetEffective(const Config &effective) {
        std::lock_guard lock(effective_mutex_);
        effective_ = effective;
    }

  private:
    Daemon &daemon_;
    std::mutex effective_mutex_;
    Config effective_;
    const std::string config_origin_;
};

std::shared_ptr<grpc::ServerCredentials> Credentials(const TlsConfig &tls) {
    if (!tls.enabled())
        return grpc::InsecureServerCredentials();
    std::shared_ptr<grpc::experimental::CertificateProviderInterface> provider;
    if (tls.client_ca_file.empty())
        provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
            tls.key_file, tls.cert_file, kTlsRefreshSeconds);
    else
        provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
            tls.key_file, tls.cert_file, tls.client_ca_file, kTlsRefreshSeconds);
    grpc::experimental::TlsServerCredentialsOptions options(provider);
    options.watch_identity_key_cert_pairs();
    if (!tls.client_ca_file.empty()) {
        options.watch_root_certs();
        options.set_cert_request_type(
            tls.require_client_cert ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                                    : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
    } else {
        options.set_cert_request_type(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
    }
    return grpc::experimental::TlsServerCredentials(options);
}

}  // namespace

grpc::Status ToGrpc(const Status &status) {
    static constexpr grpc::StatusCode kCodes[] = {
        grpc::StatusCode::OK,
        grpc::StatusCode::INVALID_ARGUMENT,
        grpc::StatusCode::NOT_FOUND,
        grpc::StatusCode::ALREADY_EXISTS,
        grpc::StatusCode::FAILED_PRECONDITION,
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        grpc::StatusCode::PERMISSION_DENIED,
        grpc::StatusCode::UNAUTHENTICATED,
        grpc::StatusCode::UNAVAILABLE,
        grpc::StatusCode::INTERNAL,
        grpc::StatusCode::UNIMPLEMENTED,
    };
    return grpc::Status(kCodes[static_cast<int>(status.code())], status.message());
}

Status CheckNobodyListensOn(const std::string &listen) {
    auto host_port = SplitHostPort(listen, "control.listen");
    if (!host_port.ok())
        return host_port.status();
    if (host_port->port == "0")
        return Status();
    addrinfo hints{};
    hints.ai_flags = AI_PASSIVE;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *addresses = nullptr;
    const char *host = host_port->host.empty() ? nullptr : host_port->host.c_str();
    // A name that does not resolve is gRPC's to report, as it binds.
    if (getaddrinfo(host, host_port->port.c_str(), &hints, &addresses) != 0)
        return Status();
    bool taken = false;
    for (addrinfo *a = addresses; a != nullptr && !taken; a = a->ai_next) {
        const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0)
            continue;
        // SO_REUSEADDR, as gRPC: a connection of a previous rpmad still in
        // TIME_WAIT is no listener. Without SO_REUSEPORT any listener,
        // gRPC's included, makes the bind fail.
        const int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        taken = bind(fd, a->ai_addr, a->ai_addrlen) != 0 && errno == EADDRINUSE;
        close(fd);
    }
    freeaddrinfo(addresses);
    if (taken)
        return Status(StatusCode::kUnavailable,
                      "cannot serve the control plane on " + listen +
                          ": another process listens there (another rpmad?): stop it, or set "
                          "control.listen or --listen to a free port");
    return Status();
}

StatusOr<std::unique_ptr<ControlServer>> ControlServer::Start(Daemon &daemon,
                                                              const Config &effective,
                                                              const std::string &config_origin,
                                                              const std::string &listen) {
    std::unique_ptr<ControlServer> server(new ControlServer());
    server->callers_ = std::make_unique<Callers>(effective);
    server->services_.push_back(std::make_unique<RegionService>(daemon, *server->callers_));
    server->services_.push_back(std::make_unique<SessionService>(daemon, *server->callers_));
    auto daemon_service = std::make_unique<DaemonService>(daemon, effective, config_origin);
    server->daemon_service_ = daemon_service.get();
    server->services_.push_back(std::move(daemon_service));

    grpc::EnableDefaultHealthCheckService(true);
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
    grpc::ServerBuilder builder;
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 1);
    int port = 0;
    builder.AddListeningPort(listen, Credentials(effective.tls), &port);
    for (auto &service : server->services_)
        builder.RegisterService(service.get());
    server->server_ = builder.BuildAndStart();
    if (server->server_ == nullptr || port == 0)
        return Status(StatusCode::kUnavailable,
                      "cannot serve the control plane on " + listen +
                          ": is the port taken, or the address not of this host? Set "
                          "control.listen or --listen");
    auto host_port = SplitHostPort(listen, "control.listen");
    const std::string host = host_port.ok() ? host_port->host : listen;
    server->address_ = (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
                       std::to_string(port);
    server->server_->GetHealthCheckService()->SetServingStatus(true);
    return server;
}

void ControlServer::Reconfigure(const Config &effective) {
    callers_->SetTokens(effective);
    static_cast<DaemonService *>(daemon_service_)->SetEffective(effective);
}

void ControlServer::StopServing() {
    if (server_ != nullptr)
        server_->GetHealthCheckService()->SetServingStatus(false);
}

void ControlServer::Shutdown() {
    if (server_ == nullptr)
        return;
    StopServing();
    // gRPC waits for every client channel to go away until the deadline, and
    // idle channels only go when it passes: keep it short. Calls in flight
    // are control calls of milliseconds.
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    server_->Wait();
    server_.reset();
}

ControlServer::~ControlServer() {
    Shutdown();
}

}  // namespace rpmad
