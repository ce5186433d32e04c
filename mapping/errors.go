package mapping

import (
	"errors"
	"strconv"

	"github.com/fluss-kafka/gateway/fluss"
)

// ErrInvalidRecord is matched (errors.Is) by every *RecordError: the Kafka
// front answers it with INVALID_RECORD (or sends the record to the DLQ).
var ErrInvalidRecord = errors.New("invalid record")

// ErrNotImplemented marks a configured feature the gateway cannot do yet.
var ErrNotImplemented = errors.New("not implemented")

// RecordError is why one record could not be converted.
type RecordError struct {
	// Route is the route's name.
	Route string
	// Index is the record's position in its Kafka batch (Record.Index).
	Index int32
	// Column is the column concerned, or "" for the record as a whole.
	Column string
	// Reason says what is wrong, e.g. "value is not valid JSON: ...".
	Reason string
}

// Message is the text for Kafka's record_errors[].error_message and for the
// dead-letter row: the column (if any) and the reason.
func (e *RecordError) Message() string {
	if e.Column == "" {
		return e.Reason
	}
	return "column " + strconv.Quote(e.Column) + ": " + e.Reason
}

func (e *RecordError) Error() string {
	return "route " + strconv.Quote(e.Route) + ": record " + strconv.Itoa(int(e.Index)) + ": " + e.Message()
}

// Is makes errors.Is(err, ErrInvalidRecord) true.
func (e *RecordError) Is(target error) bool { return target == ErrInvalidRecord }

// RouteError is a problem found when a route is checked against its table:
// it names the route, the table, the column (if any) and the problem.
type RouteError struct {
	Route  string
	Table  fluss.TablePath
	Column string
	// Problem says what is wrong.
	Problem string
	// Err is an underlying cause, e.g. ErrNotImplemented.
	Err error
}

func (e *RouteError) Error() string {
	s := "route " + strconv.Quote(e.Route) + " (table " + e.Table.String() + ")"
	if e.Column != "" {
		s += ": column " + strconv.Quote(e.Column)
	}
	s += ": " + e.Problem
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *RouteError) Unwrap() error { return e.Err }
