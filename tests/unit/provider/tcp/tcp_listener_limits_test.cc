// The tcp provider's listener against floods from peers nobody has
// authenticated yet: connection requests beyond what the application takes,
// connections that never send a request, and a process out of file
// descriptors. What a listener holds for such peers is bounded
// (RPMA_TCP_MAX_PENDING, RPMA_TCP_MAX_HANDSHAKING), the excess is refused at
// once with a REJECT, the progress thread does not spin when accept fails,
// the log stays short, and a legitimate client still gets in.
//
// Each scenario runs in a child process (a death test, re-executed): the
// device is created there after the scenario set its environment, and a
// lowered RLIMIT_NOFILE stays in the child.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "librpma.h"
#include "rpma_core/src/provider/tcp/tcp_incoming_sockets.h"
#include "tests/unit/provider/tcp/tcp_raw_peer.h"
#include "tests/unit/provider/tcp/tcp_test_support.h"

namespace rpma::provider::tcp::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// A child's whole scenario, a provider that never answers included, ends
// within this.
constexpr unsigned kChildAlarmSeconds = 30;
// A refusal, or the closing of a connection to make room, comes this soon.
constexpr int kPromptMs = 1000;
// However many peers a scenario floods the listener with, the log gets
// fewer lines than this (down to INFO, where the per-peer lines are).
constexpr size_t kMaxLogLines = 40;
// Fds a listener may open besides those its bounds account for.
constexpr size_t kSlackFds = 4;

// Every log line of the provider, captured through rpma_log_set_function.
std::mutex log_mu;
std::vector<std::string> log_lines;

void CaptureLine(enum rpma_log_level /*level*/, const char *file, const int line,
                 const char * /*function*/, const char *format, ...) {
    char message[1024];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof(message), format, args);
    va_end(args);
    std::lock_guard lock(log_mu);
    log_lines.push_back(std::string(file != nullptr ? file : "") + ":" + std::to_string(line) +
                        ": " + message);
}

void CaptureLog() {
    ASSERT_EQ(rpma_log_set_threshold(RPMA_LOG_THRESHOLD, RPMA_LOG_LEVEL_INFO), 0);
    ASSERT_EQ(rpma_log_set_function(CaptureLine), 0);
}

size_t LogLineCount() {
    std::lock_guard lock(log_mu);
    return log_lines.size();
}

// The first lines, for a failure message.
std::string LogExcerpt() {
    std::lock_guard lock(log_mu);
    std::string excerpt;
    for (size_t i = 0; i < log_lines.size() && i < 20; ++i)
        excerpt += log_lines[i] + "\n";
    return excerpt;
}

size_t OpenFds() {
    DIR *dir = opendir("/proc/self/fd");
    EXPECT_NE(dir, nullptr);
    if (dir == nullptr)
        return 0;
    size_t count = 0;
    while (const dirent *entry = readdir(dir)) {
        if (entry->d_name[0] != '.')
            ++count;
    }
    closedir(dir);
    return count - 1;  // the directory's own fd
}

// The CPU clock of the provider's progress thread.
clockid_t ProgressThreadClock() {
    auto thread = std::make_shared<std::promise<pthread_t>>();
    std::future<pthread_t> id = thread->get_future();
    GetDevice().Engine().Post([thread] { thread->set_value(pthread_self()); });
    clockid_t clock = CLOCK_THREAD_CPUTIME_ID;
    EXPECT_EQ(id.wait_for(milliseconds(kTimeoutMs)), std::future_status::ready);
    EXPECT_EQ(pthread_getcpuclockid(id.get(), &clock), 0);
    return clock;
}

milliseconds CpuTime(clockid_t clock) {
    timespec now{};
    EXPECT_EQ(clock_gettime(clock, &now), 0);
    return std::chrono::duration_cast<milliseconds>(std::chrono::seconds(now.tv_sec) +
                                                    std::chrono::nanoseconds(now.tv_nsec));
}

// A CONNECT_REQUEST whose one byte of private data is `tag`.
bool SendTaggedRequest(RawPeer &raw, uint8_t tag) {
    wire::HandshakePrefix prefix;
    prefix.send_queue_depth = 16;
    uint8_t encoded[wire::kHandshakePrefixSize];
    wire::EncodeHandshakePrefix(prefix, encoded);
    uint8_t payload[wire::kHandshakePrefixSize + 1];
    memcpy(payload, encoded, sizeof(encoded));
    payload[wire::kHandshakePrefixSize] = tag;
    wire::Header header;
    header.opcode = wire::Opcode::kConnectRequest;
    header.length = sizeof(payload);
    return raw.SendHeader(header) && raw.Send(payload, sizeof(payload));
}

// The provider told the peer REJECT and closed the connection.
void ExpectRejectedAndClosed(RawPeer &raw) {
    wire::Header answer;
    ASSERT_TRUE(raw.ReadMessage(&answer)) << LogExcerpt();
    EXPECT_EQ(answer.opcode, wire::Opcode::kReject);
    EXPECT_TRUE(raw.WaitClosed(kPromptMs));
}

UniqueFd NewSocket() {
    UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    EXPECT_TRUE(fd.Valid()) << strerror(errno);
    return fd;
}

// `fd` moved to a number at or above `floor`, out of reach of a lowered
// RLIMIT_NOFILE (which limits new numbers, not open ones).
UniqueFd MoveAbove(UniqueFd fd, int floor) {
    UniqueFd moved(fcntl(fd.Get(), F_DUPFD_CLOEXEC, floor));
    EXPECT_TRUE(moved.Valid()) << strerror(errno);
    return moved;
}

int ConnectToLoopback(int fd, const std::string &port) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(std::stoi(port)));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address));
}

class TcpListenerLimits : public ConnectedPair {
  protected:
    // Nothing in the parent: the child creates the device (StartDevice)
    // after setting the environment it reads.
    void SetUp() override {}
    void StartDevice() {
        ASSERT_NO_FATAL_FAILURE(CaptureLog());
        ASSERT_NO_FATAL_FAILURE(ConnectedPair::SetUp());
        ASSERT_NO_FATAL_FAILURE(StartListening());
    }

    // 40 peers send a CONNECT_REQUEST each to a listener that holds at most
    // 8 for the application, which takes none meanwhile.
    void RequestsBeyondTheBound() {
        constexpr int kPeers = 40;
        constexpr int kBound = 8;
        ASSERT_EQ(setenv("RPMA_TCP_MAX_PENDING", std::to_string(kBound).c_str(), 1), 0);
        ASSERT_NO_FATAL_FAILURE(StartDevice());
        const size_t fds_before = OpenFds();
        std::vector<RawPeer> peers;
        for (int i = 0; i < kPeers; ++i) {
            peers.push_back(RawPeer::ConnectTo(port));
            ASSERT_TRUE(SendTaggedRequest(peers.back(), static_cast<uint8_t>(i)));
        }

        // Those beyond the bound hear REJECT at once.
        std::vector<bool> refused(kPeers, false);
        int refusals = 0;
        const auto deadline = steady_clock::now() + milliseconds(kPromptMs);
        while (refusals < kPeers - kBound) {
            std::vector<pollfd> waiting;
            std::vector<int> index;
            for (int i = 0; i < kPeers; ++i) {
                if (!refused[i]) {
                    waiting.push_back(pollfd{peers[i].Fd(), POLLIN, 0});
                    index.push_back(i);
                }
            }
            const auto left =
                std::chrono::duration_cast<milliseconds>(deadline - steady_clock::now()).count();
            if (left <= 0 || poll(waiting.data(), waiting.size(), static_cast<int>(left)) <= 0)
                break;
            for (size_t k = 0; k < waiting.size(); ++k) {
                if (waiting[k].revents == 0)
                    continue;
                ASSERT_NO_FATAL_FAILURE(ExpectRejectedAndClosed(peers[index[k]]));
                refused[index[k]] = true;
                ++refusals;
            }
        }
        ASSERT_EQ(refusals, kPeers - kBound) << "requests refused within " << kPromptMs << " ms";

        // What the listener holds: the pending requests, and nothing for the
        // refused (the peers' own sockets are in this process too).
        EXPECT_LE(OpenFds(), fds_before + kPeers + kBound * 3 + kSlackFds);

        // The application finds exactly the requests that were not refused.
        std::set<int> taken;
        std::vector<std::unique_ptr<provider::CmId>> requests;
        std::unique_ptr<provider::CmId> request;
        // A request is there once the progress thread read its CONNECT_REQUEST:
        // wait for each (slow under sanitizers), then take whatever else came.
        auto next = [&] {
            if (listener->NextRequest(&request) == 0)
                return true;
            return taken.size() < static_cast<size_t>(kBound) && WaitReadable(listener->Fd()) &&
                   listener->NextRequest(&request) == 0;
        };
        while (next()) {
            ASSERT_EQ(request->RequestPrivateData().size(), 1u);
            const int tag = request->RequestPrivateData()[0];
            EXPECT_FALSE(refused[tag]) << "request " << tag << " was refused, yet queued";
            taken.insert(tag);
            requests.push_back(std::move(request));
        }
        EXPECT_EQ(taken.size(), static_cast<size_t>(kBound));
        // Dropped unanswered: rejected, as rdma_destroy_id does.
        requests.clear();

        // Once the application took them, a legitimate client gets in.
        Endpoint c, s;
        ASSERT_NO_FATAL_FAILURE(ConnectAnother(c, s, PairOptions{}));
        EXPECT_LT(LogLineCount(), kMaxLogLines) << LogExcerpt();
    }

    // 40 peers connect and send nothing to a listener that holds at most 8
    // such connections.
    void SilentConnectionsBeyondTheBound() {
        constexpr int kPeers = 40;
        constexpr int kBound = 8;
        ASSERT_EQ(setenv("RPMA_TCP_MAX_HANDSHAKING", std::to_string(kBound).c_str(), 1), 0);
        ASSERT_NO_FATAL_FAILURE(StartDevice());
        const size_t fds_before = OpenFds();
        std::vector<RawPeer> peers;
        for (int i = 0; i < kPeers; ++i)
            peers.push_back(RawPeer::ConnectTo(port));

        // The oldest make room for the newer: each hears REJECT and is closed.
        for (int i = 0; i < kPeers - kBound; ++i) {
            ASSERT_TRUE(WaitReadable(peers[i].Fd(), kPromptMs))
                << "connection " << i << " still held after " << kPromptMs << " ms";
            ASSERT_NO_FATAL_FAILURE(ExpectRejectedAndClosed(peers[i]));
        }
        // The newest still have their chance to send a request.
        for (int i = kPeers - kBound; i < kPeers; ++i)
            EXPECT_FALSE(WaitReadable(peers[i].Fd(), 0)) << "connection " << i;
        // One fd each (the peers' own sockets are in this process too).
        EXPECT_LE(OpenFds(), fds_before + kPeers + kBound + kSlackFds);

        // A legitimate client gets in despite them.
        Endpoint c, s;
        ASSERT_NO_FATAL_FAILURE(ConnectAnother(c, s, PairOptions{}));
        EXPECT_LT(LogLineCount(), kMaxLogLines) << LogExcerpt();
    }

    // The process runs out of fds while a flood of idle connections and a
    // legitimate request wait to be accepted; then fds free up.
    void OutOfFileDescriptors() {
        constexpr int kFlood = 300;
        // Peers' sockets live above this (this process plays both sides).
        constexpr int kPeerFds = 4096;
        // How many fds the process may open beyond those in use once the
        // flood starts; something else holds them all at first.
        constexpr rlim_t kSpareFds = 48;
        // How long the test watches the listener starve, and how much CPU
        // its progress thread may burn meanwhile.
        constexpr int kStarvedMs = 500;
        constexpr milliseconds kMaxCpuWhileStarved{100};
        // Once fds free up, the legitimate client gets in within this.
        constexpr milliseconds kRecovery{3000};

        rlimit limit{};
        ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
        limit.rlim_cur = limit.rlim_max;
        ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0);
        ASSERT_GT(limit.rlim_cur, static_cast<rlim_t>(kPeerFds + kFlood + 16));
        ASSERT_NO_FATAL_FAILURE(StartDevice());

        // The application's side of the legitimate connection is made
        // beforehand: the flood will leave the process no fd for it.
        Endpoint s;
        ASSERT_NO_FATAL_FAILURE(s.send.Create(device(), 16));
        ASSERT_NO_FATAL_FAILURE(s.recv.Create(device(), 16));
        const clockid_t progress_clock = ProgressThreadClock();
        std::vector<UniqueFd> flood;
        for (int i = 0; i < kFlood; ++i)
            flood.push_back(MoveAbove(NewSocket(), kPeerFds));
        UniqueFd legit_socket = MoveAbove(NewSocket(), kPeerFds);

        UniqueFd probe(eventfd(0, EFD_CLOEXEC));
        ASSERT_TRUE(probe.Valid());
        limit.rlim_cur = static_cast<rlim_t>(probe.Get()) + kSpareFds;
        probe.Reset();
        ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0);
        std::vector<UniqueFd> hogs;
        for (;;) {
            UniqueFd hog(eventfd(0, EFD_CLOEXEC));
            if (!hog.Valid()) {
                ASSERT_EQ(errno, EMFILE);
                break;
            }
            hogs.push_back(std::move(hog));
        }

        for (UniqueFd &socket : flood)
            ASSERT_EQ(ConnectToLoopback(socket.Get(), port), 0) << strerror(errno);
        ASSERT_EQ(ConnectToLoopback(legit_socket.Get(), port), 0) << strerror(errno);
        RawPeer legit(std::move(legit_socket));
        ASSERT_TRUE(legit.SendHandshake(wire::Opcode::kConnectRequest, 16));

        // Nothing can be accepted, and nothing can be closed to make room:
        // the listener backs off instead of spinning, and says so once.
        const size_t lines_before = LogLineCount();
        const milliseconds cpu_before = CpuTime(progress_clock);
        EXPECT_FALSE(WaitReadable(listener->Fd(), kStarvedMs));
        EXPECT_LT(CpuTime(progress_clock) - cpu_before, kMaxCpuWhileStarved)
            << "the progress thread's CPU time in " << kStarvedMs << " ms without fds";
        EXPECT_LE(LogLineCount() - lines_before, 2u) << LogExcerpt();

        // Fds free up: the idle connections ahead of it do not keep the
        // legitimate client out.
        const auto freed = steady_clock::now();
        hogs.clear();
        ASSERT_TRUE(WaitReadable(listener->Fd(), static_cast<int>(kRecovery.count())))
            << "no connection request within " << kRecovery.count() << " ms of fds freeing up";
        ASSERT_EQ(listener->NextRequest(&s.id), 0);
        QueuePairInit init;
        init.send_cq = s.send.cq.get();
        init.recv_cq = s.recv.cq.get();
        init.sq_size = 16;
        init.rq_size = 16;
        ASSERT_EQ(s.id->CreateQp(*server_pd, init), 0);
        ASSERT_EQ(s.id->Accept(nullptr, 0), 0);
        ASSERT_TRUE(legit.ReadHandshake(wire::Opcode::kAccept));
        EXPECT_LT(steady_clock::now() - freed, kRecovery);
        EXPECT_LT(LogLineCount(), kMaxLogLines) << LogExcerpt();
    }
};

// The requests beyond RPMA_TCP_MAX_PENDING are refused at once, the newest
// first (a request that finds the queue full); the listener keeps only the
// pending ones, and a client gets in once the application took them. Before
// the bound, every request waited in an unbounded queue with its socket,
// timer and event fd.
TEST_F(TcpListenerLimits, ConnectionRequestsBeyondTheBoundAreRejectedAtOnce) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            InChild(kChildAlarmSeconds);
            RequestsBeyondTheBound();
            ExitChild();
        },
        ::testing::ExitedWithCode(0), "");
}

// Connections that send no request cost one fd each, at most
// RPMA_TCP_MAX_HANDSHAKING of them: the oldest are told REJECT and closed to
// make room. Before, each held three fds until the 10 s handshake timeout.
TEST_F(TcpListenerLimits, SilentConnectionsBeyondTheBoundCloseTheOldest) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            InChild(kChildAlarmSeconds);
            SilentConnectionsBeyondTheBound();
            ExitChild();
        },
        ::testing::ExitedWithCode(0), "");
}

// accept failing with EMFILE while connections wait: the listener stops
// watching its socket for a growing interval instead of spinning in a
// level-triggered epoll (logging a line per attempt), and once fds free up
// the legitimate client behind an idle flood gets in within a bound (the
// oldest idle connections are closed when fds run short).
TEST_F(TcpListenerLimits, OutOfFileDescriptorsNeitherSpinsNorFloodsTheLog) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            InChild(kChildAlarmSeconds);
            OutOfFileDescriptors();
            ExitChild();
        },
        ::testing::ExitedWithCode(0), "");
}

// The listener holds a connection until its first bytes are a complete
// CONNECT_REQUEST of this version (a connection is made for it) or cannot
// become one (a connection is made to answer it as before).
std::vector<uint8_t> EncodedRequest(uint32_t magic, uint16_t version, size_t private_data) {
    wire::HandshakePrefix prefix;
    prefix.magic = magic;
    prefix.version = version;
    uint8_t encoded_prefix[wire::kHandshakePrefixSize];
    wire::EncodeHandshakePrefix(prefix, encoded_prefix);
    wire::Header header;
    header.opcode = wire::Opcode::kConnectRequest;
    header.length = static_cast<uint32_t>(sizeof(encoded_prefix) + private_data);
    const wire::EncodedHeader encoded_header = wire::EncodeHeader(header);
    std::vector<uint8_t> bytes(encoded_header.begin(), encoded_header.end());
    bytes.insert(bytes.end(), encoded_prefix, encoded_prefix + sizeof(encoded_prefix));
    bytes.insert(bytes.end(), private_data, 0x5a);
    return bytes;
}

TEST(TcpClassifyArrival, WaitsForACompleteRequestAndHandsOverAnythingElse) {
    const std::vector<uint8_t> request = EncodedRequest(wire::kMagic, wire::kVersion, 7);
    EXPECT_EQ(ClassifyArrival(request.data(), 0), Arrival::kNothingYet);
    for (size_t length = 1; length < request.size(); ++length)
        EXPECT_EQ(ClassifyArrival(request.data(), length), Arrival::kNothingYet) << length;
    EXPECT_EQ(ClassifyArrival(request.data(), request.size()), Arrival::kRequest);
    // Bytes behind the request are the connection's business.
    std::vector<uint8_t> more = request;
    more.push_back(0xff);
    EXPECT_EQ(ClassifyArrival(more.data(), more.size()), Arrival::kRequest);

    const std::string http = "GET / HTTP/1.1\r\n\r\n";
    EXPECT_EQ(ClassifyArrival(reinterpret_cast<const uint8_t *>(http.data()), 1), Arrival::kOther);
    const std::vector<uint8_t> stranger = EncodedRequest(0x50545448, wire::kVersion, 0);
    EXPECT_EQ(ClassifyArrival(stranger.data(), stranger.size()), Arrival::kOther);
    const std::vector<uint8_t> future = EncodedRequest(wire::kMagic, wire::kVersion + 1, 0);
    EXPECT_EQ(ClassifyArrival(future.data(), future.size()), Arrival::kOther);
    wire::Header accept;
    accept.opcode = wire::Opcode::kAccept;
    accept.length = wire::kHandshakePrefixSize;
    const wire::EncodedHeader not_a_request = wire::EncodeHeader(accept);
    EXPECT_EQ(ClassifyArrival(not_a_request.data(), 1), Arrival::kOther);
    EXPECT_EQ(ClassifyArrival(not_a_request.data(), not_a_request.size()), Arrival::kOther);
}

}  // namespace
}  // namespace rpma::provider::tcp::testing
