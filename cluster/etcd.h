// A small etcd v3 client over the stubs of etcd's own protos
// (//proto/etcd): the key-value calls, transactions and leases cluster mode
// needs, with failover across the endpoints given. Every call is bounded by
// EtcdOptions::timeout per endpoint tried.
//
// Errors are grpc::Status: UNAVAILABLE when no endpoint answered (etcd down
// or without quorum), the server's status otherwise, each message naming the
// endpoints tried.
#ifndef CLUSTER_ETCD_H
#define CLUSTER_ETCD_H

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"

namespace rpma::cluster {

struct EtcdOptions {
    // host:port of each member's client URL ("http://" or "https://" in
    // front is accepted; https asks for TLS).
    std::vector<std::string> endpoints;
    // TLS: a CA bundle to check etcd's certificate against (empty: the
    // system's), and a client certificate and its key when etcd asks for one
    // (--client-cert-auth). Any of them, or an https endpoint, turns TLS on.
    std::string ca_file;
    std::string cert_file;
    std::string key_file;
    std::chrono::milliseconds timeout{5000};
};

// "http://127.0.0.1:2379,127.0.0.2:2379" -> options->endpoints; an error
// saying what is wrong with an empty or malformed list.
grpc::Status ParseEndpoints(std::string_view text, EtcdOptions *options);

struct KeyValue {
    std::string key;
    std::string value;
    int64_t create_revision = 0;
    int64_t mod_revision = 0;
    int64_t lease = 0;
};

class Etcd {
  public:
    static grpc::Status Connect(const EtcdOptions &options, std::unique_ptr<Etcd> *etcd);

    // The key, or nullopt when it does not exist.
    grpc::Status Get(const std::string &key, std::optional<KeyValue> *out);
    // Every key starting with `prefix`, in key order.
    grpc::Status List(const std::string &prefix, std::vector<KeyValue> *out);
    grpc::Status Put(const std::string &key, const std::string &value, int64_t lease = 0);
    // Writes the key only if its mod_revision is `expected` (0: only if it
    // does not exist). *applied says whether it did; *revision is then the
    // key's new mod_revision. A call that timed out on one endpoint and was
    // retried on another is reported applied when the key holds `value`.
    grpc::Status CompareAndPut(const std::string &key, const std::string &value, int64_t expected,
                               bool *applied, int64_t *revision = nullptr, int64_t lease = 0);
    // Deletes the key only if its mod_revision is `expected`.
    grpc::Status CompareAndDelete(const std::string &key, int64_t expected, bool *applied);
    grpc::Status Delete(const std::string &key);
    // *retried (when given): it ran on more than one endpoint, so an attempt
    // that timed out may have been applied.
    grpc::Status Txn(const etcdserverpb::TxnRequest &request, etcdserverpb::TxnResponse *response,
                     bool *retried = nullptr);

    // A lease of `ttl` seconds; keys put under it go when it expires.
    grpc::Status GrantLease(std::chrono::seconds ttl, int64_t *id);
    // Renews it; *ttl_left 0 means it had expired (its keys are gone).
    grpc::Status KeepAlive(int64_t id, int64_t *ttl_left);
    grpc::Status RevokeLease(int64_t id);

    // The revision etcd is at (the header of a read).
    grpc::Status Revision(int64_t *revision);

    const EtcdOptions &options() const { return options_; }
    // "127.0.0.1:2379, 127.0.0.1:2380": for messages.
    std::string Endpoints() const;

  private:
    struct Endpoint {
        std::string address;
        std::shared_ptr<grpc::Channel> channel;
        std::unique_ptr<etcdserverpb::KV::Stub> kv;
        std::unique_ptr<etcdserverpb::Lease::Stub> lease;
    };

    Etcd() = default;
    // Runs `call` on the endpoint that answered last, then on the others
    // while they fail with UNAVAILABLE or DEADLINE_EXCEEDED. *retried: it
    // ran on more than one (an earlier attempt may have been applied).
    grpc::Status OnAny(const std::function<grpc::Status(Endpoint &, grpc::ClientContext *)> &call,
                       bool *retried = nullptr);

    EtcdOptions options_;
    std::vector<Endpoint> endpoints_;
    std::mutex mu_;
    size_t current_ = 0;
};

// ParseEndpoints of `endpoints`, the TLS files, then Etcd::Connect: for the
// places that hold their settings as text (rpmad.yaml, rpmactl's flags,
// rpma::client::Cluster). INVALID_ARGUMENT saying what is wrong.
grpc::Status ConnectEtcd(std::string_view endpoints, const std::string &ca_file,
                         const std::string &cert_file, const std::string &key_file,
                         std::chrono::milliseconds timeout, std::unique_ptr<Etcd> *etcd);

// Adds to `txn` the condition that `key`'s mod_revision is `revision` (0:
// the key does not exist).
void CompareModRevision(etcdserverpb::TxnRequest *txn, const std::string &key, int64_t revision);

// The end of the range of keys starting with `prefix` (etcd's range_end).
std::string PrefixEnd(const std::string &prefix);

}  // namespace rpma::cluster

#endif  // CLUSTER_ETCD_H
