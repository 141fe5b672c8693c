// Package salefiletest builds sales for the tests of sales as code: two
// sales that between them set every field of a sale to a value other
// than its default, and the check (Unset) that they do, walked by
// reflection, so a field added to event.Config, event.Page or any type
// under them fails the round-trip tests until it is set here.
package salefiletest

import (
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/salefile"
)

// Secrets are the environment the sales of Full name their secrets in.
var Secrets = map[string]string{
	"HOOK_SECRET":    "a webhook secret of the test, long enough",
	"SHOP_SECRET":    "a shop secret of the test, long enough",
	"CAPTCHA_SECRET": "0x4AAAAAAAtestcaptchasecret",
}

// Lists are the door lists the sales of Full name (each must exist on
// the node before they are applied): block first, then eligible.
var Lists = []string{"banned", "vip"}

// Full returns two sales that set every field between them: "spring"
// (first come, with lanes and everything else) and "draw" (a lottery
// with join shards and several buckets, which lanes and signal limits
// rule out), their times starting two hours after now so nothing is
// locked. Secrets hold the values of Secrets, with their references in
// Refs, as Decode leaves them.
func Full(now time.Time) []salefile.Sale {
	now = now.UTC().Truncate(time.Second)
	at := func(d time.Duration) time.Time { return now.Add(d) }
	ptr := func(t time.Time) *time.Time { return &t }
	rate := func(r float64) event.Rate { return event.Rate{PerSecond: r, Burst: r * 10} }
	spring := event.Config{
		ID: "spring", Name: "Spring drop", Supply: 500, PerUserLimit: 2,
		PrequeueOpensAt: at(2 * time.Hour), StartsAt: at(3 * time.Hour), EndsAt: at(30 * time.Hour),
		Mode: event.FCFS, RandomWindowSeconds: 60, AdmitRatePerSecond: 250, MaxActive: 40,
		NoShowGraceSeconds: 30, AdmissionTTLSeconds: 600, ClaimTTLSeconds: 1200, Buckets: 1, ReserveUnits: 5,
		Paused: true, Closed: &event.Closure{Message: "Back soon", Until: ptr(at(time.Hour))},
		FrameAncestors: []string{"https://shop.example"},
		Limits: event.Limits{
			Join:        event.Budget{Event: rate(500), IP: rate(3), Device: rate(4), User: rate(2)},
			BusyNetwork: rate(40),
			Claim:       event.Budget{Event: rate(600), IP: rate(5), Device: rate(6), User: rate(7)},
			Status:      event.StatusBudget{IP: rate(20), Ticket: rate(11)},
			PoW:         event.PoW{Enabled: event.SwitchOn, Bits: 18, TTLSeconds: 120},
			Captcha:     event.Captcha{Provider: event.CaptchaTurnstile, SiteKey: "0x4AAAAAAAsitekey", Secret: Secrets["CAPTCHA_SECRET"]},
			InviteOnly:  true, SignalClaims: event.SignalLimits{Device: 2, Payment: 3, Phone: 4, Address: 5},
			OneClaimPerDevice: true, OneClaimPerPayment: true,
		},
		JoinShards: 1,
		Webhooks: []event.Webhook{{URL: "https://hooks.example/anteroom", Secret: Secrets["HOOK_SECRET"],
			Events: []string{"sale_opened", "your_turn"}}},
		Lanes: []event.Lane{{Name: "members", Share: 0.2, StartsAt: ptr(at(150 * time.Minute)),
			Claim: &event.LaneClaim{Name: "tier", Value: "gold"}}},
		Shop: event.Shop{Secret: Secrets["SHOP_SECRET"], Health: &event.HealthCheck{URL: "https://shop.example/health",
			IntervalSeconds: 10, TimeoutSeconds: 3, FailAfter: 4, RecoverAfter: 3, MaxErrorRate: 0.25}},
		Signals: event.Signals{
			Device:      &event.SignalSource{Source: "signed_header", Header: "X-Shop-Device"},
			Payment:     &event.SignalSource{Source: "jwt_claim", Claim: "payment_fp"},
			Phone:       &event.SignalSource{Source: "signed_header", Header: "X-Shop-Phone"},
			Address:     &event.SignalSource{Source: "jwt_claim", Claim: "address_hash"},
			SweepClaims: []string{"loyalty_id", "phone_verified"},
		},
		Door: event.Door{
			Rules:              []event.Rule{{Name: "staff-first", When: `user.startsWith("staff-")`, Then: "bypass"}},
			BlockLists:         []string{Lists[0]},
			EligibleLists:      []string{Lists[1]},
			NotEligibleMessage: "members only",
		},
	}
	draw := event.Config{
		ID: "draw", Name: "Lottery", Supply: 100, PrequeueOpensAt: at(2 * time.Hour), StartsAt: at(3 * time.Hour),
		EndsAt: at(5 * time.Hour), Mode: event.Lottery, Buckets: 4, JoinShards: 2,
		Shop: event.Shop{Secret: Secrets["SHOP_SECRET"]},
		// Each signal's other form: a claim where spring reads a header, a header where it reads a claim.
		Signals: event.Signals{
			Device:  &event.SignalSource{Source: "jwt_claim", Claim: "device_id"},
			Payment: &event.SignalSource{Source: "signed_header", Header: "X-Shop-Payment"},
			Phone:   &event.SignalSource{Source: "jwt_claim", Claim: "phone_hash"},
			Address: &event.SignalSource{Source: "signed_header", Header: "X-Shop-Address"},
		},
		Attestation: event.Attestation{Require: true,
			Apple: &event.AppleAttestation{AppID: "ABCDE12345.com.example.shop", Development: true},
			Google: &event.GoogleAttestation{PackageName: "com.example.shop", Verdicts: event.GoogleVerdicts{
				AllowUnrecognizedVersion: true, Device: []string{"MEETS_STRONG_INTEGRITY"}, RequireLicensed: true,
				CertificateDigests: []string{"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}}}},
	}
	page := event.Page{
		Name: "Spring shop", LogoURL: "https://cdn.example/logo.png",
		Colors:   event.Colors{Primary: "#0b63c4", Background: "#ffffff", Text: "#111111"},
		Copy:     map[string]map[string]string{"en": {"title": "Spring drop queue"}},
		Template: `<!doctype html><html lang="{{.Lang}}"><head><title>Spring</title></head><body><h1>Spring</h1>{{.Runtime}}</body></html>`,
	}
	out := []salefile.Sale{
		{Config: spring, Page: page, Refs: map[string]string{
			"webhooks[0].secret": "${HOOK_SECRET}", "shop.secret": "${SHOP_SECRET}", "limits.captcha.secret": "${CAPTCHA_SECRET}"}},
		{Config: draw, Refs: map[string]string{"shop.secret": "${SHOP_SECRET}"}},
	}
	for i := range out {
		out[i].Config.Defaults()
	}
	return out
}

// AsLive is s as the admin API answers it: secrets redacted (SecretSet
// telling they are stored), no references.
func AsLive(s salefile.Sale) salefile.Sale {
	s.Config.Webhooks = event.RedactWebhooks(s.Config.Webhooks)
	s.Config.Shop = event.RedactShop(s.Config.Shop)
	s.Config.Limits.Captcha = s.Config.Limits.Captcha.Redacted()
	s.Refs = nil
	return s
}

// Getenv reads Secrets.
func Getenv(name string) string { return Secrets[name] }

// Unset lists the fields (paths of the file: limits.join.ip.burst,
// lanes[].claim.name) that none of sales sets to a value other than
// its zero and its default (event.DefaultConfig), the node's fields
// (salefile.NodeFields) and secret_set aside: empty when the sales set
// every field.
func Unset(sales []salefile.Sale) []string {
	set := map[string]bool{}
	def := reflect.ValueOf(event.DefaultConfig())
	for _, s := range sales {
		walk(reflect.ValueOf(s.Config), def, "", set)
		walk(reflect.ValueOf(s.Page), reflect.ValueOf(event.Page{}), "page", set)
	}
	var out []string
	for p, ok := range set {
		if !ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// walk marks in set each leaf under v (path) as set when it differs
// from its zero and from def (the default at the same place, invalid
// where there is none).
func walk(v, def reflect.Value, path string, set map[string]bool) {
	leaf := func(nonDefault bool) { set[path] = set[path] || nonDefault }
	switch {
	case v.Type() == reflect.TypeFor[time.Time]():
		leaf(!v.Interface().(time.Time).IsZero())
		return
	case v.Kind() == reflect.Pointer:
		if v.IsNil() {
			if _, seen := set[path]; !seen {
				walkType(v.Type().Elem(), path, set)
			}
			return
		}
		walk(v.Elem(), indirect(def), path, set)
		return
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" || name == "secret_set" || path == "" && slices.Contains(salefile.NodeFields, name) {
				continue
			}
			sub := name
			if path != "" {
				sub = path + "." + name
			}
			var d reflect.Value
			if def.IsValid() {
				d = def.Field(i)
			}
			walk(v.Field(i), d, sub, set)
		}
		return
	case v.Kind() == reflect.Slice:
		if v.Len() == 0 {
			walkType(v.Type().Elem(), path+"[]", set)
			leaf(false)
			return
		}
		for i := range v.Len() {
			walk(v.Index(i), reflect.Value{}, path+"[]", set)
		}
		leaf(true)
		return
	case v.Kind() == reflect.Map:
		leaf(v.Len() > 0)
		return
	}
	nonDefault := !v.IsZero()
	if def.IsValid() && reflect.DeepEqual(v.Interface(), def.Interface()) {
		nonDefault = false
	}
	leaf(nonDefault)
}

func indirect(v reflect.Value) reflect.Value {
	if v.IsValid() && v.Kind() == reflect.Pointer && !v.IsNil() {
		return v.Elem()
	}
	if v.IsValid() && v.Kind() == reflect.Pointer {
		return reflect.Value{}
	}
	return v
}

// walkType marks the leaves of a type no value reached as unset (unless
// another value set them).
func walkType(t reflect.Type, path string, set map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	mark := func(p string) {
		if _, ok := set[p]; !ok {
			set[p] = false
		}
	}
	switch {
	case t == reflect.TypeFor[time.Time]():
		mark(path)
	case t.Kind() == reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" || name == "secret_set" {
				continue
			}
			walkType(f.Type, path+"."+name, set)
		}
	case t.Kind() == reflect.Slice:
		walkType(t.Elem(), path+"[]", set)
		mark(path)
	default:
		mark(path)
	}
}
