package mapping

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/fluss-kafka/gateway/fluss"
)

// Partition names and the timestamp formats that fill partition columns.

// timeFormat is a compiled timestamp layout: a list of fields and literal
// separators.
type timeFormat []timeField

type timeField uint8

const (
	tfYear    timeField = iota + 1 // yyyy
	tfQuarter                      // Q
	tfMonth                        // MM
	tfDay                          // dd
	tfHour                         // HH
	tfMinute                       // mm
	tfSecond                       // ss
	tfDash                         // -
	tfUnder                        // _
)

var timeTokens = []struct {
	text  string
	field timeField
}{
	{"yyyy", tfYear}, {"Q", tfQuarter}, {"MM", tfMonth}, {"dd", tfDay},
	{"HH", tfHour}, {"mm", tfMinute}, {"ss", tfSecond}, {"-", tfDash}, {"_", tfUnder},
}

// parseTimeFormat compiles a layout in the letters of Fluss
// auto-partitioning (yyyy, Q, MM, dd, HH, mm, ss) with '-' and '_' between.
// Only these, so every formatted value is a valid partition value.
func parseTimeFormat(s string) (timeFormat, error) {
	if s == "" {
		return nil, errors.New("timestamp format is empty")
	}
	var f timeFormat
outer:
	for rest := s; rest != ""; {
		for _, t := range timeTokens {
			if len(rest) >= len(t.text) && rest[:len(t.text)] == t.text {
				f = append(f, t.field)
				rest = rest[len(t.text):]
				continue outer
			}
		}
		return nil, fmt.Errorf("timestamp format %q: unexpected %q (use yyyy, Q, MM, dd, HH, mm, ss, '-', '_')", s, rest[:1])
	}
	return f, nil
}

// appendTime formats epoch milliseconds in loc.
func (f timeFormat) appendTime(dst []byte, millis int64, loc *time.Location) []byte {
	t := time.UnixMilli(millis).In(loc)
	year, month, day := t.Date()
	hour, minute, sec := t.Clock()
	for _, fl := range f {
		switch fl {
		case tfYear:
			dst = appendPadded(dst, int64(year), 4)
		case tfQuarter:
			dst = append(dst, byte('1'+(int(month)-1)/3))
		case tfMonth:
			dst = appendPadded(dst, int64(month), 2)
		case tfDay:
			dst = appendPadded(dst, int64(day), 2)
		case tfHour:
			dst = appendPadded(dst, int64(hour), 2)
		case tfMinute:
			dst = appendPadded(dst, int64(minute), 2)
		case tfSecond:
			dst = appendPadded(dst, int64(sec), 2)
		case tfDash:
			dst = append(dst, '-')
		case tfUnder:
			dst = append(dst, '_')
		}
	}
	return dst
}

// appendPadded appends n with at least width digits (zero-padded); a
// negative n gets a leading '-', as Java's %0Nd.
func appendPadded(dst []byte, n int64, width int) []byte {
	if n < 0 {
		dst = append(dst, '-')
		n = -n
		width--
	}
	var tmp [20]byte
	b := strconv.AppendInt(tmp[:0], n, 10)
	for i := len(b); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, b...)
}

// partitionNameType reports whether a partition column of this type can be
// turned into a partition name here.
func partitionNameType(t fluss.TypeRoot) error {
	switch t {
	case fluss.TypeChar, fluss.TypeString, fluss.TypeBoolean, fluss.TypeBinary, fluss.TypeBytes,
		fluss.TypeTinyInt, fluss.TypeSmallInt, fluss.TypeInt, fluss.TypeBigInt,
		fluss.TypeDate, fluss.TypeTime, fluss.TypeTimestamp, fluss.TypeTimestampLTZ:
		return nil
	case fluss.TypeFloat, fluss.TypeDouble:
		// Fluss renders these with Java's Float/Double.toString.
		return fmt.Errorf("%s partition columns: %w", t, ErrNotImplemented)
	}
	return fmt.Errorf("%s cannot be a partition column", t)
}

// appendPartitionValue renders one partition value as Fluss does
// (PartitionUtils.convertValueOfType with PartitionNameConverters).
func appendPartitionValue(dst []byte, d fluss.Datum, t fluss.TypeRoot) []byte {
	switch t {
	case fluss.TypeChar, fluss.TypeString:
		return append(dst, d.B...)
	case fluss.TypeBoolean:
		return strconv.AppendBool(dst, d.I != 0)
	case fluss.TypeBinary, fluss.TypeBytes:
		return hex.AppendEncode(dst, d.B)
	case fluss.TypeDate:
		y, m, dd := civilFromDays(d.I)
		dst = appendPadded(dst, y, 4)
		dst = append(dst, '-')
		dst = appendPadded(dst, m, 2)
		dst = append(dst, '-')
		return appendPadded(dst, dd, 2)
	case fluss.TypeTime:
		ms := d.I
		dst = appendPadded(dst, floorDiv(ms, 3_600_000), 2)
		dst = append(dst, '-')
		dst = appendPadded(dst, floorDiv(floorMod(ms, 3_600_000), 60_000), 2)
		dst = append(dst, '-')
		dst = appendPadded(dst, floorDiv(floorMod(ms, 60_000), 1000), 2)
		dst = append(dst, '_')
		return appendPadded(dst, floorMod(ms, 1000), 3)
	case fluss.TypeTimestamp, fluss.TypeTimestampLTZ:
		// yyyy-MM-dd-HH-mm-ss_ and the fraction of the second without
		// trailing zeros (nothing when it is zero).
		days := floorDiv(d.I, millisPerDay)
		msOfDay := floorMod(d.I, millisPerDay)
		y, m, dd := civilFromDays(days)
		dst = appendPadded(dst, y, 4)
		dst = append(dst, '-')
		dst = appendPadded(dst, m, 2)
		dst = append(dst, '-')
		dst = appendPadded(dst, dd, 2)
		dst = append(dst, '-')
		dst = appendPadded(dst, msOfDay/3_600_000, 2)
		dst = append(dst, '-')
		dst = appendPadded(dst, msOfDay/60_000%60, 2)
		dst = append(dst, '-')
		dst = appendPadded(dst, msOfDay/1000%60, 2)
		dst = append(dst, '_')
		frac := (msOfDay%1000)*1_000_000 + int64(d.N)
		if frac == 0 {
			return dst
		}
		var tmp [9]byte
		for i := 8; i >= 0; i-- {
			tmp[i] = byte('0' + frac%10)
			frac /= 10
		}
		end := 9
		for end > 0 && tmp[end-1] == '0' {
			end--
		}
		return append(dst, tmp[:end]...)
	default: // integers
		return strconv.AppendInt(dst, d.I, 10)
	}
}

// validPartitionValue applies Fluss's name rule to one partition value:
// 1 to 200 characters of [A-Za-z0-9_-] (TablePath.detectInvalidName), and
// no "__" prefix, which Fluss reserves and refuses when creating a
// partition (TablePath.validatePrefix).
func validPartitionValue(b []byte) bool {
	if len(b) == 0 || len(b) > 200 || (len(b) >= 2 && b[0] == '_' && b[1] == '_') {
		return false
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
