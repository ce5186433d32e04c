package transactions

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fluss-kafka/gateway/exactlyonce"
	"github.com/fluss-kafka/gateway/producerstate"
)

// writerAgreement lets the instances that apply one commit at once agree
// on each new writer id their replays take (exactlyonce.WriterAgreement):
// the proposals go to the transactions table, whose first row for a key
// stands. The key is the producer-partition and the state the new id
// follows (its writer id and version), so instances starting from the same
// state take the same id, and a later change of writer proposes anew.
type writerAgreement struct {
	rows txnRows
	now  func() time.Time
}

// writerAgreementPrefix starts the transactional_id column of agreement
// rows: no Kafka client names a transactional id so, and the sweeper skips
// them.
const writerAgreementPrefix = "\x00exactly-once writer\x00"

func writerAgreementID(k producerstate.Key) string {
	return fmt.Sprintf("%s%d\x00%d\x00%s", writerAgreementPrefix, k.ProducerID, k.Partition, k.Topic)
}

func isWriterAgreement(id string) bool { return strings.HasPrefix(id, writerAgreementPrefix) }

func (a *writerAgreement) AgreeWriter(ctx context.Context, key producerstate.Key, from *producerstate.State, proposed int64) (int64, error) {
	id, k := writerAgreementID(key), txnKey{claim: from.WriterID, txn: from.Version}
	row := &txnRow{id: id, key: k, producerID: proposed, writtenBy: randomInt63(), writtenAtMs: a.now().UnixMilli(), reason: "writer"}
	if err := a.rows.insert(ctx, row); err != nil {
		return 0, fmt.Errorf("propose writer id %d: %w", proposed, err)
	}
	got, err := a.rows.get(ctx, id, []txnKey{k})
	if err != nil {
		return 0, fmt.Errorf("read the agreed writer id: %w", err)
	}
	if got[0] == nil {
		return 0, fmt.Errorf("read the agreed writer id: row %+v missing after its write", k)
	}
	return got[0].producerID, nil
}

var _ exactlyonce.WriterAgreement = (*writerAgreement)(nil)
