#include "rpma_core/src/provider/tcp/tcp_receive_queue.h"

#include <cerrno>
#include <utility>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_progress_engine.h"

namespace rpma::provider::tcp {

ReceiveQueue::ReceiveQueue(MemoryTable &memory, ProgressEngine &engine, uint64_t pd_id,
                           uint32_t max_wr)
    : memory_(memory), engine_(engine), pd_id_(pd_id), max_wr_(max_wr) {}

int ReceiveQueue::Post(const ibv_recv_wr &wr) {
    if (wr.num_sge < 0 || wr.num_sge > kMaxSge || (wr.num_sge > 0 && wr.sg_list == nullptr)) {
        RPMA_LOG_ERROR("cannot post a receive with %d scatter entries (at most %d)", wr.num_sge,
                       kMaxSge);
        return EINVAL;
    }
    PostedReceive receive;
    receive.wr_id = wr.wr_id;
    for (int i = 0; i < wr.num_sge; ++i) {
        const ibv_sge &sge = wr.sg_list[i];
        if (sge.length == 0)
            continue;
        MemorySegment segment;
        if (!memory_.ResolveLocal(sge, pd_id_, IBV_ACCESS_LOCAL_WRITE, &segment)) {
            RPMA_LOG_ERROR(
                "receive buffer %#llx+%u is not inside a memory region with lkey %#x "
                "and local write access; the receive will complete with "
                "IBV_WC_LOC_PROT_ERR",
                static_cast<unsigned long long>(sge.addr), sge.length, sge.lkey);
            receive.buffers_valid = false;
            continue;
        }
        receive.capacity += sge.length;
        receive.segments.push_back(std::move(segment));
    }

    std::vector<std::weak_ptr<ReceiveWaiter>> waiters;
    {
        std::lock_guard lock(mu_);
        if (posted_.size() >= max_wr_) {
            RPMA_LOG_ERROR("cannot post a receive: all %u receive slots are in use", max_wr_);
            return ENOMEM;
        }
        posted_.push_back(std::move(receive));
        waiters.swap(waiters_);
    }
    for (auto &waiter : waiters) {
        engine_.Post([waiter = std::move(waiter)] {
            if (auto alive = waiter.lock())
                alive->ResumeReceiving();
        });
    }
    return 0;
}

bool ReceiveQueue::PopOrWait(PostedReceive *receive, std::weak_ptr<ReceiveWaiter> waiter) {
    std::lock_guard lock(mu_);
    if (posted_.empty()) {
        waiters_.push_back(std::move(waiter));
        return false;
    }
    *receive = std::move(posted_.front());
    posted_.pop_front();
    return true;
}

std::deque<PostedReceive> ReceiveQueue::TakeAll() {
    std::lock_guard lock(mu_);
    return std::exchange(posted_, {});
}

}  // namespace rpma::provider::tcp
