package event

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestFrameAncestors(t *testing.T) {
	good := []string{
		"https://shop.example", "https://shop.example:8443", "https://SHOP.Example", "https://*.shop.example",
		"https://a.b.c.shop.example", "https://192.0.2.10", "https://[2001:db8::1]:443",
		"http://localhost:3000", "http://127.0.0.1:8080", "http://[::1]:9000", "http://localhost",
		"https://*.example.co.uk", "https://*.shop.github.io",
	}
	bad := map[string]string{
		"":                                       "no scheme",
		"shop.example":                           "no scheme",
		"'self'":                                 "no scheme",
		"'none'":                                 "no scheme",
		"*":                                      "no scheme",
		"https://*":                              "wildcard",
		"https://*.com":                          "wildcard",
		"https://*.co.uk":                        "public suffix",
		"https://*.github.io":                    "public suffix",
		"https://*.CO.UK:8443":                   "public suffix",
		"https://shop.*.example":                 "wildcard only as the whole first label",
		"https://sh*p.example":                   "wildcard only",
		"https://shop.example/":                  "no path",
		"https://shop.example/embed":             "no path",
		"https://shop.example?x=1":               "no path",
		"https://shop.example#top":               "no path",
		"https://user@shop.example":              "credentials",
		"http://shop.example":                    "http is allowed only",
		"http://10.0.0.1":                        "http is allowed only",
		"ftp://shop.example":                     "scheme must be https",
		"capacitor://localhost":                  "scheme must be https",
		"https://":                               "no host",
		"https://shop.example:":                  "empty port",
		"https://shop.example:0":                 "port",
		"https://shop.example:65536":             "port",
		"https://shop.example:08":                "port",
		"https://shop.example:80x":               "port",
		"https://shop..example":                  "label",
		"https://-shop.example":                  "character",
		"https://shop.example; script-src":       "character",
		"https://shop.example https://evil":      "not an origin",
		"https://shop.example,https://b.example": "not an origin",
		"https://sh\nop.example":                 "character",
		"https://[::1":                           "unclosed",
		"https://[127.0.0.1]":                    "IPv6",
		"https://[::1]x":                         "after the host",
		"https://" + strings.Repeat("a", 300):    "longer than 300",
	}
	for _, o := range good {
		c := valid()
		c.FrameAncestors = []string{o}
		if err := c.Validate(); err != nil {
			t.Errorf("%q: got %v, want valid", o, err)
		}
	}
	for o, want := range bad {
		c := valid()
		c.FrameAncestors = []string{"https://ok.example", o}
		err := c.Validate()
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "frame_ancestors[1]") {
			t.Errorf("%q: got %v, want ErrInvalid naming frame_ancestors[1] and %q", o, err, want)
		}
	}
	c := valid()
	for range MaxFrameAncestors + 1 {
		c.FrameAncestors = append(c.FrameAncestors, "https://shop.example")
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("%d origins: got %v, want refused", len(c.FrameAncestors), err)
	}
	if c := valid(); c.Embeddable() {
		t.Error("a new event is embeddable; want no frame ancestors by default")
	}
}

func TestClosure(t *testing.T) {
	c := valid()
	if err := c.CheckOpen(t0); err != nil {
		t.Fatalf("open room: got %v", err)
	}
	c.Closed = &Closure{}
	var ce *ClosedError
	if err := c.CheckOpen(t0); !errors.Is(err, ErrClosed) || !errors.As(err, &ce) || ce.RetryAfter != DefaultClosedRetry {
		t.Fatalf("closed without an end: got %v, want ClosedError with RetryAfter %v", err, DefaultClosedRetry)
	}
	until := t0.Add(90 * time.Minute)
	c.Closed.Until = &until
	if err := c.CheckOpen(t0); !errors.As(err, &ce) || ce.RetryAfter != 90*time.Minute {
		t.Fatalf("closed until +90m: got %v", err)
	}
	if err := c.CheckOpen(until.Add(time.Second)); !errors.As(err, &ce) || ce.RetryAfter != DefaultClosedRetry {
		t.Fatalf("past the announced end: got %v, want still closed with the default retry", err)
	}
	for msg, want := range map[string]string{
		strings.Repeat("x", MaxClosedMessage+1): "longer than",
		"bell\a":                                "control character",
	} {
		c := valid()
		c.Closed = &Closure{Message: msg}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("message %.20q: got %v, want %q", msg, err, want)
		}
	}
	c = valid()
	c.Closed = &Closure{Message: "Back at 14:00.\nThank you for waiting."}
	if err := c.Validate(); err != nil {
		t.Errorf("a two-line message: got %v", err)
	}
}
