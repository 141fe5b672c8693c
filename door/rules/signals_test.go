package rules

import (
	"testing"

	"github.com/anteroom/anteroom/door"
)

// TestSignalsAndTokenClaims: a rule can require a signal from its trusted
// source (signals.<name>, true only when the request's Signal says so;
// an unknown name, or a request without Signal, reads false) and any claim
// of the identity token, read through Request.Claim when the step did not
// read it (once per request however often a rule reads it). signals
// cannot be listed.
func TestSignalsAndTokenClaims(t *testing.T) {
	e := New(nil, nil)
	asked := map[string]int{}
	r := request("POST", "/events/ev/claim", "", "203.0.113.7", "ann", nil, nil)
	r.Claims = map[string][]string{"tier": {"gold"}}
	r.Claim = func(name string) ([]string, bool) {
		asked[name]++
		if name == "phone_verified" {
			return []string{"true"}, true
		}
		return nil, false
	}
	r.Signal = func(name string) bool { return name == "phone" }
	holds := []string{
		`signals.phone`,
		`signals["phone"] && "phone" in signals`,
		`!signals.payment && !("payment" in signals)`,
		`!signals.smell`,
		`"true" in claims.phone_verified && claims.phone_verified == ["true"]`,
		`size(claims.email) == 0 && !("email" in claims)`,
		`claims.tier == ["gold"]`,
		`signals.phone && "true" in claims["phone_verified"]`,
	}
	for _, when := range holds {
		if name, _, ok := e.Match(sale("ev-"+when, 1, rule("r", when, "block")), r); !ok || name != "r" {
			t.Errorf("%s: does not hold", when)
		}
	}
	if n := e.EvalErrors(); n != 0 {
		t.Errorf("%d evaluation errors", n)
	}
	if asked["tier"] != 0 {
		t.Errorf("a claim the step read was read again %d times", asked["tier"])
	}
	// Without Signal and Claim (another identity mode, no source): false
	// and empty, no error.
	bare := request("POST", "/", "", "", "bob", nil, nil)
	for _, when := range []string{`!signals.phone`, `!signals.device`, `size(claims.phone_verified) == 0`} {
		if _, _, ok := e.Match(sale("bare-"+when, 1, rule("r", when, "block")), bare); !ok {
			t.Errorf("%s: does not hold without sources", when)
		}
	}
	// A rule that requires a verified phone refuses one without.
	req := sale("need-phone", 1, rule("no-phone", `!signals.phone || !("true" in claims.phone_verified)`, "block"))
	r.Signal = func(string) bool { return false }
	if _, _, ok := e.Match(req, r); !ok {
		t.Error("a request without the phone signal passed a rule requiring it")
	}
	if n := e.EvalErrors(); n != 0 {
		t.Errorf("%d evaluation errors", n)
	}
	// signals cannot be listed: the rule fails to evaluate (no match).
	if _, _, ok := e.Match(sale("list", 1, rule("r", `size(signals) > 0`, "block")), &door.Request{Signal: func(string) bool { return true }}); ok {
		t.Error("a listing of signals matched")
	}
}
