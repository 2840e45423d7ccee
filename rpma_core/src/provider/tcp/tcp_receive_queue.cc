#include "rpma_core/src/provider/tcp/tcp_receive_queue.h"

#include <cerrno>
#include <utility>

#include "rpma_core/src/log.h"
#include "rpma_core/src/provider/tcp/tcp_progress_engine.h"

namespace rpma::provider::tcp {

ReceiveQueue::ReceiveQueue(MemoryTable &memory, ProgressEngine &engine, uint64_t pd_id,
                           uint32_t max_wr, bool shared)
    : memory_(memory), engine_(engine), pd_id_(pd_id), max_wr_(max_wr), shared_(shared) {}

int ReceiveQueue::Post(const ibv_recv_wr &wr, RegionCache *cache) {
    if (wr.num_sge < 0 || wr.num_sge > kMaxSge || (wr.num_sge > 0 && wr.sg_list == nullptr)) {
        RPMA_LOG_ERROR("cannot post a receive with %d scatter entries (at most %d)", wr.num_sge,
                       kMaxSge);
        return EINVAL;
    }
    std::vector<std::weak_ptr<ReceiveWaiter>> waiters;
    {
        std::unique_lock lock(mu_, std::defer_lock);
        if (shared_)
            lock.lock();
        if (posted_.size() >= max_wr_) {
            RPMA_LOG_ERROR("cannot post a receive: all %u receive slots are in use", max_wr_);
            return ENOMEM;
        }
        // Built in place; a slot comes back released (no segments).
        PostedReceive &receive = posted_.emplace_back();
        receive.wr_id = wr.wr_id;
        receive.capacity = 0;
        receive.buffers_valid = true;
        for (int i = 0; i < wr.num_sge; ++i) {
            const ibv_sge &sge = wr.sg_list[i];
            if (sge.length == 0)
                continue;
            MemorySegment segment;
            if (!memory_.ResolveLocal(sge, pd_id_, IBV_ACCESS_LOCAL_WRITE, &segment, cache)) {
                RPMA_LOG_ERROR(
                    "receive buffer %#llx+%u is not inside a memory region with lkey %#x "
                    "and local write access; the receive will complete with "
                    "IBV_WC_LOC_PROT_ERR",
                    static_cast<unsigned long long>(sge.addr), sge.length, sge.lkey);
                receive.buffers_valid = false;
                continue;
            }
            receive.capacity += sge.length;
            segment.Own();  // used when a message comes, whatever the cache holds then
            receive.segments.push_back(std::move(segment));
        }
        if (!waiters_.empty())
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

bool ReceiveQueue::PopOrWait(PostedReceive *receive, ReceiveWaiter &waiter) {
    std::unique_lock lock(mu_, std::defer_lock);
    if (shared_)
        lock.lock();
    if (posted_.empty()) {
        waiters_.push_back(waiter.WeakWaiter());
        return false;
    }
    *receive = std::move(posted_.front());
    posted_.pop_front();
    return true;
}

std::vector<PostedReceive> ReceiveQueue::TakeAll() {
    std::vector<PostedReceive> all;
    std::unique_lock lock(mu_, std::defer_lock);
    if (shared_)
        lock.lock();
    all.reserve(posted_.size());
    while (!posted_.empty()) {
        all.push_back(std::move(posted_.front()));
        posted_.pop_front();
    }
    return all;
}

}  // namespace rpma::provider::tcp
