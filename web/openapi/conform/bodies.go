package conform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/anteroom/anteroom/web/openapi"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// bodies checks JSON bodies against the contract's schemas, each schema
// compiled once (JSON Schema 2020-12, formats asserted). kin-openapi
// compiles a schema again for every value it checks (v0.153: tens of
// milliseconds for an admin answer), which the node tests, checking every
// exchange, cannot afford.
//
// The contract is loaded twice as JSON Schema resources: requests.json as
// written, and answers.json tightened for the tests (closed objects, see
// tighten) with its writeOnly properties made false, so an answer that
// shows a secret fails.
type bodies struct {
	mu       sync.Mutex
	compiler *jsonschema.Compiler
	compiled sync.Map // location → *jsonschema.Schema
}

const (
	requestsURL = "file:///anteroom/requests.json"
	answersURL  = "file:///anteroom/answers.json"
)

func newBodies() (*bodies, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	for _, url := range []string{requestsURL, answersURL} {
		var doc any
		if err := yaml.Unmarshal(openapi.Spec, &doc); err != nil {
			return nil, err
		}
		doc, err := jsonTree(doc)
		if err != nil {
			return nil, err
		}
		if url == answersURL {
			tightenTree(doc.(map[string]any))
		}
		if err := c.AddResource(url, doc); err != nil {
			return nil, err
		}
	}
	return &bodies{compiler: c}, nil
}

// jsonTree is a YAML document as encoding/json would decode it (string
// keys, json.Number numbers), the form the compiler takes.
func jsonTree(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

// check validates the JSON body against the schema at ptr (a JSON
// pointer into the contract, without '#') of the requests or the answers
// resource.
func (b *bodies) check(answer bool, ptr string, body []byte) error {
	url := requestsURL
	if answer {
		url = answersURL
	}
	loc := url + "#" + ptr
	sch, ok := b.compiled.Load(loc)
	if !ok {
		b.mu.Lock()
		s, err := b.compiler.Compile(loc)
		b.mu.Unlock()
		if err != nil {
			return fmt.Errorf("compile %s: %w", ptr, err)
		}
		sch, _ = b.compiled.LoadOrStore(loc, s)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("the body is not JSON: %w", err)
	}
	return sch.(*jsonschema.Schema).Validate(v)
}

// pointer is the JSON pointer of parts, each escaped (RFC 6901).
func pointer(parts ...string) string {
	var sb strings.Builder
	r := strings.NewReplacer("~", "~0", "/", "~1")
	for _, p := range parts {
		sb.WriteByte('/')
		sb.WriteString(r.Replace(p))
	}
	return sb.String()
}

// jsonMedia reports whether a media type's bodies are JSON.
func jsonMedia(mt string) bool {
	mt, _, _ = strings.Cut(mt, ";")
	mt = strings.TrimSpace(mt)
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}
