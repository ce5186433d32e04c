package frame

import (
	"bytes"
	"encoding/hex"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	require.NoError(t, err)
	return b
}

// Worked examples of the Fluss RPC framing (derived by hand from
// Fluss MessageCodec.java and standard protobuf encoding).
func TestWorkedExamples(t *testing.T) {
	t.Run("api versions request", func(t *testing.T) {
		want := mustHex(t, "00000016 03e8 0000 00000000 0a05666c757373 1205302e312e30")
		got, err := AppendRequestMessage(nil, RequestHeader{APIKey: 1000, APIVersion: 0, RequestID: 0},
			&pb.ApiVersionsRequest{ClientSoftwareName: proto.String("fluss"), ClientSoftwareVersion: proto.String("0.1.0")})
		require.NoError(t, err)
		assert.Equal(t, want, got)
		assert.Len(t, got, 26)

		body, err := ReadFrame(bytes.NewReader(got), 0)
		require.NoError(t, err)
		req, err := ParseRequest(body)
		require.NoError(t, err)
		assert.Equal(t, RequestHeader{APIKey: 1000}, req.RequestHeader)
		var msg pb.ApiVersionsRequest
		require.NoError(t, proto.Unmarshal(req.Payload, &msg))
		assert.Equal(t, "fluss", msg.GetClientSoftwareName())
		assert.Equal(t, "0.1.0", msg.GetClientSoftwareVersion())
	})
	t.Run("error response", func(t *testing.T) {
		want := mustHex(t, "00000007 01 00000007 0807")
		got, err := AppendResponseMessage(nil, ErrorResponse, 7, &pb.ErrorResponse{ErrorCode: proto.Int32(7)})
		require.NoError(t, err)
		assert.Equal(t, want, got)

		body, err := ReadFrame(bytes.NewReader(got), 0)
		require.NoError(t, err)
		resp, err := ParseResponse(body)
		require.NoError(t, err)
		assert.Equal(t, ErrorResponse, resp.Type)
		assert.Equal(t, int32(7), resp.RequestID)
		var msg pb.ErrorResponse
		require.NoError(t, proto.Unmarshal(resp.Payload, &msg))
		assert.Equal(t, int32(7), msg.GetErrorCode())
		assert.Nil(t, msg.ErrorMessage)
	})
}

func TestResponseRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		typ     ResponseType
		id      int32
		payload []byte
		want    string
	}{
		{"success", SuccessResponse, 0x01020304, []byte{0xaa}, "00000006 00 01020304 aa"},
		{"error negative id", ErrorResponse, -1, nil, "00000005 01 ffffffff"},
		{"server failure has no id", ServerFailure, 99, []byte{0x08, 0x01}, "00000003 02 0801"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := AppendResponse([]byte("prefix"), tt.typ, tt.id, tt.payload)
			require.True(t, bytes.HasPrefix(got, []byte("prefix")))
			got = got[len("prefix"):]
			assert.Equal(t, mustHex(t, tt.want), got)
			body, err := ReadFrame(bytes.NewReader(got), 0)
			require.NoError(t, err)
			resp, err := ParseResponse(body)
			require.NoError(t, err)
			assert.Equal(t, tt.typ, resp.Type)
			if tt.typ != ServerFailure {
				assert.Equal(t, tt.id, resp.RequestID)
			}
			assert.Equal(t, len(tt.payload), len(resp.Payload))
		})
	}
}

func TestRequestRoundTrip(t *testing.T) {
	h := RequestHeader{APIKey: 1016, APIVersion: 1, RequestID: 123456}
	got := AppendRequest(nil, h, []byte("xyz"))
	assert.Equal(t, mustHex(t, "0000000b 03f8 0001 0001e240 78797a"), got)
	body, err := ReadFrame(bytes.NewReader(got), 0)
	require.NoError(t, err)
	req, err := ParseRequest(body)
	require.NoError(t, err)
	assert.Equal(t, h, req.RequestHeader)
	assert.Equal(t, []byte("xyz"), req.Payload)
}

func TestAppendRequestMessageMissingRequired(t *testing.T) {
	dst := []byte("keep")
	out, err := AppendRequestMessage(dst, RequestHeader{APIKey: 1000}, &pb.ApiVersionsRequest{})
	require.Error(t, err)
	assert.Equal(t, []byte("keep"), out)
}

func TestMalformed(t *testing.T) {
	tests := []struct {
		name  string
		input string
		max   int
		read  bool // error from ReadFrame (else from Parse*)
		want  error
	}{
		{"negative length", "ffffffff", 0, true, ErrMalformed},
		{"too large", "00000100", 16, true, ErrFrameTooLarge},
		{"truncated body", "00000005 00 0000", 0, true, io.ErrUnexpectedEOF},
		{"empty stream", "", 0, true, io.EOF},
		{"unknown type", "00000005 07 00000000", 0, false, ErrMalformed},
		{"short success", "00000003 00 0000", 0, false, ErrMalformed},
		{"empty response", "00000000", 0, false, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := ReadFrame(bytes.NewReader(mustHex(t, tt.input)), tt.max)
			if tt.read {
				require.ErrorIs(t, err, tt.want)
				return
			}
			require.NoError(t, err)
			_, err = ParseResponse(body)
			require.ErrorIs(t, err, tt.want)
		})
	}
	_, err := ParseRequest([]byte{1, 2, 3})
	require.ErrorIs(t, err, ErrMalformed)
}

func FuzzParseResponse(f *testing.F) {
	f.Add(mustHexF("00000007 01 00000007 0807"))
	f.Add(mustHexF("00000003020801"))
	f.Fuzz(func(t *testing.T, data []byte) {
		body, err := ReadFrame(bytes.NewReader(data), 1<<16)
		if err != nil {
			return
		}
		resp, err := ParseResponse(body)
		if err != nil {
			return
		}
		if len(resp.Payload) > len(body) {
			t.Fatalf("payload longer than body")
		}
		_, _ = ParseRequest(body)
	})
}

func mustHexF(s string) []byte {
	b, _ := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	return b
}
