// rpmad's control plane with TLS, and the standard services beside rpmad's
// own: gRPC health checking and server reflection. Certificates are made at
// test time with the openssl CLI: a CA, a server certificate for 127.0.0.1
// and localhost, a client certificate, and a second CA nobody trusts.
#include <google/protobuf/unknown_field_set.h>
#include <grpcpp/generic/generic_stub.h>

#include <signal.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/integration/rpmad_harness.h"
#include "tests/integration/test_pki.h"

namespace rpma::testing {
namespace {

using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;

std::string ReadFile(const std::string &path) {
    std::ifstream file(path, std::ios::binary);
    std::stringstream bytes;
    bytes << file.rdbuf();
    return bytes.str();
}

std::shared_ptr<grpc::ChannelCredentials> Tls(const std::string &trusted_ca,
                                              const std::string &cert = "",
                                              const std::string &key = "") {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = ReadFile(trusted_ca);
    if (!cert.empty()) {
        options.pem_cert_chain = ReadFile(cert);
        options.pem_private_key = ReadFile(key);
    }
    return grpc::SslCredentials(options);
}

grpc::Status ListRegions(const std::shared_ptr<grpc::Channel> &channel) {
    v1::ListRegionsResponse list;
    return v1::RegionService::NewStub(channel)->ListRegions(Rpmad::Context().get(), {}, &list);
}

// Waits for the tag of the operation just started; false if it failed or
// did not finish within 10 s.
bool Await(grpc::CompletionQueue &cq, void *expected) {
    void *tag = nullptr;
    bool ok = false;
    const auto next =
        cq.AsyncNext(&tag, &ok, std::chrono::system_clock::now() + std::chrono::seconds(10));
    return next == grpc::CompletionQueue::GOT_EVENT && tag == expected && ok;
}

grpc::ByteBuffer Buffer(const std::string &bytes) {
    grpc::Slice slice(bytes);
    return grpc::ByteBuffer(&slice, 1);
}

std::string Bytes(const grpc::ByteBuffer &buffer) {
    grpc::Slice slice;
    if (!buffer.DumpToSingleSlice(&slice).ok())
        return "";
    return std::string(reinterpret_cast<const char *>(slice.begin()), slice.size());
}

// grpc.health.v1.Health/Check with an empty HealthCheckRequest (the
// server's overall health); the HealthCheckResponse's status field (1 is
// SERVING), or -1 when the call failed. Debian ships no health.proto: the
// messages are a field or none, encoded by hand.
int HealthStatus(const std::shared_ptr<grpc::Channel> &channel, grpc::Status *status) {
    grpc::GenericStub stub(channel);
    grpc::CompletionQueue cq;
    auto context = Rpmad::Context();
    auto call =
        stub.PrepareUnaryCall(context.get(), "/grpc.health.v1.Health/Check", Buffer(""), &cq);
    call->StartCall();
    grpc::ByteBuffer response;
    call->Finish(&response, status, call.get());
    if (!Await(cq, call.get()) || !status->ok())
        return -1;
    UnknownFieldSet fields;
    if (!fields.ParseFromString(Bytes(response)))
        return -1;
    for (int i = 0; i < fields.field_count(); ++i)
        if (fields.field(i).number() == 1 && fields.field(i).type() == UnknownField::TYPE_VARINT)
            return static_cast<int>(fields.field(i).varint());
    return 0;  // the default: UNKNOWN
}

// The services server reflection lists (ServerReflectionRequest with
// list_services = "", field 7; the answer's list_services_response, field 6,
// holds ServiceResponse messages, field 1, each with its name, field 1).
std::set<std::string> ReflectedServices(const std::shared_ptr<grpc::Channel> &channel,
                                        std::string *error) {
    grpc::GenericStub stub(channel);
    grpc::CompletionQueue cq;
    auto context = Rpmad::Context();
    auto call = stub.PrepareCall(
        context.get(), "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
    int start, write, writes_done, read, finish;
    grpc::ByteBuffer response;
    grpc::Status status;
    call->StartCall(&start);
    if (!Await(cq, &start))
        return *error = "the call did not start", std::set<std::string>{};
    call->Write(Buffer(std::string("\x3a\x00", 2)), &write);
    if (!Await(cq, &write))
        return *error = "the request was not sent", std::set<std::string>{};
    call->WritesDone(&writes_done);
    if (!Await(cq, &writes_done))
        return *error = "closing the request stream failed", std::set<std::string>{};
    call->Read(&response, &read);
    const bool answered = Await(cq, &read);
    call->Finish(&status, &finish);
    if (!Await(cq, &finish) || !status.ok() || !answered)
        return *error = "no answer: " + status.error_message(), std::set<std::string>{};

    std::set<std::string> names;
    UnknownFieldSet answer;
    if (!answer.ParseFromString(Bytes(response)))
        return *error = "the answer is not a protobuf message", names;
    for (int i = 0; i < answer.field_count(); ++i) {
        if (answer.field(i).number() != 6 ||
            answer.field(i).type() != UnknownField::TYPE_LENGTH_DELIMITED)
            continue;
        UnknownFieldSet list;
        list.ParseFromString(answer.field(i).length_delimited());
        for (int j = 0; j < list.field_count(); ++j) {
            UnknownFieldSet service;
            if (list.field(j).number() == 1 &&
                list.field(j).type() == UnknownField::TYPE_LENGTH_DELIMITED &&
                service.ParseFromString(list.field(j).length_delimited()) &&
                service.field_count() > 0 && service.field(0).number() == 1)
                names.insert(service.field(0).length_delimited());
        }
    }
    return names;
}

class RpmadTlsTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        pki_ = new Pki();
        pki_error_ = MakePki(pki_);
    }
    static void TearDownTestSuite() {
        delete pki_;
        pki_ = nullptr;
    }

    void SetUp() override { ASSERT_EQ(pki_error_, "") << "making certificates failed"; }

    std::unique_ptr<Rpmad> StartWithTls(const std::string &client_auth = "") {
        RpmadOptions options;
        options.pool_dir = TempPath("pool");
        options.config_yaml = "control:\n  tls:\n    cert_file: \"" + pki_->server_cert +
                              "\"\n    key_file: \"" + pki_->server_key + "\"\n" + client_auth;
        std::string error;
        auto rpmad = Rpmad::Start(options, &error);
        EXPECT_NE(rpmad, nullptr) << error;
        return rpmad;
    }

    static Pki *pki_;
    static std::string pki_error_;
};

Pki *RpmadTlsTest::pki_ = nullptr;
std::string RpmadTlsTest::pki_error_;

TEST_F(RpmadTlsTest, ServerTlsAdmitsClientsThatTrustItsCaOnly) {
    auto rpmad = StartWithTls();
    ASSERT_NE(rpmad, nullptr);
    const auto trusting = rpmad->ChannelWith(Tls(pki_->ca));
    grpc::Status status;
    EXPECT_EQ(HealthStatus(trusting, &status), 1) << status.error_message();
    status = ListRegions(trusting);
    EXPECT_TRUE(status.ok()) << status.error_message();

    // Plaintext against a TLS port: no HTTP/2 connection comes up.
    status = ListRegions(rpmad->ChannelWith(grpc::InsecureChannelCredentials()));
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
    // A client that trusts another CA refuses the server's certificate.
    status = ListRegions(rpmad->ChannelWith(Tls(pki_->other_ca)));
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
    // The trusting client still works afterwards.
    EXPECT_TRUE(ListRegions(trusting).ok());
}

// A renewed certificate is picked up from its files while rpmad runs (they
// are re-read within 5 s of a change; nothing to restart or signal).
TEST_F(RpmadTlsTest, ARenewedServerCertificateTakesEffectWithoutARestart) {
    const std::string dir = TempPath("renewed");
    std::filesystem::create_directories(dir);
    const std::string cert = dir + "/server.pem", key = dir + "/server.key";
    std::filesystem::copy_file(pki_->server_cert, cert);
    std::filesystem::copy_file(pki_->server_key, key);
    RpmadOptions options;
    options.pool_dir = TempPath("pool");
    options.config_yaml =
        "control:\n  tls:\n    cert_file: \"" + cert + "\"\n    key_file: \"" + key + "\"\n";
    std::string error;
    auto rpmad = Rpmad::Start(options, &error);
    ASSERT_NE(rpmad, nullptr) << error;
    ASSERT_TRUE(ListRegions(rpmad->ChannelWith(Tls(pki_->ca))).ok());

    // The renewal is signed by the other CA, so a client can tell which one
    // the daemon serves. Both files are replaced by renaming (as certbot
    // and friends do), the key first.
    ASSERT_EQ(MakeCertificate(dir, "renewed", "/CN=localhost", pki_->other_ca,
                              pki_->dir + "/other-ca.key",
                              "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                              "extendedKeyUsage=serverAuth"),
              "");
    std::filesystem::rename(dir + "/renewed.key", key);
    std::filesystem::rename(dir + "/renewed.pem", cert);
    bool renewed = false;
    for (int attempt = 0; attempt < 100 && !renewed; ++attempt) {
        renewed = ListRegions(rpmad->ChannelWith(Tls(pki_->other_ca))).ok();
        if (!renewed)
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    EXPECT_TRUE(renewed) << "the renewed certificate was not served within 20 s";
    EXPECT_EQ(ListRegions(rpmad->ChannelWith(Tls(pki_->ca))).error_code(),
              grpc::StatusCode::UNAVAILABLE);
}

// SIGHUP re-reads control.tls from the configuration file and serves it at
// once: here the file names a certificate at other paths, which no watch of
// the old files could find. A channel made before the reload that trusts
// both CAs carries on over the new server.
TEST_F(RpmadTlsTest, SighupServesTheTlsMaterialTheConfigurationNamesNow) {
    auto rpmad = StartWithTls();
    ASSERT_NE(rpmad, nullptr);
    const std::string both_cas = TempPath("both-cas.pem");
    std::ofstream(both_cas) << ReadFile(pki_->ca) << ReadFile(pki_->other_ca);
    const auto before = rpmad->ChannelWith(Tls(both_cas));
    ASSERT_TRUE(ListRegions(before).ok());

    const std::string dir = TempPath("reloaded");
    std::filesystem::create_directories(dir);
    ASSERT_EQ(
        MakeCertificate(dir, "server", "/CN=localhost", pki_->other_ca, pki_->dir + "/other-ca.key",
                        "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                        "extendedKeyUsage=serverAuth"),
        "");
    std::ofstream(rpmad->config_path())
        << "control:\n  tls:\n    cert_file: \"" << dir << "/server.pem\"\n    key_file: \"" << dir
        << "/server.key\"\n";
    ASSERT_EQ(kill(rpmad->process().pid(), SIGHUP), 0);
    ASSERT_TRUE(rpmad->process().WaitForLine(
        "rpmad: reloaded: log level info, TLS from " + dir + "/server.pem",
        std::chrono::seconds(10)))
        << rpmad->process().Describe();

    grpc::Status status = ListRegions(rpmad->ChannelWith(Tls(pki_->other_ca)));
    EXPECT_TRUE(status.ok()) << "the new certificate is not served: " << status.error_message();
    status = ListRegions(rpmad->ChannelWith(Tls(pki_->ca)));
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
    status = ListRegions(before);
    EXPECT_TRUE(status.ok()) << "a channel of before the reload: " << status.error_message();
    v1::EffectiveConfig config;
    ASSERT_TRUE(
        v1::DaemonService::NewStub(before)->GetConfig(Rpmad::Context().get(), {}, &config).ok());
    EXPECT_NE(config.yaml().find(dir + "/server.pem"), std::string::npos) << config.yaml();

    // Files that cannot be read change nothing: the daemon keeps serving
    // what it served.
    std::ofstream(rpmad->config_path())
        << "control:\n  tls:\n    cert_file: \"" << dir << "/missing.pem\"\n    key_file: \"" << dir
        << "/server.key\"\n";
    ASSERT_EQ(kill(rpmad->process().pid(), SIGHUP), 0);
    std::string line;
    while (line.rfind("rpmad: reload failed: ", 0) != 0)
        ASSERT_TRUE(rpmad->process().ReadLine(&line, std::chrono::seconds(10)))
            << rpmad->process().Describe();
    EXPECT_NE(line.find(dir + "/missing.pem"), std::string::npos) << line;
    EXPECT_TRUE(ListRegions(rpmad->ChannelWith(Tls(pki_->other_ca))).ok());

    ASSERT_EQ(kill(rpmad->process().pid(), SIGTERM), 0);
    const auto stopped = rpmad->process().Wait(std::chrono::seconds(10));
    ASSERT_TRUE(stopped.has_value());
    EXPECT_TRUE(stopped->Success()) << rpmad->process().Describe();
}

TEST_F(RpmadTlsTest, RequiredClientCertificatesMustBeSignedByTheClientCa) {
    auto rpmad =
        StartWithTls("    client_ca_file: \"" + pki_->ca + "\"\n    require_client_cert: true\n");
    ASSERT_NE(rpmad, nullptr);
    grpc::Status status = ListRegions(rpmad->ChannelWith(Tls(pki_->ca)));
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
        << "a client without a certificate: " << status.error_message();
    status =
        ListRegions(rpmad->ChannelWith(Tls(pki_->ca, pki_->stranger_cert, pki_->stranger_key)));
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
        << "a client certificate of another CA: " << status.error_message();

    const auto admitted = rpmad->ChannelWith(Tls(pki_->ca, pki_->client_cert, pki_->client_key));
    status = ListRegions(admitted);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(HealthStatus(admitted, &status), 1) << status.error_message();
    v1::Region region;
    v1::CreateRegionRequest create;
    create.set_name("over-mtls");
    create.set_size(4096);
    status =
        v1::RegionService::NewStub(admitted)->CreateRegion(Rpmad::Context().get(), create, &region);
    EXPECT_TRUE(status.ok()) << status.error_message();
}

// With required client certificates, a certificate's subject is the
// identity the session quotas count: one client at its pending quota does
// not hold up another of the same address.
TEST_F(RpmadTlsTest, SessionQuotasCountPerClientCertificate) {
    auto rpmad =
        StartWithTls("    client_ca_file: \"" + pki_->ca + "\"\n    require_client_cert: true\n" +
                     "sessions:\n  max_pending_per_peer: 2\n");
    ASSERT_NE(rpmad, nullptr);
    const auto first = rpmad->ChannelWith(Tls(pki_->ca, pki_->client_cert, pki_->client_key));
    const auto second = rpmad->ChannelWith(Tls(pki_->ca, pki_->second_cert, pki_->second_key));
    v1::CreateRegionRequest create;
    create.set_name("r");
    create.set_size(4096);
    v1::Region region;
    ASSERT_TRUE(v1::RegionService::NewStub(first)
                    ->CreateRegion(Rpmad::Context().get(), create, &region)
                    .ok());
    auto open = [](const std::shared_ptr<grpc::Channel> &channel) {
        v1::OpenSessionRequest request;
        request.set_region("r");
        v1::OpenSessionResponse response;
        return v1::SessionService::NewStub(channel)->OpenSession(Rpmad::Context().get(), request,
                                                                 &response);
    };
    for (int i = 0; i < 2; ++i)
        ASSERT_TRUE(open(first).ok()) << i;
    const grpc::Status refused = open(first);
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_NE(refused.error_message().find("sessions.max_pending_per_peer"), std::string::npos)
        << refused.error_message();
    EXPECT_NE(refused.error_message().find("cert:rpmad test client from 127.0.0.1"),
              std::string::npos)
        << refused.error_message();
    EXPECT_TRUE(open(second).ok());
}

// Optional client certificates: a client may come without one, but one it
// sends must be signed by the client CA.
TEST_F(RpmadTlsTest, OptionalClientCertificatesAreCheckedWhenSent) {
    auto rpmad = StartWithTls("    client_ca_file: \"" + pki_->ca + "\"\n");
    ASSERT_NE(rpmad, nullptr);
    grpc::Status status = ListRegions(rpmad->ChannelWith(Tls(pki_->ca)));
    EXPECT_TRUE(status.ok()) << "a client without a certificate: " << status.error_message();
    status = ListRegions(rpmad->ChannelWith(Tls(pki_->ca, pki_->client_cert, pki_->client_key)));
    EXPECT_TRUE(status.ok()) << "a client certificate of the CA: " << status.error_message();
    status =
        ListRegions(rpmad->ChannelWith(Tls(pki_->ca, pki_->stranger_cert, pki_->stranger_key)));
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
        << "a client certificate of another CA: " << status.error_message();
}

TEST_F(RpmadTlsTest, HealthAndReflectionServicesAnswer) {
    auto rpmad = StartWithTls();
    ASSERT_NE(rpmad, nullptr);
    const auto channel = rpmad->ChannelWith(Tls(pki_->ca));
    std::string error;
    const std::set<std::string> services = ReflectedServices(channel, &error);
    EXPECT_EQ(error, "");
    for (const char *name : {"rpmad.v1.RegionService", "rpmad.v1.SessionService",
                             "rpmad.v1.DaemonService", "grpc.health.v1.Health"})
        EXPECT_EQ(services.count(name), 1u) << name << " is not listed";

    grpc::Status status;
    EXPECT_EQ(HealthStatus(channel, &status), 1) << status.error_message();

    // A graceful stop says NOT_SERVING before it disconnects the clients:
    // by the time a client sees its disconnect, health checks get
    // NOT_SERVING (or nothing, once the port is closed) and new sessions
    // are refused.
    v1::Region region;
    v1::CreateRegionRequest create;
    create.set_name("r");
    create.set_size(4096);
    ASSERT_TRUE(v1::RegionService::NewStub(channel)
                    ->CreateRegion(Rpmad::Context().get(), create, &region)
                    .ok());
    v1::OpenSessionRequest open;
    open.set_region("r");
    v1::OpenSessionResponse session;
    ASSERT_TRUE(v1::SessionService::NewStub(channel)
                    ->OpenSession(Rpmad::Context().get(), open, &session)
                    .ok());
    rpma_conn_event event;
    auto client = SessionClient::Connect(session, &event);
    ASSERT_NE(client, nullptr) << rpma_utils_conn_event_2str(event);
    ASSERT_EQ(kill(rpmad->process().pid(), SIGTERM), 0);
    event = client->WaitEvent(10000);
    EXPECT_TRUE(event == RPMA_CONN_CLOSED || event == RPMA_CONN_LOST) << event;
    const int stopping = HealthStatus(channel, &status);
    EXPECT_TRUE(stopping == 2 || stopping == -1) << "health while stopping: " << stopping;
    status =
        v1::SessionService::NewStub(channel)->OpenSession(Rpmad::Context().get(), open, &session);
    EXPECT_FALSE(status.ok()) << "a session opened while rpmad stops";
    client.reset();
    const auto stopped = rpmad->process().Wait(std::chrono::seconds(10));
    ASSERT_TRUE(stopped.has_value());
    EXPECT_TRUE(stopped->Success()) << rpmad->process().Describe();
    EXPECT_EQ(HealthStatus(channel, &status), -1);
}

}  // namespace
}  // namespace rpma::testing
