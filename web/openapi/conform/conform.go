// Package conform checks HTTP exchanges with a node against its contract
// (package openapi). It is for tests only: internal/nodetest taps every
// node it starts with Tap, so each exchange of the node and end-to-end
// tests (a test's own HTTP calls, nginx's, Chromium's) is checked, and the
// contract cannot drift from the traffic; Shape compares the handlers' Go
// types with the contract's schemas field by field. The node itself never
// imports it.
//
// The rules: every answer must be one the contract documents for its
// route and status (body, content type, headers: X-Request-ID always),
// and may carry no JSON
// field the contract does not name (answers are closed for the tests,
// see tightenTree); a request the contract does not allow may only be
// refused (a 4xx documented for the route: tests send bad input on
// purpose); a path
// the contract does not know may only be answered 404 or 405.
//
// Routes, parameters and headers are checked with kin-openapi's
// validator; JSON bodies with each schema compiled once (bodies), as
// kin-openapi compiles a schema for every value it checks.
package conform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
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
	doc    *openapi3.T
	router routers.Router
	bodies *bodies
}

// New loads and validates the contract.
func New() (*Checker, error) {
	// Pages, scripts, declarations, CSV and the contract itself are text.
	for _, ct := range []string{"text/html", "text/javascript", "application/typescript", "application/yaml", "text/csv"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
	}
	doc, err := openapi3.NewLoader().LoadFromData(openapi.Spec)
	if err != nil {
		return nil, fmt.Errorf("load the contract: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the contract is invalid: %w", err)
	}
	// kin-openapi checks routes, parameters and headers of a copy marked
	// 3.0: for 3.1 it compiles a JSON Schema for every value it checks,
	// most of a check's cost. Its 3.0 validator knows every keyword of
	// the contract's parameter and header schemas (portable30 holds them
	// to it); bodies are checked as 3.1 by bodies.
	routed, err := openapi3.NewLoader().LoadFromData(openapi.Spec)
	if err != nil {
		return nil, err
	}
	if err := portable30(routed); err != nil {
		return nil, err
	}
	r, err := legacy.NewRouter(routed) // validates it as 3.1
	if err != nil {
		return nil, err
	}
	routed.OpenAPI = "3.0.3" // read at each check (route.Spec)
	b, err := newBodies()
	if err != nil {
		return nil, fmt.Errorf("the contract's schemas: %w", err)
	}
	return &Checker{doc: doc, router: r, bodies: b}, nil
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
// purpose); statuses must be documented; bodies are checked by bodies.
var opts = &openapi3filter.Options{
	AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
	IncludeResponseStatus: true,
	MultiError:            true,
	ExcludeRequestBody:    true,
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
	head := req.Method == http.MethodHead
	if head {
		req.Method = http.MethodGet
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		if status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
			return nil
		}
		return fmt.Errorf("%s %s is not in the contract (answered %d)", req.Method, req.URL.Path, status)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
	req.Body = io.NopCloser(bytes.NewReader(reqBody))
	// A request outside the contract may only be refused.
	reqErr := openapi3filter.ValidateRequest(ctx, in)
	if reqErr == nil {
		reqErr = c.requestBody(ctx, in, reqBody)
	}
	if reqErr != nil && !refused(status) {
		return fmt.Errorf("%s %s: a request outside the contract was answered %d: %w", req.Method, req.URL.Path, status, flat(reqErr))
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header, Options: opts}
	out.SetBodyBytes(body)
	err = openapi3filter.ValidateResponse(ctx, out)
	if err == nil && !head {
		err = c.answerBody(route, status, header, body)
	}
	if err != nil {
		return fmt.Errorf("%s %s answered %d outside the contract: %w", req.Method, req.URL.Path, status, flat(err))
	}
	return nil
}

// requestBody checks a request's body: present when required, of a
// documented content type, valid against its schema.
func (c *Checker) requestBody(ctx context.Context, in *openapi3filter.RequestValidationInput, body []byte) error {
	op := in.Route.Operation
	if op.RequestBody == nil || op.RequestBody.Value == nil {
		return nil
	}
	rb := op.RequestBody.Value
	if len(bytes.TrimSpace(body)) == 0 {
		if rb.Required {
			return errors.New("the request body is required")
		}
		return nil
	}
	ct := in.Request.Header.Get("Content-Type")
	mt := rb.Content.Get(ct)
	if mt == nil {
		return fmt.Errorf("request Content-Type %q is not documented", ct)
	}
	if mt.Schema == nil {
		return nil
	}
	if !jsonMedia(ct) { // forms: few, left to kin-openapi
		in.Request.Body = io.NopCloser(bytes.NewReader(body))
		return openapi3filter.ValidateRequestBody(ctx, in, rb)
	}
	base := pointer("paths", in.Route.Path, strings.ToLower(in.Route.Method), "requestBody")
	if r := op.RequestBody.Ref; r != "" {
		base = strings.TrimPrefix(r, "#")
	}
	return c.bodies.check(false, base+pointer("content", mediaKey(rb.Content, mt), "schema"), body)
}

// answerBody checks a JSON answer's body against its schema; the status,
// content type and headers were checked by kin-openapi.
func (c *Checker) answerBody(route *routers.Route, status int, header http.Header, body []byte) error {
	ct := header.Get("Content-Type")
	if !jsonMedia(ct) {
		return nil // text: pages, scripts, CSV, YAML, metrics
	}
	responses := route.Operation.Responses
	r := responses.Status(status)
	if r == nil || r.Value == nil {
		return nil // undocumented statuses were refused already
	}
	mt := r.Value.Content.Get(ct)
	if mt == nil || mt.Schema == nil {
		return nil
	}
	base := pointer("paths", route.Path, strings.ToLower(route.Method), "responses", statusKey(responses, r, status))
	if r.Ref != "" {
		base = strings.TrimPrefix(r.Ref, "#")
	}
	return c.bodies.check(true, base+pointer("content", mediaKey(r.Value.Content, mt), "schema"), body)
}

// portable30 returns an error naming a parameter or header schema that
// uses a keyword kin-openapi's 3.0 validator ignores (const, a list of
// types, prefixItems).
func portable30(doc *openapi3.T) error {
	check := func(where string, s *openapi3.SchemaRef) error {
		if s == nil || s.Value == nil {
			return nil
		}
		v := s.Value
		if v.Const != nil || (v.Type != nil && len(v.Type.Slice()) > 1) || len(v.PrefixItems) > 0 {
			return fmt.Errorf("%s: use enum and one type (the checker reads parameters and headers as OpenAPI 3.0)", where)
		}
		return nil
	}
	for path, item := range doc.Paths.Map() {
		params := item.Parameters
		for method, op := range item.Operations() {
			for _, p := range append(params, op.Parameters...) {
				if p.Value != nil {
					if err := check(method+" "+path+" parameter "+p.Value.Name, p.Value.Schema); err != nil {
						return err
					}
				}
			}
			for status, r := range op.Responses.Map() {
				if r.Value == nil {
					continue
				}
				for name, h := range r.Value.Headers {
					if h.Value != nil {
						if err := check(method+" "+path+" "+status+" header "+name, h.Value.Schema); err != nil {
							return err
						}
					}
				}
			}
		}
	}
	return nil
}

// statusKey is the key under which responses holds r ("200", "default").
func statusKey(responses *openapi3.Responses, r *openapi3.ResponseRef, status int) string {
	for k, v := range responses.Map() {
		if v == r {
			return k
		}
	}
	return strconv.Itoa(status)
}

// mediaKey is the key under which content holds mt.
func mediaKey(content openapi3.Content, mt *openapi3.MediaType) string {
	for k, v := range content {
		if v == mt {
			return k
		}
	}
	return ""
}

// flat writes a kin-openapi MultiError as its errors joined.
func flat(err error) error {
	var me openapi3.MultiError
	if errors.As(err, &me) {
		return errors.Join(me...)
	}
	return err
}

// refused reports whether an answer is a refusal: a 4xx, whose body
// (problem+json from the API, an HTML page from the basic page's forms)
// the answer's own check holds to the contract.
func refused(status int) bool {
	return status >= 400 && status < 500
}
