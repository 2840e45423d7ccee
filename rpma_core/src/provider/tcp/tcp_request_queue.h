// Complete connection requests waiting for the application (rdma_listen's
// backlog). Its fd is readable while a request is queued. Once the listener
// closes it, late requests are refused so their senders get a REJECT instead
// of waiting for a timeout.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_REQUEST_QUEUE_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_REQUEST_QUEUE_H

#include <deque>
#include <memory>
#include <mutex>

#include "rpma_core/src/provider/tcp/tcp_signaling_queue.h"

namespace rpma::provider::tcp {

class Connection;

class RequestQueue {
  public:
    bool Valid() const { return requests_.Valid(); }
    int Fd() const { return requests_.Fd(); }

    // False once closed; the caller then rejects the request itself.
    bool Offer(std::shared_ptr<Connection> request) {
        std::lock_guard lock(mu_);
        if (closed_)
            return false;
        requests_.Push(std::move(request));
        return true;
    }
    // 0 or EAGAIN.
    int Take(std::shared_ptr<Connection> *request) { return requests_.Pop(request); }
    // The requests nobody will take any more.
    std::deque<std::shared_ptr<Connection>> Close() {
        std::lock_guard lock(mu_);
        closed_ = true;
        return requests_.Drain();
    }

  private:
    std::mutex mu_;
    bool closed_ = false;
    SignalingQueue<std::shared_ptr<Connection>> requests_;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_REQUEST_QUEUE_H
