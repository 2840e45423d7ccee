// rpma::Peer: owns an rpma_peer, a device's protection domain. It must
// outlive everything made with it: memory regions, endpoints, connection
// requests and connections (and SRQs).
#ifndef RPMA_CORE_INCLUDE_RPMA_PEER_HPP
#define RPMA_CORE_INCLUDE_RPMA_PEER_HPP

#include <string>
#include <utility>

#include "librpma.h"
#include "rpma/error.hpp"
#include "rpma/owner.hpp"

namespace rpma {

class Peer {
  public:
    Peer() = default;
    Peer(Peer &&other) noexcept
        : peer_(std::move(other.peer_)), context_(std::exchange(other.context_, nullptr)) {}
    Peer &operator=(Peer &&other) noexcept {
        peer_ = std::move(other.peer_);
        context_ = std::exchange(other.context_, nullptr);
        return *this;
    }

    // rpma_utils_get_ibv_context + rpma_peer_new.
    static Result<Peer> ForAddress(const std::string &addr, rpma_util_ibv_context_type type) {
        ibv_context *context = nullptr;
        detail::Returned found =
            detail::Check(rpma_utils_get_ibv_context(addr.c_str(), type, &context));
        if (found.code != 0)
            return detail::Failure(found, "rpma_utils_get_ibv_context", addr);
        return New(context);
    }

    static Result<Peer> New(ibv_context *context) {
        rpma_peer *peer = nullptr;
        detail::Returned made = detail::Check(rpma_peer_new(context, &peer));
        if (made.code != 0)
            return detail::Failure(made, "rpma_peer_new");
        return Peer(peer, context);
    }

    rpma_peer *get() const { return peer_.get(); }
    ibv_context *context() const { return context_; }

  private:
    Peer(rpma_peer *peer, ibv_context *context) : peer_(peer), context_(context) {}

    detail::Owner<rpma_peer, rpma_peer_delete> peer_;
    ibv_context *context_ = nullptr;
};

}  // namespace rpma

#endif  // RPMA_CORE_INCLUDE_RPMA_PEER_HPP
