// Threads that make large GPSPM ranges durable off the data-plane thread.
//
// Persisting a range of a page-cache region is an msync: it writes the
// range's dirty pages to the disk and waits, seconds for a GiB. On the
// data-plane thread that would stall every accept, every other session's
// flush answer, DeleteRegion, token expiry and the watchdog's ping (which
// the data-plane thread answers). So the data plane persists a small range
// where it decodes the request, and hands a larger one to these workers; the
// session's answer, and its later requests, wait for it (in order: a client
// takes an answer as proof of every request before it).
//
// A job holds its region, so the mapping outlives a session closed or a
// region deleted meanwhile; its result then finds no session and is dropped.
#ifndef DAEMON_PERSIST_WORKERS_H
#define DAEMON_PERSIST_WORKERS_H

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "daemon/region.h"
#include "daemon/status.h"

namespace rpmad {

class PersistWorkers {
  public:
    // Two msyncs of different sessions at once; a third waits for one.
    static constexpr int kThreads = 2;
    // A range of at most this many bytes is persisted inline: a few pages
    // cost less than handing them to another thread and back.
    static constexpr uint64_t kInlineBytes = 64 << 10;

    struct Job {
        std::shared_ptr<const Region> region;
        uint64_t offset = 0;
        uint64_t length = 0;
        // Called on the worker with Region::Persist's outcome.
        std::function<void(Status)> done;
    };

    PersistWorkers();
    // Finishes the jobs being run; drops those not started (their sessions
    // are gone: nobody waits for an answer).
    ~PersistWorkers();
    PersistWorkers(const PersistWorkers &) = delete;
    PersistWorkers &operator=(const PersistWorkers &) = delete;

    void Submit(Job job);

  private:
    void Run();

    std::mutex mu_;
    std::condition_variable ready_;
    std::deque<Job> jobs_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace rpmad

#endif  // DAEMON_PERSIST_WORKERS_H
