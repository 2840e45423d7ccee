// The C API's completed asynchronous operations of one handle, kept until
// rpma_client_poll takes them, with an eventfd that is readable exactly
// while any wait: an event loop sleeps in poll(2) or epoll instead of
// being called back on the Region's progress thread.
#ifndef CLIENT_SRC_COMPLETION_QUEUE_H
#define CLIENT_SRC_COMPLETION_QUEUE_H

#include <cstddef>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace rpma::client {

class CompletionQueue {
  public:
    struct Entry {
        void *user_data = nullptr;
        int op = 0;
        int status = 0;
        std::string message;
    };

    CompletionQueue() = default;
    CompletionQueue(const CompletionQueue &) = delete;
    CompletionQueue &operator=(const CompletionQueue &) = delete;
    ~CompletionQueue();

    // From the Region's progress thread.
    void Push(Entry entry);
    // Moves up to `max` entries, oldest first, to the end of *out.
    void Take(size_t max, std::vector<Entry> *out);
    // The eventfd, made on first use so that handles that never poll hold
    // no extra descriptor; -1 with errno when it cannot be made.
    int Fd();

  private:
    void Signal();  // with mu_ held and an entry ready

    std::mutex mu_;
    std::deque<Entry> ready_;
    int fd_ = -1;
};

}  // namespace rpma::client

#endif  // CLIENT_SRC_COMPLETION_QUEUE_H
