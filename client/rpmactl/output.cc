#include "client/rpmactl/output.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <ctime>

namespace rpmactl {

Json ToJson(const google::protobuf::Message &message) {
    google::protobuf::util::JsonPrintOptions options;
    options.always_print_primitive_fields = true;
    options.preserve_proto_field_names = true;
    std::string text;
    // Printing a well-formed message cannot fail; an empty object is the
    // honest answer if it ever did.
    if (!google::protobuf::util::MessageToJsonString(message, &text, options).ok())
        return Json::object();
    return Json::parse(text, nullptr, /*allow_exceptions=*/false);
}

void PrintJson(const Json &value) {
    printf("%s\n", value.dump(2).c_str());
}

std::string Table::ToString() const {
    std::vector<size_t> widths(header_.size(), 0);
    auto measure = [&](const std::vector<std::string> &row) {
        for (size_t i = 0; i < row.size() && i < widths.size(); ++i)
            widths[i] = std::max(widths[i], row[i].size());
    };
    measure(header_);
    for (const auto &row : rows_)
        measure(row);
    std::string text;
    auto append = [&](const std::vector<std::string> &row, bool upper) {
        for (size_t i = 0; i < widths.size(); ++i) {
            std::string cell = i < row.size() ? row[i] : "";
            if (upper)
                std::transform(cell.begin(), cell.end(), cell.begin(),
                               [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
            text += cell;
            if (i + 1 < widths.size())
                text += std::string(widths[i] - cell.size() + 2, ' ');
        }
        text += '\n';
    };
    append(header_, true);
    for (const auto &row : rows_)
        append(row, false);
    return text;
}

}  // namespace rpmactl
