// put, get, verify and bench: the data plane through the client library.
#include "client/rpmactl/command.h"

namespace rpmactl {

void AddDataCommands(CLI::App &, Run *) {}

}  // namespace rpmactl
