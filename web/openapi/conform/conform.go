// Package conform checks HTTP exchanges with a node against its contract
// (package openapi), with kin-openapi's validator. It is for tests only:
// internal/nodetest's Call checks every exchange the node and end-to-end
// tests make through it, so the contract cannot drift from the traffic.
// The node itself never imports it.
//
// The rules: every answer must be one the contract documents for its
// route and status (body, content type, headers); a request the contract
// does not allow may only be refused (a 4xx problem+json: tests send bad
// input on purpose); a path the contract does not know may only be
// answered 404 or 405.
package conform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/anteroom/anteroom/web/openapi"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// Checker checks exchanges against the contract; it is safe for
// concurrent use.
type Checker struct {
	doc    *openapi3.T // as published, for Body
	router routers.Router
}

// New loads and validates the contract.
func New() (*Checker, error) {
	// Pages, scripts and the contract itself are checked as text.
	for _, ct := range []string{"text/html", "text/javascript", "application/yaml"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
	}
	openapi3filter.RegisterBodyDecoder("application/jwk-set+json", openapi3filter.JSONBodyDecoder)
	var docs [2]*openapi3.T
	for i := range docs {
		doc, err := openapi3.NewLoader().LoadFromData(openapi.Spec)
		if err != nil {
			return nil, fmt.Errorf("load the contract: %w", err)
		}
		if err := doc.Validate(context.Background()); err != nil {
			return nil, fmt.Errorf("the contract is invalid: %w", err)
		}
		docs[i] = doc
	}
	checked := docs[1]
	tighten(checked)
	r, err := legacy.NewRouter(checked)
	if err != nil {
		return nil, err
	}
	return &Checker{doc: docs[0], router: r}, nil
}

var (
	once   sync.Once
	shared *Checker
	errNew error
)

// Shared is one Checker for the whole test binary.
func Shared() (*Checker, error) {
	once.Do(func() { shared, errNew = New() })
	return shared, errNew
}

// opts: credentials are the node's to judge (tests send forged ones on
// purpose); statuses must be documented.
var opts = &openapi3filter.Options{
	AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
	IncludeResponseStatus: true,
	MultiError:            true,
}

// headOpts are opts for a HEAD exchange: no body to check.
var headOpts = &openapi3filter.Options{
	AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
	IncludeResponseStatus: true,
	MultiError:            true,
	ExcludeResponseBody:   true,
}

// Check checks one exchange: req with its body reqBody, answered status
// with header and body. It returns nil when the exchange conforms.
func (c *Checker) Check(req *http.Request, reqBody []byte, status int, header http.Header, body []byte) error {
	ctx := context.Background()
	// The contract's server is "/": match on the path, whatever the host.
	req = req.Clone(ctx)
	req.URL.Scheme, req.URL.Host = "", ""
	// The node reads a body without a Content-Type as JSON (the contract's
	// description says so); the validator needs it named.
	if len(reqBody) > 0 && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	// HEAD is GET without the body (fiber serves it for every GET route;
	// the contract lists the GET).
	o := opts
	if req.Method == http.MethodHead {
		req.Method, o = http.MethodGet, headOpts
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		if status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
			return nil
		}
		return fmt.Errorf("%s %s is not in the contract (answered %d)", req.Method, req.URL.Path, status)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: o}
	req.Body = io.NopCloser(bytes.NewReader(reqBody))
	// A request outside the contract may only be refused.
	if err := openapi3filter.ValidateRequest(ctx, in); err != nil && !refused(status, header) {
		return fmt.Errorf("%s %s: a request outside the contract was answered %d: %w", req.Method, req.URL.Path, status, err)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header, Options: o}
	out.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		var me openapi3.MultiError
		if errors.As(err, &me) {
			err = errors.Join(me...)
		}
		return fmt.Errorf("%s %s answered %d outside the contract: %w", req.Method, req.URL.Path, status, err)
	}
	return nil
}

// refused reports whether an answer is a refusal: a 4xx problem.
func refused(status int, header http.Header) bool {
	return status >= 400 && status < 500 && strings.HasPrefix(header.Get("Content-Type"), "application/problem+json")
}
