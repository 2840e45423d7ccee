#include "buffer_table.h"

namespace rpma::client {

BufferTable::Buffer *BufferTable::Find(const void *data, size_t length) {
    const auto *p = static_cast<const std::byte *>(data);
    for (Buffer &b : buffers_)
        if (p >= b.bytes.data() && p + length <= b.bytes.data() + b.bytes.size())
            return &b;
    return nullptr;
}

bool BufferTable::Overlaps(std::span<const std::byte> bytes) const {
    for (const Buffer &b : buffers_)
        if (bytes.data() < b.bytes.data() + b.bytes.size() &&
            b.bytes.data() < bytes.data() + bytes.size())
            return true;
    return false;
}

BufferTable::Buffer *BufferTable::Exact(std::span<const std::byte> bytes) {
    for (Buffer &b : buffers_)
        if (b.bytes.data() == bytes.data() && b.bytes.size() == bytes.size())
            return &b;
    return nullptr;
}

void BufferTable::Remove(const Buffer *buffer) {
    buffers_.erase(buffers_.begin() + (buffer - buffers_.data()));
}

}  // namespace rpma::client
