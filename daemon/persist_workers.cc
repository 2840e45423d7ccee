#include "daemon/persist_workers.h"

#include <pthread.h>

namespace rpmad {

PersistWorkers::PersistWorkers() {
    for (int i = 0; i < kThreads; ++i) {
        threads_.emplace_back([this] { Run(); });
        pthread_setname_np(threads_.back().native_handle(), "rpmad-persist");
    }
}

PersistWorkers::~PersistWorkers() {
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
        jobs_.clear();
    }
    ready_.notify_all();
    for (std::thread &thread : threads_)
        thread.join();
}

void PersistWorkers::Submit(Job job) {
    {
        std::lock_guard lock(mu_);
        jobs_.push_back(std::move(job));
    }
    ready_.notify_one();
}

void PersistWorkers::Run() {
    std::unique_lock lock(mu_);
    while (!stopping_) {
        if (jobs_.empty()) {
            ready_.wait(lock);
            continue;
        }
        Job job = std::move(jobs_.front());
        jobs_.pop_front();
        lock.unlock();
        job.done(job.region->Persist(job.offset, job.length));
        job = {};  // lets go of the region before waiting again
        lock.lock();
    }
}

}  // namespace rpmad
