// rpma::SrqCfg owns an rpma_srq_cfg (the sizes of a shared receive queue).
// rpma::Srq owns an rpma_srq: receives shared by the connections of one
// Peer, which must outlive it; it must outlive those connections.
#ifndef RPMA_CORE_INCLUDE_RPMA_SRQ_HPP
#define RPMA_CORE_INCLUDE_RPMA_SRQ_HPP

#include <cstddef>
#include <cstdint>
#include <string>

#include "librpma.h"
#include "rpma/cq.hpp"
#include "rpma/error.hpp"
#include "rpma/mr.hpp"
#include "rpma/owner.hpp"
#include "rpma/peer.hpp"

namespace rpma {

class SrqCfg {
  public:
    SrqCfg() = default;

    static Result<SrqCfg> New() {
        rpma_srq_cfg *cfg = nullptr;
        detail::Returned made = detail::Check(rpma_srq_cfg_new(&cfg));
        if (made.code != 0)
            return detail::Failure(made, "rpma_srq_cfg_new");
        return SrqCfg(cfg);
    }
    Result<void> SetRqSize(uint32_t size) {
        return detail::Status(detail::Check(rpma_srq_cfg_set_rq_size(cfg_.get(), size)),
                              "rpma_srq_cfg_set_rq_size", std::to_string(size));
    }
    // 0: the SRQ has no receive CQ of its own.
    Result<void> SetRcqSize(uint32_t size) {
        return detail::Status(detail::Check(rpma_srq_cfg_set_rcq_size(cfg_.get(), size)),
                              "rpma_srq_cfg_set_rcq_size", std::to_string(size));
    }

    rpma_srq_cfg *get() const { return cfg_.get(); }

  private:
    explicit SrqCfg(rpma_srq_cfg *cfg) : cfg_(cfg) {}

    detail::Owner<rpma_srq_cfg, rpma_srq_cfg_delete> cfg_;
};

class Srq {
  public:
    Srq() = default;

    static Result<Srq> New(Peer &peer, const SrqCfg *cfg = nullptr) {
        rpma_srq *srq = nullptr;
        detail::Returned made =
            detail::Check(rpma_srq_new(peer.get(), cfg ? cfg->get() : nullptr, &srq));
        if (made.code != 0)
            return detail::Failure(made, "rpma_srq_new");
        return Srq(srq);
    }

    Result<void> Recv(MemoryRegion &dst, size_t offset, size_t len, const void *op_context) {
        return detail::Status(
            detail::Check(rpma_srq_recv(srq_.get(), dst.get(), offset, len, op_context)),
            "rpma_srq_recv", std::to_string(len) + " bytes at " + std::to_string(offset));
    }

    // Empty when the SRQ has no receive CQ of its own.
    CompletionQueue Rcq() const {
        rpma_cq *rcq = nullptr;
        if (rpma_srq_get_rcq(srq_.get(), &rcq) != 0)
            return CompletionQueue();
        return CompletionQueue(rcq);
    }

    rpma_srq *get() const { return srq_.get(); }

  private:
    explicit Srq(rpma_srq *srq) : srq_(srq) {}

    detail::Owner<rpma_srq, rpma_srq_delete> srq_;
};

}  // namespace rpma

#endif  // RPMA_CORE_INCLUDE_RPMA_SRQ_HPP
