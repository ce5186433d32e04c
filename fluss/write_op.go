package fluss

import "strconv"

// WriteOp is what one row does to its table. The zero value is no
// operation (invalid).
type WriteOp uint8

const (
	// WriteAppend appends the row to a log table.
	WriteAppend WriteOp = iota + 1
	// WriteUpsert inserts or replaces the row with the same primary key
	// (primary-key tables).
	WriteUpsert
	// WriteDelete deletes the row with the given primary key (primary-key
	// tables).
	WriteDelete
)

// String returns "append", "upsert" or "delete".
func (o WriteOp) String() string {
	switch o {
	case WriteAppend:
		return "append"
	case WriteUpsert:
		return "upsert"
	case WriteDelete:
		return "delete"
	}
	return "WriteOp(" + strconv.Itoa(int(o)) + ")"
}
