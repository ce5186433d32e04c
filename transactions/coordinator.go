package transactions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fluss-kafka/gateway/accumulator"
	"github.com/fluss-kafka/gateway/answer"
	"github.com/fluss-kafka/gateway/kafkaproto"
	"github.com/fluss-kafka/gateway/mapping"
	"github.com/fluss-kafka/gateway/produce"
)

// Coordinator serves transactional producers for the produce path
// (docs/transactions.md): claims and the ledger decide in the transactions
// table, batches are staged in the staging table, and a commit is applied
// to the routes' tables through the exactly-once path.
type Coordinator struct {
	// path writes a commit's batches through its exactly-once path.
	path    *produce.Path
	claims  *txnClaims
	ledger  *txnLedger
	staging *stagingLog
	log     *slog.Logger
	// maxApplyRecords bounds the records of one batch of an apply.
	maxApplyRecords int
	// maxBytes bounds what one transaction stages on this instance.
	maxBytes int64
	// failpoint is a test's crash point (EnvFailpoint); "" in production.
	failpoint string
	m         *txnMetrics
	// view is the sweeper's list of open transactions (ListTransactions).
	view *txnView
	// writers agrees, between instances applying one commit at once, on
	// the new writer ids of its replays.
	writers *writerAgreement

	mu sync.Mutex // guards added and the refusal log's fields
	// lastRefusal and suppressed rate-limit the refused-batch line.
	lastRefusal time.Time
	suppressed  int
	// added is, per transactional id served here, the partitions its open
	// transaction added on this instance. A produce to a partition not
	// added is INVALID_TXN_STATE when the id's session is here; on an
	// instance that never saw the AddPartitionsToTxn it cannot be told.
	added map[string]*txnSession
}

type txnSession struct {
	producer kafkaproto.TxnProducer
	parts    map[produce.TopicPartition]bool
	staged   int64 // bytes staged here
	// begun: an AddPartitionsToTxn here found or wrote the begin row of
	// transaction n of the claim, so later ones only check that it has no
	// outcome yet (EndTxn checks the claim and the timeout).
	begun    bool
	claim, n int64
	// beganAtMs and stagingOffset are the begin row's (DescribeProducers).
	beganAtMs, stagingOffset int64
}

// EnvFailpoint names a crash point for fault tests: with it set to
// FailpointTxnCommitDecided, the gateway kills itself (SIGKILL) right
// after an EndTxn's commit is decided and before it is applied or
// answered. Never set in production.
const (
	EnvFailpoint              = "FLUSS_GATEWAY_TEST_FAILPOINT"
	FailpointTxnCommitDecided = "txn-commit-decided"
)

// An apply joins a transaction's consecutive batches of a partition into
// one batch of at most maxApplyRecords records and maxApplyBytes bytes of
// keys, values and headers (a staged batch bigger than that goes alone).
// The cut depends only on the staged batches and these constants, so every
// apply of a transaction (a replay after a crash, by any instance of this
// version) cuts the same batches, which the exactly-once path needs to
// recognise them.
const (
	defaultMaxApplyRecords = 10_000
	maxApplyBytes          = 1 << 20
)

// New serves transactional producers on path, their state and
// staged batches in Fluss (src: the gateway's Fluss client), and registers
// their metrics with reg.
func New(path *produce.Path, acc *accumulator.Accumulator, ids produce.WriterIDs, log *slog.Logger, src Source, maxTimeout time.Duration, maxBytes int64, reg prometheus.Registerer) (*Coordinator, error) {
	rows := newTxnTable(src, acc, defaultTxnTable)
	claims := newTxnClaims(rows, ids, maxTimeout, nil)
	t := &Coordinator{
		path:            path,
		claims:          claims,
		ledger:          &txnLedger{claims: claims, rows: rows, now: time.Now},
		staging:         newStagingLog(src, acc, defaultStagingTable),
		log:             log,
		maxApplyRecords: defaultMaxApplyRecords,
		maxBytes:        maxBytes,
		added:           map[string]*txnSession{},
		failpoint:       os.Getenv(EnvFailpoint),
		view:            &txnView{},
		writers:         &writerAgreement{rows: rows, now: time.Now},
	}
	m, err := newTxnMetrics(reg, func() float64 {
		t.mu.Lock()
		defer t.mu.Unlock()
		return float64(len(t.added))
	})
	if err != nil {
		return nil, err
	}
	t.m = m
	return t, nil
}

// TransactionsEnabled implements kafkaproto.Transactions: transactions
// are served once the routes' first load opened the producer-state store,
// and announced while that load is under way (its requests then get
// COORDINATOR_LOAD_IN_PROGRESS; a Produce LEADER_NOT_AVAILABLE, as any):
// a client that connects to an instance still starting must not learn
// that the transactional APIs are missing, which Java's producer takes as
// fatal (UnsupportedVersionException for EndTxn retried on a restarted
// instance).
func (t *Coordinator) TransactionsEnabled() bool {
	return t != nil && (t.path.Current() == nil || t.path.ExactlyOnceUsable())
}

// loading is the error for a transactional request that comes before the
// routes' first load.
func (t *Coordinator) loading() error {
	if t.path.Current() == nil {
		return fmt.Errorf("%w: routes not loaded yet", kafkaproto.ErrCoordinatorLoadInProgress)
	}
	return nil
}

// InitTransaction implements kafkaproto.Transactions: commits of the id's
// current and previous claim that a crash left unapplied are applied, the
// next claim is taken, and the replaced claim's open transaction is
// aborted (or, if its commit got in first, applied) before the answer.
func (t *Coordinator) InitTransaction(ctx context.Context, id string, timeoutMs int32, pid int64, epoch int16) (int64, int16, error) {
	if err := t.loading(); err != nil {
		return -1, -1, err
	}
	cur, err := t.claims.current(ctx, id)
	if err != nil {
		return -1, -1, fmt.Errorf("%w: %w", kafkaproto.ErrCoordinatorLoadInProgress, err)
	}
	if cur != nil {
		for c := max(cur.key.claim-1, 0); c <= cur.key.claim; c++ {
			row := cur
			if c != cur.key.claim {
				if row, err = t.claims.claim(ctx, id, c); err != nil || row == nil {
					return -1, -1, fmt.Errorf("%w: claim %d of %q: %v", kafkaproto.ErrCoordinatorLoadInProgress, c, id, err)
				}
			}
			cm, err := t.ledger.lastCommit(ctx, row)
			if err == nil && cm != nil {
				err = t.applyCommit(ctx, id, row, cm)
			}
			if err != nil {
				return -1, -1, fmt.Errorf("%w: finish an earlier commit of %q: %w", kafkaproto.ErrCoordinatorLoadInProgress, id, err)
			}
		}
	}
	newPID, newEpoch, err := t.claims.init(ctx, id, timeoutMs, pid, epoch)
	if err != nil {
		return -1, -1, err
	}
	if cur != nil && (cur.producerID != newPID || cur.epoch != newEpoch) {
		out, err := t.ledger.settle(ctx, cur)
		if err == nil && out != nil && t.view != nil {
			t.view.ended(txnRef{id, cur.key.claim, out.key.txn / 2}) // the Admin views see it ended at once
		}
		if err == nil && out != nil && out.outcome == outcomeAbort && out.reason == reasonFenced {
			t.m.outcomes.WithLabelValues("fenced").Inc()
			t.log.Info("transaction aborted: a new producer with the same transactional id started", slog.String("transactional_id", id),
				slog.Int64("producer_id", cur.producerID), slog.Int("epoch", int(cur.epoch)))
		}
		if err == nil && out != nil && out.outcome == outcomeCommit {
			var cm *committed
			if cm, err = t.ledger.lastCommit(ctx, cur); err == nil && cm != nil {
				err = t.applyCommit(ctx, id, cur, cm)
			}
		}
		if err != nil {
			// The claim stands; the next InitProducerId applies a commit
			// left here (the loop above), an abort needs nothing more.
			return -1, -1, fmt.Errorf("%w: settle the previous producer of %q: %w", kafkaproto.ErrCoordinatorLoadInProgress, id, err)
		}
	}
	t.mu.Lock()
	delete(t.added, id)
	t.mu.Unlock()
	return newPID, newEpoch, nil
}

// AddPartitions implements kafkaproto.Transactions: the transaction
// begins (its begin row) if it has not, and the partitions are remembered
// here. Every partition's route must write exactly once: a commit is
// applied through that path.
func (t *Coordinator) AddPartitions(ctx context.Context, p kafkaproto.TxnProducer, partitions map[string][]int32) error {
	st := t.path.Current()
	if st == nil {
		return fmt.Errorf("%w: routes not loaded yet", kafkaproto.ErrCoordinatorLoadInProgress)
	}
	for topic := range partitions {
		route, ok := st.Routes.Resolve(topic)
		if !ok {
			return fmt.Errorf("%w: topic %s has no route", kafkaproto.ErrUnknownTopicOrPartition, topic)
		}
		if !t.path.WritesExactlyOnce(route) {
			return fmt.Errorf("%w: route %s of topic %s does not write exactly once (exactly_once: false), which transactions need",
				kafkaproto.ErrTransactionalIDAuthorizationFailed, route.Name(), topic)
		}
	}
	t.mu.Lock()
	sess := t.added[p.TransactionalID]
	begun := sess != nil && sess.producer == p && sess.begun
	var claim, n int64
	if begun {
		claim, n = sess.claim, sess.n
	}
	t.mu.Unlock()
	if begun {
		// Still open, unless an EndTxn on another instance ended it.
		got, err := t.ledger.rows.get(ctx, p.TransactionalID, []txnKey{outcomeKey(claim, n)})
		if err != nil {
			return fmt.Errorf("%w: %w", kafkaproto.ErrCoordinatorLoadInProgress, err)
		}
		if got[0] == nil {
			return t.addParts(p, partitions, claim, n, nil)
		}
	}
	pos, err := t.ledger.begin(ctx, p, partitions, func(ctx context.Context) (int64, error) { return t.staging.end(ctx, p.TransactionalID) })
	if err != nil {
		if errors.Is(err, errTxnTimedOut) {
			t.m.outcomes.WithLabelValues("timeout").Inc()
			t.log.Info("transaction aborted: it passed its timeout", slog.String("transactional_id", p.TransactionalID), slog.Any("err", err))
		}
		return err
	}
	return t.addParts(p, partitions, pos.claim.key.claim, pos.n, pos.begin)
}

// addParts records partitions added to p's transaction n of claim here
// (its begin row exists; begin is it, or nil when the session has it).
func (t *Coordinator) addParts(p kafkaproto.TxnProducer, partitions map[string][]int32, claim, n int64, begin *txnRow) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	sess := t.added[p.TransactionalID]
	if sess == nil || sess.producer != p {
		sess = &txnSession{producer: p}
		t.added[p.TransactionalID] = sess
	}
	if sess.parts == nil || sess.claim != claim || sess.n != n {
		sess.parts, sess.staged = map[produce.TopicPartition]bool{}, 0
	}
	sess.begun, sess.claim, sess.n = true, claim, n
	if begin != nil {
		sess.beganAtMs, sess.stagingOffset = begin.writtenAtMs, begin.stagingOffset
	}
	for topic, ps := range partitions {
		for _, part := range ps {
			sess.parts[produce.TopicPartition{Topic: topic, Partition: part}] = true
		}
	}
	return nil
}

// EndTransaction implements kafkaproto.Transactions: the outcome is
// decided, and a commit is applied before the answer (again, harmlessly,
// when EndTxn is repeated).
func (t *Coordinator) EndTransaction(ctx context.Context, p kafkaproto.TxnProducer, commit bool) error {
	if err := t.loading(); err != nil {
		return err
	}
	defer func() {
		t.mu.Lock()
		if sess := t.added[p.TransactionalID]; sess != nil && sess.producer == p {
			delete(t.added, p.TransactionalID)
		}
		t.mu.Unlock()
	}()
	stagingEnd := func(ctx context.Context) (int64, error) { return t.staging.end(ctx, p.TransactionalID) }
	var out *txnRow
	var pos *txnPosition
	var err error
	t.mu.Lock()
	sess := t.added[p.TransactionalID]
	known := sess != nil && sess.producer == p && sess.begun
	var claimNo, n int64
	if known {
		claimNo, n = sess.claim, sess.n
	}
	t.mu.Unlock()
	if known {
		// The transaction began here: one lookup checks it is still open.
		if pos, known, err = t.ledger.knownPosition(ctx, p, claimNo, n); err != nil {
			return err
		}
	}
	if known {
		out, pos, err = t.ledger.endAt(ctx, p, pos, commit, stagingEnd)
	} else {
		out, pos, err = t.ledger.end(ctx, p, commit, stagingEnd)
	}
	if err != nil {
		if errors.Is(err, kafkaproto.ErrProducerFenced) {
			if errors.Is(err, errTxnTimedOut) {
				t.m.outcomes.WithLabelValues("timeout").Inc()
			}
			t.log.Info("transaction not committed", slog.String("transactional_id", p.TransactionalID), slog.Any("err", err))
		}
		return err
	}
	if pos.begin != nil && t.view != nil {
		t.view.ended(txnRef{p.TransactionalID, pos.claim.key.claim, pos.n})
	}
	if !commit {
		t.m.outcomes.WithLabelValues("abort").Inc()
		t.log.Info("transaction aborted by its producer", slog.String("transactional_id", p.TransactionalID), slog.Int64("producer_id", p.ProducerID))
		return nil
	}
	if t.failpoint == FailpointTxnCommitDecided {
		t.log.Error("failpoint: the process kills itself after a commit decision, before its apply", slog.String("transactional_id", p.TransactionalID))
		if self, err := os.FindProcess(os.Getpid()); err == nil {
			_ = self.Kill()
		}
		select {} // the kill is on its way
	}
	claim := pos.claim
	cm := &committed{claim: claim.key.claim, n: pos.n, begin: pos.begin, outcome: out}
	if pos.begin == nil {
		// A repeated EndTxn: the commit was decided before, and may have
		// been applied.
		if cm, err = t.ledger.lastCommit(ctx, claim); err != nil {
			return fmt.Errorf("%w: %w", kafkaproto.ErrCoordinatorLoadInProgress, err)
		}
		if cm == nil {
			return nil // applied already
		}
	}
	if err := t.applyCommit(ctx, p.TransactionalID, claim, cm); err != nil {
		// Decided: the producer's retry of EndTxn applies it again.
		return fmt.Errorf("%w: apply the commit of %q: %w", kafkaproto.ErrCoordinatorLoadInProgress, p.TransactionalID, err)
	}
	t.m.outcomes.WithLabelValues("commit").Inc()
	return nil
}

// Stage implements TxnStager: it stages a batch of an open transaction; the answer
// comes once it is durable in the staging table. The batch is converted
// first, so that a record its route refuses is refused now, while the
// producer can still abort, and not at the commit.
func (t *Coordinator) Stage(ctx context.Context, st *produce.Bound, route *mapping.Route, req *kafkaproto.PartitionProduce) (kafkaproto.PartitionWrite, error) {
	defer req.Release()
	if t == nil || !t.path.WritesExactlyOnce(route) {
		return nil, fmt.Errorf("%w: transactions are not served for route %s", kafkaproto.ErrTransactionalIDAuthorizationFailed, route.Name())
	}
	p := kafkaproto.TxnProducer{TransactionalID: req.TransactionalID, ProducerID: req.ProducerID, Epoch: req.ProducerEpoch}
	size := int64(stagedSize(req.Records))
	txn, err := t.charge(p, produce.TopicPartition{Topic: req.Topic, Partition: req.Partition}, size)
	if err != nil {
		t.logRefusal(t.log, req, err)
		return nil, err
	}
	// Prepared as any batch (schemas followed, refused records refused
	// now, while the producer can still abort); the rows are not kept:
	// the apply prepares the staged records again, against the table as
	// it is then.
	if err := t.path.Check(ctx, st, route, req); err != nil {
		_, _ = t.charge(p, produce.TopicPartition{Topic: req.Topic, Partition: req.Partition}, -size)
		return nil, err
	}
	sb := &stagedBatch{id: req.TransactionalID, topic: req.Topic, partition: req.Partition,
		producerID: req.ProducerID, epoch: req.ProducerEpoch, baseSequence: req.BaseSequence, records: req.Records, stagingOffset: -1,
		txn: txn}
	h, err := t.staging.stage(ctx, sb)
	if err != nil {
		_, _ = t.charge(p, produce.TopicPartition{Topic: req.Topic, Partition: req.Partition}, -size)
		return nil, answer.Error(err)
	}
	t.m.stagedBatches.Inc()
	t.m.stagedBytes.Add(float64(size))
	c := kafkaproto.NewCompletion()
	go func() {
		_, err := h.Wait(context.WithoutCancel(ctx))
		if err != nil {
			c.Complete(answer.Failed(answer.Error(fmt.Errorf("stage batch of %q: %w", req.TransactionalID, err))))
			return
		}
		c.Complete(kafkaproto.PartitionResult{BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1})
	}()
	return c, nil
}

// logRefusal logs a refused transactional batch, at most one line a
// second (a producer may send many before it aborts).
func (t *Coordinator) logRefusal(log *slog.Logger, req *kafkaproto.PartitionProduce, err error) {
	t.mu.Lock()
	now := time.Now()
	ok := now.Sub(t.lastRefusal) >= time.Second
	suppressed := t.suppressed
	if ok {
		t.lastRefusal, t.suppressed = now, 0
	} else {
		t.suppressed++
	}
	t.mu.Unlock()
	if ok {
		log.Warn("transactional batch refused", slog.String("transactional_id", req.TransactionalID), slog.String("topic", req.Topic),
			slog.Int("partition", int(req.Partition)), slog.Any("err", err), slog.Int("suppressed", suppressed))
	}
}

// charge counts size more bytes (less, when negative: a batch not staged
// after all) of p's transaction staged here, refusing a batch that would
// pass maxBytes (MESSAGE_TOO_LARGE; the producer must abort) and one for a
// partition the transaction's AddPartitionsToTxn here did not add
// (INVALID_TXN_STATE). A transaction this instance has no session for
// (its partitions were added on another one) is counted from here on.
// It returns the transaction p's AddPartitionsToTxn here began or found
// open, which the staged batch names; nil when this instance saw none.
func (t *Coordinator) charge(p kafkaproto.TxnProducer, tp produce.TopicPartition, size int64) (*txnTag, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	sess := t.added[p.TransactionalID]
	switch {
	case sess == nil || sess.producer != p:
		if size < 0 {
			return nil, nil
		}
		sess = &txnSession{producer: p}
		t.added[p.TransactionalID] = sess
	case sess.parts != nil && !sess.parts[tp]:
		return nil, fmt.Errorf("%w: partition %s/%d was not added to the transaction of %q", kafkaproto.ErrInvalidTxnState, tp.Topic, tp.Partition, p.TransactionalID)
	}
	if size > 0 && sess.staged+size > t.maxBytes {
		return nil, fmt.Errorf("%w: the transaction of %q would stage %d bytes on this gateway, past kafka.transaction_max_bytes %d; abort it",
			kafkaproto.ErrMessageTooLarge, p.TransactionalID, sess.staged+size, t.maxBytes)
	}
	sess.staged += size
	if !sess.begun {
		return nil, nil
	}
	return &txnTag{claim: sess.claim, n: sess.n}, nil
}

// applyCommit writes a committed transaction's staged batches to their
// tables through the exactly-once path and marks it applied. Partitions
// are applied concurrently, each one's batches in sequence order.
func (t *Coordinator) applyCommit(ctx context.Context, id string, claim *txnRow, cm *committed) error {
	start := time.Now()
	batches, err := t.staging.read(ctx, id, claim.producerID, claim.epoch, txnTag{claim: cm.claim, n: cm.n}, cm.begin.stagingOffset, cm.outcome.stagingOffset)
	if err != nil {
		return err
	}
	st := t.path.Current()
	if st == nil {
		return errors.New("routes not loaded yet")
	}
	type part struct {
		tp      produce.TopicPartition
		batches []*stagedBatch
	}
	var parts []part
	for _, b := range batches {
		tp := produce.TopicPartition{Topic: b.topic, Partition: b.partition}
		if len(parts) == 0 || parts[len(parts)-1].tp != tp {
			parts = append(parts, part{tp: tp})
		}
		parts[len(parts)-1].batches = append(parts[len(parts)-1].batches, b)
	}
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	records := 0
	for i, pt := range parts {
		route, ok := st.Routes.Resolve(pt.tp.Topic)
		if !ok {
			return fmt.Errorf("topic %s of a committed transaction has no route any more", pt.tp.Topic)
		}
		for _, b := range pt.batches {
			records += len(b.records)
		}
		wg.Go(func() { errs[i] = t.applyPartition(ctx, st, route, pt.batches, t.maxApplyRecords) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Marked before the answer, so that an InitProducerId, a sweeper or
	// DescribeTransactions right after sees it applied; a mark that cannot
	// be written only makes a later one apply the commit again, harmlessly.
	if err := t.ledger.markApplied(ctx, id, cm); err != nil {
		t.log.Warn("committed transaction applied, its applied mark not written", slog.String("transactional_id", id), slog.Any("err", err))
	}
	t.m.apply.Observe(time.Since(start).Seconds())
	t.m.appliedRecords.Add(float64(records))
	t.log.Debug("transaction committed", slog.String("transactional_id", id), slog.Int64("producer_id", claim.producerID),
		slog.Int("batches", len(batches)), slog.Int("records", records), slog.Duration("apply", time.Since(start)))
	return nil
}

// applyPartition applies one partition's batches of a commit, joined into
// batches of at most maxRecords consecutive records, one after the other.
func (t *Coordinator) applyPartition(ctx context.Context, st *produce.Bound, route *mapping.Route, batches []*stagedBatch, maxRecords int) error {
	for i := 0; i < len(batches); {
		first := batches[i]
		req := &kafkaproto.PartitionProduce{Topic: first.topic, Partition: first.partition, Acks: -1,
			ProducerID: first.producerID, ProducerEpoch: first.epoch, BaseSequence: first.baseSequence}
		next, size := first.baseSequence, 0
		for ; i < len(batches); i++ {
			b := batches[i]
			bytes := recordBytes(b.records)
			if len(req.Records) > 0 && (b.baseSequence != next || len(req.Records)+len(b.records) > maxRecords || size+bytes > maxApplyBytes) {
				break
			}
			size += bytes
			for _, r := range b.records {
				r.Index = int32(len(req.Records))
				r.OffsetDelta = r.Index
				req.Records = append(req.Records, r)
			}
			next = kafkaproto.SeqAdd(b.baseSequence, int32(len(b.records)))
		}
		w, err := t.path.Replay(ctx, st, route, req, t.writers)
		if err != nil {
			return fmt.Errorf("apply %s/%d from sequence %d: %w", req.Topic, req.Partition, req.BaseSequence, err)
		}
		select {
		case <-w.Done():
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := w.Result().Err; err != nil {
			return fmt.Errorf("apply %s/%d from sequence %d: %w", req.Topic, req.Partition, req.BaseSequence, err)
		}
	}
	return nil
}

// recordBytes is the bytes of the records' keys, values and headers.
func recordBytes(recs []kafkaproto.Record) int {
	n := 0
	for _, r := range recs {
		n += len(r.Key) + len(r.Value)
		for _, h := range r.Headers {
			n += len(h.Key) + len(h.Value)
		}
	}
	return n
}
