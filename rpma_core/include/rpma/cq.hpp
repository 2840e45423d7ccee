// rpma::CompletionQueue: a view of a connection's (or an SRQ's) rpma_cq,
// owned by that connection (or SRQ); it must not outlive it. Empty when the
// connection has no such queue (Connection::Rcq without a receive CQ).
#ifndef RPMA_CORE_INCLUDE_RPMA_CQ_HPP
#define RPMA_CORE_INCLUDE_RPMA_CQ_HPP

#include <climits>
#include <span>

#include "librpma.h"
#include "rpma/error.hpp"

namespace rpma {

class CompletionQueue {
  public:
    CompletionQueue() = default;
    explicit CompletionQueue(rpma_cq *cq) : cq_(cq) {}

    bool empty() const { return cq_ == nullptr; }

    Result<int> fd() const {
        int fd = -1;
        detail::Returned got = detail::Check(rpma_cq_get_fd(cq_, &fd));
        if (got.code != 0)
            return detail::Failure(got, "rpma_cq_get_fd");
        return fd;
    }

    // Blocks (unless fd() is O_NONBLOCK) until the CQ has a completion.
    // RPMA_E_NO_COMPLETION passes through, as does RPMA_E_SHARED_CHANNEL.
    Result<void> Wait() { return detail::Status(detail::Check(rpma_cq_wait(cq_)), "rpma_cq_wait"); }

    // Up to completions.size() completions; 0 when none is ready.
    Result<int> Poll(std::span<ibv_wc> completions) {
        int got = 0;
        const int capacity =
            completions.size() > INT_MAX ? INT_MAX : static_cast<int>(completions.size());
        detail::Returned polled =
            detail::Check(rpma_cq_get_wc(cq_, capacity, completions.data(), &got));
        if (polled.code == RPMA_E_NO_COMPLETION)
            return 0;
        if (polled.code != 0)
            return detail::Failure(polled, "rpma_cq_get_wc");
        return got;
    }

    // One completion; RPMA_E_NO_COMPLETION passes through as an error.
    Result<ibv_wc> GetCompletion() {
        ibv_wc wc{};
        detail::Returned polled = detail::Check(rpma_cq_get_wc(cq_, 1, &wc, nullptr));
        if (polled.code != 0)
            return detail::Failure(polled, "rpma_cq_get_wc");
        return wc;
    }

    rpma_cq *get() const { return cq_; }

  private:
    rpma_cq *cq_ = nullptr;
};

}  // namespace rpma

#endif  // RPMA_CORE_INCLUDE_RPMA_CQ_HPP
