// A connection's inbound stage: bytes read from the socket and not yet
// consumed. One recv into it takes a header with a small payload, or
// several messages, at once; large payloads bypass it (tcp_connection.h).
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_STAGE_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_STAGE_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

namespace rpma::provider::tcp {

class Stage {
  public:
    static constexpr size_t kSize = size_t{16} << 10;
    // Page-aligned: a payload behind a 64-byte header then keeps its
    // alignment in the stage, for the kernel's copy into it and for ours
    // out of it (see wire::kHeaderSize).
    static constexpr size_t kAlignment = 4096;

    // The whole buffer (kSize bytes) to read into; allocated on first use,
    // so an idle connection holds none.
    uint8_t *Buffer() {
        if (buffer_ == nullptr)
            buffer_.reset(new (std::align_val_t{kAlignment}) uint8_t[kSize]);
        return buffer_.get();
    }
    // The first `length` bytes of Buffer() were read and wait to be consumed.
    void Filled(size_t length) {
        begin_ = 0;
        end_ = length;
    }
    bool Empty() const { return begin_ == end_; }
    size_t Available() const { return end_ - begin_; }
    const uint8_t *Data() const { return buffer_.get() + begin_; }
    void Consume(size_t length) { begin_ += length; }
    // What was staged is dropped (the connection closes).
    void Clear() { begin_ = end_ = 0; }

  private:
    struct Delete {
        void operator()(uint8_t *buffer) const {
            ::operator delete[](buffer, std::align_val_t{kAlignment});
        }
    };
    std::unique_ptr<uint8_t[], Delete> buffer_;
    size_t begin_ = 0;
    size_t end_ = 0;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_STAGE_H
