// Threads that make large ranges durable off the progress thread.
//
// A persistent flush of a page-cache mapping is an msync, which writes the
// range's dirty pages to the device and waits for them: hundreds of
// milliseconds or more for a large range. On the progress thread that would
// stall every connection of the process (and the deregistrations waiting
// for their locks). So a connection hands a large msync to these workers
// and stops reading its own socket until the worker is done: its later
// requests wait, in order, as they would behind the flush on an RNIC; its
// peer hears repeated ACKs meanwhile (tcp_liveness.h), and every other
// connection goes on. The flush is acknowledged, from the worker, only after
// the range is durable.
//
// Bounded: a fixed number of threads, started when the first job comes; a
// connection has at most one job at a time, so the queue holds at most one
// job per connection. RPMA_TCP_PERSIST_THREADS (or rpma_ext_tcp_set_options)
// sets the number (default kDefaultThreads) until the pool starts.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_PERSIST_WORKERS_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_PERSIST_WORKERS_H

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace rpma::provider::tcp {

class PersistWorkers {
  public:
    static constexpr int kDefaultThreads = 2;
    static constexpr int kMaxThreads = 64;
    // An msync of at most this many bytes runs where the flush is executed:
    // a handful of pages costs less than handing them to another thread.
    static constexpr size_t kInlineBytes = 64 * 1024;

    explicit PersistWorkers(int threads = kDefaultThreads);
    // The pool takes its size from `threads` when it starts (clamped to 1 to
    // kMaxThreads); `threads` must outlive it.
    explicit PersistWorkers(const std::atomic<int> &threads);
    ~PersistWorkers();
    PersistWorkers(const PersistWorkers &) = delete;
    PersistWorkers &operator=(const PersistWorkers &) = delete;

    // Runs `job` on a worker thread, in submission order per thread pool.
    void Submit(std::function<void()> job);
    // The pool's size: what it started with, or would start with now.
    int Threads() const;

  private:
    void Run();

    const std::atomic<int> own_threads_{kDefaultThreads};
    const std::atomic<int> &threads_;
    mutable std::mutex mu_;
    std::condition_variable ready_;
    std::deque<std::function<void()>> jobs_;
    bool stopping_ = false;
    std::vector<std::thread> workers_;  // started by the first Submit
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_PERSIST_WORKERS_H
