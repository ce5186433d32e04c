package fluss

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseTablePath(t *testing.T) {
	t.Parallel()
	p, err := ParseTablePath("shop.orders")
	require.NoError(t, err)
	assert.Equal(t, TablePath{Database: "shop", Table: "orders"}, p)
	p, err = ParseTablePath("A_1.b-2")
	require.NoError(t, err)
	assert.Equal(t, TablePath{Database: "A_1", Table: "b-2"}, p)

	tests := []struct {
		in, want string
	}{
		{"", `"" is not database.table`},
		{"nodot", `"nodot" is not database.table`},
		{"a.b.c", `"a.b.c" is not database.table`},
		{".b", `".b": "" must be 1 to 200 characters`},
		{"a.", `"a.": "" must be 1 to 200 characters`},
		{"d.t x", `"d.t x": "t x" must be 1 to 200 characters of letters, digits, '_' and '-'`},
		{"d.t" + strings.Repeat("x", 200), "must be 1 to 200 characters"},
	}
	for _, tc := range tests {
		_, err := ParseTablePath(tc.in)
		require.Error(t, err, tc.in)
		assert.Contains(t, err.Error(), tc.want, tc.in)
	}
	_, err = ParseTablePath("d." + strings.Repeat("x", 200))
	assert.NoError(t, err, "200 characters are allowed")
}

func TestTablePathText(t *testing.T) {
	t.Parallel()
	p := TablePath{Database: "shop", Table: "orders"}
	b, err := p.MarshalText()
	require.NoError(t, err)
	assert.Equal(t, "shop.orders", string(b))

	var q TablePath
	require.NoError(t, q.UnmarshalText(b))
	assert.Equal(t, p, q)
	err = q.UnmarshalText([]byte("bad"))
	require.Error(t, err)
	assert.Equal(t, p, q, "a refused value leaves the path unchanged")

	// Text decoders use it, also as a map key.
	var m map[TablePath]TablePath
	require.NoError(t, json.Unmarshal([]byte(`{"a.b": "c.d"}`), &m))
	assert.Equal(t, map[TablePath]TablePath{{Database: "a", Table: "b"}: {Database: "c", Table: "d"}}, m)
	out, err := json.Marshal(m)
	require.NoError(t, err)
	assert.JSONEq(t, `{"a.b": "c.d"}`, string(out))
	assert.Error(t, json.Unmarshal([]byte(`"a.b.c"`), &q))
}
