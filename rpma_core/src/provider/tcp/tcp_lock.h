// The lock of the data path's short critical sections (a connection's, a
// CQ's). Uncontended, locking and unlocking are one atomic instruction each,
// inlined; std::mutex goes through pthread_mutex_lock and _unlock, which
// check the mutex's kind and owner first, and a round trip takes about a
// dozen of these. Contended, it sleeps on a futex: Drepper's "Futexes Are
// Tricky" mutex (0 free, 1 locked, 2 locked with possible sleepers). It
// meets Lockable, for std::lock_guard and std::unique_lock.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_LOCK_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_LOCK_H

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

namespace rpma::provider::tcp {

class Lock {
  public:
    Lock() = default;
    Lock(const Lock &) = delete;
    Lock &operator=(const Lock &) = delete;

    void lock() {
        int seen = 0;
        if (!state_.compare_exchange_strong(seen, 1, std::memory_order_acquire))
            LockContended(seen);
    }
    bool try_lock() {
        int seen = 0;
        return state_.compare_exchange_strong(seen, 1, std::memory_order_acquire);
    }
    void unlock() {
        if (state_.exchange(0, std::memory_order_release) == 2)
            Futex(FUTEX_WAKE_PRIVATE, 1);
    }

  private:
    void LockContended(int seen) {
        // From here on the lock is marked as having sleepers, so whoever
        // unlocks it wakes one.
        if (seen != 2)
            seen = state_.exchange(2, std::memory_order_acquire);
        while (seen != 0) {
            Futex(FUTEX_WAIT_PRIVATE, 2);
            seen = state_.exchange(2, std::memory_order_acquire);
        }
    }
    void Futex(int op, int value) {
        syscall(SYS_futex, reinterpret_cast<int *>(&state_), op, value, nullptr, nullptr, 0);
    }

    std::atomic<int> state_{0};
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_LOCK_H
