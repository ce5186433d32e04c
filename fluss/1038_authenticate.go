package fluss

// AUTHENTICATE (1038), version 0: SASL/PLAIN only.
//
// Sent right after ApiVersions when Config.Username is set. The token is
// RFC 4616's "authzid NUL username NUL password" with an empty authzid. The
// server answers success with an empty challenge, which completes PLAIN; bad
// credentials give ERROR_RESPONSE AUTHENTICATE_EXCEPTION (46).

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/fluss-kafka/gateway/fluss/internal/pb"
)

// saslPlainToken builds the SASL/PLAIN initial response.
func saslPlainToken(username, password string) []byte {
	tok := make([]byte, 0, len(username)+len(password)+2)
	tok = append(tok, 0)
	tok = append(tok, username...)
	tok = append(tok, 0)
	return append(tok, password...)
}

func (c *conn) authenticate(ctx context.Context) error {
	v, ok := c.versions[apiAuthenticate]
	if !ok {
		v = 0 // servers list AUTHENTICATE, but it is harmless to try v0
	}
	req := &pb.AuthenticateRequest{
		Protocol: proto.String("PLAIN"),
		Token:    saslPlainToken(c.cfg.username, c.cfg.password),
	}
	var resp pb.AuthenticateResponse
	if err := c.callVersion(ctx, apiAuthenticate, v, req, &resp, 0); err != nil {
		return fmt.Errorf("sasl/plain authenticate as %q: %w", c.cfg.username, err)
	}
	return nil
}
