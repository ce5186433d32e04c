package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunRejectsBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
		msg  string
	}{
		{"unknown flag", []string{"-nope"}, 2, "flag provided but not defined"},
		{"unknown codec", []string{"-compression", "brotli"}, 1, `unknown compression "brotli"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			require.Equal(t, tt.want, run(tt.args, &out, &errOut))
			assert.Contains(t, errOut.String(), tt.msg)
			assert.Empty(t, out.String())
		})
	}
}
