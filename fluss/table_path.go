package fluss

import (
	"fmt"
	"strings"
)

// maxNameLen is the longest database or table name Fluss accepts.
const maxNameLen = 200

// ParseTablePath parses "database.table". Each part must be a name Fluss
// accepts: 1 to 200 characters of letters, digits, '_' and '-' (so neither
// part holds a '.').
func ParseTablePath(s string) (TablePath, error) {
	db, table, ok := strings.Cut(s, ".")
	if !ok || strings.Contains(table, ".") {
		return TablePath{}, fmt.Errorf("%q is not database.table", s)
	}
	p := TablePath{Database: db, Table: table}
	if err := p.Validate(); err != nil {
		return TablePath{}, err
	}
	return p, nil
}

// Validate reports whether both parts are names Fluss accepts: 1 to 200
// characters of letters, digits, '_' and '-'.
func (p TablePath) Validate() error {
	for _, part := range []string{p.Database, p.Table} {
		if !validName(part) {
			return fmt.Errorf("%q: %q must be 1 to %d characters of letters, digits, '_' and '-'", p.String(), part, maxNameLen)
		}
	}
	return nil
}

// MarshalText renders the path as "database.table".
func (p TablePath) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText parses "database.table" with ParseTablePath; configuration
// decoders (encoding/json, gopkg.in/yaml.v3) call it for a string value.
func (p *TablePath) UnmarshalText(text []byte) error {
	v, err := ParseTablePath(string(text))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > maxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
