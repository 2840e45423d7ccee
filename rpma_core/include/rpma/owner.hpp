// rpma::detail::Owner: the one owner of a librpma object, released with its
// rpma_*_delete-style function. Move-only; a moved-from Owner is empty and
// releases nothing. Every owning wrapper in this folder holds one.
#ifndef RPMA_CORE_INCLUDE_RPMA_OWNER_HPP
#define RPMA_CORE_INCLUDE_RPMA_OWNER_HPP

#include <utility>

namespace rpma::detail {

template <class T, int (*Release)(T **)>
class Owner {
  public:
    Owner() = default;
    explicit Owner(T *object) : object_(object) {}
    Owner(Owner &&other) noexcept : object_(std::exchange(other.object_, nullptr)) {}
    Owner &operator=(Owner &&other) noexcept {
        if (this != &other) {
            reset();
            object_ = std::exchange(other.object_, nullptr);
        }
        return *this;
    }
    Owner(const Owner &) = delete;
    Owner &operator=(const Owner &) = delete;
    ~Owner() { reset(); }

    T *get() const { return object_; }
    // The release function's own result (0 or RPMA_E_*); 0 when empty.
    // Destructors cannot report it: call this where it matters.
    int reset() {
        if (object_ == nullptr)
            return 0;
        // The C functions clear their argument whether or not they succeed.
        return Release(&object_);
    }
    // Hands the object to a C call that consumes it.
    T **slot() { return &object_; }

  private:
    T *object_ = nullptr;
};

}  // namespace rpma::detail

#endif  // RPMA_CORE_INCLUDE_RPMA_OWNER_HPP
