#include "rpma_core/src/provider/tcp/tcp_persist_workers.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

namespace rpma::provider::tcp {

namespace {

int PoolSize(int threads) {
    return std::clamp(threads, 1, PersistWorkers::kMaxThreads);
}

}  // namespace

PersistWorkers::PersistWorkers(int threads) : own_threads_(threads), threads_(own_threads_) {}

PersistWorkers::PersistWorkers(const std::atomic<int> &threads) : threads_(threads) {}

int PersistWorkers::Threads() const {
    std::lock_guard lock(mu_);
    return workers_.empty() ? PoolSize(threads_.load()) : static_cast<int>(workers_.size());
}

PersistWorkers::~PersistWorkers() {
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
    }
    ready_.notify_all();
    for (std::thread &worker : workers_)
        worker.join();
}

void PersistWorkers::Submit(std::function<void()> job) {
    {
        std::lock_guard lock(mu_);
        jobs_.push_back(std::move(job));
        if (workers_.empty()) {
            const int size = PoolSize(threads_.load());
            for (int i = 0; i < size; ++i) {
                workers_.emplace_back([this] { Run(); });
                pthread_setname_np(workers_.back().native_handle(), "rpma-tcp-persist");
            }
        }
    }
    ready_.notify_one();
}

void PersistWorkers::Run() {
    std::unique_lock lock(mu_);
    for (;;) {
        ready_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty())
            return;  // stopping, and nothing left to persist
        std::function<void()> job = std::move(jobs_.front());
        jobs_.pop_front();
        lock.unlock();
        job();
        lock.lock();
    }
}

}  // namespace rpma::provider::tcp
