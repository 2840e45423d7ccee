#include "rpma/client/control_plane.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "util/connect_channel.h"
#include "util/files.h"

namespace rpma::client {
namespace {

Result<std::string> ReadPem(const std::string &path, const char *what) {
    int error = 0;
    std::optional<std::string> text = util::ReadWholeFile(path, &error);
    if (!text || text->empty())
        return Status(StatusCode::kInvalidArgument,
                      std::string("cannot read the ") + what + " " + path + ": " +
                          (text ? "it is empty" : std::strerror(error)) +
                          "; check the path and that it is a readable PEM file");
    return *text;
}

}  // namespace

Result<std::unique_ptr<ControlPlane>> ControlPlane::Connect(const std::string &address,
                                                            const ConnectOptions &options) {
    if (address.empty())
        return Status(StatusCode::kInvalidArgument,
                      "empty rpmad address: give the control plane's host:port");
    if (options.cert_file.empty() != options.key_file.empty())
        return Status(StatusCode::kInvalidArgument,
                      "a client certificate needs its key and a key its certificate: give both "
                      "or neither");
    std::shared_ptr<grpc::ChannelCredentials> credentials;
    const bool tls = options.tls || !options.ca_file.empty() || !options.cert_file.empty();
    if (tls) {
        grpc::SslCredentialsOptions ssl;
        if (!options.ca_file.empty()) {
            auto ca = ReadPem(options.ca_file, "CA bundle");
            if (!ca.ok())
                return ca.status();
            ssl.pem_root_certs = *ca;
        }
        if (!options.cert_file.empty()) {
            auto cert = ReadPem(options.cert_file, "client certificate");
            if (!cert.ok())
                return cert.status();
            auto key = ReadPem(options.key_file, "client key");
            if (!key.ok())
                return key.status();
            ssl.pem_cert_chain = *cert;
            ssl.pem_private_key = *key;
        }
        credentials = grpc::SslCredentials(ssl);
    } else {
        credentials = grpc::InsecureChannelCredentials();
    }
    std::unique_ptr<ControlPlane> control(new ControlPlane());
    control->address_ = address;
    control->options_ = options;
    // A subchannel of its own (ConnectChannel): gRPC otherwise shares one
    // per address across the process, and a daemon restarted where a killed
    // one listened would inherit the dead one's reconnect backoff (calls
    // failing fast for up to two minutes), which would make Readd of a
    // restarted replica fail.
    control->channel_ = util::ConnectChannel(address, credentials, grpc::ChannelArguments(),
                                             std::min(options.timeout, util::kConnectWindow));
    control->regions_ = rpmad::v1::RegionService::NewStub(control->channel_);
    control->sessions_ = rpmad::v1::SessionService::NewStub(control->channel_);
    control->daemon_ = rpmad::v1::DaemonService::NewStub(control->channel_);
    return control;
}

namespace {

std::unique_ptr<grpc::ClientContext> ContextWith(const ConnectOptions &options,
                                                 const std::string &token) {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + options.timeout);
    if (!token.empty())
        context->AddMetadata("authorization", "Bearer " + token);
    return context;
}

}  // namespace

std::unique_ptr<grpc::ClientContext> ControlPlane::Context() const {
    return ContextWith(options_, options_.admin_token);
}

std::unique_ptr<grpc::ClientContext> ControlPlane::SessionContext() const {
    return ContextWith(
        options_, !options_.client_token.empty() ? options_.client_token : options_.admin_token);
}

}  // namespace rpma::client
