// What rpmactl prints: aligned tables for people, JSON for programs.
//
// JSON is protobuf's JSON mapping of the control-plane messages
// (MessageToJsonString) with the .proto's field names (snake_case) and every
// field present, zeros included, so that field names are stable: 64-bit
// integers are strings ("size": "4096") and enums their names, as the
// mapping prescribes.
#ifndef CLIENT_RPMACTL_OUTPUT_H
#define CLIENT_RPMACTL_OUTPUT_H

#include <google/protobuf/message.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "util/time_text.h"

namespace rpmactl {

// Objects keep their fields in the order they were added.
using Json = nlohmann::ordered_json;

// `message` in protobuf's JSON mapping, as a JSON value.
Json ToJson(const google::protobuf::Message &message);

// Prints `value` indented, with a final newline, to stdout.
void PrintJson(const Json &value);

// Columns padded to their widest cell, two spaces apart, the header in
// capitals; the last column is not padded (no trailing spaces).
class Table {
  public:
    explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
    void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
    bool empty() const { return rows_.empty(); }
    std::string ToString() const;
    void Print(FILE *out = stdout) const { fputs(ToString().c_str(), out); }

  private:
    std::vector<std::string> header_;
    std::vector<std::vector<std::string>> rows_;
};

using rpma::util::FormatUnixTime;

}  // namespace rpmactl

#endif  // CLIENT_RPMACTL_OUTPUT_H
