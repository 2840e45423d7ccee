#include "daemon/peer_log_limit.h"

#include <algorithm>
#include <utility>

namespace rpmad {

std::string PeerHost(std::string_view peer) {
    for (std::string_view scheme : {"ipv4:", "ipv6:"})
        if (peer.starts_with(scheme))
            peer.remove_prefix(scheme.size());
    // gRPC writes its peers as URIs: "ipv6:%5B::1%5D:5000".
    for (auto [open, close] : {std::pair<std::string_view, std::string_view>{"[", "]"},
                               {"%5B", "%5D"},
                               {"%5b", "%5d"}}) {
        if (!peer.starts_with(open))
            continue;
        const size_t end = peer.find(close);
        return std::string(
            end == std::string_view::npos ? peer : peer.substr(open.size(), end - open.size()));
    }
    const size_t colon = peer.find(':');
    if (colon != std::string_view::npos && peer.find(':', colon + 1) == std::string_view::npos)
        return std::string(peer.substr(0, colon));
    return std::string(peer);
}

PeerLogLimit::PeerLogLimit(Writer write, PeerLogLimits limits)
    : write_(std::move(write)), limits_(limits) {}

PeerLogLimit::~PeerLogLimit() {
    for (const auto &[peer, window] : windows_)
        Report(peer, window.suppressed);
}

void PeerLogLimit::Report(const std::string &peer, uint64_t suppressed) {
    if (suppressed > 0)
        write_("suppressed " + std::to_string(suppressed) + " similar line" +
               (suppressed == 1 ? "" : "s") + " from " + peer);
}

void PeerLogLimit::EndWindows(Clock::time_point now) {
    next_end_ = Clock::time_point::max();
    for (auto it = windows_.begin(); it != windows_.end();) {
        const Clock::time_point end = it->second.start + limits_.interval;
        if (now < end) {
            next_end_ = std::min(next_end_, end);
            ++it;
            continue;
        }
        Report(it->first, it->second.suppressed);
        it = windows_.erase(it);
    }
}

void PeerLogLimit::Write(std::string_view peer, const std::string &line, Clock::time_point now) {
    std::lock_guard lock(mu_);
    if (now >= next_end_)
        EndWindows(now);
    std::string host = PeerHost(peer);
    auto it = windows_.find(host);
    if (it == windows_.end()) {
        // The shared window is one more than max_peers, and the only one.
        if (windows_.size() >= limits_.max_peers)
            host = std::string(kOtherPeers);
        it = windows_.try_emplace(std::move(host), Window{now}).first;
        next_end_ = std::min(next_end_, it->second.start + limits_.interval);
    }
    Window &window = it->second;
    if (window.written >= limits_.burst) {
        ++window.suppressed;
        return;
    }
    ++window.written;
    write_(line);
}

size_t PeerLogLimit::peers() const {
    std::lock_guard lock(mu_);
    return windows_.size();
}

}  // namespace rpmad
