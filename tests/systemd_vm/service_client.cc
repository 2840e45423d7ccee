// The client the systemd VM test runs against the packaged rpmad, inside the
// guest (rpmactl takes its place once it is packaged): through the control
// plane and one session on the data plane.
//
//   service_client CONTROL put REGION SIZE SEED    GetStats (rpmad answers),
//       creates REGION, writes SIZE bytes of Pattern(SEED) through a session
//       and makes them durable the way the session says, reads them back
//   service_client CONTROL check REGION SIZE SEED  REGION is listed and holds
//       Pattern(SEED) (read through a new session)
//
// Prints one line saying what it saw; exits 0 only when it is what is asked.
#include <cstdio>
#include <string>

#include "tests/integration/rpmad_harness.h"

namespace rpma::testing {
namespace {

int Fail(const std::string &what) {
    std::printf("service_client: FAIL: %s\n", what.c_str());
    return 1;
}

bool Listed(v1::RegionService::Stub &regions, const std::string &name) {
    v1::ListRegionsResponse list;
    if (!regions.ListRegions(Rpmad::Context().get(), v1::ListRegionsRequest(), &list).ok())
        return false;
    for (const auto &region : list.regions())
        if (region.name() == name)
            return true;
    return false;
}

int Run(const std::string &control, const std::string &mode, const std::string &name, uint64_t size,
        uint8_t seed) {
    auto channel = grpc::CreateChannel(control, grpc::InsecureChannelCredentials());
    auto regions = v1::RegionService::NewStub(channel);
    auto sessions = v1::SessionService::NewStub(channel);
    if (mode == "put") {
        v1::Stats stats;
        const grpc::Status up = v1::DaemonService::NewStub(channel)->GetStats(
            Rpmad::Context().get(), v1::GetStatsRequest(), &stats);
        if (!up.ok())
            return Fail("GetStats: " + up.error_message());
        v1::CreateRegionRequest create;
        create.set_name(name);
        create.set_size(size);
        v1::Region region;
        const grpc::Status made = regions->CreateRegion(Rpmad::Context().get(), create, &region);
        if (!made.ok())
            return Fail("CreateRegion: " + made.error_message());
    } else if (mode != "check") {
        return Fail("mode " + mode + ": put or check");
    } else if (!Listed(*regions, name)) {
        return Fail("region " + name + " is not listed");
    }

    v1::OpenSessionRequest request;
    request.set_region(name);
    v1::OpenSessionResponse session;
    const grpc::Status opened = sessions->OpenSession(Rpmad::Context().get(), request, &session);
    if (!opened.ok())
        return Fail("OpenSession: " + opened.error_message());
    rpma_conn_event event;
    auto client = SessionClient::Connect(session, &event);
    if (client == nullptr)
        return Fail(std::string("connecting: ") + rpma_utils_conn_event_2str(event));
    const auto bytes = Pattern(size, seed);
    if (mode == "put") {
        if (client->Write(0, bytes) != IBV_WC_SUCCESS)
            return Fail("write");
        bool durable;
        if (session.persistence() == v1::PERSISTENCE_APM) {
            durable = client->Flush(0, size) == IBV_WC_SUCCESS;
        } else {
            const auto response = client->GpspmFlush(0, size);
            durable = response && response->status == rpmad::wire::FlushStatus::kOk;
        }
        if (!durable)
            return Fail("persisting the write");
    }
    std::vector<std::byte> read;
    if (client->Read(0, size, &read) != IBV_WC_SUCCESS || read != bytes)
        return Fail("the bytes read back differ from those written");
    if (!client->Disconnect())
        return Fail("disconnecting");
    std::printf("service_client: %s %s: %llu bytes intact (%s)\n", mode.c_str(), name.c_str(),
                static_cast<unsigned long long>(size),
                v1::Persistence_Name(session.persistence()).c_str());
    return 0;
}

}  // namespace
}  // namespace rpma::testing

int main(int argc, char **argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: %s CONTROL put|check REGION SIZE SEED\n", argv[0]);
        return 2;
    }
    return rpma::testing::Run(argv[1], argv[2], argv[3], std::stoull(argv[4]),
                              static_cast<uint8_t>(std::stoul(argv[5])));
}
