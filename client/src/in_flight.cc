#include "in_flight.h"

#include <utility>
#include <vector>

namespace rpma::client {

bool InFlight::AwaitRoom(std::unique_lock<std::mutex> &lock, bool wait) {
    const auto room = [this] { return queue_.size() < max_in_flight_; };
    if (OnProgressThread() || room())
        return true;
    if (!wait)
        return false;
    room_cv_.wait(lock, room);
    return true;
}

void InFlight::Push(Pending pending) {
    queue_.push_back(std::move(pending));
    if (!progress_.joinable()) {
        progress_ = std::thread([this] { Loop(); });
        progress_id_ = progress_.get_id();
    }
    pending_cv_.notify_one();
}

void InFlight::Loop() {
    std::vector<std::pair<std::function<void(Status)>, Status>> ready;
    std::unique_lock lock(mu_);
    for (;;) {
        pending_cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty())
            return;  // stopping, and every submission completed
        // Since a replica completes in posting order, the oldest is always
        // the first that can complete: completing in order costs nothing.
        do {
            Pending &p = queue_.front();
            Status s = completer_.Complete(p);
            ready.emplace_back(std::move(p.done), std::move(s));
            queue_.pop_front();
        } while (!queue_.empty() &&
                 (!queue_.front().status.ok() || completer_.PostedDone(queue_.front().posted)));
        completer_.AfterCompletions();
        room_cv_.notify_all();
        lock.unlock();
        for (auto &[done, status] : ready)
            if (done)
                done(std::move(status));
        ready.clear();
        lock.lock();
    }
}

void InFlight::Stop() {
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
    }
    pending_cv_.notify_all();
    if (progress_.joinable())
        progress_.join();
}

}  // namespace rpma::client
