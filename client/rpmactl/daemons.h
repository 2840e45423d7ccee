// The rpmad daemons a command talks to (the --server list, in order), and
// one call asked of each of them in parallel, its answers reported alike by
// every admin command: a JSON array of one object per daemon, or a table;
// errors on stderr; the exit code of the worst answer.
#ifndef CLIENT_RPMACTL_DAEMONS_H
#define CLIENT_RPMACTL_DAEMONS_H

#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "client/rpmactl/exit_code.h"
#include "client/rpmactl/explain.h"
#include "client/rpmactl/output.h"
#include "client/rpmactl/settings.h"
#include "rpma/client/control_plane.h"

namespace rpmactl {

using Daemons = std::vector<std::unique_ptr<rpma::client::ControlPlane>>;

// One channel per server of `settings`. Errors: a TLS file that cannot be
// read, a certificate without its key (usage errors).
rpma::client::Result<Daemons> ConnectDaemons(const Settings &settings);

// Prints "rpmactl: <status>" on stderr.
void PrintError(const rpma::client::Status &status);

template <class Response>
struct Answer {
    rpma::client::ControlPlane *daemon;
    rpma::client::Status status;
    Response response;
};

// `call(daemon, context, &response)` on every daemon at once.
template <class Response>
std::vector<Answer<Response>> AskEach(
    Daemons &daemons, const std::function<grpc::Status(rpma::client::ControlPlane &,
                                                       grpc::ClientContext *, Response *)> &call) {
    std::vector<std::future<Answer<Response>>> pending;
    for (auto &daemon : daemons) {
        pending.push_back(std::async(std::launch::async, [&call, control = daemon.get()] {
            Answer<Response> answer{control, {}, {}};
            answer.status =
                Explain(call(*control, control->Context().get(), &answer.response), *control);
            return answer;
        }));
    }
    std::vector<Answer<Response>> answers;
    for (auto &future : pending)
        answers.push_back(future.get());
    return answers;
}

// The JSON object of one daemon's answer: {"server": ADDRESS, ...fields},
// or {"server": ADDRESS, "error": {"code": ..., "message": ...}}.
Json ServerObject(const std::string &address, const rpma::client::Status &status,
                  const Json &fields);

// Prints errors on stderr; with --json an array of ServerObject(answer's
// `to_json`), else `print_table` of the answers that succeeded (when any
// did). Returns the worst exit code.
template <class Response>
ExitCode Report(
    const Settings &settings, const std::vector<Answer<Response>> &answers,
    const std::function<Json(const Response &)> &to_json,
    const std::function<void(const std::vector<const Answer<Response> *> &)> &print_table) {
    ExitCode code = kExitOk;
    Json array = Json::array();
    std::vector<const Answer<Response> *> ok;
    for (const auto &answer : answers) {
        code = Worse(code, ExitCodeFor(answer.status));
        if (!answer.status.ok())
            PrintError(answer.status);
        else
            ok.push_back(&answer);
        array.push_back(ServerObject(answer.daemon->address(), answer.status,
                                     answer.status.ok() ? to_json(answer.response) : Json()));
    }
    if (settings.json)
        PrintJson(array);
    else if (!ok.empty())
        print_table(ok);
    return code;
}

}  // namespace rpmactl

#endif  // CLIENT_RPMACTL_DAEMONS_H
