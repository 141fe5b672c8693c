package client

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"
)

// statusJSON is the node's status answer (web/shopper's statusJSON), the
// reference ParseStatus is held to.
type statusJSON struct {
	State          string     `json:"state"`
	Position       *int64     `json:"position"`
	Ahead          int64      `json:"ahead"`
	ETASeconds     int64      `json:"eta_seconds"`
	PollAfterMs    int64      `json:"poll_after_ms"`
	ClosedBy       string     `json:"closed_by,omitempty"`
	AdmissionToken string     `json:"admission_token,omitempty"`
	ExpiresAt      *time.Time `json:"admission_expires_at,omitempty"`
}

// want is what ParseStatus must return for body, by encoding/json.
func (r statusJSON) want() Status {
	s := Status{State: State(r.State), Ahead: r.Ahead, ETA: time.Duration(r.ETASeconds) * time.Second,
		PollAfter: time.Duration(r.PollAfterMs) * time.Millisecond, ClosedByStaff: r.ClosedBy == "staff", AdmissionToken: r.AdmissionToken}
	if r.Position != nil {
		s.Position = *r.Position
	}
	if r.ExpiresAt != nil {
		s.AdmissionExpiresAt = *r.ExpiresAt
	}
	return s
}

// The node's own answers, byte for byte as it writes them.
var (
	waitingBody  = []byte(`{"state":"waiting","position":1234567,"ahead":1200,"eta_seconds":42,"poll_after_ms":2500}`)
	admittedBody = []byte(`{"state":"admitted","position":7,"ahead":0,"eta_seconds":0,"poll_after_ms":1000,"admission_token":"eyJhbGciOiJFZERTQSIsImtpZCI6IngiLCJ0eXAiOiJKV1QifQ.eyJzdWIiOiJ1In0.c2ln","admission_expires_at":"2026-12-02T12:00:00Z"}`)
)

func TestParseStatusAgreesWithEncodingJSON(t *testing.T) {
	for _, body := range []string{
		string(waitingBody), string(admittedBody),
		`{"state":"closed","position":3,"ahead":2,"eta_seconds":0,"poll_after_ms":5000,"closed_by":"staff"}`,
		`{"state":"closed","position":null,"ahead":0,"eta_seconds":0,"poll_after_ms":30000}`,
		`{"state":"prequeue","position":null,"ahead":0,"eta_seconds":0,"poll_after_ms":1000}`,
		` { "state" : "wait\u0069ng" , "position" : -1 , "extra" : {"a":[1,"}",{"b":null}]}, "ahead":0, "flag": true, "poll_after_ms": 7 } `,
		`{"state":"sold_out","closed_by":"staff","closed_by":"other"}`,
		`{"admission_token":"a\"b\\c\/d\u00e9"}`,
		`{}`,
	} {
		var ref statusJSON
		if err := json.Unmarshal([]byte(body), &ref); err != nil {
			t.Fatalf("reference %s: %v", body, err)
		}
		got, err := ParseStatus([]byte(body))
		if err != nil {
			t.Errorf("ParseStatus(%s): %v", body, err)
			continue
		}
		if want := ref.want(); !reflect.DeepEqual(got, want) {
			t.Errorf("ParseStatus(%s)\n got %+v\nwant %+v", body, got, want)
		}
	}
}

func TestParseStatusRefusesWhatIsNotAnObject(t *testing.T) {
	for _, body := range []string{
		``, `null`, `[]`, `"waiting"`, `{`, `{"state"}`, `{"state":}`, `{"state":"waiting"`,
		`{"state":"waiting"}x`, `{"state":"waiting",}`, `{"state":"wait` + "\n" + `ing"}`,
		`{"state":waiting}`, `{"position":"7"}`, `{"state":7}`, `{"ahead":[1}`, `{"poll_after_ms":1e999999}`,
		`{"a":1 "b":2}`, `{state:"waiting"}`,
	} {
		if s, err := ParseStatus([]byte(body)); !errors.Is(err, errSyntax) {
			t.Errorf("ParseStatus(%q) = %+v, %v; want errSyntax", body, s, err)
		}
	}
}

func TestParseStatusAllocations(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseStatus(waitingBody) }); n != 0 {
		t.Errorf("a waiting answer allocates %v times, want 0", n)
	}
	join := []byte(`{"ticket":"eyJhbGciOiJIUzI1NiJ9.eyJlIjoiZHJvcCJ9.c2ln","seq":12,"position":null,"state":"waiting","poll_after_ms":1000}`)
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseJoin(join) }); n > 1 {
		t.Errorf("a join answer allocates %v times, want 1 (the ticket)", n)
	}
	claim := []byte(`{"claim_id":"01JCLAIMID","status":"pending"}`)
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseClaim(claim) }); n > 2 {
		t.Errorf("a claim answer allocates %v times, want 2 (its strings)", n)
	}
	staff := []byte(`{"state":"closed","position":3,"ahead":2,"eta_seconds":0,"poll_after_ms":5000,"closed_by":"staff"}`)
	if n := testing.AllocsPerRun(100, func() { _, _ = ParseStatus(staff) }); n != 0 {
		t.Errorf("a closed answer allocates %v times, want 0", n)
	}
}

// FuzzParseStatus holds ParseStatus to encoding/json on every answer the
// node could write (any state, figures, token and expiry, through
// encoding/json's escaping), and to never panicking on any input.
func FuzzParseStatus(f *testing.F) {
	f.Add("waiting", int64(12), true, int64(3), int64(40), int64(2500), false, "", int64(0), []byte(waitingBody))
	f.Add("admitted", int64(7), true, int64(0), int64(0), int64(1000), false, "tok.en.x", int64(1764676800), admittedBody)
	f.Add("closed", int64(0), false, int64(9), int64(0), int64(5000), true, "<&>\"\\\x01é\xff", int64(-5), []byte(`{"a":[{"b":"\u12"}]}`))
	f.Fuzz(func(t *testing.T, st string, pos int64, hasPos bool, ahead, eta, poll int64, staff bool, token string, exp int64, raw []byte) {
		_, _ = ParseStatus(raw) // never panics
		ref := statusJSON{State: st, Ahead: ahead, ETASeconds: eta, PollAfterMs: poll, AdmissionToken: token}
		if hasPos {
			ref.Position = &pos
		}
		if staff {
			ref.ClosedBy = "staff"
		}
		if exp != 0 && exp > -1e10 && exp < 1e10 {
			tm := time.Unix(exp, 0).UTC()
			ref.ExpiresAt = &tm
		}
		body, err := json.Marshal(ref)
		if err != nil {
			t.Skip()
		}
		var back statusJSON // what a JSON client reads from it
		if err := json.Unmarshal(body, &back); err != nil {
			t.Fatal(err)
		}
		got, err := ParseStatus(body)
		if err != nil {
			t.Fatalf("ParseStatus(%s): %v", body, err)
		}
		if want := back.want(); !reflect.DeepEqual(got, want) {
			t.Fatalf("ParseStatus(%s)\n got %+v\nwant %+v", body, got, want)
		}
	})
}

func TestParseJoinAndClaim(t *testing.T) {
	tk, err := ParseJoin([]byte(`{"ticket":"a.b.c","seq":3,"position":null,"state":"waiting","poll_after_ms":1000,"lane":"vip"}`))
	if want := (Ticket{Ticket: "a.b.c", Seq: 3, State: StateWaiting, PollAfter: time.Second, Lane: "vip"}); err != nil || tk != want {
		t.Errorf("ParseJoin: %+v %v, want %+v", tk, err, want)
	}
	cl, err := ParseClaim([]byte(`{"claim_id":"c1","event":"drop","status":"released","position":4,"claimed_at":"2026-12-02T11:00:00.123Z"}`))
	if want := (Claim{ID: "c1", Event: "drop", Status: "released", Position: 4, ClaimedAt: time.Date(2026, 12, 2, 11, 0, 0, 123e6, time.UTC)}); err != nil || cl != want {
		t.Errorf("ParseClaim: %+v %v, want %+v", cl, err, want)
	}
	list, err := ParseClaims([]byte(`{"claims":[{"claim_id":"c1","status":"pending"},{"claim_id":"c2","status":"confirmed"}]}`))
	if err != nil || len(list) != 2 || list[1].ID != "c2" || list[1].Status != "confirmed" {
		t.Errorf("ParseClaims: %+v %v", list, err)
	}
	if _, err := ParseClaims([]byte(`{"claims":[{"claim_id":7}]}`)); err == nil {
		t.Error("ParseClaims accepted a numeric claim id")
	}
}

func TestParseProblem(t *testing.T) {
	now := time.Date(2026, 12, 2, 11, 0, 0, 0, time.UTC)
	body := []byte(`{"type":"https://anteroom.dev/problems/limit_reached","title":"Limit reached","status":409,"code":"limit_reached","detail":"you already hold your allowed claims","request_id":"r-1","claim_ids":["a","b"]}`)
	e := ParseProblem("claim", http.StatusConflict, body, "", now)
	want := &Error{Op: "claim", Status: 409, Code: ErrLimitReached, Title: "Limit reached", Detail: "you already hold your allowed claims", RequestID: "r-1", ClaimIDs: []string{"a", "b"}, Attempts: 1}
	if !reflect.DeepEqual(e, want) {
		t.Errorf("ParseProblem:\n got %+v\nwant %+v", e, want)
	}
	if !errors.Is(e, ErrLimitReached) || errors.Is(e, ErrSoldOut) || errors.Is(e, Code("")) {
		t.Error("errors.Is does not match the code alone")
	}
	// A proxy's answer: no code, the Retry-After still read.
	e = ParseProblem("join", http.StatusServiceUnavailable, []byte("<html>busy</html>"), now.Add(90*time.Second).Format(http.TimeFormat), now)
	if e.Code != "" || e.RetryAfter != 90*time.Second || !e.Temporary() || errors.Is(e, ErrDegraded) {
		t.Errorf("a proxy's 503: %+v", e)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 2, 11, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"5", 5 * time.Second, true},
		{" 0 ", 0, true},
		{"", 0, false},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{now.Add(time.Minute).Format(http.TimeFormat), time.Minute, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
		{"99999999999999", (1 << 31) * time.Second, true},
	} {
		got, ok := ParseRetryAfter(c.in, now)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// BenchmarkParseStatus compares ParseStatus with encoding/json on the
// node's waiting and admitted answers.
func BenchmarkParseStatus(b *testing.B) {
	for _, c := range []struct {
		name string
		body []byte
	}{{"waiting", waitingBody}, {"admitted", admittedBody}} {
		b.Run(c.name+"/ParseStatus", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseStatus(c.body); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/encoding_json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var s statusJSON
				if err := json.Unmarshal(c.body, &s); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/map", func(b *testing.B) { // what internal/crowd decoded into before
			b.ReportAllocs()
			for b.Loop() {
				var m map[string]any
				if err := json.Unmarshal(c.body, &m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
