// A data-plane client in a process of its own, for the rpmad tests that need
// a client to vanish (SIGKILL closes its sockets the way a crash does) or to
// stop reading (SIGSTOP leaves the daemon's answers unread in the socket).
//
//   rpmad_child_client SESSION_FILE idle      connects, prints "connected",
//                                             then waits to be killed
//   rpmad_child_client SESSION_FILE stalled   connects, posts reads of the
//                                             whole region, prints "posted"
//                                             and stops itself (SIGSTOP)
//
// SESSION_FILE holds a serialized rpmad.v1.OpenSessionResponse.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "tests/integration/rpmad_harness.h"

namespace rpma::testing {
namespace {

constexpr size_t kReadSize = 1 << 20;

int Run(const std::string &session_file, const std::string &mode) {
    std::ifstream file(session_file, std::ios::binary);
    std::stringstream bytes;
    bytes << file.rdbuf();
    v1::OpenSessionResponse session;
    if (!file || !session.ParseFromString(bytes.str())) {
        std::fprintf(stderr, "cannot read a session from %s\n", session_file.c_str());
        return 2;
    }
    rpma_conn_event event;
    auto client = SessionClient::Connect(session, &event);
    if (client == nullptr) {
        std::fprintf(stderr, "connecting failed: %s\n", rpma_utils_conn_event_2str(event));
        return 1;
    }
    if (mode == "idle") {
        std::printf("connected\n");
    } else if (mode == "stalled") {
        // As many reads as the send queue takes: each answer is as large as
        // the region allows, so together they overflow the socket buffers.
        const uint64_t length = std::min<uint64_t>(kReadSize, session.region_size());
        int posted = 0;
        while (posted < 64 && client->PostRead(0, length))
            ++posted;
        if (posted == 0) {
            std::fprintf(stderr, "posting a read failed\n");
            return 1;
        }
        std::printf("posted %d\n", posted);
        std::fflush(stdout);
        raise(SIGSTOP);
    } else {
        std::fprintf(stderr, "unknown mode %s (idle or stalled)\n", mode.c_str());
        return 2;
    }
    std::fflush(stdout);
    for (;;)
        pause();
}

}  // namespace
}  // namespace rpma::testing

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s SESSION_FILE idle|stalled\n", argv[0]);
        return 2;
    }
    return rpma::testing::Run(argv[1], argv[2]);
}
