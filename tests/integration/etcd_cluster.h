// etcd for tests: N members of Debian's etcd (etcd-server) on loopback
// ports and data directories of the test's own, started together and
// waited for until each answers a read (not a sleep). Members can be
// killed and restarted on their data, to take the cluster's quorum away
// and give it back.
#ifndef TESTS_INTEGRATION_ETCD_CLUSTER_H
#define TESTS_INTEGRATION_ETCD_CLUSTER_H

#include <memory>
#include <string>
#include <vector>

#include "tests/integration/process.h"

namespace rpma::testing {

class EtcdCluster {
  public:
    // nullptr with *error (the members' output included) when the cluster
    // does not come up within a minute.
    static std::unique_ptr<EtcdCluster> Start(size_t members, std::string *error);
    ~EtcdCluster();

    size_t size() const { return members_.size(); }
    // "127.0.0.1:P1,127.0.0.1:P2,...", every member.
    std::string Endpoints() const;
    std::string ClientAddress(size_t i) const { return members_[i].client; }

    // SIGKILL member i.
    void Kill(size_t i);
    // Member i again, on its data directory and ports; false with *error
    // when it does not answer within a minute (with `await` false: only
    // started, for a member that cannot answer without others).
    bool Restart(size_t i, std::string *error, bool await = true);
    bool running(size_t i) const { return members_[i].process != nullptr; }

  private:
    struct Member {
        std::string name, data, client, peer;
        std::unique_ptr<Process> process;
    };
    EtcdCluster() = default;
    bool Launch(size_t i, const std::string &state, std::string *error);
    // Waits until member i answers a read.
    bool Await(size_t i, std::string *error);

    std::string initial_cluster_;
    std::vector<Member> members_;
};

}  // namespace rpma::testing

#endif  // TESTS_INTEGRATION_ETCD_CLUSTER_H
