// rpmad_bench: what rpmad costs, in one run of one client process.
//
//   rpmad_bench [--quick] [--pin CPU] [--csv FILE] [--rpmad PATH] [--dir DIR]
//
// 1. The data path: write + persistent flush latency (iodepth 1) through an
//    rpmad session against the same operations between two bare rpma_core
//    processes (rpma_bench's server). Both regions are shared file mappings
//    on the same filesystem, so a persistent flush msyncs on both sides;
//    the rounds alternate, as rpma_bench's do. rpmad should add nothing:
//    the floor is rpmad/bare <= 1.1 at 4 KiB.
// 2. The control plane: OpenSession latency (each session closed at once).
// 3. rpmad's resident memory right after start, with 1,000 regions, and
//    with 256 sessions opened and connected on top.
// 4. rpmad's CPU time while those connections sit idle (it should sleep).
//
// rpmad (--provider tcp, loopback ports, a generated config) and the bare
// server are started before this process has any thread (gRPC and
// rpma_core start some), inherit the --pin affinity, die with this process
// (PR_SET_PDEATHSIG) and are killed at its end.
#include <netinet/in.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "bench/bench_stats.h"
#include "bench/child_processes.h"
#include "bench/rounds.h"
#include "bench/workload.h"
#include "proto/rpmad/v1/data_plane_wire.h"
#include "proto/rpmad/v1/rpmad.grpc.pb.h"
#include "rpma/rpma.hpp"
#include "util/connect_channel.h"

namespace {

namespace v1 = ::rpmad::v1;
using rpma_bench::Client;
using rpma_bench::FreePort;
using rpma_bench::HumanSize;
using rpma_bench::Summary;

constexpr const char *kProgram = "rpmad_bench";

struct Options : rpma_bench::DaemonBenchOptions {
    // How much of each measurement; --quick keeps the smoke test short.
    int session_opens() const { return quick ? 100 : 1000; }
    int regions() const { return quick ? 100 : 1000; }
    int connected_sessions() const { return quick ? 32 : 256; }
    int idle_seconds() const { return quick ? 1 : 5; }
};

struct Row {
    std::string key;  // stable name for the CSV
    std::string workload;
    size_t size;  // payload bytes, or how many of what the row counts
    double rpmad;
    double rpmad_p99;
    double bare;  // 0: no baseline
    double bare_p99;
    double floor;  // 0: none; else rpmad/bare must not exceed it
};

[[noreturn]] void Die(const std::string &message) {
    rpma_bench::Die(kProgram, message);
}

// --- rpmad ------------------------------------------------------------------

struct Rpmad {
    pid_t pid = -1;
    std::string control;  // host:port of the gRPC service
};

// The config: the documented defaults, spelled out where the benchmark
// depends on them, and the log in a file of the run's directory.
std::string RpmadConfig(const std::string &pool_dir, const std::string &control,
                        const std::string &data) {
    return "control:\n  listen: \"" + control + "\"\n" + "data:\n  listen: \"" + data +
           "\"\n  provider: tcp\n  persistence: auto\n" + "storage:\n  pool_dir: \"" + pool_dir +
           "\"\n" + "limits:\n  max_regions: 1024\n  max_sessions: 256\n" +
           "sessions:\n  token_ttl_seconds: 60\n" + "logging:\n  level: info\n  target: stderr\n";
}

// rpmad on two free loopback ports, its config and pool in `dir`, its log
// in dir/rpmad.log.
Rpmad StartRpmad(rpma_bench::ChildProcesses &children, const std::string &binary,
                 const std::string &dir) {
    Rpmad rpmad;
    rpmad.control = "127.0.0.1:" + std::to_string(FreePort());
    const std::string data = "127.0.0.1:" + std::to_string(FreePort());
    const std::string config_path = dir + "/rpmad.yaml";
    std::ofstream(config_path) << RpmadConfig(dir + "/pool", rpmad.control, data);
    rpmad.pid = children.StartProgram({binary, "--config", config_path, "--provider", "tcp"},
                                      dir + "/rpmad.log", "rpmad: ready:");
    return rpmad;
}

// --- what /proc says about rpmad --------------------------------------------

uint64_t RssKib(pid_t pid) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("VmRSS:", 0) == 0)
            return strtoull(line.c_str() + 6, nullptr, 10);
    Die("no VmRSS in /proc/" + std::to_string(pid) + "/status: did rpmad exit?");
}

// utime + stime, in clock ticks.
uint64_t CpuTicks(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    // The command name may hold spaces; the fields after it do not.
    const size_t paren = text.rfind(')');
    if (paren == std::string::npos)
        Die("cannot read /proc/" + std::to_string(pid) + "/stat: did rpmad exit?");
    std::vector<std::string> fields;
    std::string field;
    for (char c : text.substr(paren + 2)) {
        if (c == ' ') {
            fields.push_back(field);
            field.clear();
        } else {
            field += c;
        }
    }
    // state is field 3 of stat(5), utime 14 and stime 15.
    return strtoull(fields.at(11).c_str(), nullptr, 10) +
           strtoull(fields.at(12).c_str(), nullptr, 10);
}

// --- the control plane ------------------------------------------------------

class Control {
  public:
    explicit Control(const std::string &address)
        : channel_(rpma::util::ConnectChannel(address, grpc::InsecureChannelCredentials(),
                                              grpc::ChannelArguments(), std::chrono::seconds(10))),
          regions_(v1::RegionService::NewStub(channel_)),
          sessions_(v1::SessionService::NewStub(channel_)) {}

    void CreateRegion(const std::string &name, uint64_t size) {
        v1::CreateRegionRequest request;
        request.set_name(name);
        request.set_size(size);
        v1::Region region;
        Expect(regions_->CreateRegion(Context().get(), request, &region), "CreateRegion " + name);
    }

    v1::OpenSessionResponse OpenSession(const std::string &region) {
        v1::OpenSessionRequest request;
        request.set_region(region);
        v1::OpenSessionResponse session;
        Expect(sessions_->OpenSession(Context().get(), request, &session), "OpenSession " + region);
        return session;
    }

    void CloseSession(const std::string &session_id) {
        v1::CloseSessionRequest request;
        request.set_session_id(session_id);
        v1::CloseSessionResponse response;
        Expect(sessions_->CloseSession(Context().get(), request, &response),
               "CloseSession " + session_id);
    }

  private:
    static std::unique_ptr<grpc::ClientContext> Context() {
        auto context = std::make_unique<grpc::ClientContext>();
        context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
        return context;
    }
    static void Expect(const grpc::Status &status, const std::string &what) {
        if (!status.ok())
            Die(what + ": " + status.error_message() + " (gRPC code " +
                std::to_string(status.error_code()) + ")");
    }

    std::shared_ptr<grpc::Channel> channel_;
    std::unique_ptr<v1::RegionService::Stub> regions_;
    std::unique_ptr<v1::SessionService::Stub> sessions_;
};

std::string ConnectRequestData(const v1::OpenSessionResponse &session) {
    const auto token = rpmad::wire::DecodeToken(
        std::as_bytes(std::span(session.token().data(), session.token().size())));
    if (!token)
        Die("OpenSession returned a malformed token");
    const auto encoded = rpmad::wire::EncodeConnectRequest(*token);
    return std::string(encoded.begin(), encoded.end());
}

// The session's data-plane client: the bench's own rpma client, admitted
// with the token and reading rpmad's acceptance.
std::unique_ptr<Client> ConnectSession(const v1::OpenSessionResponse &session) {
    rpma_bench::RpmaAdmission admission;
    admission.request_private_data = ConnectRequestData(session);
    admission.read_accept = [](const char *data, size_t length, std::string *region,
                               std::string *peer_cfg) {
        const auto accept =
            rpmad::wire::DecodeConnectAccept(std::as_bytes(std::span(data, length)));
        // The write path measured is APM's: a flush over rpma, nothing else.
        if (!accept || accept->persistence != rpmad::wire::AcceptedPersistence::kApm)
            return false;
        region->assign(reinterpret_cast<const char *>(accept->region_descriptor.data()),
                       accept->region_descriptor.size());
        peer_cfg->assign(reinterpret_cast<const char *>(accept->peer_cfg_descriptor.data()),
                         accept->peer_cfg_descriptor.size());
        return true;
    };
    return rpma_bench::ConnectRpma(session.data_address(), session.data_port(), false, admission);
}

// Connections that are established and then left alone.
class IdleConnections {
  public:
    explicit IdleConnections(const std::string &address)
        : peer_(Unwrap(rpma::Peer::ForAddress(address, RPMA_UTIL_IBV_CONTEXT_REMOTE))) {}

    void Add(const v1::OpenSessionResponse &session) {
        const std::string data = ConnectRequestData(session);
        auto request =
            Unwrap(rpma::ConnReq::New(peer_, session.data_address(), session.data_port()));
        rpma::Connection conn =
            Unwrap(std::move(request).Connect(std::as_bytes(std::span(data.data(), data.size()))));
        const rpma_conn_event event = Unwrap(conn.NextEvent());
        if (event != RPMA_CONN_ESTABLISHED)
            Die(std::string("session ") + session.session_id() + ": connecting ended with " +
                rpma_utils_conn_event_2str(event));
        conns_.push_back(std::move(conn));
    }

  private:
    template <class T>
    static T Unwrap(rpma::Result<T> result) {
        if (!result.ok())
            Die(result.error().message());
        return std::move(*result);
    }

    rpma::Peer peer_;
    std::vector<rpma::Connection> conns_;  // destroyed first: they disconnect
};

// --- measurements -----------------------------------------------------------

// As rpma_bench counts them: enough samples for a stable median, within a
// byte budget per measurement.
int Iterations(const Options &opt, size_t size) {
    const int wanted = opt.quick ? 300 : 20000;
    const size_t budget = opt.quick ? (64u << 20) : (512u << 20);
    return static_cast<int>(std::max<size_t>(50, std::min<size_t>(wanted, budget / size)));
}

// Both paths run the same iterations in alternating rounds after a warm-up
// of each, so that whatever the machine does meanwhile weighs on both.
Row WriteFlush(Client &rpmad, Client &bare, size_t size, int iterations, double floor) {
    fprintf(stderr, "  measuring write+flush %s...\n", HumanSize(size).c_str());
    rpma_bench::RoundSamples samples = rpma_bench::AlternatingRounds(
        &bare, &rpmad, iterations,
        [size](Client &client, int count) { return client.DurableWriteLatency(size, count); });
    std::vector<uint64_t> bare_samples = std::move(samples.baseline);
    std::vector<uint64_t> rpmad_samples = std::move(samples.subject);
    const Summary r = rpma_bench::Summarize(std::move(rpmad_samples));
    const Summary b = rpma_bench::Summarize(std::move(bare_samples));
    return Row{"write_flush_latency",
               "write+flush latency (us)",
               size,
               r.median_us,
               r.p99_us,
               b.median_us,
               b.p99_us,
               floor};
}

// OpenSession round trips; each session is closed (untimed) before the next
// opens, so the daemon's session limit never binds.
Row OpenSessionLatency(Control &control, const std::string &region, int count) {
    fprintf(stderr, "  measuring OpenSession x %d...\n", count);
    for (int i = 0; i < 10; ++i)  // warm up the channel and the daemon's threads
        control.CloseSession(control.OpenSession(region).session_id());
    std::vector<uint64_t> samples;
    samples.reserve(count);
    for (int i = 0; i < count; ++i) {
        const uint64_t start = rpma_bench::NowNs();
        const v1::OpenSessionResponse session = control.OpenSession(region);
        samples.push_back(rpma_bench::NowNs() - start);
        control.CloseSession(session.session_id());
    }
    const Summary s = rpma_bench::Summarize(std::move(samples));
    return Row{"open_session_latency",
               "OpenSession latency (us)",
               size_t(count),
               s.median_us,
               s.p99_us,
               0,
               0,
               0};
}

Row Rss(const std::string &key, const std::string &what, size_t count, pid_t pid) {
    return Row{key, what, count, RssKib(pid) / 1024.0, 0, 0, 0, 0};
}

Row IdleCpu(pid_t pid, int seconds, size_t connections) {
    fprintf(stderr, "  measuring rpmad's CPU time over %d s of idle connections...\n", seconds);
    const uint64_t ticks0 = CpuTicks(pid);
    const uint64_t ns0 = rpma_bench::NowNs();
    sleep(static_cast<unsigned>(seconds));
    const double cpu_s = double(CpuTicks(pid) - ticks0) / double(sysconf(_SC_CLK_TCK));
    const double wall_s = double(rpma_bench::NowNs() - ns0) / 1e9;
    return Row{
        "idle_cpu_percent", "CPU while idle (%)", connections, 100.0 * cpu_s / wall_s, 0, 0, 0, 0};
}

// --- output -----------------------------------------------------------------

bool PrintTable(const std::vector<Row> &rows) {
    bool all_met = true;
    printf("\n%-26s %8s %10s %10s %10s %10s %11s  %s\n", "workload", "size", "rpmad", "rpmad p99",
           "bare rpma", "bare p99", "rpmad/bare", "floor");
    for (const Row &row : rows) {
        if (row.bare == 0)
            continue;
        const double ratio = row.rpmad / row.bare;
        std::string floor = "-";
        if (row.floor > 0) {
            const bool met = ratio <= row.floor;
            all_met = all_met && met;
            char text[32];
            snprintf(text, sizeof(text), "<= %.2f %s", row.floor, met ? "met" : "NOT met");
            floor = text;
        }
        printf("%-26s %8s %10.1f %10.1f %10.1f %10.1f %11.2f  %s\n", row.workload.c_str(),
               HumanSize(row.size).c_str(), row.rpmad, row.rpmad_p99, row.bare, row.bare_p99, ratio,
               floor.c_str());
    }
    printf("(microseconds: median and p99; iodepth 1; both regions shared file mappings)\n\n");
    printf("%-26s %8s %10s %10s\n", "rpmad alone", "count", "value", "p99");
    for (const Row &row : rows) {
        if (row.bare != 0)
            continue;
        if (row.rpmad_p99 > 0)
            printf("%-26s %8zu %10.1f %10.1f\n", row.workload.c_str(), row.size, row.rpmad,
                   row.rpmad_p99);
        else
            printf("%-26s %8zu %10.2f\n", row.workload.c_str(), row.size, row.rpmad);
    }
    printf("(count: OpenSession calls, regions or connected sessions; RSS in MiB)\n");
    return all_met;
}

void WriteCsv(const std::string &path, const std::vector<Row> &rows) {
    FILE *f = fopen(path.c_str(), "w");
    if (f == nullptr)
        Die("cannot write " + path + ": " + strerror(errno));
    fprintf(f, "workload,size,rpmad,rpmad_p99,bare,bare_p99,ratio\n");
    for (const Row &row : rows)
        fprintf(f, "%s,%zu,%.3f,%.3f,%.3f,%.3f,%.4f\n", row.key.c_str(), row.size, row.rpmad,
                row.rpmad_p99, row.bare, row.bare_p99, row.bare > 0 ? row.rpmad / row.bare : 0);
    fclose(f);
    fprintf(stderr, "wrote %s\n", path.c_str());
}

}  // namespace

int main(int argc, char **argv) {
    const Options opt{rpma_bench::ParseDaemonBenchOptions(argc, argv, "the daemon to measure")};
    const std::string rpmad_binary =
        opt.rpmad_path.empty() ? rpma_bench::RunfilesRpmad(kProgram, argv[0]) : opt.rpmad_path;
    rpma_bench::PinTo(opt.pin_cpu);
    rpma_bench::ChildProcesses children(kProgram, opt.dir);
    const std::string temp_dir = children.temp_dir();

    // The bare server's region sits beside rpmad's pool: same filesystem,
    // same msync per persistent flush.
    const std::string bare_port = std::to_string(FreePort());
    const std::string bare_region = temp_dir + "/bare-server.region";
    children.StartServer(
        [&](int fd) { rpma_bench::RunRpmaServer("127.0.0.1", bare_port, fd, bare_region); },
        "the bare rpma server");
    const Rpmad rpmad = StartRpmad(children, rpmad_binary, temp_dir);
    fprintf(stderr,
            "rpmad_bench: %s (tcp provider) against a bare rpma_core server on 127.0.0.1%s%s\n"
            "  rpmad's pool: %s/pool; the bare server's region: %s (a shared file mapping)\n",
            rpmad_binary.c_str(), opt.quick ? " (quick)" : "",
            opt.pin_cpu >= 0 ? " (pinned to one CPU)" : "", temp_dir.c_str(), bare_region.c_str());

    std::vector<Row> rows;
    rows.push_back(Rss("rss_start_mib", "RSS at start (MiB)", 0, rpmad.pid));
    {
        Control control(rpmad.control);
        control.CreateRegion("bench", rpma_bench::kRegionSize);
        {
            std::unique_ptr<Client> through_rpmad = ConnectSession(control.OpenSession("bench"));
            std::unique_ptr<Client> bare = rpma_bench::ConnectRpma("127.0.0.1", bare_port, false);
            for (size_t size : {size_t{64}, size_t{4096}, size_t{1} << 20})
                rows.push_back(WriteFlush(*through_rpmad, *bare, size, Iterations(opt, size),
                                          size == 4096 ? 1.1 : 0));
        }  // both disconnect: rpmad's session ends with its connection
        rows.push_back(OpenSessionLatency(control, "bench", opt.session_opens()));

        fprintf(stderr, "  creating %d regions of 4 KiB...\n", opt.regions() - 1);
        for (int i = 1; i < opt.regions(); ++i)  // "bench" is the first
            control.CreateRegion("r" + std::to_string(i), 4096);
        rows.push_back(
            Rss("rss_regions_mib", "RSS with regions (MiB)", size_t(opt.regions()), rpmad.pid));

        fprintf(stderr, "  opening and connecting %d sessions...\n", opt.connected_sessions());
        IdleConnections idle("127.0.0.1");
        for (int i = 0; i < opt.connected_sessions(); ++i)
            idle.Add(control.OpenSession(i == 0 ? "bench" : "r" + std::to_string(i)));
        rows.push_back(Rss("rss_sessions_mib", "RSS +connected sessions",
                           size_t(opt.connected_sessions()), rpmad.pid));
        rows.push_back(IdleCpu(rpmad.pid, opt.idle_seconds(), size_t(opt.connected_sessions())));
    }
    children.Stop(rpmad.pid);  // as systemd would: SIGTERM
    children.CleanUp();

    const bool met = PrintTable(rows);
    if (!opt.csv_path.empty())
        WriteCsv(opt.csv_path, rows);
    printf("%s\n", met ? "all floors met" : "SOME FLOORS NOT MET");
    return 0;
}
