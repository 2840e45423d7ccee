// Rate limiting of the log lines a remote peer can provoke at will (one per
// rejected connection, per refused call): each peer (a source address, not
// address and port) gets at most `burst` lines per `interval`; the lines it
// provokes beyond that are counted, and reported as one "suppressed K
// similar lines from PEER" line once its window is over — before its next
// line, at the next line of any peer, or when the limiter goes. As the tcp
// provider's RPMA_LOG_*_RATELIMITED (rpma_core/src/log.h), but per peer, so
// that one noisy peer does not hide the others.
//
// Memory is bounded: at most `max_peers` peers have windows of their own;
// while that many are open, further peers share one window, "other peers",
// so an attacker with many addresses cannot grow the table.
#ifndef DAEMON_PEER_LOG_LIMIT_H
#define DAEMON_PEER_LOG_LIMIT_H

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace rpmad {

// The kernel's printk_ratelimit defaults, as the tcp provider's; 256 peers
// of 10 lines is the most a flood from many addresses writes per interval.
struct PeerLogLimits {
    uint32_t burst = 10;
    std::chrono::steady_clock::duration interval = std::chrono::seconds(5);
    size_t max_peers = 256;
};

class PeerLogLimit {
  public:
    using Clock = std::chrono::steady_clock;
    // Writes one line (the caller's logger at the caller's level).
    using Writer = std::function<void(const std::string &line)>;
    // The name of the peers' shared window once max_peers are open.
    static constexpr std::string_view kOtherPeers = "other peers";

    explicit PeerLogLimit(Writer write, PeerLogLimits limits = {});
    // Reports what it still withholds.
    ~PeerLogLimit();
    PeerLogLimit(const PeerLogLimit &) = delete;
    PeerLogLimit &operator=(const PeerLogLimit &) = delete;

    // Writes `line`, which concerns `peer` (as logged: "host:port",
    // "[v6]:port" or gRPC's "ipv4:host:port"), unless that peer has used up
    // its burst. Thread-safe.
    void Write(std::string_view peer, const std::string &line,
               Clock::time_point now = Clock::now());

    // How many peers have windows now (for tests of the bound).
    size_t peers() const;

  private:
    struct Window {
        Clock::time_point start;
        uint32_t written = 0;
        uint64_t suppressed = 0;
    };
    void Report(const std::string &peer, uint64_t suppressed);
    // Removes the windows that are over at `now`, reporting their counts.
    void EndWindows(Clock::time_point now);

    const Writer write_;
    const PeerLogLimits limits_;
    mutable std::mutex mu_;
    std::map<std::string, Window, std::less<>> windows_;
    Clock::time_point next_end_ = Clock::time_point::max();
};

// The host of a peer as logged: "127.0.0.1:5000" -> "127.0.0.1",
// "[::1]:5000" and gRPC's "ipv6:%5B::1%5D:5000" -> "::1", "ipv4:10.0.0.1:7" ->
// "10.0.0.1". Anything else is returned as it is.
std::string PeerHost(std::string_view peer);

}  // namespace rpmad

#endif  // DAEMON_PEER_LOG_LIMIT_H
