package tokens

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func newTestTickets(t testing.TB) *Tickets {
	t.Helper()
	tk, err := NewTickets(testSecret(1))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestNewTicketsSecretLength(t *testing.T) {
	for _, n := range []int{0, 16, 31, 32, 64} {
		_, err := NewTickets(make([]byte, n))
		if got, want := err == nil, n >= MinSecretLen; got != want {
			t.Errorf("NewTickets(%d bytes): got ok=%v, want ok=%v (err %v)", n, got, want, err)
		}
	}
}

func TestTicketRoundTrip(t *testing.T) {
	tickets := newTestTickets(t)
	for _, tc := range []Ticket{
		{Event: "spring-drop", User: "u-1", Seq: 1, IssuedAt: t0()},
		{Event: "e", User: "用户/ü 💡", Seq: 1 << 40, IssuedAt: time.Unix(0, 0)},
		{Event: strings.Repeat("e", maxIDLen), User: strings.Repeat("u", maxIDLen), Seq: 7, IssuedAt: t0()},
	} {
		raw, err := tickets.Sign(tc)
		if err != nil {
			t.Fatalf("Sign(%+v): %v", tc, err)
		}
		if len(raw) > maxTokenLen {
			t.Errorf("Sign(%+v): got %d bytes, want <= %d", tc, len(raw), maxTokenLen)
		}
		got, err := tickets.Verify(raw, tc.Event)
		if err != nil {
			t.Fatalf("Verify(Sign(%+v)): %v", tc, err)
		}
		want := tc
		want.IssuedAt = time.Unix(tc.IssuedAt.Unix(), 0).UTC()
		if got != want {
			t.Errorf("round trip: got %+v, want %+v", got, want)
		}
	}
}

func TestTicketSignDeterministic(t *testing.T) {
	tickets := newTestTickets(t)
	base := Ticket{Event: "ev", User: "alice", Seq: 42, IssuedAt: t0()}
	first, err := tickets.Sign(base)
	if err != nil {
		t.Fatal(err)
	}
	same := base
	same.IssuedAt = base.IssuedAt.Add(100 * time.Millisecond).In(time.FixedZone("X", 3600)) // same second
	for name, tc := range map[string]struct {
		tk       Ticket
		wantSame bool
	}{
		"identical":             {base, true},
		"same second, new zone": {same, true},
		"other seq":             {Ticket{Event: "ev", User: "alice", Seq: 43, IssuedAt: t0()}, false},
		"other user":            {Ticket{Event: "ev", User: "bob", Seq: 42, IssuedAt: t0()}, false},
		"other event":           {Ticket{Event: "ev2", User: "alice", Seq: 42, IssuedAt: t0()}, false},
		"other second":          {Ticket{Event: "ev", User: "alice", Seq: 42, IssuedAt: t0().Add(time.Second)}, false},
	} {
		got, err := tickets.Sign(tc.tk)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if (got == first) != tc.wantSame {
			t.Errorf("%s: got same=%v, want same=%v", name, got == first, tc.wantSame)
		}
	}
	other, _ := NewTickets(testSecret(2))
	if got, _ := other.Sign(base); got == first {
		t.Errorf("another secret: got the same ticket, want a different one")
	}
}

func TestTicketSignRejects(t *testing.T) {
	tickets := newTestTickets(t)
	for name, tk := range map[string]Ticket{
		"empty event":    {User: "u", Seq: 1},
		"empty user":     {Event: "e", Seq: 1},
		"zero seq":       {Event: "e", User: "u"},
		"negative seq":   {Event: "e", User: "u", Seq: -5},
		"invalid utf-8":  {Event: "e", User: "u\xff", Seq: 1},
		"user too long":  {Event: "e", User: strings.Repeat("u", maxIDLen+1), Seq: 1},
		"event too long": {Event: strings.Repeat("e", maxIDLen+1), User: "u", Seq: 1},
	} {
		if got, err := tickets.Sign(tk); err == nil {
			t.Errorf("%s: got %q, want an error", name, got)
		}
	}
}

func TestTicketVerifyRejects(t *testing.T) {
	tickets := newTestTickets(t)
	good, err := tickets.Sign(Ticket{Event: "ev", User: "alice", Seq: 3, IssuedAt: t0()})
	if err != nil {
		t.Fatal(err)
	}
	claims := jwt.MapClaims{"ev": "ev", "sub": "alice", "seq": 3, "iat": t0().Unix()}
	hs := func(c jwt.MapClaims) string { return craft(t, jwt.SigningMethodHS256, testSecret(1), nil, c) }
	parts := strings.Split(good, ".")
	for _, tc := range []struct {
		name, raw, event string
		want             error
	}{
		{"genuine", good, "ev", nil},
		{"crafted with the secret", hs(claims), "ev", nil},
		{"another event", good, "ev2", ErrWrongEvent},
		{"another secret", craft(t, jwt.SigningMethodHS256, testSecret(2), nil, claims), "ev", ErrInvalid},
		{"HS512 with the secret", craft(t, jwt.SigningMethodHS512, testSecret(1), nil, claims), "ev", ErrInvalid},
		{"alg none", unsigned(`{"alg":"none","typ":"JWT"}`, `{"ev":"ev","sub":"alice","seq":3,"iat":1}`), "ev", ErrInvalid},
		{"no alg", craft(t, jwt.SigningMethodHS256, testSecret(1), map[string]any{"alg": nil}, claims), "ev", ErrInvalid},
		{"tampered payload", parts[0] + "." + b64([]byte(`{"ev":"ev","sub":"mallory","seq":1,"iat":1}`)) + "." + parts[2], "ev", ErrInvalid},
		{"truncated signature", good[:len(good)-2], "ev", ErrInvalid},
		{"padded signature", good + "=", "ev", ErrInvalid},
		{"non-canonical signature encoding", sloppy(t, good), "ev", ErrInvalid},
		{"missing ev", hs(without(claims, "ev")), "", ErrInvalid},
		{"missing sub", hs(without(claims, "sub")), "ev", ErrInvalid},
		{"missing seq", hs(without(claims, "seq")), "ev", ErrInvalid},
		{"missing iat", hs(without(claims, "iat")), "ev", ErrInvalid},
		{"seq zero", hs(with(claims, "seq", 0)), "ev", ErrInvalid},
		{"seq fraction", hs(with(claims, "seq", 1.5)), "ev", ErrInvalid},
		{"seq string", hs(with(claims, "seq", "3")), "ev", ErrInvalid},
		{"ev not a string", hs(with(claims, "ev", 7)), "ev", ErrInvalid},
		{"oversized", good + strings.Repeat("A", maxTokenLen), "ev", ErrInvalid},
		{"empty", "", "ev", ErrInvalid},
		{"dot", ".", "ev", ErrInvalid},
		{"two dots", "..", "ev", ErrInvalid},
		{"a.b.c", "a.b.c", "ev", ErrInvalid},
		{"four parts", good + ".x", "ev", ErrInvalid},
		{"random bytes", randomBytes(t, 300), "ev", ErrInvalid},
	} {
		got, err := tickets.Verify(tc.raw, tc.event)
		if tc.want == nil && err == nil && got.User != "alice" {
			t.Errorf("%s: got user %q, want alice", tc.name, got.User)
		}
		if err != nil && got != (Ticket{}) {
			t.Errorf("%s: got %+v with error, want zero Ticket", tc.name, got)
		}
		t.Run(tc.name, func(t *testing.T) { checkErr(t, err, tc.want) })
	}
}

func TestTicketsRedactSecret(t *testing.T) {
	tickets := newTestTickets(t)
	if got := tickets.String(); strings.Contains(got, string(testSecret(1))) || !strings.Contains(got, "redacted") {
		t.Errorf("String: got %q, want a redacted form", got)
	}
}

// TestTicketIsStandardJWT checks tickets with an independent parser: any
// JWT library holding the secret must read them.
func TestTicketIsStandardJWT(t *testing.T) {
	tickets := newTestTickets(t)
	raw, err := tickets.Sign(Ticket{Event: "ev", User: "alice", Seq: 9, IssuedAt: t0()})
	if err != nil {
		t.Fatal(err)
	}
	var c jwt.MapClaims
	tok, err := jwt.NewParser(jwt.WithValidMethods([]string{"HS256"}), jwt.WithStrictDecoding()).
		ParseWithClaims(raw, &c, func(*jwt.Token) (any, error) { return testSecret(1), nil })
	if err != nil {
		t.Fatalf("golang-jwt: %v", err)
	}
	want := jwt.MapClaims{"ev": "ev", "sub": "alice", "seq": 9.0, "iat": float64(t0().Unix())}
	if len(c) != len(want) {
		t.Errorf("claims: got %v, want %v", c, want)
	}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("claim %s: got %v, want %v", k, c[k], v)
		}
	}
	if got := tok.Header; len(got) != 2 || got["alg"] != "HS256" || got["typ"] != "JWT" {
		t.Errorf("header: got %v, want alg HS256, typ JWT", got)
	}
}

// TestSunkTicket: a sunk ticket verifies as sunk, has the shape of any
// ticket (same header and payload, a signature of the same length), is
// not a real ticket's signature, and a ticket signed by another secret's
// sink key is refused.
func TestSunkTicket(t *testing.T) {
	tk, err := NewTickets(bytes.Repeat([]byte("k"), 32))
	if err != nil {
		t.Fatal(err)
	}
	in := Ticket{Event: "ev", User: "u", Seq: 42, IssuedAt: time.Unix(1700000000, 0).UTC()}
	real, _ := tk.Sign(in)
	sunkIn := in
	sunkIn.Sunk = true
	sunk, _ := tk.Sign(sunkIn)
	if real == sunk {
		t.Fatal("a sunk ticket is the real one")
	}
	rp := strings.Split(real, ".")
	sp := strings.Split(sunk, ".")
	if rp[0] != sp[0] || rp[1] != sp[1] || len(rp[2]) != len(sp[2]) {
		t.Fatalf("a sunk ticket's shape differs: %q vs %q", real, sunk)
	}
	got, err := tk.Verify(sunk, "ev")
	if err != nil || !got.Sunk || got.Seq != 42 || got.User != "u" {
		t.Fatalf("sunk: %+v, %v", got, err)
	}
	if got, err := tk.Verify(real, "ev"); err != nil || got.Sunk {
		t.Fatalf("real: %+v, %v", got, err)
	}
	other, _ := NewTickets(bytes.Repeat([]byte("o"), 32))
	forged, _ := other.Sign(sunkIn)
	if _, err := tk.Verify(forged, "ev"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("another secret's sunk ticket: %v, want ErrInvalid", err)
	}
}
