// CloseSession is a barrier: once it returns, no byte of that session lands
// in its region, even from a client that ignores the daemon's DISCONNECT and
// keeps writing. The client here is a raw peer speaking the tcp provider's
// wire format (tests/unit/provider/tcp/tcp_raw_peer.h), which an rpma client
// could not be made to do. (Before, CloseSession returned before the
// connection was even disconnected, and a disconnecting connection applied
// the client's writes for the 2 s a disconnect may take.)
#include <dirent.h>
#include <endian.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/process.h"
#include "tests/integration/rpmad_harness.h"
#include "tests/unit/provider/tcp/tcp_raw_peer.h"

namespace rpma::testing {
namespace {

namespace tcpwire = provider::tcp::wire;
using provider::tcp::testing::RawPeer;
using provider::tcp::testing::RequestHeader;

constexpr uint64_t kRegionSize = 1 << 20;
constexpr uint32_t kWriteSize = 4096;

// The file of the pool's only region.
std::string RegionFile(const std::string &pool) {
    const std::string dir = pool + "/regions";
    std::string found;
    if (DIR *d = opendir(dir.c_str())) {
        while (dirent *entry = readdir(d))
            if (std::string name = entry->d_name; name.ends_with(".pmem"))
                found = dir + "/" + name;
        closedir(d);
    }
    return found;
}

std::vector<char> FileBytes(const std::string &path) {
    std::vector<char> bytes(kRegionSize);
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0) << path;
    EXPECT_EQ(pread(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
    close(fd);
    return bytes;
}

// A raw client of `session`: handshake with its token, the region's address
// and rkey from the daemon's accept.
struct RawSession {
    RawPeer peer;
    uint64_t addr = 0;
    uint32_t rkey = 0;
};

void ConnectRaw(const v1::OpenSessionResponse &session, RawSession *raw) {
    const auto token = rpmad::wire::DecodeToken(std::as_bytes(std::span(session.token())));
    ASSERT_TRUE(token);
    const auto request = rpmad::wire::EncodeConnectRequest(*token);
    tcpwire::HandshakePrefix prefix;
    prefix.send_queue_depth = 64;
    std::vector<uint8_t> payload(tcpwire::kHandshakePrefixSize);
    uint8_t(&encoded)[tcpwire::kHandshakePrefixSize] =
        *reinterpret_cast<uint8_t(*)[tcpwire::kHandshakePrefixSize]>(payload.data());
    tcpwire::EncodeHandshakePrefix(prefix, encoded);
    payload.insert(payload.end(), request.begin(), request.end());
    tcpwire::Header header;
    header.opcode = tcpwire::Opcode::kConnectRequest;
    header.length = static_cast<uint32_t>(payload.size());

    raw->peer = RawPeer::ConnectTo(session.data_port());
    ASSERT_TRUE(raw->peer.SendRequest(header, payload));
    std::vector<uint8_t> accept;
    ASSERT_TRUE(raw->peer.ReadMessage(&header, &accept));
    ASSERT_EQ(header.opcode, tcpwire::Opcode::kAccept);
    const auto accepted = rpmad::wire::DecodeConnectAccept(
        std::as_bytes(std::span(accept)).subspan(tcpwire::kHandshakePrefixSize));
    ASSERT_TRUE(accepted);
    // The region's descriptor: address, size, rkey (little-endian), usage.
    const std::byte *descriptor = accepted->region_descriptor.data();
    ASSERT_GE(accepted->region_descriptor.size(), 20u);
    memcpy(&raw->addr, descriptor, sizeof(raw->addr));
    memcpy(&raw->rkey, descriptor + 16, sizeof(raw->rkey));
    raw->addr = le64toh(raw->addr);
    raw->rkey = le32toh(raw->rkey);
    tcpwire::Header ready;
    ready.opcode = tcpwire::Opcode::kReadyToUse;
    ASSERT_TRUE(raw->peer.SendHeader(ready));
}

TEST(RpmadCloseSession, NothingOfAClosedSessionLandsThoughItsClientKeepsWriting) {
    const std::string pool = TempPath("close_session_pool");
    std::string error;
    RpmadOptions options;
    options.pool_dir = pool;
    auto rpmad = Rpmad::Start(options, &error);
    ASSERT_NE(rpmad, nullptr) << error;
    ASSERT_TRUE(rpmad->CreateRegion("fenced", kRegionSize).ok());
    v1::OpenSessionResponse session;
    ASSERT_TRUE(rpmad->OpenSession("fenced", &session).ok());
    RawSession raw;
    ASSERT_NO_FATAL_FAILURE(ConnectRaw(session, &raw));
    const std::string file = RegionFile(pool);
    ASSERT_FALSE(file.empty());

    // Writes 4 KiB pieces over the region, round and round, never reading
    // what the daemon sends (its DISCONNECT included), until the daemon
    // closes the socket (or a bound). Each piece carries the byte `fill`.
    using Clock = std::chrono::steady_clock;
    std::atomic<char> fill{1};
    std::atomic<Clock::rep> deadline{Clock::time_point::max().time_since_epoch().count()};
    std::atomic<uint64_t> sent_after_close{0};
    std::thread writer([&] {
        std::vector<uint8_t> payload(kWriteSize);
        for (uint64_t sequence = 1; Clock::now().time_since_epoch().count() < deadline;
             ++sequence) {
            const char value = fill;
            memset(payload.data(), value, payload.size());
            const uint64_t at = (sequence * kWriteSize) % kRegionSize;
            if (!raw.peer.SendRequest(RequestHeader(tcpwire::Opcode::kWrite, sequence,
                                                    raw.addr + at, raw.rkey, kWriteSize, 0),
                                      payload))
                return;
            if (value == 2)
                ++sent_after_close;
        }
    });
    // The daemon applies them: a piece's bytes show in the file.
    bool landed = false;
    for (int i = 0; i < 5000 && !landed; ++i) {
        landed = FileBytes(file)[2 * kWriteSize] == 1;
        if (!landed)
            std::this_thread::yield();
    }
    EXPECT_TRUE(landed) << "the daemon applied none of the writes";

    v1::CloseSessionRequest close;
    close.set_session_id(session.session_id());
    v1::CloseSessionResponse closed;
    const grpc::Status status =
        rpmad->Sessions()->CloseSession(Rpmad::Context().get(), close, &closed);
    const std::vector<char> at_close = FileBytes(file);
    // From now on every piece says 2, and none may land, until the daemon
    // ends the connection (a disconnect gives a peer 2 s to answer).
    fill = 2;
    deadline = (Clock::now() + std::chrono::seconds(10)).time_since_epoch().count();
    writer.join();
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_GT(sent_after_close.load(), 0u) << "the writer stopped before CloseSession returned";
    const std::vector<char> after = FileBytes(file);
    size_t changed = 0;
    for (size_t i = 0; i < after.size(); ++i)
        changed += after[i] != at_close[i];
    EXPECT_EQ(changed, 0u) << "bytes of the closed session landed after CloseSession returned";
}

}  // namespace
}  // namespace rpma::testing
