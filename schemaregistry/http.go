package schemaregistry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

// maxResponseBytes bounds one registry answer.
const maxResponseBytes = 16 << 20

const (
	acceptCCompat = "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json; qs=0.9, application/json; qs=0.5"
	acceptJSON    = "application/json"
	acceptAny     = "*/*"
	userAgent     = "fluss-kafka-gateway-schemaregistry"
)

// endpoints is one API (ccompat or Apicurio v3) behind one or more base URLs.
// pref is the index of the base that answered last; requests start there.
type endpoints struct {
	bases []string
	pref  atomic.Uint32
}

type response struct {
	body   []byte
	header http.Header
}

type failureKind int

const (
	failNotFound failureKind = iota
	failNetwork
	failTimeout
	failServer
	failThrottled
	failAuth
	failProtocol
	failCanceled
)

// get sends GET base+path to each base URL in turn, starting with the
// preferred one, until one answers 2xx or a definite 404. Any other failure
// moves on to the next URL; the caller's context ending stops at once.
func (c *Client) get(ctx context.Context, ep *endpoints, path, accept string) (*response, error) {
	n := len(ep.bases)
	start := int(ep.pref.Load()) % n
	var last error
	for i := range n {
		idx := (start + i) % n
		resp, err := c.getOnce(ctx, ep.bases[idx]+path, accept)
		if err == nil || errors.Is(err, ErrUnknownSchema) {
			ep.pref.Store(uint32(idx))
			return resp, err
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, last
}

func (c *Client) getJSON(ctx context.Context, ep *endpoints, path, accept string, into any) error {
	resp, err := c.get(ctx, ep, path, accept)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(resp.body, into); err != nil {
		c.countFailure(failProtocol)
		return fmt.Errorf("%w: GET %s: undecodable answer: %v", ErrUnavailable, path, err)
	}
	return nil
}

func (c *Client) getOnce(ctx context.Context, u, accept string) (*response, error) {
	c.st.requests.Add(1)
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		c.countFailure(failProtocol)
		return nil, fmt.Errorf("%w: GET %s: %v", ErrUnavailable, u, err)
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", userAgent)
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, rctx, u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, c.transportError(ctx, rctx, u, err)
	}
	if len(body) > maxResponseBytes {
		c.countFailure(failProtocol)
		return nil, fmt.Errorf("%w: GET %s: answer larger than %d bytes", ErrUnavailable, u, maxResponseBytes)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return &response{body: body, header: resp.Header}, nil
	}
	return nil, c.statusError(u, resp.StatusCode, body)
}

func (c *Client) transportError(ctx, rctx context.Context, u string, err error) error {
	if ctx.Err() != nil {
		c.countFailure(failCanceled)
		return fmt.Errorf("%w: GET %s: %w", ErrUnavailable, u, ctx.Err())
	}
	var ne net.Error
	if rctx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()) {
		c.countFailure(failTimeout)
		return fmt.Errorf("%w: GET %s: no answer within %v", ErrUnavailable, u, c.timeout)
	}
	c.countFailure(failNetwork)
	return fmt.Errorf("%w: GET %s: %v", ErrUnavailable, u, err)
}

// registryError is the union of Confluent's {"error_code","message"} and
// Apicurio's ProblemDetails {"status","title","detail"} error bodies.
type registryError struct {
	ErrorCode int    `json:"error_code"`
	Message   string `json:"message"`
	Title     string `json:"title"`
	Detail    string `json:"detail"`
	Name      string `json:"name"`
}

// definitelyNotFound tells a registry's "no such schema" from a 404 for a path
// the server does not serve (a wrong base URL), which Confluent answers with
// error_code 404 and Apicurio with ProblemDetails name "NotFoundException"
// (RESTEASY003210). Confluent's and Karapace's specific codes are 404xx
// (40401 subject, 40402 version, 40403 schema not found, 40404/40406 soft
// deleted); Apicurio's native API names the missing entity
// (VersionNotFoundException, ContentNotFoundException, ...).
func (re *registryError) definitelyNotFound(status int) bool {
	if re.ErrorCode >= 40401 && re.ErrorCode <= 40499 {
		return true
	}
	return status == http.StatusNotFound && re.Name != "NotFoundException" && strings.HasSuffix(re.Name, "NotFoundException")
}

func (c *Client) statusError(u string, status int, body []byte) error {
	var re registryError
	trimmed := bytes.TrimSpace(body)
	isRegistryBody := len(trimmed) > 0 && trimmed[0] == '{' && json.Unmarshal(trimmed, &re) == nil
	msg := re.Message
	if msg == "" {
		msg = re.Detail
	}
	if msg == "" {
		msg = re.Title
	}
	if msg == "" {
		msg = truncate(string(trimmed))
	}
	desc := "HTTP " + strconv.Itoa(status)
	if re.ErrorCode != 0 {
		desc += " error_code " + strconv.Itoa(re.ErrorCode)
	}
	if msg != "" {
		desc += ": " + msg
	}
	switch {
	case isRegistryBody && re.definitelyNotFound(status),
		// Registries without GUIDs (Apicurio 3.3: empty 404) cannot know
		// any: a GUID-framed record is bad for them, not retriable.
		status == http.StatusNotFound && strings.Contains(u, "/schemas/guids/"):
		c.countFailure(failNotFound)
		return fmt.Errorf("%w: GET %s: %s", ErrUnknownSchema, u, desc)
	case status == http.StatusNotFound:
		// A 404 that names no missing schema comes from a path the server
		// does not serve (a wrong base URL, a proxy): not the record's fault.
		c.countFailure(failProtocol)
		return fmt.Errorf("%w: GET %s: %s (no such API path: is the URL right?)", ErrUnavailable, u, desc)
	case status == http.StatusTooManyRequests:
		c.countFailure(failThrottled)
	case status >= 500:
		c.countFailure(failServer)
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		c.countFailure(failAuth)
	default:
		c.countFailure(failProtocol)
	}
	return fmt.Errorf("%w: GET %s: %s", ErrUnavailable, u, desc)
}
