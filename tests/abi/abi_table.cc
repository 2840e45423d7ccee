#include "tests/abi/abi_table.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>

namespace rpma_abi_test {

// "int (rpma_conn_cfg*, int) [FiP13rpma_conn_cfgiE]": readable in a failure
// message, and still exact because the mangled name is kept.
std::string TypeFacts(const std::type_info &type) {
    int status = 0;
    std::unique_ptr<char, decltype(&free)> demangled(
        abi::__cxa_demangle(type.name(), nullptr, nullptr, &status), &free);
    std::string mangled = type.name();
    if (status != 0 || demangled == nullptr)
        return mangled;
    return std::string(demangled.get()) + " [" + mangled + "]";
}

std::string ConstantFacts(long long value, const std::type_info &type) {
    return "value " + std::to_string(value) + ", type " + TypeFacts(type);
}

std::string ObjectFacts(size_t size, size_t alignment) {
    return "sizeof " + std::to_string(size) + ", alignof " + std::to_string(alignment);
}

std::string FieldFacts(size_t offset, size_t size, const std::type_info &type) {
    return "offsetof " + std::to_string(offset) + ", sizeof " + std::to_string(size) + ", type " +
           TypeFacts(type);
}

}  // namespace rpma_abi_test
