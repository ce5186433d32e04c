package mapping

// Allocation-free parsing of the date and time texts the mapping accepts,
// and the civil-calendar arithmetic behind it (proleptic Gregorian, UTC).

const (
	millisPerDay = 86_400_000
	nanosPerDay  = 86_400 * 1e9
)

// daysFromCivil returns days since 1970-01-01 of the given date.
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y, m, d int64) {
	z += 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era = (z - 146096) / 146097
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	m = mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func daysInMonth(y, m int64) int64 {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// digits parses exactly len(b) decimal digits.
func digits(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// parseDate parses "yyyy-MM-dd" into days since the epoch.
func parseDate(b []byte) (int64, bool) {
	if len(b) != 10 || b[4] != '-' || b[7] != '-' {
		return 0, false
	}
	y, ok1 := digits(b[0:4])
	m, ok2 := digits(b[5:7])
	d, ok3 := digits(b[8:10])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m) {
		return 0, false
	}
	return daysFromCivil(y, m, d), true
}

// parseTimeOfDay parses "HH:mm", "HH:mm:ss" or "HH:mm:ss.f" (1 to 9
// fraction digits) into nanoseconds of the day.
func parseTimeOfDay(b []byte) (int64, bool) {
	if len(b) < 5 || b[2] != ':' {
		return 0, false
	}
	h, ok1 := digits(b[0:2])
	mi, ok2 := digits(b[3:5])
	if !ok1 || !ok2 || h > 23 || mi > 59 {
		return 0, false
	}
	ns := (h*3600 + mi*60) * 1e9
	b = b[5:]
	if len(b) == 0 {
		return ns, true
	}
	if len(b) < 3 || b[0] != ':' {
		return 0, false
	}
	s, ok := digits(b[1:3])
	if !ok || s > 59 {
		return 0, false
	}
	ns += s * 1e9
	b = b[3:]
	if len(b) == 0 {
		return ns, true
	}
	if b[0] != '.' || len(b) < 2 || len(b) > 10 {
		return 0, false
	}
	f, ok := digits(b[1:])
	if !ok {
		return 0, false
	}
	for range 10 - len(b) {
		f *= 10
	}
	return ns + f, true
}

// parseTimestamp parses "yyyy-MM-dd", or that followed by 'T', 't' or ' '
// and a time of day, and optionally 'Z' or an offset (±HH:mm, ±HHmm, ±HH).
// The result is UTC: epoch milliseconds and the nanoseconds of that milli.
func parseTimestamp(b []byte) (int64, int32, bool) {
	if len(b) < 10 {
		return 0, 0, false
	}
	days, ok := parseDate(b[:10])
	if !ok {
		return 0, 0, false
	}
	b = b[10:]
	var nanosOfDay, offsetSec int64
	if len(b) > 0 {
		if b[0] != 'T' && b[0] != 't' && b[0] != ' ' {
			return 0, 0, false
		}
		b = b[1:]
		end := 0
		for end < len(b) && (b[end] >= '0' && b[end] <= '9' || b[end] == ':' || b[end] == '.') {
			end++
		}
		if nanosOfDay, ok = parseTimeOfDay(b[:end]); !ok {
			return 0, 0, false
		}
		if offsetSec, ok = parseOffset(b[end:]); !ok {
			return 0, 0, false
		}
	}
	nanos := nanosOfDay - offsetSec*1e9
	millis := days*millisPerDay + floorDiv(nanos, 1e6)
	return millis, int32(floorMod(nanos, 1e6)), true
}

// parseOffset parses "", "Z", "z", "±HH", "±HHmm" or "±HH:mm" into seconds
// east of UTC.
func parseOffset(b []byte) (int64, bool) {
	switch {
	case len(b) == 0:
		return 0, true
	case len(b) == 1 && (b[0] == 'Z' || b[0] == 'z'):
		return 0, true
	case b[0] != '+' && b[0] != '-':
		return 0, false
	}
	sign := int64(1)
	if b[0] == '-' {
		sign = -1
	}
	b = b[1:]
	var h, m int64
	var ok1, ok2 bool
	switch len(b) {
	case 2:
		h, ok1 = digits(b)
		ok2 = true
	case 4:
		h, ok1 = digits(b[:2])
		m, ok2 = digits(b[2:])
	case 5:
		if b[2] != ':' {
			return 0, false
		}
		h, ok1 = digits(b[:2])
		m, ok2 = digits(b[3:])
	default:
		return 0, false
	}
	if !ok1 || !ok2 || h > 18 || m > 59 {
		return 0, false
	}
	return sign * (h*3600 + m*60), true
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// truncTimestamp drops sub-second digits beyond precision (0..9).
func truncTimestamp(millis int64, nano int32, precision int) (int64, int32) {
	if precision >= 9 {
		return millis, nano
	}
	if precision >= 3 {
		unit := int32(pow10u(9 - precision))
		return millis, nano / unit * unit
	}
	unit := int64(pow10u(3 - precision))
	return floorDiv(millis, unit) * unit, 0
}

// truncMillis drops sub-second digits of a TIME value beyond precision.
func truncMillis(millis int64, precision int) int64 {
	if precision >= 3 {
		return millis
	}
	unit := int64(pow10u(3 - precision))
	return millis / unit * unit
}
