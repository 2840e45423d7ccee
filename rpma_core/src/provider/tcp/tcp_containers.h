// Allocation-free containers for the data path: once warm, posting and
// completing work requests allocate nothing.
#ifndef RPMA_CORE_SRC_PROVIDER_TCP_TCP_CONTAINERS_H
#define RPMA_CORE_SRC_PROVIDER_TCP_TCP_CONTAINERS_H

#include <array>
#include <cstddef>
#include <utility>
#include <vector>

namespace rpma::provider::tcp {

// A vector keeping its first N elements inline (most work requests have one
// scatter/gather entry). Contiguous: past N, everything moves to the heap.
// T must be default-constructible; unused inline slots hold T{}.
template <typename T, size_t N>
class SmallVector {
  public:
    SmallVector() = default;
    SmallVector(const SmallVector &) = default;
    SmallVector &operator=(const SmallVector &) = default;
    SmallVector(SmallVector &&other) noexcept { MoveFrom(other); }
    SmallVector &operator=(SmallVector &&other) noexcept {
        if (this != &other) {
            if (size_ != 0 || spilled_)
                clear();
            MoveFrom(other);
        }
        return *this;
    }

    T *data() { return spilled_ ? heap_.data() : inline_.data(); }
    const T *data() const { return spilled_ ? heap_.data() : inline_.data(); }
    size_t size() const { return spilled_ ? heap_.size() : size_; }
    bool empty() const { return size() == 0; }
    T *begin() { return data(); }
    T *end() { return data() + size(); }
    const T *begin() const { return data(); }
    const T *end() const { return data() + size(); }
    T &operator[](size_t i) { return data()[i]; }
    const T &operator[](size_t i) const { return data()[i]; }

    void push_back(T value) {
        if (!spilled_ && size_ < N) {
            inline_[size_++] = std::move(value);
            return;
        }
        if (!spilled_) {
            heap_.reserve(2 * N + 2);
            for (size_t i = 0; i < size_; ++i)
                heap_.push_back(std::exchange(inline_[i], T{}));
            size_ = 0;
            spilled_ = true;
        }
        heap_.push_back(std::move(value));
    }

    // Releases the elements (their references) and keeps the heap capacity.
    void clear() {
        for (size_t i = 0; i < size_; ++i)
            inline_[i] = T{};
        size_ = 0;
        heap_.clear();
        spilled_ = false;
    }

  private:
    // Into an empty vector (constructed or cleared). The heap is touched only
    // when `other` spilled: most moves carry one inline element or none.
    void MoveFrom(SmallVector &other) {
        for (size_t i = 0; i < other.size_; ++i)
            inline_[i] = std::exchange(other.inline_[i], T{});
        size_ = std::exchange(other.size_, 0);
        if (other.spilled_) {
            heap_ = std::move(other.heap_);
            other.heap_.clear();
            spilled_ = true;
            other.spilled_ = false;
        }
    }

    std::array<T, N> inline_{};
    size_t size_ = 0;  // inline elements in use
    std::vector<T> heap_;
    bool spilled_ = false;
};

// Resets a popped slot of a RingQueue: what it refers to is released.
template <typename T>
struct ResetToDefault {
    void operator()(T &slot) const { slot = T{}; }
};

// A FIFO over a power-of-two ring that grows as needed and never shrinks.
// Popped slots are handed to Reset, which must release whatever they refer
// to; emplace_back returns such a slot, for the caller to fill completely.
template <typename T, typename Reset = ResetToDefault<T>>
class RingQueue {
  public:
    bool empty() const { return size_ == 0; }
    size_t size() const { return size_; }
    T &front() { return slots_[head_]; }
    const T &front() const { return slots_[head_]; }
    T &back() { return slots_[(head_ + size_ - 1) & mask_]; }
    // The i-th element from the front.
    T &operator[](size_t i) { return slots_[(head_ + i) & mask_]; }
    const T &operator[](size_t i) const { return slots_[(head_ + i) & mask_]; }

    void push_back(T value) { emplace_back() = std::move(value); }
    T &emplace_back() {
        if (size_ == slots_.size())
            Grow();
        T &slot = slots_[(head_ + size_) & mask_];
        ++size_;
        return slot;
    }
    // Refuses (does nothing) when empty: a size that wrapped below zero
    // once made a drain loop run ~2^64 times.
    void pop_front() {
        if (size_ == 0) [[unlikely]]
            return;
        Reset{}(slots_[head_]);
        head_ = (head_ + 1) & mask_;
        --size_;
    }
    void clear() {
        while (!empty())
            pop_front();
        head_ = 0;
    }

  private:
    void Grow() {
        const size_t capacity = slots_.empty() ? 8 : 2 * slots_.size();
        std::vector<T> grown(capacity);
        for (size_t i = 0; i < size_; ++i)
            grown[i] = std::move((*this)[i]);
        slots_ = std::move(grown);
        head_ = 0;
        mask_ = capacity - 1;
    }

    std::vector<T> slots_;
    size_t head_ = 0;
    size_t size_ = 0;
    size_t mask_ = 0;
};

}  // namespace rpma::provider::tcp

#endif  // RPMA_CORE_SRC_PROVIDER_TCP_TCP_CONTAINERS_H
