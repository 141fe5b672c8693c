package salefile_test

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/internal/salefile"
	"github.com/anteroom/anteroom/internal/salefile/salefiletest"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TestFullSalesSetEveryField: the sales the round-trip tests use set
// every field of a sale (walked by reflection), so a new field fails
// here until salefiletest.Full sets it — and then the round trips
// cover it.
func TestFullSalesSetEveryField(t *testing.T) {
	if unset := salefiletest.Unset(salefiletest.Full(time.Now())); len(unset) > 0 {
		t.Fatalf("fields no sale of salefiletest.Full sets to a value other than its default: %v", unset)
	}
}

// TestEncodeDecodeRoundTrip: a file written by Encode (YAML and JSON)
// reads back to the same sales, every field, with no difference.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	sales := salefiletest.Full(time.Now())
	for _, format := range []string{"yaml", "json"} {
		out, err := salefile.Encode(sales, format)
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range salefiletest.Secrets {
			if strings.Contains(string(out), secret) {
				t.Fatalf("%s: the file holds a secret's value:\n%s", format, out)
			}
		}
		back, err := salefile.Decode(out, salefiletest.Getenv)
		if err != nil {
			t.Fatalf("%s: %v\n%s", format, err, out)
		}
		if len(back) != len(sales) {
			t.Fatalf("%s: %d sales back, want %d", format, len(back), len(sales))
		}
		for i := range sales {
			live := salefiletest.AsLive(sales[i])
			changes, _, err := salefile.Diff(&live, &back[i], false)
			if err != nil || len(changes) > 0 {
				t.Errorf("%s: sale %s read back differs: %v %v", format, sales[i].Config.ID, changes, err)
			}
			if !reflect.DeepEqual(back[i].Config, sales[i].Config) || !reflect.DeepEqual(back[i].Page, sales[i].Page) || !reflect.DeepEqual(back[i].Refs, sales[i].Refs) {
				t.Errorf("%s: sale %s read back:\n%+v\nwant\n%+v", format, sales[i].Config.ID, back[i], sales[i])
			}
		}
	}
}

// TestDiff names each changed field by its path, old → new, and never a
// secret's value.
func TestDiff(t *testing.T) {
	sales := salefiletest.Full(time.Now())
	live := salefiletest.AsLive(sales[0])
	want := sales[0]
	want.Config.AdmitRatePerSecond = 300
	want.Config.Limits.Join.IP.Burst = 99
	want.Config.FrameAncestors = nil
	want.Page.Colors.Primary = "#0a58ad"
	changes, send, err := salefile.Diff(&live, &want, false)
	if err != nil {
		t.Fatal(err)
	}
	got := salefile.Format(changes, "")
	wantText := `admit_rate_per_second: 250 → 300
frame_ancestors: ["https://shop.example"] → (none)
limits.join.ip.burst: 30 → 99
page.colors.primary: "#0b63c4" → "#0a58ad"
`
	if !sameLines(got, wantText) || len(send) != 0 {
		t.Errorf("diff:\n%s\nwant\n%s(send %v, want none: the secrets are stored)", got, wantText, send)
	}
	changes, send, _ = salefile.Diff(&live, &want, true)
	if got := salefile.Format(changes, ""); !strings.Contains(got, "webhooks[0].secret: (stored) → (from ${HOOK_SECRET})") || len(send) != 3 {
		t.Errorf("rotating: %s (send %v)", got, send)
	}
	for _, c := range changes {
		for _, v := range salefiletest.Secrets {
			if strings.Contains(c.String(), v) {
				t.Fatalf("a diff shows a secret: %s", c)
			}
		}
	}
	// A new sale: every field, and each secret named, from its reference.
	changes, send, _ = salefile.Diff(nil, &sales[0], false)
	if got := salefile.Format(changes, ""); !strings.Contains(got, "supply: (none) → 500") || !strings.Contains(got, "shop.secret: (none) → (from ${SHOP_SECRET})") || len(send) != 3 {
		t.Errorf("new sale: %s (send %v)", got, send)
	}
}

func sameLines(a, b string) bool {
	x, y := strings.Split(strings.TrimSpace(a), "\n"), strings.Split(strings.TrimSpace(b), "\n")
	if len(x) != len(y) {
		return false
	}
	seen := map[string]int{}
	for _, l := range x {
		seen[l]++
	}
	for _, l := range y {
		seen[l]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

// TestDecodeRefuses: what is not a sales file, or a sale the node would
// refuse, is an error naming the line and the sale, and nothing is read.
func TestDecodeRefuses(t *testing.T) {
	ok := "    supply: 10\n    starts_at: 2030-01-01T10:00:00Z\n"
	for _, tc := range []struct{ name, file, want string }{
		{"bad YAML", "sales:\n  - id: a\n   supply: [", "not YAML"},
		{"not a list", "sales: 3\n", "sales must be a list"},
		{"unknown top key", "sale:\n  - id: a\n", `unknown key "sale"`},
		{"unknown field", "sales:\n  - id: a\n" + ok + "    suply: 3\n", `line 2: sales[0] (id a): json: unknown field "suply"`},
		{"unknown nested field", "sales:\n  - id: a\n" + ok + "    limits: {join: {ip: {rate: 3}}}\n", `unknown field "rate"`},
		{"unknown page field", "sales:\n  - id: a\n" + ok + "    page: {colour: red}\n", `page: json: unknown field "colour"`},
		{"a node's field", "sales:\n  - id: a\n" + ok + "    seed: ab\n", "seed is set by the node"},
		{"no id", "sales:\n  - supply: 3\n", "id is required"},
		{"invalid", "sales:\n  - id: a\n    supply: 0\n    starts_at: 2030-01-01T10:00:00Z\n", "supply must be between"},
		{"duplicate id", "sales:\n  - id: a\n" + ok + "  - id: a\n" + ok, `line 5: sales[1]: id "a" is the id of the sale at line 2 too`},
		{"a literal secret", "sales:\n  - id: a\n" + ok + "    shop: {secret: averyverysecretvalue}\n", "shop.secret: a secret is never written in the file"},
		{"an unset variable", "sales:\n  - id: a\n" + ok + "    shop: {secret: '${NOPE}'}\n", "the environment variable NOPE is not set"},
		{"secret_set", "sales:\n  - id: a\n" + ok + "    shop: {secret_set: true}\n", "secret_set is what the node answers"},
		{"wrong type", "sales:\n  - id: a\n" + ok + "    paused: sometimes\n", "cannot unmarshal"},
	} {
		_, err := salefile.Decode([]byte(tc.file), salefiletest.Getenv)
		if err == nil || !errors.Is(err, salefile.ErrFormat) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

// TestSecretsAreKnown: every field named secret in a sale's types is
// one salefile resolves and keeps out of exports and diffs (a new
// secret field fails here until secrets.go knows it).
func TestSecretsAreKnown(t *testing.T) {
	var found []string
	var walk func(reflect.Type, string)
	walk = func(ty reflect.Type, path string) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice {
			if ty.Kind() == reflect.Slice {
				path += "[0]"
			}
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct || ty == reflect.TypeFor[time.Time]() {
			return
		}
		for i := range ty.NumField() {
			name, _, _ := strings.Cut(ty.Field(i).Tag.Get("json"), ",")
			sub := strings.TrimPrefix(path+"."+name, ".")
			if name == "secret" {
				found = append(found, sub)
			}
			walk(ty.Field(i).Type, sub)
		}
	}
	walk(reflect.TypeFor[event.Config](), "")
	walk(reflect.TypeFor[event.Page](), "page")
	known := salefiletest.Full(time.Now())[0].Refs
	for _, p := range found {
		if _, ok := known[p]; !ok {
			t.Errorf("%s is a secret salefile does not know (secrets.go's secretsOf)", p)
		}
	}
	if len(found) != len(known) {
		t.Errorf("secret fields %v, known %v", found, known)
	}
}

// TestSchemaCurrent: docs/sales.schema.json is what Schema generates;
// `go run ./cmd/anteroom sales-schema -w docs/sales.schema.json`
// brings it back in line.
func TestSchemaCurrent(t *testing.T) {
	want, err := salefile.Schema()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../docs/sales.schema.json")
	if err != nil || string(got) != string(want) {
		t.Fatalf("docs/sales.schema.json is stale (%v): run go run ./cmd/anteroom sales-schema -w docs/sales.schema.json", err)
	}
}

// TestSchemaChecksFiles: the schema accepts the files Encode writes
// (every field set) and refuses what Decode refuses for its shape: an
// unknown field, a node's field, a literal secret, a mode that is none.
func TestSchemaChecksFiles(t *testing.T) {
	raw, err := salefile.Schema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("sales.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("sales.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	file, err := salefile.Encode(salefiletest.Full(time.Now()), "json")
	if err != nil {
		t.Fatal(err)
	}
	check := func(file []byte) error {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(file))
		if err != nil {
			t.Fatal(err)
		}
		return schema.Validate(inst)
	}
	if err := check(file); err != nil {
		t.Fatalf("the schema refuses a file Encode wrote: %v", err)
	}
	for _, bad := range []struct{ from, to string }{
		{`"per_user_limit"`, `"per_user_limits"`},
		{`"name": "Spring drop"`, `"name": "Spring drop", "seed": "ab"`},
		{`"${SHOP_SECRET}"`, `"a literal secret value"`},
		{`"mode": "lottery"`, `"mode": "raffle"`},
		{`"max_error_rate": 0.25`, `"max_error_rate": "high"`},
	} {
		if !bytes.Contains(file, []byte(bad.from)) {
			t.Fatalf("the file has no %s", bad.from)
		}
		if err := check(bytes.Replace(file, []byte(bad.from), []byte(bad.to), 1)); err == nil {
			t.Errorf("the schema accepts %s in place of %s", bad.to, bad.from)
		}
	}
}

// TestEmptyButSet: a room closed without a message (closed: {}) is not
// an open one: it exports as closed: {} and reads back closed, and the
// diff from open names it.
func TestEmptyButSet(t *testing.T) {
	s := salefiletest.Full(time.Now())[1]
	s.Config.Closed = &event.Closure{}
	out, err := salefile.Encode([]salefile.Sale{s}, "yaml")
	if err != nil || !strings.Contains(string(out), "    closed: {}\n") {
		t.Fatalf("export: %v\n%s", err, out)
	}
	back, err := salefile.Decode(out, salefiletest.Getenv)
	if err != nil || back[0].Config.Closed == nil {
		t.Fatalf("read back: %v %+v", err, back)
	}
	open := salefiletest.AsLive(s)
	open.Config.Closed = nil
	changes, _, _ := salefile.Diff(&open, &back[0], false)
	if got := salefile.Format(changes, ""); got != "closed: (none) → {}\n" {
		t.Errorf("diff from open: %q", got)
	}
}
