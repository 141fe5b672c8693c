package settings

import "testing"

func TestMarkdown(t *testing.T) {
	got := Markdown([]Setting{
		{Name: "addr", Env: "X_ADDR", Default: ":8080", Doc: "HTTP listen address"},
		{Name: "token", Env: "X_TOKEN", Doc: "bearer token; empty: generated", Secret: true},
	})
	want := "| variable | flag | default | meaning |\n|---|---|---|---|\n" +
		"| `X_ADDR` | `-addr` | `:8080` | HTTP listen address |\n" +
		"| `X_TOKEN` | `-token` |  | bearer token; empty: generated; secret: never logged |\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestSplice(t *testing.T) {
	doc := "# Title\n\n" + BeginMarker + "\nold\n" + EndMarker + "\n\nafter\n"
	got, err := Splice(doc, "new\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "# Title\n\n" + BeginMarker + "\nnew\n" + EndMarker + "\n\nafter\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if body, err := Block(got); err != nil || body != "new\n" {
		t.Errorf("Block: %q, %v; want %q", body, err, "new\n")
	}
	for _, bad := range []string{
		"no markers\n",
		EndMarker + "\n" + BeginMarker + "\n",
		BeginMarker + "\n" + EndMarker + "\n" + BeginMarker + "\n" + EndMarker + "\n",
	} {
		if _, err := Splice(bad, "x"); err == nil {
			t.Errorf("Splice(%q): no error", bad)
		}
	}
}
