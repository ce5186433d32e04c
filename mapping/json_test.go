package mapping

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A quote, backslash or control character at any offset of a string ends
// or checks it; bytes of multi-byte UTF-8 do not.
func TestJSONScannerStringAtEveryOffset(t *testing.T) {
	for n := range 20 {
		plain := strings.Repeat("a", n)
		for _, tc := range []struct {
			doc, raw, reason string
			escaped          bool
		}{
			{doc: `"` + plain + `"`, raw: plain},
			{doc: `"` + plain + `\"x"`, raw: plain + `\"x`, escaped: true},
			{doc: `"` + plain + `é€"`, raw: plain + "é€"},
			{doc: "\"" + plain + "\x1f\"", reason: "control character in string"},
			{doc: "\"" + plain + "\x00xxxxxxxx\"", reason: "control character in string"},
			{doc: `"` + plain, reason: "unterminated string"},
			{doc: `"` + plain + `\q"`, reason: "invalid escape"},
		} {
			s := &jsonScanner{data: []byte(tc.doc)}
			raw, escaped, reason := s.str()
			if tc.reason != "" {
				assert.Contains(t, reason, tc.reason, "%q", tc.doc)
				continue
			}
			assert.Empty(t, reason, "%q", tc.doc)
			assert.Equal(t, tc.raw, string(raw), "%q", tc.doc)
			assert.Equal(t, tc.escaped, escaped, "%q", tc.doc)
			assert.Equal(t, len(tc.doc), s.pos, "%q", tc.doc)
		}
	}
}
