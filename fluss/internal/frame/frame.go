// Package frame encodes and decodes the frames of Fluss's RPC protocol, for
// the client in package fluss and for the fake server in fluss/flussfake.
//
// Every frame is a 4-byte big-endian length (not counting itself) followed
// by a header and a protobuf payload (Fluss
// fluss-rpc/src/main/java/org/apache/fluss/rpc/protocol/MessageCodec.java):
//
//	request:         int16 api key, int16 api version, int32 request id, payload
//	success/error:   int8 type (0 or 1), int32 request id, payload
//	server failure:  int8 type (2), payload (no request id)
//
// All header integers are big-endian. Encoders append to a caller's buffer;
// decoders check every length against the bytes available and never panic.
package frame

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/proto"
)

// Header lengths after the 4-byte frame length.
const (
	RequestHeaderLen       = 8
	ResponseHeaderLen      = 5
	ServerFailureHeaderLen = 1
	lengthPrefixLen        = 4
)

// DefaultMaxFrameSize bounds a frame read from the network unless the caller
// chooses another limit. It matches the server's default request limit
// (netty.server.max-request-size, 100 MiB).
const DefaultMaxFrameSize = 100 << 20

// ResponseType is the first header byte of a response frame
// (Fluss ResponseType.java).
type ResponseType int8

const (
	SuccessResponse ResponseType = 0
	ErrorResponse   ResponseType = 1
	ServerFailure   ResponseType = 2
)

func (t ResponseType) String() string {
	switch t {
	case SuccessResponse:
		return "SUCCESS_RESPONSE"
	case ErrorResponse:
		return "ERROR_RESPONSE"
	case ServerFailure:
		return "SERVER_FAILURE"
	}
	return fmt.Sprintf("ResponseType(%d)", int8(t))
}

// ErrFrameTooLarge is returned by ReadFrame for a frame longer than allowed.
var ErrFrameTooLarge = errors.New("frame: frame too large")

// ErrMalformed reports a frame whose header cannot be parsed.
var ErrMalformed = errors.New("frame: malformed frame")

// RequestHeader is the header of a request frame.
type RequestHeader struct {
	APIKey     int16
	APIVersion int16
	RequestID  int32
}

// Request is a parsed request frame. Payload aliases the frame buffer.
type Request struct {
	RequestHeader
	Payload []byte
}

// Response is a parsed response frame. Payload aliases the frame buffer.
// RequestID is meaningless for ServerFailure.
type Response struct {
	Type      ResponseType
	RequestID int32
	Payload   []byte
}

// AppendRequest appends a complete request frame carrying payload.
func AppendRequest(dst []byte, h RequestHeader, payload []byte) []byte {
	start := len(dst)
	dst = appendRequestHeader(dst, h)
	dst = append(dst, payload...)
	return patchLength(dst, start)
}

// AppendRequestPrefix appends the length field and header of a request frame
// whose payload, payloadLen bytes, the caller sends right after them.
func AppendRequestPrefix(dst []byte, h RequestHeader, payloadLen int) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(RequestHeaderLen+payloadLen))
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.APIKey))
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.APIVersion))
	return binary.BigEndian.AppendUint32(dst, uint32(h.RequestID))
}

// AppendRequestMessage appends a complete request frame whose payload is msg
// marshalled in place (required fields are checked).
func AppendRequestMessage(dst []byte, h RequestHeader, msg proto.Message) ([]byte, error) {
	start := len(dst)
	dst = appendRequestHeader(dst, h)
	out, err := proto.MarshalOptions{}.MarshalAppend(dst, msg)
	if err != nil {
		return dst[:start], fmt.Errorf("frame: marshal request api %d: %w", h.APIKey, err)
	}
	return patchLength(out, start), nil
}

// AppendResponse appends a complete SUCCESS_RESPONSE or ERROR_RESPONSE frame,
// or a SERVER_FAILURE frame (which carries no request id).
func AppendResponse(dst []byte, typ ResponseType, requestID int32, payload []byte) []byte {
	start := len(dst)
	dst = appendResponseHeader(dst, typ, requestID)
	dst = append(dst, payload...)
	return patchLength(dst, start)
}

// AppendResponseMessage is AppendResponse with msg marshalled in place.
func AppendResponseMessage(dst []byte, typ ResponseType, requestID int32, msg proto.Message) ([]byte, error) {
	start := len(dst)
	dst = appendResponseHeader(dst, typ, requestID)
	out, err := proto.MarshalOptions{}.MarshalAppend(dst, msg)
	if err != nil {
		return dst[:start], fmt.Errorf("frame: marshal response: %w", err)
	}
	return patchLength(out, start), nil
}

// ParseRequest parses a request frame body (the bytes after the length).
func ParseRequest(body []byte) (Request, error) {
	if len(body) < RequestHeaderLen {
		return Request{}, fmt.Errorf("%w: request of %d bytes is shorter than its header", ErrMalformed, len(body))
	}
	return Request{
		RequestHeader: RequestHeader{
			APIKey:     int16(binary.BigEndian.Uint16(body[0:2])),
			APIVersion: int16(binary.BigEndian.Uint16(body[2:4])),
			RequestID:  int32(binary.BigEndian.Uint32(body[4:8])),
		},
		Payload: body[RequestHeaderLen:],
	}, nil
}

// ParseResponse parses a response frame body (the bytes after the length).
func ParseResponse(body []byte) (Response, error) {
	if len(body) < ServerFailureHeaderLen {
		return Response{}, fmt.Errorf("%w: empty response", ErrMalformed)
	}
	typ := ResponseType(int8(body[0]))
	switch typ {
	case SuccessResponse, ErrorResponse:
		if len(body) < ResponseHeaderLen {
			return Response{}, fmt.Errorf("%w: %s of %d bytes is shorter than its header", ErrMalformed, typ, len(body))
		}
		return Response{
			Type:      typ,
			RequestID: int32(binary.BigEndian.Uint32(body[1:5])),
			Payload:   body[ResponseHeaderLen:],
		}, nil
	case ServerFailure:
		return Response{Type: typ, Payload: body[ServerFailureHeaderLen:]}, nil
	}
	return Response{}, fmt.Errorf("%w: unknown response type %d", ErrMalformed, int8(typ))
}

// ReadFrame reads one frame from r and returns its body (without the length
// prefix) in a newly allocated slice. A negative length or one above max
// (DefaultMaxFrameSize when max <= 0) is refused before allocating.
func ReadFrame(r io.Reader, max int) ([]byte, error) {
	if max <= 0 {
		max = DefaultMaxFrameSize
	}
	var lenBuf [lengthPrefixLen]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(lenBuf[:]))
	if n < 0 {
		return nil, fmt.Errorf("%w: negative frame length %d", ErrMalformed, n)
	}
	if int64(n) > int64(max) {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, max)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

func appendRequestHeader(dst []byte, h RequestHeader) []byte {
	return AppendRequestPrefix(dst, h, 0) // the length is patched later
}

func appendResponseHeader(dst []byte, typ ResponseType, requestID int32) []byte {
	dst = append(dst, 0, 0, 0, 0) // length, patched later
	dst = append(dst, byte(typ))
	if typ != ServerFailure {
		dst = binary.BigEndian.AppendUint32(dst, uint32(requestID))
	}
	return dst
}

func patchLength(dst []byte, start int) []byte {
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-lengthPrefixLen))
	return dst
}
