// An ABI table: what one librpma.h says about every name in abi_names.inc.
// Two translation units build one each -- abi_table_debian.cc against
// Debian's header, abi_table_ours.cc against ours -- and abi_layout_test
// compares them. The two headers cannot share a translation unit (they
// declare the same functions and types), which is why each gets its own.
#ifndef TESTS_ABI_ABI_TABLE_H
#define TESTS_ABI_ABI_TABLE_H

#include <cstddef>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

namespace rpma_abi_test {

enum class Kind { kFunction, kConstant, kType, kField, kFunctionType };

struct AbiEntry {
    Kind kind;
    // As spelled in abi_names.inc: "rpma_read", "RPMA_E_INVAL",
    // "struct rpma_conn_private_data", "struct rpma_conn_private_data::len".
    std::string name;
    // Everything the compiler knows about the name that a binary depends on;
    // equal strings mean an equal ABI.
    std::string facts;
};

// Function types are compared by their mangled names: those encode every
// parameter and the return type, and struct tags are the same in both headers.
std::string TypeFacts(const std::type_info &type);
std::string ConstantFacts(long long value, const std::type_info &type);
std::string ObjectFacts(size_t size, size_t alignment);
std::string FieldFacts(size_t offset, size_t size, const std::type_info &type);

// /usr/include/librpma.h (abi_table_debian.cc).
std::vector<AbiEntry> DebianAbiTable();
// rpma_core/include/librpma.h (abi_table_ours.cc).
std::vector<AbiEntry> OurAbiTable();

}  // namespace rpma_abi_test

// The X-macros of abi_names.inc, each expanding to one AbiEntry initializer,
// so that a table is the brace-enclosed expansion of abi_names.inc. They are
// meant for use inside namespace rpma_abi_test.
#define RPMA_ABI_FUNCTION(name) AbiEntry{Kind::kFunction, #name, TypeFacts(typeid(decltype(name)))},
#define RPMA_ABI_CONSTANT(name)      \
    AbiEntry{Kind::kConstant, #name, \
             ConstantFacts(static_cast<long long>(name), typeid(decltype(name)))},
#define RPMA_ABI_TYPE(type) AbiEntry{Kind::kType, #type, ObjectFacts(sizeof(type), alignof(type))},
#define RPMA_ABI_FIELD(type, member)                                                 \
    AbiEntry{Kind::kField, #type "::" #member,                                       \
             FieldFacts(offsetof(type, member), sizeof(std::declval<type>().member), \
                        typeid(decltype(std::declval<type>().member)))},
#define RPMA_ABI_FUNCTION_TYPE(name) AbiEntry{Kind::kFunctionType, #name, TypeFacts(typeid(name))},

#endif  // TESTS_ABI_ABI_TABLE_H
