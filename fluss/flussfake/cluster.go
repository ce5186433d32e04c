package flussfake

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss"
	"github.com/fluss-kafka/gateway/fluss/internal/frame"
	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// API keys served.
const (
	APIVersions     int16 = 1000
	GetTableInfo    int16 = 1007
	ListPartitions  int16 = 1009
	GetMetadata     int16 = 1012
	ProduceLog      int16 = 1014
	PutKv           int16 = 1016
	Lookup          int16 = 1017
	ListOffsets     int16 = 1021
	InitWriter      int16 = 1026
	CreatePartition int16 = 1036
)

// CoordinatorID is the node id of the fake coordinator.
const CoordinatorID int32 = 100

// Opt configures a Cluster.
type Opt func(*options)

type options struct {
	tabletServers int
	logger        *slog.Logger
	v10           bool
}

// NumTabletServers sets the number of tablet servers (default 1); their ids
// are 0..n-1.
func NumTabletServers(n int) Opt { return func(o *options) { o.tabletServers = n } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Opt { return func(o *options) { o.logger = l } }

// Request is one request as a Control hook sees it.
type Request struct {
	// Server is the node id of the server that received it.
	Server int32
	frame.RequestHeader
	// Msg is the decoded request (*pb.ProduceLogRequest, ...).
	Msg proto.Message
}

// ProduceTable returns the table id of a ProduceLog or PutKv request, or -1.
func (r *Request) ProduceTable() int64 {
	switch m := r.Msg.(type) {
	case *pb.ProduceLogRequest:
		return m.GetTableId()
	case *pb.PutKvRequest:
		return m.GetTableId()
	}
	return -1
}

// Response is a Control hook's answer: Msg for a success, or Err (an
// error code, sent as ERROR_RESPONSE).
type Response struct {
	Msg     proto.Message
	ErrCode int32
	ErrMsg  string
}

// Control sees a request before the built-in handler. Returning handled
// answers it with resp; otherwise the built-in handler runs.
type Control func(req *Request) (resp Response, handled bool)

// Cluster is a fake Fluss cluster.
type Cluster struct {
	o       options
	log     *slog.Logger
	coord   *server
	tablets []*server

	mu       sync.Mutex
	tables   map[int64]*table
	byPath   map[fluss.TablePath]*table
	nextID   int64
	nextPart int64
	controls map[int]Control
	nextCtl  int
	holds    map[int64]*Hold
	failures map[bucketKey][]int32
	pressure map[bucketKey]float32
	writes   []Write

	writerID atomic.Int64
	die      chan struct{}
	closed   atomic.Bool
	wg       sync.WaitGroup
}

type bucketKey struct {
	table     int64
	partition int64
	bucket    int32
}

type table struct {
	id      int64
	path    fluss.TablePath
	desc    fluss.TableDescriptor
	json    []byte
	leaders []int32 // non-partitioned tables only
	logs    map[bucketKey]*bucketLog
	// partitions of a partitioned table, by id and by name
	parts      map[int64]*partition
	partByName map[string]*partition
	// strict: writes and lookups must carry the right routing bucket count
	// (after a rescale); bucketEpoch counts rescales
	strict      bool
	bucketEpoch int64
}

type partition struct {
	id      int64
	name    string
	spec    fluss.PartitionSpec
	leaders []int32 // one per bucket: the partition's own bucket count
}

type bucketLog struct {
	end     int64
	writers map[int64]*writerState
}

type writerState struct {
	lastSeq int32
	recent  []recentBatch // last 5
}

type recentBatch struct {
	seq  int32
	base int64
}

type server struct {
	c           *Cluster
	id          int32
	coordinator bool
	ln          net.Listener
	conns       atomic.Int64
	mu          sync.Mutex
	open        map[net.Conn]struct{}
	stopped     bool
}

// NewCluster starts a coordinator and the tablet servers on 127.0.0.1:0.
func NewCluster(opts ...Opt) (*Cluster, error) {
	o := options{tabletServers: 1}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	if o.tabletServers < 1 {
		return nil, fmt.Errorf("flussfake: %d tablet servers", o.tabletServers)
	}
	c := &Cluster{
		o:        o,
		log:      o.logger,
		tables:   make(map[int64]*table),
		byPath:   make(map[fluss.TablePath]*table),
		nextID:   1,
		nextPart: 1000,
		controls: make(map[int]Control),
		holds:    make(map[int64]*Hold),
		failures: make(map[bucketKey][]int32),
		pressure: make(map[bucketKey]float32),
		die:      make(chan struct{}),
	}
	var err error
	if c.coord, err = c.listen(CoordinatorID, true); err != nil {
		return nil, err
	}
	for i := range o.tabletServers {
		s, err := c.listen(int32(i), false)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.tablets = append(c.tablets, s)
	}
	for _, s := range append([]*server{c.coord}, c.tablets...) {
		c.wg.Add(1)
		go s.accept()
	}
	return c, nil
}

func (c *Cluster) listen(id int32, coordinator bool) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("flussfake: listen: %w", err)
	}
	return &server{c: c, id: id, coordinator: coordinator, ln: ln, open: make(map[net.Conn]struct{})}, nil
}

// Bootstrap returns the coordinator's address.
func (c *Cluster) Bootstrap() string { return c.coord.ln.Addr().String() }

// ListenAddrs returns the coordinator's address, then the tablet servers'.
func (c *Cluster) ListenAddrs() []string {
	out := []string{c.coord.ln.Addr().String()}
	for _, s := range c.tablets {
		out = append(out, s.ln.Addr().String())
	}
	return out
}

// Connections returns how many connections server id (a tablet server id or
// CoordinatorID) has accepted.
func (c *Cluster) Connections(id int32) int {
	if id == CoordinatorID {
		return int(c.coord.conns.Load())
	}
	return int(c.tablets[id].conns.Load())
}

// Close stops every listener and connection and waits for the goroutines.
// Held responses are dropped. Idempotent.
func (c *Cluster) Close() {
	if c.closed.Swap(true) {
		return
	}
	close(c.die)
	for _, s := range append([]*server{c.coord}, c.tablets...) {
		if s == nil {
			continue
		}
		_ = s.ln.Close()
		s.mu.Lock()
		for cn := range s.open {
			_ = cn.Close()
		}
		s.mu.Unlock()
	}
	c.wg.Wait()
}

// AddTable creates a table; bucket b is led by tablet server b mod N. It
// returns the table id.
func (c *Cluster) AddTable(path fluss.TablePath, d fluss.TableDescriptor) (int64, error) {
	if d.BucketCount <= 0 {
		d.BucketCount = 1
	}
	js, err := fluss.AppendTableJSON(nil, &d)
	if err != nil {
		return 0, fmt.Errorf("flussfake: table json: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byPath[path]; ok {
		return 0, fmt.Errorf("flussfake: table %s exists", path)
	}
	t := &table{id: c.nextID, path: path, desc: d, json: js, logs: make(map[bucketKey]*bucketLog),
		parts: make(map[int64]*partition), partByName: make(map[string]*partition)}
	c.nextID++
	if !d.IsPartitioned() {
		t.leaders = c.spread(int32(d.BucketCount))
	}
	c.tables[t.id] = t
	c.byPath[path] = t
	return t.id, nil
}

// DropTable removes a table; AddTable may then create it again, with a new
// id, as a real re-create does.
func (c *Cluster) DropTable(path fluss.TablePath) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.byPath[path]; t != nil {
		delete(c.tables, t.id)
		delete(c.byPath, path)
	}
}

// spread returns the leaders of n buckets: bucket b on tablet server b mod N.
func (c *Cluster) spread(n int32) []int32 {
	out := make([]int32, n)
	for b := range out {
		out[b] = int32(b % len(c.tablets))
	}
	return out
}

// SetLeader moves a bucket's leadership; the old leader answers
// NOT_LEADER_OR_FOLLOWER from now on.
func (c *Cluster) SetLeader(tableID int64, bucket, server int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tables[tableID].leaders[bucket] = server
}

// SetPartitionLeader moves the leadership of a bucket of a partition.
func (c *Cluster) SetPartitionLeader(tableID, partitionID int64, bucket, server int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tables[tableID].parts[partitionID].leaders[bucket] = server
}

// Control installs a hook that sees every request first; the returned func
// removes it.
func (c *Cluster) Control(fn Control) (remove func()) {
	c.mu.Lock()
	id := c.nextCtl
	c.nextCtl++
	c.controls[id] = fn
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.controls, id)
		c.mu.Unlock()
	}
}

// FailBucket makes the next len(codes) writes to a bucket fail with the
// given error codes, in order (partition: fluss.NoPartition if none).
func (c *Cluster) FailBucket(tableID, partitionID int64, bucket int32, codes ...int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := bucketKey{tableID, partitionID, bucket}
	c.failures[k] = append(c.failures[k], codes...)
}

// LogEndOffset returns a bucket's log end offset (records appended).
func (c *Cluster) LogEndOffset(tableID, partitionID int64, bucket int32) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tables[tableID]
	if t == nil {
		return -1
	}
	if l := t.logs[bucketKey{tableID, partitionID, bucket}]; l != nil {
		return l.end
	}
	return 0
}

// Hold withholds the responses of one table's writes.
type Hold struct {
	arrived chan *Request
	release chan struct{}
	once    sync.Once
}

// Arrived delivers each held request when it reaches the server (buffered;
// reading it is optional).
func (h *Hold) Arrived() <-chan *Request { return h.arrived }

// Release lets every held and later request of the table be answered, and
// removes the hold. Idempotent.
func (h *Hold) Release() { h.once.Do(func() { close(h.release) }) }

// HoldTable withholds the responses of ProduceLog/PutKv requests for a table
// until the returned Hold is released. The request is applied only on
// release.
func (c *Cluster) HoldTable(tableID int64) *Hold {
	h := &Hold{arrived: make(chan *Request, 64), release: make(chan struct{})}
	c.mu.Lock()
	c.holds[tableID] = h
	c.mu.Unlock()
	return h
}

func (s *server) accept() {
	defer s.c.wg.Done()
	for {
		cn, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.c.closed.Load() || s.stopped {
			s.mu.Unlock()
			_ = cn.Close()
			return
		}
		s.open[cn] = struct{}{}
		s.mu.Unlock()
		s.conns.Add(1)
		s.c.wg.Add(1)
		go s.serve(cn)
	}
}

// serve runs one connection: this goroutine reads, a writer goroutine
// writes, each request is handled in its own goroutine.
func (s *server) serve(cn net.Conn) {
	defer s.c.wg.Done()
	out := make(chan []byte, 16)
	done := make(chan struct{})
	var reqs sync.WaitGroup
	s.c.wg.Add(1)
	go func() { // writer
		defer s.c.wg.Done()
		for {
			select {
			case b := <-out:
				if _, err := cn.Write(b); err != nil {
					_ = cn.Close()
					return
				}
			case <-done:
				return
			}
		}
	}()
	defer func() {
		_ = cn.Close()
		reqs.Wait()
		close(done)
		s.mu.Lock()
		delete(s.open, cn)
		s.mu.Unlock()
	}()
	r := bufio.NewReader(cn)
	for {
		body, err := frame.ReadFrame(r, frame.DefaultMaxFrameSize)
		if err != nil {
			return
		}
		req, err := frame.ParseRequest(body)
		if err != nil {
			s.c.log.Warn("flussfake: bad frame", slog.Any("err", err))
			return
		}
		payload := append([]byte(nil), req.Payload...)
		reqs.Add(1)
		go func() {
			defer reqs.Done()
			resp, ok := s.handle(req.RequestHeader, payload)
			if !ok {
				return // dropped (cluster closing)
			}
			select {
			case out <- resp:
			case <-done:
			case <-s.c.die:
			}
		}()
	}
}

func errorFrame(id int32, code int32, msg string) []byte {
	b, _ := frame.AppendResponseMessage(nil, frame.ErrorResponse, id,
		&pb.ErrorResponse{ErrorCode: proto.Int32(code), ErrorMessage: proto.String(msg)})
	return b
}

// handle decodes, runs controls and the handler, and returns the response
// frame; ok is false when the response must not be sent.
func (s *server) handle(h frame.RequestHeader, payload []byte) ([]byte, bool) {
	var msg proto.Message
	switch h.APIKey {
	case APIVersions:
		msg = &pb.ApiVersionsRequest{}
	case GetTableInfo:
		msg = &pb.GetTableInfoRequest{}
	case GetMetadata:
		msg = &pb.MetadataRequest{}
	case ProduceLog:
		msg = &pb.ProduceLogRequest{}
	case PutKv:
		msg = &pb.PutKvRequest{}
	case ListOffsets:
		msg = &pb.ListOffsetsRequest{}
	case InitWriter:
		msg = &pb.InitWriterRequest{}
	case ListPartitions:
		msg = &pb.ListPartitionInfosRequest{}
	case CreatePartition:
		msg = &pb.CreatePartitionRequest{}
	case Lookup:
		msg = &pb.LookupRequest{}
	}
	if msg == nil || !slices.Contains(s.served(), h.APIKey) {
		// A real server never answers an API it does not serve; answer
		// with an error so tests fail fast instead of timing out.
		return errorFrame(h.RequestID, 2, fmt.Sprintf("flussfake: api %d not served", h.APIKey)), true
	}
	if err := proto.Unmarshal(payload, msg); err != nil {
		return errorFrame(h.RequestID, 3, "flussfake: "+err.Error()), true
	}
	req := &Request{Server: s.id, RequestHeader: h, Msg: msg}

	s.c.mu.Lock()
	controls := make([]Control, 0, len(s.c.controls))
	for _, fn := range s.c.controls {
		controls = append(controls, fn)
	}
	var hold *Hold
	if t := req.ProduceTable(); t >= 0 {
		hold = s.c.holds[t]
	}
	s.c.mu.Unlock()
	for _, fn := range controls {
		if resp, handled := fn(req); handled {
			return s.encode(h.RequestID, resp), true
		}
	}
	if hold != nil {
		select {
		case hold.arrived <- req:
		default:
		}
		select {
		case <-hold.release:
			s.c.mu.Lock()
			if s.c.holds[req.ProduceTable()] == hold {
				delete(s.c.holds, req.ProduceTable())
			}
			s.c.mu.Unlock()
		case <-s.c.die:
			return nil, false
		}
	}
	var resp Response
	switch m := msg.(type) {
	case *pb.ApiVersionsRequest:
		resp = s.apiVersions()
	case *pb.MetadataRequest:
		resp = s.c.metadata(m)
	case *pb.GetTableInfoRequest:
		resp = s.c.tableInfo(m)
	case *pb.InitWriterRequest:
		resp = Response{Msg: &pb.InitWriterResponse{WriterId: proto.Int64(s.c.writerID.Add(1) - 1)}}
	case *pb.ProduceLogRequest:
		resp = s.c.produceLog(s.id, h.APIVersion, m)
	case *pb.PutKvRequest:
		resp = s.c.putKv(s.id, h.APIVersion, m)
	case *pb.ListOffsetsRequest:
		resp = s.c.listOffsets(s.id, m)
	case *pb.ListPartitionInfosRequest:
		resp = s.c.listPartitions(m)
	case *pb.CreatePartitionRequest:
		resp = s.c.createPartition(m)
	case *pb.LookupRequest:
		resp = s.c.lookup(s.id, h.APIVersion, m)
	}
	return s.encode(h.RequestID, resp), true
}

func (s *server) encode(id int32, resp Response) []byte {
	if resp.ErrCode != 0 || resp.Msg == nil {
		code := resp.ErrCode
		if code == 0 {
			code = -1
		}
		return errorFrame(id, code, resp.ErrMsg)
	}
	b, err := frame.AppendResponseMessage(nil, frame.SuccessResponse, id, resp.Msg)
	if err != nil {
		return errorFrame(id, -1, err.Error())
	}
	return b
}

// maxVersions are the highest versions a fake server offers per API,
// as 0.9.1-incubating and 1.0.0 tablet servers and coordinators do
// (ApiKeys of each release); every other API is 0–0. Read-only.
var (
	maxVersions091 = map[int16]int32{PutKv: 1, Lookup: 1}
	maxVersions10  = map[int16]int32{ProduceLog: 1, PutKv: 3, Lookup: 1}
)

// served returns the API keys the server's role serves.
func (s *server) served() []int16 {
	keys := []int16{APIVersions, GetTableInfo, ListPartitions, GetMetadata}
	if s.coordinator {
		return append(keys, CreatePartition)
	}
	return append(keys, ProduceLog, PutKv, Lookup, ListOffsets, InitWriter)
}

func (s *server) apiVersions() Response {
	keys := s.served()
	serverType := int32(1)
	if !s.coordinator {
		serverType = 2
	}
	maxV := maxVersions091
	if s.c.o.v10 {
		maxV = maxVersions10
	}
	resp := &pb.ApiVersionsResponse{ServerType: proto.Int32(serverType)}
	for _, k := range keys {
		resp.ApiVersions = append(resp.ApiVersions, &pb.PbApiVersion{
			ApiKey: proto.Int32(int32(k)), MinVersion: proto.Int32(0), MaxVersion: proto.Int32(maxV[k]),
		})
	}
	return Response{Msg: resp}
}

func (c *Cluster) node(s *server) *pb.PbServerNode {
	host, port, _ := net.SplitHostPort(s.ln.Addr().String())
	p, _ := strconv.Atoi(port)
	n := &pb.PbServerNode{NodeId: proto.Int32(s.id), Host: proto.String(host), Port: proto.Int32(int32(p))}
	if c.o.v10 {
		n.Rack = proto.String(fmt.Sprintf("rack-%d", s.id))
	}
	return n
}

// bucketMetadata describes buckets led by leaders.
func bucketMetadata(leaders []int32) []*pb.PbBucketMetadata {
	out := make([]*pb.PbBucketMetadata, len(leaders))
	for b, l := range leaders {
		out[b] = &pb.PbBucketMetadata{
			BucketId: proto.Int32(int32(b)), LeaderId: proto.Int32(l), ReplicaId: []int32{l}, LeaderEpoch: proto.Int32(0),
		}
	}
	return out
}

func (c *Cluster) metadata(m *pb.MetadataRequest) Response {
	resp := &pb.MetadataResponse{CoordinatorServer: c.node(c.coord)}
	for _, s := range c.tablets {
		resp.TabletServers = append(resp.TabletServers, c.node(s))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var tables []*table
	for _, p := range m.GetTablePath() {
		t := c.byPath[fluss.TablePath{Database: p.GetDatabaseName(), Table: p.GetTableName()}]
		if t == nil {
			return Response{ErrCode: 7, ErrMsg: "table " + p.GetDatabaseName() + "." + p.GetTableName() + " does not exist"}
		}
		tables = append(tables, t)
		tm := &pb.PbTableMetadata{
			TablePath:      &pb.PbTablePath{DatabaseName: proto.String(t.path.Database), TableName: proto.String(t.path.Table)},
			TableId:        proto.Int64(t.id),
			SchemaId:       proto.Int32(1),
			TableJson:      t.json,
			CreatedTime:    proto.Int64(0),
			ModifiedTime:   proto.Int64(0),
			BucketMetadata: bucketMetadata(t.leaders),
		}
		if c.o.v10 {
			tm.RemoteDataDir = proto.String("/remote/" + t.path.Database + "/" + t.path.Table)
			tm.BucketCountEpoch = proto.Int64(t.bucketEpoch)
		}
		resp.TableMetadata = append(resp.TableMetadata, tm)
	}
	var parts []*partition
	var owners []*table
	for _, pp := range m.GetPartitionsPath() {
		t := c.byPath[fluss.TablePath{Database: pp.GetDatabaseName(), Table: pp.GetTableName()}]
		if t == nil {
			return Response{ErrCode: 7, ErrMsg: "table " + pp.GetDatabaseName() + "." + pp.GetTableName() + " does not exist"}
		}
		p := t.partByName[pp.GetPartitionName()]
		if p == nil {
			return Response{ErrCode: 36, ErrMsg: "partition " + pp.GetPartitionName() + " does not exist"}
		}
		parts, owners = append(parts, p), append(owners, t)
	}
	for _, id := range m.GetPartitionsId() {
		// as the real server: the partition's table must be listed too
		var found bool
		for _, t := range tables {
			if p := t.parts[id]; p != nil {
				parts, owners, found = append(parts, p), append(owners, t), true
				break
			}
		}
		if !found {
			return Response{ErrCode: 36, ErrMsg: fmt.Sprintf("partition id %d does not exist", id)}
		}
	}
	for i, p := range parts {
		pm := &pb.PbPartitionMetadata{
			TableId: proto.Int64(owners[i].id), PartitionName: proto.String(p.name), PartitionId: proto.Int64(p.id),
			BucketMetadata: bucketMetadata(p.leaders),
		}
		if c.o.v10 {
			pm.BucketCount = proto.Int32(int32(len(p.leaders)))
		}
		resp.PartitionMetadata = append(resp.PartitionMetadata, pm)
	}
	return Response{Msg: resp}
}

func (c *Cluster) tableInfo(m *pb.GetTableInfoRequest) Response {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := m.GetTablePath()
	t := c.byPath[fluss.TablePath{Database: p.GetDatabaseName(), Table: p.GetTableName()}]
	if t == nil {
		return Response{ErrCode: 7, ErrMsg: "table does not exist"}
	}
	return Response{Msg: &pb.GetTableInfoResponse{
		TableId: proto.Int64(t.id), SchemaId: proto.Int32(1), TableJson: t.json,
		CreatedTime: proto.Int64(0), ModifiedTime: proto.Int64(0),
	}}
}

// bucketWrite is one bucket of a ProduceLog/PutKv/Lookup request.
type bucketWrite struct {
	partition *int64
	bucket    int32
	records   []byte
	routing   *int32  // routing_bucket_count
	partName  *string // original_partition_name
}

type bucketOutcome struct {
	code     int32
	msg      string
	offset   int64
	pressure float32
}

// leadersOf returns the bucket leaders of a table (pid NoPartition) or of
// one of its partitions; nil when there is no such table or partition.
func (t *table) leadersOf(pid int64) []int32 {
	if t == nil {
		return nil
	}
	if pid == fluss.NoPartition {
		return t.leaders
	}
	if p := t.parts[pid]; p != nil {
		return p.leaders
	}
	return nil
}

// route checks one bucket item of a request: the table, partition and
// bucket exist, server leads it, and (Fluss 1.0 wire: routing bucket count)
// a routing count that is present matches the partition's bucket count, and
// is present at all when the table was rescaled. Code 0 = routed.
func (c *Cluster) route(server int32, t *table, pid int64, r bucketWrite) (int32, string) {
	leaders := t.leadersOf(pid)
	switch {
	case r.bucket < 0 || int(r.bucket) >= len(leaders):
		return 21, "unknown table or bucket"
	case leaders[r.bucket] != server:
		return 12, "not the leader"
	}
	n := int32(len(leaders))
	switch {
	case c.o.v10 && r.routing != nil && *r.routing != n:
		return 74, fmt.Sprintf("routing bucket count %d does not match the partition's bucket count %d; refresh partition metadata and rebuild the request", *r.routing, n)
	case t.strict && r.routing == nil:
		return 74, fmt.Sprintf("no routing bucket count, the partition has %d buckets after a rescale; refresh partition metadata and rebuild the request", n)
	}
	return 0, ""
}

func (c *Cluster) write(server int32, apiKey, version int16, tableID int64, reqs []bucketWrite) []bucketOutcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	kv := apiKey == PutKv
	out := make([]bucketOutcome, len(reqs))
	t := c.tables[tableID]
	for i, r := range reqs {
		pid := fluss.NoPartition
		if r.partition != nil {
			pid = *r.partition
		}
		k := bucketKey{tableID, pid, r.bucket}
		out[i] = c.writeBucket(server, version, t, k, r, kv)
		w := Write{
			Server: server, APIKey: apiKey, Version: version, TableID: tableID, PartitionID: pid, Bucket: r.bucket,
			HasRoutingBucketCount: r.routing != nil, RoutingBucketCount: ptrValue(r.routing),
			PartitionName: ptrValue(r.partName), ErrCode: out[i].code,
		}
		c.writes = append(c.writes, w)
	}
	return out
}

func (c *Cluster) writeBucket(server int32, version int16, t *table, k bucketKey, r bucketWrite, kv bool) bucketOutcome {
	if t == nil {
		return bucketOutcome{code: 21, msg: "unknown table or bucket"}
	}
	if code, msg := c.route(server, t, k.partition, r); code != 0 {
		return bucketOutcome{code: code, msg: msg}
	}
	var pressure float32
	if kv && version >= 2 {
		pressure = c.pressure[k] // PUT_KV v2+ answers carry it
	}
	if f := c.failures[k]; len(f) > 0 {
		c.failures[k] = f[1:]
		code := f[0]
		if kv && code == 72 && version < 2 {
			code = 11 // older clients get KV_STORAGE_EXCEPTION, as the server does
		}
		return bucketOutcome{code: code, msg: "injected by flussfake", pressure: pressure}
	}
	o := t.append(k, r.records, kv)
	if o.code == 0 {
		o.pressure = pressure
	}
	return o
}

func ptrValue[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// append applies the batches of one bucket with Fluss's idempotence rules.
func (t *table) append(k bucketKey, records []byte, kv bool) bucketOutcome {
	l := t.logs[k]
	if l == nil {
		l = &bucketLog{writers: make(map[int64]*writerState)}
		t.logs[k] = l
	}
	base := int64(-1)
	for len(records) > 0 {
		n, writerID, seq, count, err := parseBatch(records, kv)
		if err != nil {
			return bucketOutcome{code: 3, msg: err.Error()}
		}
		records = records[n:]
		if writerID >= 0 {
			w := l.writers[writerID]
			if w == nil {
				w = &writerState{lastSeq: -1}
				l.writers[writerID] = w
			}
			dup := false
			for _, r := range w.recent {
				if r.seq == seq {
					dup = true
					if base < 0 {
						base = r.base
					}
				}
			}
			if dup {
				continue
			}
			if seq != w.lastSeq+1 {
				// The tablet server's wording (clients read the current sequence from it).
				return bucketOutcome{code: 31, msg: fmt.Sprintf("Out of order batch sequence for writer %d at offset %d in table-bucket TableBucket{tableId=%d, partitionId=%d, bucket=%d} : %d (incoming batch seq.), %d (current batch seq.)",
					writerID, l.end+int64(count)-1, k.table, k.partition, k.bucket, seq, w.lastSeq)}
			}
			w.lastSeq = seq
			w.recent = append(w.recent, recentBatch{seq, l.end})
			if len(w.recent) > 5 {
				w.recent = w.recent[1:]
			}
		}
		if base < 0 {
			base = l.end
		}
		l.end += int64(count)
	}
	if kv {
		return bucketOutcome{offset: l.end}
	}
	return bucketOutcome{offset: base}
}

// parseBatch reads one LogRecordBatch (V0 header) or KvRecordBatch header.
func parseBatch(b []byte, kv bool) (n int, writerID int64, seq, count int32, err error) {
	le := binary.LittleEndian
	if kv {
		if len(b) < 28 {
			return 0, 0, 0, 0, errors.New("kv batch shorter than its header")
		}
		n = 4 + int(int32(le.Uint32(b)))
		if n < 28 || n > len(b) {
			return 0, 0, 0, 0, fmt.Errorf("kv batch length %d of %d bytes", n, len(b))
		}
		return n, int64(le.Uint64(b[12:])), int32(le.Uint32(b[20:])), int32(le.Uint32(b[24:])), nil
	}
	if len(b) < 48 {
		return 0, 0, 0, 0, errors.New("log batch shorter than its header")
	}
	n = 12 + int(int32(le.Uint32(b[8:])))
	if n < 48 || n > len(b) {
		return 0, 0, 0, 0, fmt.Errorf("log batch length %d of %d bytes", n, len(b))
	}
	return n, int64(le.Uint64(b[32:])), int32(le.Uint32(b[40:])), int32(le.Uint32(b[44:])), nil
}

func (c *Cluster) produceLog(server int32, version int16, m *pb.ProduceLogRequest) Response {
	reqs := make([]bucketWrite, len(m.GetBucketsReq()))
	for i, b := range m.GetBucketsReq() {
		reqs[i] = bucketWrite{b.PartitionId, b.GetBucketId(), b.GetRecords(), b.RoutingBucketCount, b.OriginalPartitionName}
	}
	outs := c.write(server, ProduceLog, version, m.GetTableId(), reqs)
	resp := &pb.ProduceLogResponse{}
	for i, o := range outs {
		r := &pb.PbProduceLogRespForBucket{PartitionId: reqs[i].partition, BucketId: proto.Int32(reqs[i].bucket)}
		if o.code != 0 {
			r.ErrorCode, r.ErrorMessage = proto.Int32(o.code), proto.String(o.msg)
		} else {
			r.BaseOffset = proto.Int64(o.offset)
		}
		resp.BucketsResp = append(resp.BucketsResp, r)
	}
	return Response{Msg: resp}
}

func (c *Cluster) putKv(server int32, version int16, m *pb.PutKvRequest) Response {
	reqs := make([]bucketWrite, len(m.GetBucketsReq()))
	for i, b := range m.GetBucketsReq() {
		reqs[i] = bucketWrite{b.PartitionId, b.GetBucketId(), b.GetRecords(), b.RoutingBucketCount, b.OriginalPartitionName}
	}
	outs := c.write(server, PutKv, version, m.GetTableId(), reqs)
	resp := &pb.PutKvResponse{}
	for i, o := range outs {
		r := &pb.PbPutKvRespForBucket{PartitionId: reqs[i].partition, BucketId: proto.Int32(reqs[i].bucket)}
		if o.pressure != 0 {
			r.Pressure = proto.Float32(o.pressure)
		}
		if o.code != 0 {
			r.ErrorCode, r.ErrorMessage = proto.Int32(o.code), proto.String(o.msg)
		} else {
			r.LogEndOffset = proto.Int64(o.offset)
		}
		resp.BucketsResp = append(resp.BucketsResp, r)
	}
	return Response{Msg: resp}
}

func (c *Cluster) listOffsets(server int32, m *pb.ListOffsetsRequest) Response {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := &pb.ListOffsetsResponse{}
	t := c.tables[m.GetTableId()]
	pid := fluss.NoPartition
	if m.PartitionId != nil {
		pid = m.GetPartitionId()
	}
	leaders := t.leadersOf(pid)
	for _, b := range m.GetBucketId() {
		r := &pb.PbListOffsetsRespForBucket{BucketId: proto.Int32(b)}
		switch {
		case b < 0 || int(b) >= len(leaders):
			r.ErrorCode, r.ErrorMessage = proto.Int32(21), proto.String("unknown table or bucket")
		case leaders[b] != server:
			r.ErrorCode, r.ErrorMessage = proto.Int32(12), proto.String("not the leader")
		default:
			off := int64(0)
			if m.GetOffsetType() == 1 {
				if l := t.logs[bucketKey{t.id, pid, b}]; l != nil {
					off = l.end
				}
			}
			r.Offset = proto.Int64(off)
		}
		resp.BucketsResp = append(resp.BucketsResp, r)
	}
	return Response{Msg: resp}
}
