#include "cluster/etcd.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "cluster/endpoints.h"
#include "util/connect_channel.h"
#include "util/files.h"

namespace rpma::cluster {
namespace {

using etcdserverpb::Compare;

grpc::Status ReadPem(const std::string &path, const char *what, std::string *out) {
    int error = 0;
    auto text = rpma::util::ReadWholeFile(path, &error);
    if (!text || text->empty())
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            std::string("cannot read the etcd ") + what + " " + path + " (" +
                                (text ? "empty" : std::strerror(error)) +
                                "): give a readable PEM file");
    *out = std::move(*text);
    return grpc::Status::OK;
}

bool Transient(const grpc::Status &status) {
    return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
           status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

KeyValue FromProto(const mvccpb::KeyValue &kv) {
    return {kv.key(), kv.value(), kv.create_revision(), kv.mod_revision(), kv.lease()};
}

}  // namespace

std::string PrefixEnd(const std::string &prefix) {
    std::string end = prefix;
    while (!end.empty()) {
        if (static_cast<unsigned char>(end.back()) < 0xff) {
            end.back() = static_cast<char>(end.back() + 1);
            return end;
        }
        end.pop_back();
    }
    return std::string(1, '\0');  // every key
}

grpc::Status ParseEndpoints(std::string_view text, EtcdOptions *options) {
    std::string error;
    auto endpoints = ParseEtcdEndpoints(text, &error);
    if (!endpoints)
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, error);
    options->endpoints = std::move(*endpoints);
    return grpc::Status::OK;
}

grpc::Status ConnectEtcd(std::string_view endpoints, const std::string &ca_file,
                         const std::string &cert_file, const std::string &key_file,
                         std::chrono::milliseconds timeout, std::unique_ptr<Etcd> *etcd) {
    EtcdOptions options;
    if (auto s = ParseEndpoints(endpoints, &options); !s.ok())
        return s;
    options.ca_file = ca_file;
    options.cert_file = cert_file;
    options.key_file = key_file;
    options.timeout = timeout;
    return Etcd::Connect(options, etcd);
}

void CompareModRevision(etcdserverpb::TxnRequest *txn, const std::string &key, int64_t revision) {
    Compare *compare = txn->add_compare();
    compare->set_key(key);
    compare->set_target(Compare::MOD);
    compare->set_result(Compare::EQUAL);
    compare->set_mod_revision(revision);
}

grpc::Status Etcd::Connect(const EtcdOptions &options, std::unique_ptr<Etcd> *etcd) {
    if (options.endpoints.empty())
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "no etcd endpoint given: list host:port of each member");
    if (options.cert_file.empty() != options.key_file.empty())
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "an etcd client certificate needs its key and a key its "
                            "certificate: give both or neither");
    bool tls = !options.ca_file.empty() || !options.cert_file.empty();
    for (const std::string &e : options.endpoints)
        tls = tls || e.rfind("https://", 0) == 0;
    std::shared_ptr<grpc::ChannelCredentials> credentials;
    if (tls) {
        grpc::SslCredentialsOptions ssl;
        if (!options.ca_file.empty())
            if (auto s = ReadPem(options.ca_file, "CA bundle", &ssl.pem_root_certs); !s.ok())
                return s;
        if (!options.cert_file.empty()) {
            if (auto s = ReadPem(options.cert_file, "client certificate", &ssl.pem_cert_chain);
                !s.ok())
                return s;
            if (auto s = ReadPem(options.key_file, "client key", &ssl.pem_private_key); !s.ok())
                return s;
        }
        credentials = grpc::SslCredentials(ssl);
    } else {
        credentials = grpc::InsecureChannelCredentials();
    }
    std::unique_ptr<Etcd> made(new Etcd());
    made->options_ = options;
    for (const std::string &e : options.endpoints) {
        Endpoint endpoint;
        endpoint.address = e.rfind("https://", 0) == 0 ? e.substr(8) : e;
        // A subchannel of its own per endpoint (ConnectChannel), so that one
        // member's reconnect backoff is not shared with anything else in the
        // process; connected now, past a spurious first failure (a single
        // endpoint has no other to fail over to).
        grpc::ChannelArguments arguments;
        // Reconnect soon after a member comes back, not after gRPC's
        // default backoff of up to two minutes.
        arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
        endpoint.channel = util::ConnectChannel(endpoint.address, credentials, arguments,
                                                std::min(options.timeout, util::kConnectWindow));
        endpoint.kv = etcdserverpb::KV::NewStub(endpoint.channel);
        endpoint.lease = etcdserverpb::Lease::NewStub(endpoint.channel);
        made->endpoints_.push_back(std::move(endpoint));
    }
    *etcd = std::move(made);
    return grpc::Status::OK;
}

std::string Etcd::Endpoints() const {
    std::string all;
    for (const Endpoint &e : endpoints_)
        all += (all.empty() ? "" : ", ") + e.address;
    return all;
}

grpc::Status Etcd::OnAny(const std::function<grpc::Status(Endpoint &, grpc::ClientContext *)> &call,
                         bool *retried) {
    size_t first;
    {
        std::lock_guard lock(mu_);
        first = current_;
    }
    std::string failures;
    grpc::Status last;
    for (size_t k = 0; k < endpoints_.size(); ++k) {
        const size_t i = (first + k) % endpoints_.size();
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + options_.timeout);
        if (retried != nullptr && k > 0)
            *retried = true;
        last = call(endpoints_[i], &context);
        if (!Transient(last)) {
            std::lock_guard lock(mu_);
            current_ = i;
            if (last.ok())
                return last;
            return grpc::Status(last.error_code(),
                                "etcd " + endpoints_[i].address + ": " + last.error_message());
        }
        failures += (failures.empty() ? "" : "; ") + endpoints_[i].address + ": " +
                    (last.error_message().empty() ? "no answer" : last.error_message());
    }
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "no etcd endpoint answered within " +
                            std::to_string(options_.timeout.count()) +
                            " ms (etcd down, or without a quorum of its members): " + failures);
}

grpc::Status Etcd::Get(const std::string &key, std::optional<KeyValue> *out) {
    etcdserverpb::RangeRequest request;
    request.set_key(key);
    etcdserverpb::RangeResponse response;
    auto s = OnAny(
        [&](Endpoint &e, grpc::ClientContext *c) { return e.kv->Range(c, request, &response); });
    if (!s.ok())
        return s;
    out->reset();
    if (response.kvs_size() > 0)
        *out = FromProto(response.kvs(0));
    return s;
}

grpc::Status Etcd::List(const std::string &prefix, std::vector<KeyValue> *out) {
    etcdserverpb::RangeRequest request;
    request.set_key(prefix);
    request.set_range_end(PrefixEnd(prefix));
    request.set_sort_order(etcdserverpb::RangeRequest::ASCEND);
    request.set_sort_target(etcdserverpb::RangeRequest::KEY);
    etcdserverpb::RangeResponse response;
    auto s = OnAny(
        [&](Endpoint &e, grpc::ClientContext *c) { return e.kv->Range(c, request, &response); });
    if (!s.ok())
        return s;
    out->clear();
    for (const auto &kv : response.kvs())
        out->push_back(FromProto(kv));
    return s;
}

grpc::Status Etcd::Revision(int64_t *revision) {
    etcdserverpb::RangeRequest request;
    request.set_key(std::string(1, '\0'));
    request.set_count_only(true);
    etcdserverpb::RangeResponse response;
    auto s = OnAny(
        [&](Endpoint &e, grpc::ClientContext *c) { return e.kv->Range(c, request, &response); });
    if (s.ok())
        *revision = response.header().revision();
    return s;
}

grpc::Status Etcd::Put(const std::string &key, const std::string &value, int64_t lease) {
    etcdserverpb::PutRequest request;
    request.set_key(key);
    request.set_value(value);
    request.set_lease(lease);
    etcdserverpb::PutResponse response;
    return OnAny(
        [&](Endpoint &e, grpc::ClientContext *c) { return e.kv->Put(c, request, &response); });
}

grpc::Status Etcd::Txn(const etcdserverpb::TxnRequest &request, etcdserverpb::TxnResponse *response,
                       bool *retried) {
    return OnAny(
        [&](Endpoint &e, grpc::ClientContext *c) { return e.kv->Txn(c, request, response); },
        retried);
}

grpc::Status Etcd::CompareAndPut(const std::string &key, const std::string &value, int64_t expected,
                                 bool *applied, int64_t *revision, int64_t lease) {
    etcdserverpb::TxnRequest request;
    CompareModRevision(&request, key, expected);
    auto *put = request.add_success()->mutable_request_put();
    put->set_key(key);
    put->set_value(value);
    put->set_lease(lease);
    etcdserverpb::TxnResponse response;
    bool retried = false;
    auto s = Txn(request, &response, &retried);
    if (!s.ok())
        return s;
    *applied = response.succeeded();
    if (*applied && revision != nullptr)
        *revision = response.header().revision();
    if (!*applied && retried) {
        // The attempt that timed out may have been the one applied.
        std::optional<KeyValue> now;
        if (auto g = Get(key, &now); !g.ok())
            return g;
        if (now && now->value == value) {
            *applied = true;
            if (revision != nullptr)
                *revision = now->mod_revision;
        }
    }
    return s;
}

grpc::Status Etcd::CompareAndDelete(const std::string &key, int64_t expected, bool *applied) {
    etcdserverpb::TxnRequest request;
    CompareModRevision(&request, key, expected);
    request.add_success()->mutable_request_delete_range()->set_key(key);
    etcdserverpb::TxnResponse response;
    bool retried = false;
    auto s = Txn(request, &response, &retried);
    if (!s.ok())
        return s;
    *applied = response.succeeded();
    if (!*applied && retried) {
        std::optional<KeyValue> now;
        if (auto g = Get(key, &now); !g.ok())
            return g;
        *applied = !now.has_value();
    }
    return s;
}

grpc::Status Etcd::Delete(const std::string &key) {
    etcdserverpb::DeleteRangeRequest request;
    request.set_key(key);
    etcdserverpb::DeleteRangeResponse response;
    return OnAny([&](Endpoint &e, grpc::ClientContext *c) {
        return e.kv->DeleteRange(c, request, &response);
    });
}

grpc::Status Etcd::GrantLease(std::chrono::seconds ttl, int64_t *id) {
    etcdserverpb::LeaseGrantRequest request;
    request.set_ttl(ttl.count());
    etcdserverpb::LeaseGrantResponse response;
    auto s = OnAny([&](Endpoint &e, grpc::ClientContext *c) {
        return e.lease->LeaseGrant(c, request, &response);
    });
    if (!s.ok())
        return s;
    if (!response.error().empty())
        return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                            "etcd refused a lease: " + response.error());
    *id = response.id();
    return s;
}

grpc::Status Etcd::KeepAlive(int64_t id, int64_t *ttl_left) {
    etcdserverpb::LeaseKeepAliveRequest request;
    request.set_id(id);
    etcdserverpb::LeaseKeepAliveResponse response;
    return OnAny([&](Endpoint &e, grpc::ClientContext *c) {
        auto stream = e.lease->LeaseKeepAlive(c);
        if (!stream->Write(request) || !stream->Read(&response)) {
            stream->WritesDone();
            grpc::Status s = stream->Finish();
            return s.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "keep-alive unanswered")
                          : s;
        }
        stream->WritesDone();
        *ttl_left = response.ttl();
        c->TryCancel();
        stream->Finish();
        return grpc::Status::OK;
    });
}

grpc::Status Etcd::RevokeLease(int64_t id) {
    etcdserverpb::LeaseRevokeRequest request;
    request.set_id(id);
    etcdserverpb::LeaseRevokeResponse response;
    return OnAny([&](Endpoint &e, grpc::ClientContext *c) {
        return e.lease->LeaseRevoke(c, request, &response);
    });
}

}  // namespace rpma::cluster
