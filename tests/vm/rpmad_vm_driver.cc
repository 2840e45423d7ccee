// rpmad on real verbs, across two VMs. In VM 1, `serve` runs rpmad (verbs
// provider) and takes it through a SIGKILL and a restart when the client
// says so; in VM 2, `client` drives it over the control plane and writes
// through a session on Soft-RoCE. They speak through region names:
//
//   client: create "data", write + flush (GPSPM or APM, as the session says),
//           read back, attack another region with its descriptor,
//           create "phase1-done"
//   serve:  SIGKILL rpmad, start it again, create "restarted"
//   client: read "data" back through a new session, create "done"
//   serve:  SIGTERM rpmad; it must exit 0
//
//   rpmad_vm_driver serve RPMAD ADDR DATA_PORT
//   rpmad_vm_driver client ADDR
//
// A replica set: `serve-set` runs N rpmad in VM 1 (control ports 7300,
// 7400, ..., data ports DATA_PORT, DATA_PORT + 1, ...) until a region "done"
// exists on the first; a client in VM 2 replicates to them and creates it
// with `signal`. Meanwhile a region "kill-last" on the first has the last
// daemon SIGKILLed (answered with "killed"), and "restart-last" has it
// started again on its pool and ports (answered with "restarted"): the
// client's replica set loses a member and gets it back stale.
//
//   rpmad_vm_driver serve-set RPMAD ADDR DATA_PORT N
//   rpmad_vm_driver signal ADDR:PORT [NAME]     (NAME: "done" if not given)
//   rpmad_vm_driver await ADDR:PORT NAME
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/process.h"
#include "tests/integration/rpmad_harness.h"
#include "util/connect_channel.h"

namespace rpma::testing {
namespace {

constexpr int kControlPort = 7300;
constexpr auto kPhaseTimeout = std::chrono::seconds(180);
constexpr uint64_t kRegionSize = 1 << 20;
// How long a new channel waits for its first connection.
constexpr auto kConnectWindow = std::chrono::seconds(10);

int Fail(const std::string &what) {
    std::fprintf(stderr, "rpmad_vm_driver: FAIL: %s\n", what.c_str());
    return 1;
}

std::unique_ptr<v1::RegionService::Stub> Regions(const std::string &control) {
    return v1::RegionService::NewStub(rpma::util::ConnectChannel(
        control, grpc::InsecureChannelCredentials(), grpc::ChannelArguments(), kConnectWindow));
}

bool HasRegion(v1::RegionService::Stub &regions, const std::string &name,
               v1::Region *region = nullptr) {
    v1::GetRegionRequest request;
    request.set_name(name);
    v1::Region found;
    auto context = Rpmad::Context();
    context->set_wait_for_ready(true);
    return regions.GetRegion(context.get(), request, region ? region : &found).ok();
}

// Waits for the other VM's signal: a region of that name. Each GetRegion
// waits up to its deadline for the daemon, so the loop is bounded by count.
bool AwaitRegion(const std::string &control, const std::string &name) {
    auto regions = Regions(control);
    const auto deadline = std::chrono::steady_clock::now() + kPhaseTimeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (HasRegion(*regions, name))
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return false;
}

bool CreateRegion(const std::string &control, const std::string &name, uint64_t size) {
    v1::CreateRegionRequest request;
    request.set_name(name);
    request.set_size(size);
    v1::Region region;
    auto context = Rpmad::Context();
    context->set_wait_for_ready(true);
    const grpc::Status status = Regions(control)->CreateRegion(context.get(), request, &region);
    if (!status.ok())
        std::fprintf(stderr, "CreateRegion(%s): %s\n", name.c_str(),
                     status.error_message().c_str());
    return status.ok();
}

// rpmad on verbs with its pool at `pool`, listening on `control` and
// `data`; waits for its ready line (nullptr, said why, when it does not come).
std::unique_ptr<Process> StartRpmad(const std::string &rpmad, const std::string &pool,
                                    const std::string &control, const std::string &data) {
    std::string error;
    auto process = Process::Start({rpmad, "--provider", "verbs", "--pool-dir", pool, "--listen",
                                   control, "--data-listen", data},
                                  {}, &error);
    if (process == nullptr) {
        std::fprintf(stderr, "starting rpmad on %s: %s\n", control.c_str(), error.c_str());
        return nullptr;
    }
    std::string line;
    while (line.rfind("rpmad: ready:", 0) != 0)
        if (!process->ReadLine(&line, std::chrono::seconds(60))) {
            process->Wait(std::chrono::seconds(5));
            std::fprintf(stderr, "rpmad did not start: %s\n", process->Describe().c_str());
            return nullptr;
        }
    std::printf("%s\n", line.c_str());
    return process;
}

// The single rpmad of `serve`.
std::unique_ptr<Process> StartRpmad(const std::string &rpmad, const std::string &addr,
                                    const std::string &data_port) {
    return StartRpmad(rpmad, "/tmp/rpmad-pool", addr + ":" + std::to_string(kControlPort),
                      addr + ":" + data_port);
}

int Serve(const std::string &rpmad_path, const std::string &addr, const std::string &data_port) {
    const std::string control = addr + ":" + std::to_string(kControlPort);
    auto rpmad = StartRpmad(rpmad_path, addr, data_port);
    if (rpmad == nullptr)
        return Fail("rpmad did not start on verbs");
    if (!AwaitRegion(control, "phase1-done"))
        return Fail("the client did not finish phase 1:\n" + rpmad->Describe());
    rpmad->Kill();
    std::printf("rpmad killed with SIGKILL; starting it again\n");
    rpmad = StartRpmad(rpmad_path, addr, data_port);
    if (rpmad == nullptr)
        return Fail("rpmad did not start again");
    if (!CreateRegion(control, "restarted", 4096))
        return Fail("cannot signal the restart");
    if (!AwaitRegion(control, "done"))
        return Fail("the client did not finish phase 2:\n" + rpmad->Describe());
    kill(rpmad->pid(), SIGTERM);
    const auto status = rpmad->Wait(std::chrono::seconds(30));
    if (!status || !status->Success())
        return Fail("rpmad did not stop cleanly on SIGTERM:\n" + rpmad->Describe());
    if (rpmad->Stderr().find("verbs provider") == std::string::npos)
        return Fail("rpmad did not serve on verbs:\n" + rpmad->Describe());
    std::printf("rpmad_vm_driver serve: OK\n");
    return 0;
}

// Daemon i of a set: control port 7300 + 100 i, data port DATA_PORT + i.
std::unique_ptr<Process> StartMember(const std::string &rpmad_path, const std::string &addr,
                                     int data_port, int i) {
    return StartRpmad(rpmad_path, "/tmp/rpmad-pool-" + std::to_string(i),
                      addr + ":" + std::to_string(kControlPort + 100 * i),
                      addr + ":" + std::to_string(data_port + i));
}

int ServeSet(const std::string &rpmad_path, const std::string &addr, int data_port, int count) {
    // On empty pools (an earlier case's set may have left its own), the
    // first started last, once the others are ready.
    for (int i = 0; i < count; ++i)
        std::filesystem::remove_all("/tmp/rpmad-pool-" + std::to_string(i));
    std::vector<std::unique_ptr<Process>> daemons(static_cast<size_t>(count));
    for (int i = count - 1; i >= 0; --i)
        if ((daemons[static_cast<size_t>(i)] = StartMember(rpmad_path, addr, data_port, i)) ==
            nullptr)
            return Fail("rpmad " + std::to_string(i) + " did not start");
    const std::string first = addr + ":" + std::to_string(kControlPort);
    auto regions = Regions(first);
    // The client's signals, bounded in time; each GetRegion waits for the
    // daemon up to its deadline.
    const auto deadline = std::chrono::steady_clock::now() + 2 * kPhaseTimeout;
    bool killed = false, restarted = false;
    while (!HasRegion(*regions, "done")) {
        if (std::chrono::steady_clock::now() > deadline)
            return Fail("the client did not finish");
        std::unique_ptr<Process> &last = daemons.back();
        if (!killed && HasRegion(*regions, "kill-last")) {
            last->Kill();
            std::printf("rpmad %d killed with SIGKILL\n", count - 1);
            if (!CreateRegion(first, "killed", 4096))
                return Fail("cannot signal the kill");
            killed = true;
        } else if (killed && !restarted && HasRegion(*regions, "restart-last")) {
            if ((last = StartMember(rpmad_path, addr, data_port, count - 1)) == nullptr)
                return Fail("rpmad " + std::to_string(count - 1) + " did not start again");
            if (!CreateRegion(first, "restarted", 4096))
                return Fail("cannot signal the restart");
            restarted = true;
        } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
    }
    for (auto &daemon : daemons) {
        kill(daemon->pid(), SIGTERM);
        const auto status = daemon->Wait(std::chrono::seconds(30));
        if (!status || !status->Success())
            return Fail("an rpmad did not stop cleanly: " + daemon->Describe());
    }
    std::printf("rpmad_vm_driver serve-set: OK\n");
    return 0;
}

// Makes the written range durable the way the session says.
bool Persist(SessionClient &client, const v1::OpenSessionResponse &session, size_t length) {
    if (session.persistence() == v1::PERSISTENCE_APM)
        return client.Flush(0, length) == IBV_WC_SUCCESS;
    auto response = client.GpspmFlush(0, length);
    return response && response->status == rpmad::wire::FlushStatus::kOk;
}

int Client(const std::string &addr) {
    const std::string control = addr + ":" + std::to_string(kControlPort);
    if (!CreateRegion(control, "data", kRegionSize) || !CreateRegion(control, "other", kRegionSize))
        return Fail("creating regions");
    auto channel = rpma::util::ConnectChannel(control, grpc::InsecureChannelCredentials(),
                                              grpc::ChannelArguments(), kConnectWindow);
    auto sessions = v1::SessionService::NewStub(channel);
    auto open = [&](const std::string &region, v1::OpenSessionResponse *session) {
        v1::OpenSessionRequest request;
        request.set_region(region);
        return sessions->OpenSession(Rpmad::Context().get(), request, session).ok();
    };
    v1::OpenSessionResponse session, other;
    if (!open("data", &session) || !open("other", &other))
        return Fail("opening sessions");
    std::printf("session on verbs: persistence %s\n",
                v1::Persistence_Name(session.persistence()).c_str());
    const auto bytes = Pattern(64 << 10, 0x5a);
    {
        rpma_conn_event event;
        auto client = SessionClient::Connect(session, &event);
        if (client == nullptr)
            return Fail(std::string("connecting: ") + rpma_utils_conn_event_2str(event));
        if (client->Write(0, bytes) != IBV_WC_SUCCESS || !Persist(*client, session, bytes.size()))
            return Fail("write + persist");
        std::vector<std::byte> read;
        if (client->Read(0, bytes.size(), &read) != IBV_WC_SUCCESS || read != bytes)
            return Fail("read back");
        // Region "other" through this session's connection: refused.
        auto other_memory = RemoteMemory::FromDescriptor(std::as_bytes(
            std::span(other.region_descriptor().data(), other.region_descriptor().size())));
        if (!other_memory.ok())
            return Fail("decoding the other region's descriptor");
        if (client->Write(0, Pattern(4096, 1), &*other_memory) == IBV_WC_SUCCESS)
            return Fail("a session wrote into another region");
    }
    // On verbs the NIC applies one-sided operations unseen: the daemon says
    // it cannot count them rather than report 0.
    v1::Region data;
    if (!HasRegion(*Regions(control), "data", &data) || data.data_plane_counters_available())
        return Fail("verbs data-plane counters reported as available");
    if (!CreateRegion(control, "phase1-done", 4096))
        return Fail("signalling phase 1");
    if (!AwaitRegion(control, "restarted"))
        return Fail("rpmad did not come back");
    v1::OpenSessionResponse again;
    if (!open("data", &again))
        return Fail("opening a session after the restart");
    rpma_conn_event event;
    auto client = SessionClient::Connect(again, &event);
    std::vector<std::byte> read;
    if (client == nullptr || client->Read(0, bytes.size(), &read) != IBV_WC_SUCCESS ||
        read != bytes)
        return Fail("the bytes did not survive SIGKILL and restart");
    client.reset();
    if (!CreateRegion(control, "done", 4096))
        return Fail("signalling the end");
    std::printf("rpmad_vm_driver client: OK\n");
    return 0;
}

}  // namespace
}  // namespace rpma::testing

int main(int argc, char **argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "serve" && argc == 5)
        return rpma::testing::Serve(argv[2], argv[3], argv[4]);
    if (mode == "client" && argc == 3)
        return rpma::testing::Client(argv[2]);
    if (mode == "serve-set" && argc == 6)
        return rpma::testing::ServeSet(argv[2], argv[3], std::atoi(argv[4]), std::atoi(argv[5]));
    if (mode == "signal" && (argc == 3 || argc == 4))
        return rpma::testing::CreateRegion(argv[2], argc == 4 ? argv[3] : "done", 4096) ? 0 : 1;
    if (mode == "await" && argc == 4)
        return rpma::testing::AwaitRegion(argv[2], argv[3]) ? 0 : 1;
    std::fprintf(stderr,
                 "usage: rpmad_vm_driver serve RPMAD ADDR DATA_PORT | client ADDR |\n"
                 "       serve-set RPMAD ADDR DATA_PORT N | signal ADDR:PORT [NAME] |\n"
                 "       await ADDR:PORT NAME\n");
    return 2;
}
