#include "client/rpmactl/daemons.h"

#include <cstdio>

namespace rpmactl {

rpma::client::Result<Daemons> ConnectDaemons(const Settings &settings) {
    Daemons daemons;
    for (const std::string &server : settings.servers) {
        auto control = rpma::client::ControlPlane::Connect(server, settings.connect);
        if (!control.ok())
            return control.status();
        daemons.push_back(std::move(*control));
    }
    return daemons;
}

void PrintError(const rpma::client::Status &status) {
    fprintf(stderr, "rpmactl: %s\n", status.ToString().c_str());
}

Json ServerObject(const std::string &address, const rpma::client::Status &status,
                  const Json &fields) {
    Json object = Json::object();
    object["server"] = address;
    if (!status.ok()) {
        object["error"] = {{"code", rpma::client::StatusCodeName(status.code())},
                           {"message", status.message()}};
        return object;
    }
    for (const auto &[key, value] : fields.items())
        object[key] = value;
    return object;
}

}  // namespace rpmactl
