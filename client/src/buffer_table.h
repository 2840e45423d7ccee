// The application buffers registered with a Region's replicas
// (Region::RegisterBuffer): each under an id every replica registered it
// by (0 is the staging ring's), with the seq of the last write sent from
// it, which UnregisterBuffer waits for. Used under the Region's mutex.
#ifndef CLIENT_SRC_BUFFER_TABLE_H
#define CLIENT_SRC_BUFFER_TABLE_H

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace rpma::client {

class BufferTable {
  public:
    struct Buffer {
        std::span<std::byte> bytes;
        size_t id = 0;
        uint64_t last_seq = 0;
    };

    // The buffer that holds [data, data + length) whole, or nullptr.
    Buffer *Find(const void *data, size_t length);
    // Whether `bytes` shares a byte with a registered buffer.
    bool Overlaps(std::span<const std::byte> bytes) const;
    // An id no buffer of this table had (from 1 on).
    size_t NewId() { return next_id_++; }
    void Add(std::span<std::byte> bytes, size_t id) { buffers_.push_back({bytes, id, 0}); }
    // The buffer registered as exactly `bytes`, or nullptr.
    Buffer *Exact(std::span<const std::byte> bytes);
    // Forgets `buffer` (one Find or Exact returned).
    void Remove(const Buffer *buffer);

    std::vector<Buffer>::const_iterator begin() const { return buffers_.begin(); }
    std::vector<Buffer>::const_iterator end() const { return buffers_.end(); }

  private:
    std::vector<Buffer> buffers_;
    size_t next_id_ = 1;
};

}  // namespace rpma::client

#endif  // CLIENT_SRC_BUFFER_TABLE_H
