package fluss

// API_VERSIONS (1000), version 0.
//
// Sent first on every connection, at version 0. The answer lists the APIs the
// server's role serves; for each we use min(our max, server max) and refuse
// the API when that is below max(our min, server min), as the Java client's
// ServerApiVersions does. An API the server does not list is refused before
// sending (ErrAPINotSupported), because the server would never answer it.

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// Fluss API keys this client speaks (ApiKeys.java).
const (
	apiVersions        int16 = 1000
	apiCreateDatabase  int16 = 1001
	apiDropDatabase    int16 = 1002
	apiDatabaseExists  int16 = 1004
	apiCreateTable     int16 = 1005
	apiDropTable       int16 = 1006
	apiGetTableInfo    int16 = 1007
	apiListTables      int16 = 1008
	apiListPartitions  int16 = 1009
	apiTableExists     int16 = 1010
	apiGetTableSchema  int16 = 1011
	apiGetMetadata     int16 = 1012
	apiProduceLog      int16 = 1014
	apiFetchLog        int16 = 1015
	apiPutKv           int16 = 1016
	apiLookup          int16 = 1017
	apiListOffsets     int16 = 1021
	apiInitWriter      int16 = 1026
	apiCreatePartition int16 = 1036
	apiDropPartition   int16 = 1037
	apiAuthenticate    int16 = 1038
	apiAlterTable      int16 = 1044
)

// Server types in ApiVersionsResponse.server_type (ServerType.java).
const (
	serverTypeCoordinator  int32 = 1
	serverTypeTabletServer int32 = 2
)

// clientVersions is the range of versions this client implements per API.
// PUT_KV v1 and LOOKUP v1 mean keys are encoded with CompactedKeyEncoder when
// a lake table's bucket key differs from its primary key (identical to v0
// for tables without a data-lake format); PUT_KV v2 means the client
// understands STORAGE_BACKPRESSURE_EXCEPTION (72), which it does (retriable),
// and reads the per-bucket pressure. PRODUCE_LOG v1 and PUT_KV v3 (Fluss
// 1.0) carry routing_bucket_count and original_partition_name per bucket.
// A 0.9.1 tablet server offers PRODUCE_LOG 0 and PUT_KV 0–1; 1.0.0 offers
// PRODUCE_LOG 0–1, PUT_KV 0–3 and LOOKUP 0–1.
var clientVersions = map[int16][2]int16{
	apiVersions:        {0, 0},
	apiCreateDatabase:  {0, 0},
	apiDropDatabase:    {0, 0},
	apiDatabaseExists:  {0, 0},
	apiCreateTable:     {0, 0},
	apiAlterTable:      {0, 0},
	apiDropTable:       {0, 0},
	apiGetTableInfo:    {0, 0},
	apiListTables:      {0, 0},
	apiListPartitions:  {0, 0},
	apiTableExists:     {0, 0},
	apiGetTableSchema:  {0, 0},
	apiGetMetadata:     {0, 0},
	apiProduceLog:      {0, produceLogRoutingVersion},
	apiFetchLog:        {0, 0},
	apiPutKv:           {0, putKvRoutingVersion},
	apiLookup:          {0, 1},
	apiListOffsets:     {0, 0},
	apiInitWriter:      {0, 0},
	apiCreatePartition: {0, 0},
	apiDropPartition:   {0, 0},
	apiAuthenticate:    {0, 0},
}

// Fluss 1.0 wire: routing bucket count. The first versions whose per-bucket
// write items carry routing_bucket_count and original_partition_name.
const (
	produceLogRoutingVersion int16 = 1
	putKvRoutingVersion      int16 = 3
)

// speaksRouting reports whether the server negotiated a write version that
// carries routing bucket counts, i.e. is a Fluss 1.0 tablet server. LOOKUP
// kept its 0–1 range in 1.0, so lookups use this to decide whether to send
// their routing fields.
func (c *conn) speaksRouting() bool {
	return c.versions[apiProduceLog] >= produceLogRoutingVersion || c.versions[apiPutKv] >= putKvRoutingVersion
}

// negotiateVersions sends ApiVersions and records the usable version of
// every API both sides know.
func (c *conn) negotiateVersions(ctx context.Context) error {
	req := &pb.ApiVersionsRequest{
		ClientSoftwareName:    proto.String(c.cfg.clientName),
		ClientSoftwareVersion: proto.String(c.cfg.clientVersion),
	}
	var resp pb.ApiVersionsResponse
	if err := c.callVersion(ctx, apiVersions, 0, req, &resp, 0); err != nil {
		return fmt.Errorf("api_versions: %w", err)
	}
	c.versions = negotiate(resp.GetApiVersions())
	c.serverType = resp.GetServerType()
	return nil
}

// negotiate computes the version to use per API key. Keys the server lists
// with no overlapping version, and keys it does not list, are left out.
func negotiate(server []*pb.PbApiVersion) map[int16]int16 {
	out := make(map[int16]int16, len(server))
	for _, sv := range server {
		key := int16(sv.GetApiKey())
		cv, ok := clientVersions[key]
		if !ok || int32(key) != sv.GetApiKey() {
			continue
		}
		lo := max(int32(cv[0]), sv.GetMinVersion())
		hi := min(int32(cv[1]), sv.GetMaxVersion())
		if lo > hi {
			continue
		}
		out[key] = int16(hi)
	}
	return out
}
