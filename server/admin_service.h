// AdminService: the gRPC adapter for inspection and maintenance (stats,
// listing, entries, deletion, verification, eviction, export and import)
// over the store, its janitor and the cache.
// Every RPC needs the admin scope (access_control.h).
// Thread-safety: thread-safe.
#ifndef AOTCACHE_SERVER_ADMIN_SERVICE_H_
#define AOTCACHE_SERVER_ADMIN_SERVICE_H_

#include "aotcache/v1/service.grpc.pb.h"
#include "core/cache/cache.h"
#include "core/store/rocksdb_store.h"
#include "core/store/store_janitor.h"
#include "server/access_control.h"
#include "server/call_clock.h"

namespace aotcache {

class AdminServiceImpl final : public v1::AdminService::Service {
 public:
  AdminServiceImpl(Cache* cache, RocksDbStore* store, StoreJanitor* janitor,
                   AccessControl* access, CallClock* clock)
      : cache_(cache),
        store_(store),
        janitor_(janitor),
        access_(access),
        clock_(clock) {}

  grpc::Status Stats(grpc::ServerContext* context, const v1::StatsRequest*,
                     v1::StatsResponse* response) override;
  grpc::Status ListEntries(grpc::ServerContext* context,
                           const v1::ListEntriesRequest* request,
                           v1::ListEntriesResponse* response) override;
  grpc::Status GetEntry(grpc::ServerContext* context,
                        const v1::GetEntryRequest* request,
                        v1::LookupResponse* response) override;
  grpc::Status DeleteEntry(grpc::ServerContext* context,
                           const v1::DeleteEntryRequest* request,
                           v1::DeleteEntryResponse* response) override;
  grpc::Status Verify(grpc::ServerContext* context, const v1::VerifyRequest*,
                      v1::VerifyResponse* response) override;
  grpc::Status Evict(grpc::ServerContext* context,
                     const v1::EvictRequest* request,
                     v1::EvictResponse* response) override;
  grpc::Status Export(grpc::ServerContext* context,
                      const v1::ExportRequest* request,
                      grpc::ServerWriter<v1::ExportChunk>* writer) override;
  grpc::Status Import(grpc::ServerContext* context,
                      grpc::ServerReader<v1::ImportChunk>* reader,
                      v1::ImportResponse* response) override;

 private:
  Cache* cache_;
  RocksDbStore* store_;
  StoreJanitor* janitor_;
  AccessControl* access_;
  CallClock* clock_;
};

}  // namespace aotcache

#endif  // AOTCACHE_SERVER_ADMIN_SERVICE_H_
