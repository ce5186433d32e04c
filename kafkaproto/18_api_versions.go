package kafkaproto

// ApiVersions, key 18, versions 0-4.
//
// The table below is everything the gateway advertises (what the producer
// clients ask for and need) and is the only list of keys the connection
// dispatches; a test checks that both agree. Deliberate quirks, each needed by a real client:
//   - Produce is advertised from v0 but served from v3: librdkafka < 2.11.1
//     drops gzip/snappy/lz4 unless Produce min is 0 (KAFKA-18659); v0-v2 get
//     UNSUPPORTED_VERSION per partition. Max 12: v13 names topics by id.
//   - Fetch 4-12 and FindCoordinator 0-6 are advertised for librdkafka's
//     feature detection only (MsgVer2 needs Fetch >= 4, ZSTD Fetch >= 10, LZ4
//     FindCoordinator 0) and answered with non-retriable errors.
//   - InitProducerId from v0: librdkafka < 2.11.1 enables idempotence only if
//     the range includes 0.
//   - SaslHandshake/SaslAuthenticate only when SASL is configured.
//   - AddPartitionsToTxn, AddOffsetsToTxn and EndTxn 0-3 only while the
//     backend serves transactions (transactions.go); no transaction.version
//     feature is advertised, so Kafka 4 clients keep to the classic
//     protocol. DescribeProducers 0, DescribeTransactions 0 and
//     ListTransactions 0-1 also need a TransactionsViewer
//     (65_describe_transactions.go).
//   - Telemetry (71/72) is not advertised, so clients skip it quietly.
//
// An ApiVersions request newer than v4 is answered, unparsed, with the v0
// layout, UNSUPPORTED_VERSION and our ApiVersions range (KIP-511); the
// response header is always v0 for key 18.

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiRange is one advertised API.
type apiRange struct {
	key      int16
	min, max int16
	name     string
	saslOnly bool
	txnOnly  bool // advertised while transactions are served
	txnView  bool // and only with a TransactionsViewer
}

// The API keys this package knows.
const (
	keyProduce          int16 = 0
	keyFetch            int16 = 1
	keyMetadata         int16 = 3
	keyFindCoordinator  int16 = 10
	keySASLHandshake    int16 = 17
	keyApiVersions      int16 = 18
	keyInitProducerID   int16 = 22
	keyAddPartitionsTxn int16 = 24
	keyAddOffsetsToTxn  int16 = 25
	keyEndTxn           int16 = 26
	keyDescribeProds    int16 = 61
	keyDescribeTxns     int16 = 65
	keyListTxns         int16 = 66
	keySASLAuthenticate int16 = 36
)

// minServedProduce is the first Produce version actually served.
const minServedProduce = 3

// maxApiVersions is the newest ApiVersions version parsed.
const maxApiVersions = 4

// advertisedAPIs is the ApiVersions table, in key order.
var advertisedAPIs = []apiRange{
	{key: keyProduce, min: 0, max: 12, name: "produce"},
	{key: keyFetch, min: 4, max: 12, name: "fetch"},
	{key: keyMetadata, min: 0, max: 12, name: "metadata"},
	{key: keyFindCoordinator, min: 0, max: 6, name: "find_coordinator"},
	{key: keySASLHandshake, min: 0, max: 1, name: "sasl_handshake", saslOnly: true},
	{key: keyApiVersions, min: 0, max: maxApiVersions, name: "api_versions"},
	{key: keyInitProducerID, min: 0, max: 5, name: "init_producer_id"},
	{key: keyAddPartitionsTxn, min: 0, max: 3, name: "add_partitions_to_txn", txnOnly: true},
	{key: keyAddOffsetsToTxn, min: 0, max: 3, name: "add_offsets_to_txn", txnOnly: true},
	{key: keyEndTxn, min: 0, max: 3, name: "end_txn", txnOnly: true},
	{key: keyDescribeProds, min: 0, max: 0, name: "describe_producers", txnOnly: true, txnView: true},
	{key: keyDescribeTxns, min: 0, max: 0, name: "describe_transactions", txnOnly: true, txnView: true},
	{key: keyListTxns, min: 0, max: 1, name: "list_transactions", txnOnly: true, txnView: true},
	{key: keySASLAuthenticate, min: 0, max: 2, name: "sasl_authenticate", saslOnly: true},
}

// handles reports whether key is one this server answers: SASL keys need
// SASL; transaction keys are answered (refused) even while transactions
// are not served, since a reload may have turned them off under a client.
func (s *Server) handles(key int16) bool {
	for _, a := range advertisedAPIs {
		if a.key == key {
			return !a.saslOnly || s.sasl != nil
		}
	}
	return false
}

// advertises reports whether a is in this server's ApiVersions now.
func (s *Server) advertises(a apiRange) bool {
	return (!a.saslOnly || s.sasl != nil) && (!a.txnOnly || s.transactions() != nil) && (!a.txnView || s.txnViewer() != nil)
}

// apiName is the metric label of a key.
func apiName(key int16) string {
	for _, a := range advertisedAPIs {
		if a.key == key {
			return a.name
		}
	}
	return "unknown"
}

// clientSoftwarePattern is what Kafka accepts for ClientSoftwareName/Version
// (ApiVersionsRequest.isValid).
var clientSoftwarePattern = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func (s *Server) apiVersionsResponse(version int16, errCode int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = version
	resp.ErrorCode = errCode
	for _, a := range advertisedAPIs {
		if !s.advertises(a) {
			continue
		}
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.min, a.max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}

// handleApiVersions answers a parsed ApiVersions request (v0-v4).
func (s *Server) handleApiVersions(req *kmsg.ApiVersionsRequest) *kmsg.ApiVersionsResponse {
	if req.Version >= 3 && (!clientSoftwarePattern.MatchString(req.ClientSoftwareName) ||
		!clientSoftwarePattern.MatchString(req.ClientSoftwareVersion)) {
		return s.apiVersionsResponse(req.Version, ErrInvalidRequest.Code)
	}
	return s.apiVersionsResponse(req.Version, 0)
}

// unsupportedApiVersions answers an ApiVersions request newer than ours:
// v0 layout, UNSUPPORTED_VERSION and only our ApiVersions range (KIP-511).
func unsupportedApiVersions() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = ErrUnsupportedVersion.Code
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey, k.MinVersion, k.MaxVersion = keyApiVersions, 0, maxApiVersions
	resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{k}
	return resp
}
