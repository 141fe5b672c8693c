package nodetest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// Answer is one HTTP answer, its JSON object body decoded when it has one.
type Answer struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

// Call sends one request and decodes a JSON object answer; it fails the
// test when the request cannot be sent, a JSON body cannot be decoded, or
// the exchange is outside the node's HTTP contract (checked by the node
// when Start started it, see Tap; here otherwise).
func Call(t testing.TB, method, url string, hdr map[string]string, body []byte) Answer {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := Answer{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	conformant(t, req, body, a)
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &a.Body); err != nil {
			t.Fatalf("%s %s: undecodable %q", method, url, raw)
		}
	}
	return a
}

// Str returns m[k] when it is a string, and "" otherwise (also for a nil
// m), so a test reads a decoded answer's fields without type switches.
func Str(m map[string]any, k string) string { s, _ := m[k].(string); return s }
